"""The demo tables as Parquet: the data a Spark cluster (or DuckDB over Parquet) reads.

:func:`ensure_demo_parquet` writes every table of the demo database to
``<home>/demo-parquet/<table>.parquet`` on first use (again when the database is rebuilt) and
a copy of the demo policy whose tables name those files (``parquet = "..."``, docs/policy.md).
The same rows, so an answer over the Parquet files is the answer over the DuckDB file.
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

import duckdb

from dpsql.demo_db.build import POLICY_PATH, ensure_demo


def policy_with_parquet(text: str, folder: str) -> str:
    """The policy ``text`` with ``parquet = "<folder>/<table>.parquet"`` in each table's section."""
    return re.sub(r"^\[(tables|public_tables)\.(\w+)\]\s*$",
                  lambda m: f'{m.group(0)}\nparquet = "{folder}/{m.group(2).lower()}.parquet"',
                  text, flags=re.MULTILINE)


def ensure_demo_parquet(home: str | Path | None = None) -> tuple[Path, Path]:
    """(folder of Parquet files, policy naming them) of the demo, written when missing or older
    than the demo database."""
    db, policy = ensure_demo(home=home)
    folder = db.with_name("demo-parquet")
    pq_policy = db.with_name("demo-parquet.policy.toml")
    stamp = folder / ".built-from"
    want = f"{db.stat().st_size}:{db.stat().st_mtime_ns}"
    with open(db.with_name("demo-parquet.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.is_file() and stamp.read_text() == want):
            folder.mkdir(exist_ok=True)
            con = duckdb.connect(str(db), read_only=True)
            try:
                tables = [r[0] for r in con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary "
                    "AND NOT starts_with(table_name, '_')").fetchall()]
                for table in tables:
                    target = folder / f"{table.lower()}.parquet"
                    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
                    con.execute(f"COPY \"{table}\" TO '{tmp}' (FORMAT parquet)")
                    os.replace(tmp, target)
            finally:
                con.close()
            stamp.write_text(want)
        tmp = pq_policy.with_name(f".{pq_policy.name}.tmp-{os.getpid()}")
        tmp.write_text(policy_with_parquet(POLICY_PATH.read_text(), folder.name))
        os.replace(tmp, pq_policy)
    del policy
    return folder, pq_policy
