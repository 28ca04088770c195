"""Peak memory of a quantile grouped by a private key (issue 29, finding 10).

    python -m benchmarks.quantile_memory --groups 20000 --per-group 50

Builds (once, under benchmarks/data/, gitignored) a DuckDB file with ``groups`` values of a private key and
``per-group`` units each (so partition selection keeps every group), then answers
``SELECT k, MEDIAN(v) FROM t GROUP BY k`` in a fresh child process and prints that process's
peak resident set (Linux VmHWM, ``benchmarks.common.peak_rss_mib``), its outcome and its wall time;
``--raw`` runs the exact query alone on DuckDB instead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from .common import DATA_DIR

POLICY = """
[budget]
default_rho = 0.1
total_rho = 1000
total_delta = 0.01
ledger = "quantile.ledger.sqlite"   # beside the policy, in benchmarks/data/ (gitignored)

[tables.t]
privacy_unit = "id"

[tables.t.measures]
v = {{ threshold = 10000, range = [0, 100000000], grid = "log" }}

[tables.t.keys]
k = {{}}
"""

CHILD = """
import json, sys, time
from benchmarks.common import peak_rss_mib
import dpsql
db, policy, sql, raw = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
t = time.perf_counter()
if raw:
    import duckdb
    from dpsql.session import Session
    s = Session(db, policy, analyst="bench")
    plan, query = s._planned(sql, None)
    s.close()
    con = duckdb.connect(db, read_only=True)
    n = len(con.execute(query).fetchall())
    outcome = f"{n} exact rows"
else:
    con = dpsql.connect(db, policy=policy, analyst="bench", reuse=False)
    try:
        cur = con.cursor()
        cur.execute(sql)
        outcome = f"{len(cur.fetchall())} rows"
    except dpsql.Error as exc:
        outcome = f"{getattr(exc, 'code', '?')}: {exc}"
print(json.dumps({"peak_rss_mib": round(peak_rss_mib()), "seconds": round(time.perf_counter() - t, 2), "outcome": outcome}))
"""


def ensure_db(groups: int, per_group: int, data_dir: Path) -> tuple[Path, Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / f"quantile_{groups}x{per_group}.duckdb"
    policy = data_dir / f"quantile_{groups}x{per_group}.toml"
    policy.write_text(POLICY.format())
    if not db.exists():
        import duckdb

        con = duckdb.connect(str(db))
        con.execute(f"""CREATE TABLE t AS SELECT i AS id, 'g' || (i % {groups}) AS k,
                        CAST(1000 + (hash(i) % 1000000) AS BIGINT) AS v
                        FROM range({groups * per_group}) r(i)""")
        con.close()
    return db, policy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=20_000)
    p.add_argument("--per-group", type=int, default=50)
    p.add_argument("--raw", action="store_true", help="the exact query alone, on a plain DuckDB connection")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--sql", default="SELECT k, MEDIAN(v) FROM t GROUP BY k")
    args = p.parse_args(argv)
    db, policy = ensure_db(args.groups, args.per_group, args.data_dir)
    out = subprocess.run([sys.executable, "-c", CHILD, str(db), str(policy), args.sql, "1" if args.raw else "0"],
                         capture_output=True, text=True)
    if out.returncode:
        print(json.dumps({"failed": out.returncode, "stderr": out.stderr[-2000:]}))
        return 1
    print(json.dumps({"groups": args.groups, "per_group": args.per_group, "raw": args.raw, **json.loads(out.stdout.strip().splitlines()[-1])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
