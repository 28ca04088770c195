"""Test-only hooks. Nothing on the production path imports this module.

A seeded source makes the noise reproducible, which is what tests need and exactly what a
release must never have: whoever knows the seed can subtract the noise.
"""

from __future__ import annotations

from dpsql.randomness import RandomSource, SeededRandom

__all__ = ["seeded_random"]


def seeded_random(seed: int) -> RandomSource:
    """Return a deterministic :class:`~dpsql.randomness.SeededRandom` (PCG64). TESTS ONLY."""
    return SeededRandom(seed)
