"""Many rows per unit (issue 31, dpsql/sql/units.py): dpsql against raw DuckDB on the same file.

    python -m benchmarks.many_rows --rows 5000000 [--dir /tmp/many_rows] [--query "SELECT ..."]

Builds (once) a DuckDB file of visits, one unit per ~10 rows in ten regions, and times, as the
median of five runs after a warm-up: dpsql's answer (COUNT(*), COUNT(DISTINCT unit), SUM, AVG by
region, κ = 3), the same two-level exact SQL run by raw DuckDB (the floor: dpsql's query with a
fixed salt), and the plain one-level GROUP BY an analyst would write (no privacy). ``--query``
times another query instead (e.g. ``SELECT region, MEDIAN(amount) FROM visits GROUP BY region``
or ``COUNT(DISTINCT shop)``: quantile_rows = 3, row_threshold = 5).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import duckdb

import dpsql
from dpsql.sql.units import SALT

QUERY = "SELECT region, COUNT(*), COUNT(DISTINCT pid), SUM(amount), AVG(amount) FROM visits GROUP BY region"
POLICY = """[budget]
default_rho = 0.1
total_rho = 1e9
[tables.visits]
privacy_unit = "pid"
max_groups = 3
row_threshold = 5
quantile_rows = 3
max_splits = 10
[tables.visits.measures]
amount = { threshold = 500, range = [0, 500] }
[tables.visits.keys]
region = { keyset = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"] }
"""


def _median(f, runs: int = 5) -> float:
    f()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--dir", default="/tmp/dpsql_many_rows")
    ap.add_argument("--query", default=QUERY)
    args = ap.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    db, policy = folder / f"visits_shops_{args.rows}.duckdb", folder / "visits.policy.toml"
    units = max(args.rows // 10, 1)
    if not db.exists():
        con = duckdb.connect(str(db))
        con.execute(f"CREATE TABLE visits AS SELECT (hash(i) % {units})::INTEGER AS pid, "
                    f"chr(65 + (hash(i * 7) % 10)::INTEGER) AS region, (hash(i * 13) % 500)::INTEGER AS amount, "
                    f"'s' || (hash(i * 17) % 50)::VARCHAR AS shop FROM range({args.rows}) t(i)")
        con.close()
    policy.write_text(POLICY)
    with dpsql.connect(db, policy, reuse=False) as con:
        exact = con.explain(args.query).exact_sql.replace(SALT, "12345")
    raw = duckdb.connect(str(db), read_only=True)
    two_level = _median(lambda: raw.execute(exact).fetchall())
    one_level = _median(lambda: raw.execute(args.query).fetchall())
    raw.close()  # one configuration per file and process: dpsql opens it after
    with dpsql.connect(db, policy, reuse=False) as con:
        cur = con.cursor()
        ours = _median(lambda: cur.execute(args.query).fetchall())
    print(f"{args.rows:,} rows, {units:,} units: dpsql {ours:.3f} s, raw two-level {two_level:.3f} s, "
          f"raw one-level {one_level:.3f} s; dpsql / two-level {ours / two_level:.2f}, "
          f"two-level / one-level {two_level / one_level:.2f}")


if __name__ == "__main__":
    main()
