"""Many groups (issue 34): dpsql against raw DuckDB's plain GROUP BY with 100k and 1M groups.

One table of ``--rows`` rows (default 10M), one row per unit, three keys:

* ``kpub``: 100,000 values, declared public (a keyset of 0..99,999): every group is returned;
* ``kpriv``: the same 100,000 values, private: GROUP BY goes through partition selection
  (~100 units a group at 10M rows, so nearly all are kept);
* ``kmil``: 1,000,000 values, private: 1M candidate groups of ~10 units, partition selection.

For each query the median of dpsql (``cursor.execute`` + ``fetchall``) over the median of raw
DuckDB running the same GROUP BY (``execute`` + ``fetchall``) on the same file, in one process,
runs interleaved. Answer reuse is off (``reuse=False``): every dpsql run draws fresh noise.

    python -m benchmarks.many_groups                     # 10M rows, 7 runs
    python -m benchmarks.many_groups --rows 1000000 --repeat 3 --profile

``--profile`` adds a cProfile of one dpsql run per query (top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

from .common import DATA_DIR, log, md_table, med, ms, rows_label

QUERIES = (
    ("100k groups, public keyset", "SELECT kpub, COUNT(*), SUM(v) FROM t GROUP BY kpub"),
    ("100k groups, partition selection", "SELECT kpriv, COUNT(*), SUM(v) FROM t GROUP BY kpriv"),
    ("1M candidate groups, selection", "SELECT kmil, COUNT(*) FROM t GROUP BY kmil"),
)


def ensure_table(rows: int, data_dir: Path) -> tuple[Path, Path]:
    """The database and its policy (built once; the keys are pseudo-random, fixed by a hash)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / f"many-groups-{rows}.duckdb"
    policy = data_dir / f"many-groups-{rows}.policy.toml"
    if not db.exists():
        log(f"  [build] {db.name}")
        tmp = db.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        con = duckdb.connect(str(tmp))
        con.execute(f"""CREATE TABLE t AS SELECT i AS id,
                        CAST(HASH(i, 1) % 100000 AS BIGINT) AS kpub,
                        CAST(HASH(i, 2) % 100000 AS BIGINT) AS kpriv,
                        CAST(HASH(i, 3) % 1000000 AS BIGINT) AS kmil,
                        CAST(HASH(i, 4) % 200 AS BIGINT) AS v
                        FROM range({rows}) r(i)""")
        for c in ("kpub", "kpriv", "kmil"):  # no NULL key, and none declared possible: no NULL group
            con.execute(f"ALTER TABLE t ALTER COLUMN {c} SET NOT NULL")
        con.close()
        tmp.rename(db)
    keyset = ", ".join(map(str, range(100_000)))
    policy.write_text(f"""[budget]
default_rho = 0.1
total_rho = 1000000000
total_delta = 0.5

[tables.t]
privacy_unit = "id"

[tables.t.measures]
v = {{ threshold = 100 }}

[tables.t.keys]
kpub = {{ keyset = [{keyset}] }}
kpriv = {{}}
kmil = {{}}
""")
    for p in data_dir.glob(f"many-groups-{rows}.ledger*"):
        p.unlink()
    return db, policy


def run(rows: int, data_dir: Path, repeat: int, profile: bool) -> list[dict[str, Any]]:
    import dpsql
    from dpsql.backends.duckdb import LOCKDOWN

    db, policy = ensure_table(rows, data_dir)
    con = dpsql.connect(str(db), str(policy), reuse=False)  # first: dpsql sets the file's settings
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    out = []
    for label, sql in QUERIES:
        def dp() -> int:
            c = con.cursor()
            c.execute(sql)
            return len(c.fetchall())

        def exact() -> int:
            return len(raw.execute(sql).fetchall())

        n_dp, n_raw = dp(), exact()  # warm-up (and the unit check, once)
        t_dp, t_raw = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            exact()
            t_raw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            dp()
            t_dp.append(time.perf_counter() - t0)
        r = {"query": label, "rows": rows, "groups raw": n_raw, "groups dpsql": n_dp,
             "raw ms": med(t_raw) * 1e3, "dpsql ms": med(t_dp) * 1e3, "ratio": med(t_dp) / med(t_raw)}
        log(f"  {label}: raw {ms(med(t_raw))} ms, dpsql {ms(med(t_dp))} ms, {r['ratio']:.2f}x "
            f"({n_dp} of {n_raw} groups)")
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            dp()
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
            log(s.getvalue())
        out.append(r)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)
    load = os.getloadavg()
    res = run(args.rows, args.data_dir, args.repeat, args.profile)
    load2 = os.getloadavg()
    print(f"{rows_label(args.rows)} rows, {args.repeat} interleaved runs, load {load[0]:.1f} before, "
          f"{load2[0]:.1f} after (1-min average, 2 cores)\n")
    print(md_table(["query", "groups (raw / dpsql)", "raw DuckDB ms", "dpsql ms", "dpsql / raw"],
                   [[r["query"], f"{r['groups raw']:,} / {r['groups dpsql']:,}", f"{r['raw ms']:.0f}",
                     f"{r['dpsql ms']:.0f}", f"{r['ratio']:.2f}×"] for r in res]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
