"""Test-only hooks. Nothing on the production path imports this module.

A seeded source makes the noise reproducible, which is what tests need and exactly what a
release must never have: whoever knows the seed can subtract the noise.
"""

from __future__ import annotations

import numpy as np

from dpsql.privacy.randomness import RandomSource, SeededRandom

__all__ = ["seeded_random", "ScriptedWords"]


def seeded_random(seed: int) -> RandomSource:
    """Return a deterministic :class:`~dpsql.privacy.randomness.SeededRandom` (PCG64). TESTS ONLY."""
    return SeededRandom(seed)


class ScriptedWords:
    """A RandomSource whose ``bits63`` replays given 63-bit words, to drive rare branches (the
    exact tie of a Bernoulli draw). ``uniform_below`` is not scripted. TESTS ONLY."""

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)

    def bits63(self, n: int) -> np.ndarray:
        out, self.words = self.words[:n], self.words[n:]
        return np.array(out, dtype=np.int64)

    def uniform_below(self, bounds: np.ndarray) -> np.ndarray:
        raise AssertionError("uniform_below is not scripted")
