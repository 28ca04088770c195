"""``--engine {duckdb,spark}`` and ``--spark-master URL`` of ``dpsql query|explain|serve|demo``.

The options set ``DPSQL_ENGINE`` / ``DPSQL_SPARK_MASTER`` for this process, the defaults every
:class:`dpsql.session.Session` reads (the wire server opens one per client), so the commands
need no other change. With ``--engine spark`` and no database, the data is the Parquet files the
policy names (docs/policy.md), or the demo tables exported to Parquet (docs/scale.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=("duckdb", "spark"), help="execution engine (default duckdb; spark runs the "
                   "exact query on Apache Spark over the policy's Parquet files: pip install 'dpsql[spark]')")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (local[2], spark://host:7077, sc://host for "
                   "Spark Connect; default SPARK_REMOTE, else spark.master, else local[*])")


def apply(args: argparse.Namespace) -> None:
    """Make the chosen engine the default of every session this process opens."""
    if getattr(args, "engine", None):
        os.environ["DPSQL_ENGINE"] = args.engine
    if getattr(args, "spark_master", None):
        os.environ["DPSQL_SPARK_MASTER"] = args.spark_master
        os.environ.setdefault("DPSQL_ENGINE", "spark")


def demo_source(db: Path, policy: Path) -> tuple[Path | None, Path]:
    """The demo's (database, policy), or with the Spark engine (None, the policy of its Parquet export)."""
    if os.environ.get("DPSQL_ENGINE") != "spark":
        return db, policy
    from dpsql.demo_db import ensure_demo_parquet

    return None, ensure_demo_parquet(home=db.parent)[1]
