"""The dpsql demo database: a deterministic synthetic DuckDB file and its policy."""

from dpsql.demo_db.build import GENERATOR_VERSION, POLICY_PATH, build_database, ensure_demo
from dpsql.demo_db.parquet import ensure_demo_parquet

__all__ = ["GENERATOR_VERSION", "POLICY_PATH", "build_database", "ensure_demo", "ensure_demo_parquet"]
