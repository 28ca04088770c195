"""How many county x naics2 groups partition selection releases: dpsql's optimal primitive
(paper 002 Theorem 1) vs Laplace thresholding (Definition 9), at the same (epsilon, delta), in one
run on the demo data.

    python benchmarks/selection_vs_laplace.py [--rows 200000] [--trials 20]

The pair (county, naics2) is treated as one private partition (each establishment is in one).
dpsql's number comes from the engine itself (a policy copy where naics2 has no public keyset),
and, as a check, from `select` on the exact counts; Laplace thresholding is simulated on the same
exact counts by its release probability (and by sampling). Exact counts are the data owner's: this
is an internal evaluation; only the released totals are printed.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

import dpsql
from dpsql.demo_db import ensure_demo
from dpsql.privacy.pi_opt import release_probability
from dpsql.privacy.selection import select
from dpsql.privacy.selection_analysis import laplace_threshold, laplace_threshold_probability
from dpsql.testing import seeded_random


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--trials", type=int, default=20, help="repetitions of each randomised selection")
    ap.add_argument("--data-dir", default="benchmarks/data")
    args = ap.parse_args()
    db, policy = ensure_demo(rows=args.rows, home=args.data_dir)
    settings = [(Fraction(1, 10), Fraction(1, 10**5)), (Fraction(1, 2), Fraction(1, 10**6)),
                (Fraction(1), Fraction(1, 10**10))]
    print(f"establishments: {args.rows:,} rows; partitions: county x naics2; {args.trials} trials each")
    print(f"{'epsilon':>8} {'delta':>8} | {'groups':>7} | {'dpsql engine':>12} {'dpsql E[#]':>10} | "
          f"{'Laplace E[#]':>12} {'Laplace sim':>11} | {'gain':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for eps, delta in settings:
            text = Path(policy).read_text()
            text = re.sub(r'naics2 = \{ keyset = \[[^\]]*\] \}', "naics2 = {}", text)  # naics2 private here
            text = text.replace("total_rho = 10.0", "total_rho = 1000000")
            text += f"\n[selection]\nepsilon = {float(eps)}\ndelta = {float(delta)}\n"
            p = Path(tmp) / f"p{float(eps)}.policy.toml"
            p.write_text(text)
            with dpsql.connect(db, p, reuse=False, _random_source=seeded_random(1)) as con:
                engine_counts = [con.execute("SELECT county, naics2, COUNT(*) FROM establishments GROUP BY county, naics2")
                                 .receipt.selection["released_groups"] for _ in range(args.trials)]
                n = np.array([r[2] for r in con.session.engine.run(
                    "SELECT county, naics2, COUNT(*) FROM establishments GROUP BY county, naics2")], dtype=np.int64)
            rng = seeded_random(2)
            check = [int(select(n, eps, delta, rng).sum()) for _ in range(args.trials)]
            expected_opt = float(release_probability(n, float(eps), float(delta)).sum())
            expected_lap = float(laplace_threshold_probability(n, float(eps), float(delta)).sum())
            gen = np.random.default_rng(3)  # the baseline is only simulated; no release leaves here
            tau = laplace_threshold(float(eps), float(delta))
            lap_sim = [int((n + gen.laplace(0, 1 / float(eps), n.size) >= tau).sum()) for _ in range(args.trials)]
            print(f"{float(eps):>8g} {float(delta):>8.0e} | {n.size:>7,} | {statistics.median(engine_counts):>12,.0f} "
                  f"{expected_opt:>10,.1f} | {expected_lap:>12,.1f} {statistics.median(lap_sim):>11,.0f} | "
                  f"{(expected_opt / expected_lap - 1) * 100:>5.1f}%")
            assert abs(statistics.mean(check) - expected_opt) < 5 * max(1.0, expected_opt**0.5)


if __name__ == "__main__":
    main()
