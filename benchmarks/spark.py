"""dpsql on Spark vs raw Spark SQL vs dpsql on DuckDB, on the same Parquet data, in one run.

    python -m benchmarks.spark                          # 10M rows, local[2], 3 timed runs each
    python -m benchmarks.spark --rows 100000000 --master local[2]
    python -m benchmarks.spark --rows 1000000 --repeat 5 --groups 51
    python -m benchmarks.spark --rows 100000000 --master cluster --classic   # issue 34
    python -m benchmarks.spark --rows 20000000 --master cluster --unit-check --repeat 0

The data: ``--rows`` establishments (id, state among ``--groups`` values, a heavy-tailed
payroll) written to one Parquet file by DuckDB. The analyst's query, ``SELECT state, COUNT(*),
SUM(payann) FROM establishments GROUP BY state``, is timed three ways after one warm-up each
(which also pays dpsql's once-per-process unit check): raw Spark SQL on the same view,
``dpsql.connect(engine="spark")`` (decide, the exact query on Spark, noise, the durable charge,
finish) and ``dpsql.connect()`` over the same Parquet with DuckDB. The ratio dpsql-on-Spark /
raw Spark is the figure that matters (docs/scale.md). The load average is printed before and
after: the figures are only as good as the machine was quiet.

``--master cluster`` starts a standalone master and one worker on loopback from pyspark's own
jars (tests/spark_cluster.py; ``--worker-cores``, ``--executor-memory``) and stops both at the
end, whatever happens. ``--classic``: the demo's tables (built by DuckDB at ``--rows``, written
to Parquet) and its seven classic queries (benchmarks/speed.py), each timed the three ways, the
runs of the three interleaved. ``--unit-check``: the unit check of the privacy unit once through
DuckDB over the files Spark reads (``DataFrame.inputFiles()``) and once on Spark, with both
verdicts. The data is written under ``--tmp`` (default: the system's) and deleted at the end.
Before the timed runs, the process's first query (the first of the list) is timed once on raw
Spark and once through dpsql on Spark, which pays the unit check of the new data set.
"""

from __future__ import annotations

import argparse
import sys
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

QUERY = "SELECT state, COUNT(*), SUM(payann) FROM establishments GROUP BY state"


def write_data(folder: Path, rows: int, groups: int) -> Path:
    import duckdb

    path = folder / "establishments.parquet"
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT range AS id, 'S' || lpad(CAST(range % {groups} AS VARCHAR), 3, '0') AS state,
                   CAST(floor(exp(random() * 12)) AS BIGINT) AS payann FROM range({rows}))
                   TO '{path}' (FORMAT parquet)""")
    con.close()
    keys = ", ".join(f'"S{i:03d}"' for i in range(groups))
    (folder / "bench.policy.toml").write_text(f"""[budget]
default_rho = 0.01
total_rho = 1000000.0

[tables.establishments]
privacy_unit = "id"
parquet = "establishments.parquet"

[tables.establishments.measures]
payann = {{ threshold = 10000 }}

[tables.establishments.keys]
state = {{ keyset = [{keys}] }}
""")
    return folder / "bench.policy.toml"


def write_classic(folder: Path, rows: int) -> Path:
    """The demo database of ``rows`` establishments (built by DuckDB, benchmarks/common.py), each
    of its tables written to ``folder/parquet/<table>.parquet``, and a policy naming them with a
    budget the benchmark cannot spend."""
    import duckdb

    from benchmarks.common import benchmark_policy, ensure_data
    from dpsql.demo_db.parquet import policy_with_parquet

    db, demo_policy = ensure_data(rows, folder / "demo")
    (folder / "parquet").mkdir()
    con = duckdb.connect(str(db), read_only=True)
    con.execute("SET enable_progress_bar = false")
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT starts_with(table_name, '_')").fetchall():
        con.execute(f"COPY \"{table}\" TO '{folder / 'parquet' / table.lower()}.parquet' (FORMAT parquet)")
    con.close()
    db.unlink()  # the Parquet files are the data now
    policy = benchmark_policy(demo_policy, folder)
    policy.write_text(policy_with_parquet(policy.read_text(), "parquet"))
    return policy


def interleaved(fns: list, repeat: int) -> list[float]:
    """The median of ``repeat`` runs of each function after one warm-up each (JIT, caches, the
    unit check), the runs of the functions alternated so that load falls on all of them alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--groups", type=int, default=51)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query (0: none, e.g. with --unit-check)")
    ap.add_argument("--master", default="local[2]", help="a master URL, or cluster: a standalone one on loopback")
    ap.add_argument("--classic", action="store_true", help="the demo's tables and its seven classic queries")
    ap.add_argument("--unit-check", action="store_true", help="time the unit check through DuckDB and on Spark")
    ap.add_argument("--worker-cores", type=int, default=2)
    ap.add_argument("--executor-memory", default="4g")
    ap.add_argument("--tmp", default=None, help="where the data is written (and deleted at the end)")
    args = ap.parse_args(argv)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dpsql-bench-spark-", dir=args.tmp) as tmp, ExitStack() as stack:
        folder = Path(tmp)
        master = args.master
        if master == "cluster":
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from spark_cluster import standalone_cluster

            (folder / "cluster").mkdir()
            master, _ = stack.enter_context(standalone_cluster(folder / "cluster", args.worker_cores, args.executor_memory))
            os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--executor-memory {args.executor_memory} pyspark-shell")
        start = time.perf_counter()
        policy = write_classic(folder, args.rows) if args.classic else write_data(folder, args.rows, args.groups)
        written = time.perf_counter() - start
        head = (f"rows {args.rows:,}, master {args.master}"
                + (f" ({master}: one worker, {args.worker_cores} cores, executor {args.executor_memory})"
                   if args.master == "cluster" else "")
                + f", median of {args.repeat} interleaved (data written in {written:.1f} s)")
        lines = run(policy, master, args)
    load_after = os.getloadavg()
    print(head)
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}, cores {os.cpu_count()}")
    print("\n".join(lines))
    return 0


def run(policy: Path, master: str, args: argparse.Namespace) -> list[str]:
    """The measurements, as lines of output; the Spark session stops before the cluster does."""
    import dpsql
    from benchmarks.speed import QUERIES as CLASSIC
    from dpsql.backends.spark import spark_session

    lines = []
    spark_con = dpsql.connect(None, policy, engine="spark", spark_master=master, analyst="bench", reuse=False)
    duck_con = dpsql.connect(None, policy, engine="duckdb", analyst="bench", reuse=False)
    try:
        engine = spark_con.session.engine
        spark = engine._spark  # the same session and views dpsql's engine uses
        if args.unit_check:
            from dpsql.backends.duckdb import parquet_units_unique

            files = engine.local_files("establishments")
            unit_type = engine.schema(["establishments"])["establishments"]["id"]
            t0 = time.perf_counter()
            through_duckdb = parquet_units_unique(files, "id", unit_type) if files else None
            t1 = time.perf_counter()
            on_spark = engine.units_unique_on_spark("establishments", "id")
            t2 = time.perf_counter()
            lines.append(f"unit check over {len(files or [])} file(s): through DuckDB {t1 - t0:.1f} s (pass: "
                         f"{through_duckdb}), on Spark {t2 - t1:.1f} s (pass: {on_spark})")
        if args.repeat:
            queries = [(q.label, q.sql) for q in CLASSIC] if args.classic else [("by state", QUERY)]
            first = []  # the process's first query of each (dpsql's pays the unit check: docs/scale.md)
            for fn in (lambda: spark.sql(queries[0][1]).collect(), lambda: spark_con.cursor().execute(queries[0][1]).fetchall()):
                start = time.perf_counter()
                fn()
                first.append(time.perf_counter() - start)
            lines.append(f"first query of the process ({queries[0][0]}): raw Spark SQL {first[0]:.1f} s, dpsql on "
                         f"Spark {first[1]:.1f} s (with the unit check of a data set it has not seen)")
            lines.append("| query | raw Spark SQL | dpsql on Spark | ratio to raw Spark | dpsql on DuckDB |\n"
                         "|---|---:|---:|---:|---:|")
            for label, sql in queries:
                raw, on_spark, on_duckdb = interleaved([lambda: spark.sql(sql).collect(),
                                                        lambda: spark_con.cursor().execute(sql).fetchall(),
                                                        lambda: duck_con.cursor().execute(sql).fetchall()], args.repeat)
                lines.append(f"| {label} | {raw:.3f} s | {on_spark:.3f} s | {on_spark / raw:.2f}× | {on_duckdb:.3f} s |")
    finally:
        spark_con.close()
        duck_con.close()
        spark_session().stop()  # the driver's application ends before the cluster stops
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
