"""How well a derived column's ± covers the truth: the delta method at the noisy values for
SUM(a) / SUM(b), as a function of the denominator's relative error (docs/privacy.md, "Derived
columns and quantile rank intervals").

    python -m benchmarks.derived_coverage [--draws 200000] [--seed 1]

Each line: true sums a = 800, b = 1000, both noised with Gaussian σ = rel·b; dpsql's own
propagation (:func:`dpsql.pipeline.propagate.derived_errors`, MOE = 1.96·σ_f for two primitives)
on each draw; "flagged" is the share of draws whose noisy b lies within its MOE of 0 (no ±
shown), "covered" the share of the other draws whose ± holds a/b. Gaussian noise stands for the
discrete Gaussian (at these σ their difference is far below what is measured here).
"""

from __future__ import annotations

import argparse

import numpy as np

from dpsql.pipeline.propagate import derived_errors


def coverage(rel: float, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    """(share flagged, share covered among the rest) at a relative error ``rel`` of both sums."""
    a, b = 800.0, 1000.0
    sd = rel * b
    noisy = {"__p0": (a + rng.normal(0, sd, draws)).tolist(), "__p1": (b + rng.normal(0, sd, draws)).tolist(),
             "__s0": [sd] * draws, "__s1": [sd] * draws, "__m0": [1.96 * sd] * draws, "__m1": [1.96 * sd] * draws}
    _, moe, _ = derived_errors(("/", ("p", 0), ("p", 1)), noisy.__getitem__, draws)
    ratio = np.array(noisy["__p0"]) / np.array(noisy["__p1"])
    shown = np.array([m is not None for m in moe])
    m = np.array([0.0 if x is None else x for x in moe])
    covered = shown & (np.abs(ratio - a / b) <= m)
    return 1 - shown.mean(), covered.sum() / max(1, shown.sum())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)  # a simulation of the method, not a release: no secure source needed
    print("relative error of b | flagged (no ±) | 95% MOE covers a/b (rows shown)")
    for rel in (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
        flagged, covered = coverage(rel, args.draws, rng)
        print(f"{rel:>19.0%} | {flagged:>14.1%} | {covered:.1%}")


if __name__ == "__main__":
    main()
