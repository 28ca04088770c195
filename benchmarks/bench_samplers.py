"""dpsql's exact discrete Gaussian sampler against OpenDP's, per sample, at 1 .. 10^6 cells.

    pip install -e ".[bench]"            # opendp 0.16, benchmark-only
    python benchmarks/bench_samplers.py  # --sizes 1 10 100 --sigma2 1000/3

Both draw N_Z(sigma^2) exactly (OpenDP: ``make_gaussian`` on an integer vector with
scale = sigma, its exact discrete Gaussian). Each repeat runs OpenDP then dpsql back to back,
so both see the same machine load; the figures are medians, and the load average is printed.
dpsql draws from one ``SecureRandom`` (the OS CSPRNG) kept across calls, as a session keeps one;
OpenDP's measurement is built once and called repeatedly.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from fractions import Fraction

from dpsql.privacy.randomness import SecureRandom
from dpsql.privacy.samplers import sample_discrete_gaussian

SIZES = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]


def table(sizes: list[int] = SIZES, sigma2: Fraction = Fraction(1000, 3), budget: float = 3.0) -> str:
    """The Markdown table, one row per batch size (about ``budget`` seconds per size)."""
    try:
        import opendp.prelude as dp
    except ImportError:
        raise RuntimeError('OpenDP is a benchmark-only extra: pip install -e ".[bench]"') from None
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
    meas = dp.m.make_gaussian(*space, scale=float(sigma2) ** 0.5)
    rng = SecureRandom()
    lines = ["| cells | OpenDP µs/sample | dpsql µs/sample | OpenDP/dpsql | load |", "|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    for n in sizes:
        data = [0] * n
        a, b, spent = [], [], 0.0
        while len(a) < 3 or (spent < budget and len(a) < 1000):
            t0 = time.perf_counter()
            meas(data)
            t1 = time.perf_counter()
            sample_discrete_gaussian(sigma2, rng, size=n)
            t2 = time.perf_counter()
            a.append(t1 - t0)
            b.append(t2 - t1)
            spent += t2 - t0
        oa, da = statistics.median(a) / n * 1e6, statistics.median(b) / n * 1e6
        lines.append(f"| {n:,} | {oa:.2f} | {da:.2f} | {oa / da:.1f}× | {os.getloadavg()[0]:.2f} |")
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    ap.add_argument("--sigma2", type=Fraction, default=Fraction(1000, 3))
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per size (roughly)")
    args = ap.parse_args(argv)
    try:
        table(args.sizes, args.sigma2, args.budget)  # prints each row as it is measured
    except RuntimeError as exc:
        raise SystemExit(str(exc))


if __name__ == "__main__":
    main()
