"""Does `dpsql advise` pick good split thresholds? The county x NAICS-2 SUM(payann) study
(docs/own_data.md, "How good is the advice").

    python -m benchmarks.advise_study [--rows N] [--runs 20] [--share 0.01]

The question advise answers: the smallest threshold T that splits at most a share s of the
units (default 1%, paper 000 Table 8's Conservative scheme). Below it, more units pay more than
ρ; above it, every sum is noisier (σ = T/√(2ρ)). So the **best threshold in hindsight** is the
exact (1 − s) quantile of the units' payann, computed here on the confidential rows — what a
data owner could only pick by looking at them. This study runs `dpsql advise` (the real command
path: one charged DP query, the exponential mechanism) ``--runs`` times with different seeds on
the demo, and for each recommended T measures the median ARE of SUM(payann) over county x NAICS-2
groups (≥ 20 establishments), noise at ρ = 1/4 (ρ = 1 over four queries, as docs/evaluation.md),
against the median ARE at the best T. Reported: each run's T, its ARE ratio, the share of units
it splits; the median and worst ratio. A data owner's simulation: exact values stay here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import tempfile
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np

from dpsql.demo_db import ensure_demo
from dpsql.faces import advise_cmd
from dpsql.privacy.mechanisms import gaussian_sigma2
from dpsql.privacy.samplers import sample_discrete_gaussian
from dpsql.testing import seeded_random

MIN_GROUP = 20
RHO_QUERY = Fraction(1, 4)
NOISE_SEEDS = 10


def median_are(sums: np.ndarray, t: int, seed: int) -> float:
    """Median over groups of |noise| / |exact sum| at threshold t, averaged over noise draws."""
    sigma2 = gaussian_sigma2(t, RHO_QUERY)
    meds = []
    for k in range(NOISE_SEEDS):
        noise = sample_discrete_gaussian(sigma2, seeded_random(seed * 1000 + k), size=len(sums)).astype(float)
        meds.append(float(np.median(np.abs(noise) / np.abs(sums))))
    return statistics.mean(meds)


def advised(db: Path, policy: Path, share: Fraction, seed: int) -> int:
    """The payann threshold `dpsql advise` recommends, run as the command runs (one charged query)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "policy.toml"
        shutil.copyfile(policy, p)
        from dpsql.faces import dbapi
        real_connect = dbapi.connect

        def seeded(*a, **kw):  # the command's own connection, with a seeded source (test-only hook)
            return real_connect(*a, _random_source=seeded_random(seed), reuse=False, **kw)

        args = argparse.Namespace(table="establishments", db=str(db), policy=str(p), measure=["payann"], rho="0.1",
                                  split_share=str(float(share)), at_rho="1", write=False, json=True)
        out = io.StringIO()
        dbapi.connect = seeded
        try:
            with contextlib.redirect_stdout(out):
                advise_cmd.advise(args)
        finally:
            dbapi.connect = real_connect
        return int(json.loads(out.getvalue())["measures"]["payann"]["recommended"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="demo size (default: the demo's 200,000)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--share", type=float, default=0.01)
    args = ap.parse_args()
    db, policy = ensure_demo(**({"rows": args.rows} if args.rows else {}))
    share = Fraction(str(args.share))
    con = duckdb.connect(str(db), read_only=True)
    values = np.array([r[0] for r in con.execute("SELECT payann FROM establishments").fetchall()], dtype=np.int64)
    sums = np.array([r[0] for r in con.execute(
        "SELECT SUM(payann) FROM establishments GROUP BY county, naics2 "
        f"HAVING COUNT(*) >= {MIN_GROUP} AND SUM(payann) <> 0").fetchall()], dtype=float)
    con.close()
    n = len(values)
    ordered = np.sort(values)
    best = int(ordered[int(np.ceil((1 - float(share)) * n)) - 1])  # the smallest T with share(v > T) <= s
    best_are = median_are(sums, best, 0)
    print(f"demo establishments: {n:,} units, {len(sums):,} county x NAICS-2 groups with >= {MIN_GROUP} establishments")
    print(f"best threshold in hindsight (exact {100 * (1 - float(share)):g}th percentile of payann): T* = {best:,}, "
          f"splits {100 * np.mean(values > best):.3g}% of units, median ARE {100 * best_are:.3g}%")
    sweep = sorted({max(1, int(best * f)) for f in (0.25, 0.5, 0.8, 1, 1.25, 2, 4)})
    print("the trade-off (exact): T, share of units split, median ARE of SUM(payann)")
    for t in sweep:
        print(f"  T = {t:>8,}  split {100 * np.mean(values > t):6.3g}%  median ARE {100 * median_are(sums, t, 0):.3g}%")
    print(f"{args.runs} runs of `dpsql advise establishments --measure payann` (rho = 0.1 each, seeded):")
    ratios = []
    for seed in range(1, args.runs + 1):
        t = advised(db, policy, share, seed)
        ratio = median_are(sums, t, 0) / best_are
        ratios.append(ratio)
        print(f"  run {seed:>2}: T = {t:>8,}  splits {100 * np.mean(values > t):.3g}% of units  "
              f"median ARE / best = {ratio:.3f}")
    print(f"median ARE ratio to the best threshold in hindsight: median {statistics.median(ratios):.3f}, "
          f"worst {max(ratios):.3f}, best {min(ratios):.3f}")


if __name__ == "__main__":
    main()
