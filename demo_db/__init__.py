"""The dpsql demo database: a deterministic synthetic DuckDB file and its policy."""

from dpsql.demo_db.build import GENERATOR_VERSION, POLICY_PATH, build_database, ensure_demo

__all__ = ["GENERATOR_VERSION", "POLICY_PATH", "build_database", "ensure_demo"]
