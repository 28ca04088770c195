"""The one seam to execution engines.

Everything dpsql asks of the engine that holds the private rows goes through the small
interface of :class:`dpsql.backends.base.Engine`: the catalog (``schema``, ``not_null_columns``),
the data owner's unit check (``units_unique``), values of public tables (``public_values``), the
check of a query on an empty twin of the schema (``check``), the run of the total exact query
(``run``; ``run_columns``, where an engine has it, the same rows as exact numpy columns:
:mod:`dpsql.backends.columns`) and cancellation (``interrupt``). :mod:`dpsql.backends.duckdb` implements it on a
locked-down DuckDB file (the embedded default) and is the only module of dpsql that imports
``duckdb`` (besides the demo builder); a second engine implements the same interface.

The finish stage (HAVING / ORDER BY / LIMIT on noisy values) always runs locally on DuckDB,
whatever engine held the rows: :func:`open_finisher`.

May import: :mod:`dpsql.errors`, and the engine's own library inside its module. Nothing here
knows about plans, policies, noise or the ledger: SQL text in, rows out.
"""

from __future__ import annotations

from pathlib import Path

from dpsql.errors import EngineUnavailable
from dpsql.backends.base import CatalogQueryError, Engine, Finisher, InterruptedBeforeStart, PublicCatalog
from dpsql.backends.columns import Columns

__all__ = ["CatalogQueryError", "Columns", "Engine", "Finisher", "InterruptedBeforeStart", "PublicCatalog", "open_engine", "open_finisher"]


#: the engines :func:`open_engine` knows
ENGINES = ("duckdb", "spark")


def open_engine(database: str | Path, *, threads: int | None = None, parquet: dict[str, str] | None = None,
                engine: str = "duckdb", spark_master: str | None = None, memory_limit: int | None = None) -> Engine:
    """The engine over the data: a DuckDB file opened read-only and locked down; with ``parquet``
    (table -> path, from the policy) DuckDB over those files, or Spark (``engine="spark"``,
    :mod:`dpsql.backends.spark`, on ``spark_master`` or the standard SPARK_REMOTE / spark.master).
    ``memory_limit`` (bytes): DuckDB's cap for the whole database instance (every session of the
    process on that file shares it) and for its public catalog twin."""
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r}", hint=f"use one of {', '.join(ENGINES)}.")
    if engine == "spark":
        if not parquet:
            raise EngineUnavailable("the Spark engine reads the Parquet files the policy names, and this policy names none",
                                    hint='add parquet = "PATH" to every table of the policy (docs/policy.md), '
                                         "or try `dpsql demo --engine spark`.")
        from dpsql.backends import spark  # imported on use: pyspark is an optional extra

        return spark.SparkEngine(database, parquet, master=spark_master)
    from dpsql.backends import duckdb  # imported on use: the seam itself does not need duckdb

    return duckdb.DuckDBEngine(database, threads=threads, parquet=parquet, memory_limit=memory_limit)


def open_finisher(engine: Engine | None = None) -> Finisher:
    """An in-memory DuckDB for the finish stage, locked down before it holds anything: with the
    DuckDB engine, the instance of its empty schema twin (:meth:`~dpsql.backends.duckdb.DuckDBEngine.finisher`,
    which holds no row either), else a fresh one."""
    from dpsql.backends import duckdb as duckdb_engine
    from dpsql.backends import duckdb_local

    if isinstance(engine, duckdb_engine.DuckDBEngine):
        return engine.finisher()
    return duckdb_local.DuckDBFinisher()
