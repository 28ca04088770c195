"""The cost of a durable charge: median time of one ``Ledger.charge`` (one BEGIN IMMEDIATE
transaction, WAL, synchronous=FULL) and the `charge` stage of real queries.

    python benchmarks/bench_ledger.py [--n 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import dpsql
from dpsql.demo_db import ensure_demo
from dpsql.ledger.book import Charge, Ledger


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="charges to time (default 300)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "bench.ledger.sqlite", "bench", Fraction(10**9))
        times = []
        for i in range(args.n):
            t0 = time.perf_counter()
            ledger.charge(Charge(query=f"SELECT {i}", rho=Fraction(1, 10), mechanism="discrete_gaussian",
                                 policy_terms=({"rho": "0.1", "rho_exact": "1/10", "scale": "1", "table": "t"},)))
            times.append(time.perf_counter() - t0)
        ledger.close()
        print(f"Ledger.charge, {args.n} charges: median {statistics.median(times) * 1e3:.2f} ms, "
              f"p90 {sorted(times)[int(0.9 * len(times))] * 1e3:.2f} ms")

        db, policy = ensure_demo()
        own_policy = Path(tmp) / "demo.policy.toml"
        own_policy.write_text(Path(policy).read_text().replace("total_rho = 10.0", "total_rho = 1000000"))
        with dpsql.connect(db, own_policy, reuse=False) as con:
            stages = []
            for _ in range(min(args.n, 100)):
                res = con.cursor().execute("SELECT naics2, COUNT(*), SUM(payann) FROM establishments GROUP BY naics2").result
                stages.append(res.timings)
        for stage in ("plan", "charge", "finish"):  # the private stages are not timed apart (Result.timings)
            print(f"  query stage {stage:8s} median {statistics.median(s[stage] for s in stages) * 1e3:.2f} ms")
        total = [sum(s.values()) for s in stages]
        print(f"  query total          median {statistics.median(total) * 1e3:.2f} ms (200k-row demo, by naics2)")


if __name__ == "__main__":
    main()
