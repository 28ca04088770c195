"""Speed of the exact noise samplers, in microseconds per sample.

Run:  cd /work/main && PYTHONPATH=. python benchmarks/bench_noise.py [--cells 100000] [--repeat 3]

Draws from the production source (SecureRandom, os.urandom). numpy's ``normal`` is printed for
reference only: it is neither exact (floating point) nor secure (PCG64, not a CSPRNG).
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from dpsql.privacy.randomness import SecureRandom
from dpsql.privacy.samplers import sample_discrete_gaussian, sample_discrete_laplace

SIGMAS = ["0.7", "10", "7071", "3.2e6"]


def best_us_per_sample(fn, cells: int, repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / cells * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, rng = args.cells, SecureRandom()

    def row(label: str, fn, cells: int = n, digits: int = 3) -> None:
        us = best_us_per_sample(fn, cells, args.repeat)
        print(f"{label:<52} {us:>10.{digits}f}")

    print(f"{n} cells per call, best of {args.repeat}; source: SecureRandom (os.urandom)")
    print(f"{'sampler':<52} {'us/sample':>10}")
    for s in SIGMAS:
        sigma2 = Fraction(s) ** 2  # the decimal value, squared exactly: 49/100, 100, ...
        row(f"discrete Gaussian  sigma = {s}", lambda: sample_discrete_gaussian(sigma2, rng, size=n))
    sigma2 = Fraction(0.7) ** 2  # the binary double nearest 0.7, squared: denominator 2^104
    row("discrete Gaussian  sigma^2 = Fraction(0.7)**2", lambda: sample_discrete_gaussian(sigma2, rng, size=n))
    mixed = [Fraction(s) ** 2 for s in SIGMAS] * (n // len(SIGMAS))
    row("discrete Gaussian  the 4 sigmas mixed in one vector", lambda: sample_discrete_gaussian(mixed, rng))
    distinct = [Fraction(10**6 + i, 7) for i in range(n)]
    row("discrete Gaussian  every cell a distinct sigma^2", lambda: sample_discrete_gaussian(distinct, rng))
    for s in ["0.7", "10", "7071"]:
        b = Fraction(s)
        row(f"discrete Laplace   b = {s}", lambda: sample_discrete_laplace(b, rng, size=n))
    gen = np.random.default_rng()
    for s in SIGMAS:
        row(f"numpy normal sigma = {s} (inexact, insecure)", lambda: gen.normal(0.0, float(s), size=n), digits=4)


if __name__ == "__main__":
    main()
