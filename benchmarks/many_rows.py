"""Many rows per unit (issue 31, dpsql/sql/units.py): dpsql against raw DuckDB on the same file.

    python -m benchmarks.many_rows --rows 10000000 --units 1000000 [--runs 5] [--rounds 2] [--dir /tmp/many_rows]

Builds (once) a DuckDB file of visits (``--units`` units, by default one per ~10 rows; each row a
region of ten, a day of 2025, a shop of 1,000 and an amount) and times, for each query shape,
three sides interleaved run by run (after one warm-up run of each), as medians:

* **dpsql**: the analyst's query answered by dpsql (cursor.execute + fetchall);
* **floor**: the same two-level exact SQL run by raw DuckDB (dpsql's query with a fixed salt):
  what bounding each unit's contribution costs, whoever runs it;
* **plain**: the analyst's one-level query run by raw DuckDB (no privacy).

It prints dpsql/floor (dpsql's own overhead) and dpsql/plain (the whole price of the guarantee)
per shape, and the machine's load average (os.getloadavg) before and after each table: the
machine is shared, so a number without its load means little. ``--rounds`` repeats the tables.
The raw connection shares dpsql's database instance (same configuration), hence its buffer pool.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

import dpsql
from dpsql.backends.duckdb import LOCKDOWN
from dpsql.sql.units import SALT

_HEAD = """[budget]
default_rho = 0.1
total_rho = 1e9
total_delta = 0.5  # the private-key shape selects partitions (δ = 1e-6) on every run
[tables.visits]
privacy_unit = "pid"
max_groups = {kappa}
row_threshold = 5
quantile_rows = 3
max_splits = 10
[tables.visits.measures]
amount = {{ threshold = 500, range = [0, 500] }}
[tables.visits.keys]
region = {{ keyset = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"] }}
day = {{ range = ["2025-01-01", "2025-12-31"] }}
shop = {{}}
"""
#: κ = 3 for public keys; κ = 1 for the private key (shop, partition selection)
POLICIES = {3: _HEAD.format(kappa=3), 1: _HEAD.format(kappa=1)}

_MONTHS = ("SELECT date_trunc('month', day) AS month, {aggs} FROM visits "
           "WHERE day BETWEEN DATE '2025-03-01' AND DATE '2025-08-31' GROUP BY 1")
#: (label, κ of its policy, SQL)
SHAPES = [
    ("public key: COUNT(*), COUNT(DISTINCT), SUM, AVG by region", 3,
     "SELECT region, COUNT(*), COUNT(DISTINCT pid), SUM(amount), AVG(amount) FROM visits GROUP BY region"),
    ("public key: COUNT(*) by region", 3, "SELECT region, COUNT(*) FROM visits GROUP BY region"),
    ("public key: SUM by region", 3, "SELECT region, SUM(amount) FROM visits GROUP BY region"),
    ("public key: AVG by region", 3, "SELECT region, AVG(amount) FROM visits GROUP BY region"),
    ("date range by month: COUNT(*), SUM, AVG, Mar-Aug", 3,
     _MONTHS.format(aggs="COUNT(*), SUM(amount), AVG(amount)")),
    ("private key, κ = 1: COUNT(*), SUM, AVG by shop", 1,
     "SELECT shop, COUNT(*), SUM(amount), AVG(amount) FROM visits GROUP BY shop"),
    ("no GROUP BY: COUNT(*), SUM, AVG", 3, "SELECT COUNT(*), SUM(amount), AVG(amount) FROM visits"),
    ("public key: MEDIAN by region (r = 3 values per unit and region)", 3,
     "SELECT region, MEDIAN(amount) FROM visits GROUP BY region"),
    ("public key: COUNT(DISTINCT shop) by region (R = 5 per unit and region)", 3,
     "SELECT region, COUNT(DISTINCT shop) FROM visits GROUP BY region"),
]


def build(db: Path, rows: int, units: int) -> None:
    """The visits table: rows spread over units by a hash, so a unit's rows scatter over regions,
    days and shops (each unit touches ~6 of the 10 regions: κ = 3 binds)."""
    if db.exists():
        return
    partial = db.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    con = duckdb.connect(str(partial))
    con.execute(f"CREATE TABLE visits AS SELECT (hash(i) % {units})::INTEGER AS pid, "
                f"chr(65 + (hash(i * 7) % 10)::INTEGER) AS region, "
                f"(DATE '2025-01-01' + (hash(i * 11) % 365)::INTEGER) AS day, "
                f"(hash(i * 17) % 1000)::INTEGER AS shop, (hash(i * 13) % 500)::INTEGER AS amount "
                f"FROM range({rows}) t(i)")
    con.close()
    partial.rename(db)


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def one_round(cons: dict[int, dpsql.Connection], raw: duckdb.DuckDBPyConnection, runs: int,
              say=lambda line: print(line, flush=True)) -> None:
    """One table: every shape, its three sides interleaved run by run, the order rotated; each
    line is said as soon as it is known."""
    for line in (f"load average (1/5/15 min) before: {_load()}", "",
                 "| query shape | dpsql | floor (raw two-level) | plain (raw one-level) | dpsql/floor | dpsql/plain |"
                 " floor/plain | load (1 min) |", "|---|---:|---:|---:|---:|---:|---:|---:|"):
        say(line)
    for label, kappa, sql in SHAPES:
        cur = cons[kappa].cursor()
        floor_sql = cons[kappa].explain(sql).exact_sql.replace(SALT, "12345")
        sides = {"dpsql": lambda: cur.execute(sql).fetchall(),
                 "floor": lambda: raw.execute(floor_sql).fetchall(),
                 "plain": lambda: raw.execute(sql).fetchall()}
        times: dict[str, list[float]] = {k: [] for k in sides}
        names = list(sides)
        for run in range(runs + 1):  # run 0 warms up, discarded
            for k in names[run % 3:] + names[:run % 3]:
                t = _timed(sides[k])
                if run:
                    times[k].append(t)
        m = {k: statistics.median(v) for k, v in times.items()}
        say(f"| {label} | {m['dpsql']:.3f} s | {m['floor']:.3f} s | {m['plain']:.3f} s | "
            f"{m['dpsql'] / m['floor']:.2f} | {m['dpsql'] / m['plain']:.2f} | {m['floor'] / m['plain']:.2f} | "
            f"{os.getloadavg()[0]:.1f} |")
    say("")
    say(f"load average (1/5/15 min) after: {_load()}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--units", type=int, default=None, help="privacy units (default rows / 10)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each side per shape (default 5)")
    ap.add_argument("--rounds", type=int, default=1, help="tables printed, one after the other (default 1)")
    ap.add_argument("--dir", default="/tmp/dpsql_many_rows")
    args = ap.parse_args(argv)
    units = args.units or max(args.rows // 10, 1)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"visits_{args.rows}_{units}.duckdb"
    build(db, args.rows, units)
    home = os.environ.get("DPSQL_HOME")
    with tempfile.TemporaryDirectory(prefix="dpsql-many-rows-") as tmp:
        os.environ["DPSQL_HOME"] = str(Path(tmp) / "home")  # throwaway ledgers and records
        try:
            _timed_rounds(args, db, units, Path(tmp))
        finally:  # the caller's own (a test calls main in its process)
            if home is None:
                os.environ.pop("DPSQL_HOME", None)
            else:
                os.environ["DPSQL_HOME"] = home


def _timed_rounds(args: argparse.Namespace, db: Path, units: int, tmp: Path) -> None:
    """Every round's table, on connections whose ledgers live in ``tmp``."""
    cons = {}
    for kappa, text in POLICIES.items():
        policy = tmp / f"visits_k{kappa}.policy.toml"
        policy.write_text(text)
        cons[kappa] = dpsql.connect(db, policy, reuse=False)  # each run a release
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    try:
        print(f"{args.rows:,} rows, {units:,} units, {args.runs} timed runs per side and shape, "
              f"{os.cpu_count()} cores")
        for r in range(args.rounds):
            print(f"\nround {r + 1}/{args.rounds}\n")
            one_round(cons, raw, args.runs)
    finally:
        raw.close()
        for con in cons.values():
            con.close()


if __name__ == "__main__":
    main()
