"""Fixed cost of one query through the DB-API on the demo database, per stage, against raw DuckDB.

    python -m benchmarks.bench_fixed_cost [--repeat 41] [--sql "..."] [--fresh]

Fixed cost = dpsql's wall time minus the time of its exact SQL (``explain(sql).exact_sql``) on a
read-only DuckDB connection of this benchmark's own: dpsql does not time its private stages
apart (``Result.timings``, docs/privacy.md "Timing"); the raw-DuckDB comparison at sizes is benchmarks/speed.py. Medians are printed with the load average.
The policy is a copy with a huge budget beside a throw-away ledger. With ``--fresh`` every query
is the first of a new connection (as a BI tool or script that connects per query runs it); the
time to open the connection is printed apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import dpsql
from benchmarks.common import benchmark_policy
from dpsql.demo_db import ensure_demo

SQL = ("SELECT naics2, COUNT(*), SUM(employees), AVG(payann) FROM establishments "
       "GROUP BY naics2")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=41)
    ap.add_argument("--sql", default=SQL)
    ap.add_argument("--fresh", action="store_true", help="each query on a new connection")
    args = ap.parse_args(argv)
    db, policy = ensure_demo()
    with tempfile.TemporaryDirectory() as tmp:
        pol = benchmark_policy(Path(policy), Path(tmp))
        con = dpsql.connect(db, pol, reuse=False)
        cur = con.cursor()
        cur.execute(args.sql)
        cur.fetchall()  # warm-up (and the one-time unit check)
        walls, stages, opens = [], {}, []
        for _ in range(args.repeat):
            if args.fresh:
                con.close()
                t0 = time.perf_counter()
                con = dpsql.connect(db, pol, reuse=False)
                cur = con.cursor()
                opens.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cur.execute(args.sql)
            rows = cur.fetchall()
            walls.append(time.perf_counter() - t0)
            for k, v in (getattr(cur.result, "timings", None) or {}).items():
                stages.setdefault(k, []).append(v)
        exact_sql = con.session.explain(args.sql).exact_sql
        con.close()
    import duckdb

    with duckdb.connect(str(db), read_only=True) as raw:
        raw.execute(exact_sql).fetchall()
        execute = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            raw.execute(exact_sql).fetchall()
            execute.append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in stages.items()}
    wall = statistics.median(walls) * 1e3
    print(f"rows={len(rows)} repeat={args.repeat} load={os.getloadavg()[0]:.2f}"
          + (f"; a new connection each query (opening it: {statistics.median(opens) * 1e3:.1f} ms)" if opens else ""))
    print(f"dpsql wall {wall:.1f} ms; exact SQL alone {statistics.median(execute) * 1e3:.1f} ms; "
          f"fixed (wall - exact SQL) {wall - statistics.median(execute) * 1e3:.1f} ms")
    print("stages (ms, medians): " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))


if __name__ == "__main__":
    main()
