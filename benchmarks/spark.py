"""dpsql on Spark vs raw Spark SQL vs dpsql on DuckDB, on the same Parquet data, in one run.

    python -m benchmarks.spark                          # 10M rows, local[2], 3 timed runs each
    python -m benchmarks.spark --rows 100000000 --master local[2]
    python -m benchmarks.spark --rows 1000000 --repeat 5 --groups 51

The data: ``--rows`` establishments (id, state among ``--groups`` values, a heavy-tailed
payroll) written to one Parquet file by DuckDB. The analyst's query, ``SELECT state, COUNT(*),
SUM(payann) FROM establishments GROUP BY state``, is timed three ways after one warm-up each
(which also pays dpsql's once-per-process unit check): raw Spark SQL on the same view,
``dpsql.connect(engine="spark")`` (decide, the exact query on Spark, noise, the durable charge,
finish) and ``dpsql.connect()`` over the same Parquet with DuckDB. The ratio dpsql-on-Spark /
raw Spark is the figure that matters (docs/scale.md). The load average is printed before and
after: the figures are only as good as the machine was quiet.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
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


def timed(fn, repeat: int) -> float:
    fn()  # warm-up: JIT, caches, the unit check
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--groups", type=int, default=51)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)

    import dpsql

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dpsql-bench-spark-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        policy = write_data(folder, args.rows, args.groups)
        written = time.perf_counter() - start
        spark_con = dpsql.connect(None, policy, engine="spark", spark_master=args.master, analyst="bench", reuse=False)
        duck_con = dpsql.connect(None, policy, engine="duckdb", analyst="bench", reuse=False)
        spark = spark_con.session.engine._spark  # the same session and view dpsql's engine uses
        raw = timed(lambda: spark.sql(QUERY).collect(), args.repeat)
        on_spark = timed(lambda: spark_con.cursor().execute(QUERY).fetchall(), args.repeat)
        on_duckdb = timed(lambda: duck_con.cursor().execute(QUERY).fetchall(), args.repeat)
        spark_con.close()
        duck_con.close()
    load_after = os.getloadavg()
    print(f"rows {args.rows:,}, groups {args.groups}, master {args.master}, median of {args.repeat} "
          f"(Parquet written in {written:.1f} s)")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}, cores {os.cpu_count()}")
    print("| engine | seconds | ratio to raw Spark |\n|---|---|---|")
    for name, t in (("raw Spark SQL", raw), ("dpsql on Spark", on_spark), ("dpsql on DuckDB", on_duckdb)):
        print(f"| {name} | {t:.3f} | {t / raw:.2f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
