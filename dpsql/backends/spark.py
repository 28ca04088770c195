"""The Spark engine (:class:`dpsql.backends.base.Engine`): the only module that imports pyspark.

The policy names a Parquet location per table (``parquet = "..."``: a local path, ``hdfs://``,
``s3a://``); each becomes a temporary view of this engine's own Spark session, and only
dpsql's generated SQL runs there: the exact query (DuckDB dialect, made Spark SQL that is
total and gives DuckDB's values by :mod:`dpsql.backends.spark_sql`), the unit check (unless
DuckDB runs it over the very local files Spark reads: :meth:`SparkEngine.local_files`), the
values of public tables. Analyst SQL never reaches Spark; it is parsed, validated and
rewritten by dpsql first, and names only the registered views. As defence in depth the
session runs with ``spark.sql.runSQLOnFiles = false`` (no ``parquet.`/path```), ANSI mode off
(no row can make a cast or an overflow raise, docs/scale.md), and Spark's logs off: Spark's
error messages and logs can quote rows, so they never reach the analyst (fixed text here).

Refusals are decided before Spark reads a row: the same DuckDB SQL is checked on an empty
DuckDB twin of the schema (:func:`dpsql.backends.duckdb_local.schema_twin`), and its Spark form
is analysed (bound, not run). Only per-group aggregates come back; selection, noise, the
ledger and the finish stage stay local.
"""

from __future__ import annotations

import os
import tempfile
import threading
import uuid
import warnings
from decimal import Decimal
from pathlib import Path
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from dpsql.backends.files import file_stamps
from dpsql.backends.duckdb import parquet_units_unique
from dpsql.backends.duckdb_local import catalog_of, schema_twin, twin_check, twin_describe
from dpsql.backends.interrupt import StickyInterrupt
from dpsql.backends.spark_dates import UnsupportedOnSpark
from dpsql.backends.spark_sql import to_spark
from dpsql.errors import DatabaseFileError, EngineUnavailable, QueryRefused

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
try:
    from pyspark.sql import SparkSession
except ImportError:  # the optional extra is not installed
    SparkSession = None
else:
    # pyspark 4 logs a failed query's message (which can quote rows) to stderr through these
    # Python loggers, whatever the caller does with the exception: switched off.
    from pyspark.logger import PySparkLogger

    for _name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(_name).disabled = True

#: session settings: ANSI off (no row makes a cast or overflow raise; spark_sql.py keeps the
#: values DuckDB's), no SQL directly on files, UTC, no UI
#: what the totality of the exact query on Spark rests on: ANSI off (no cast or overflow raises);
#: a date text that does not parse is NULL, not Spark 3's per-row SparkUpgradeException
TOTAL_CONF = {"spark.sql.ansi.enabled": "false", "spark.sql.legacy.timeParserPolicy": "CORRECTED"}
SESSION_CONF = {**TOTAL_CONF, "spark.sql.runSQLOnFiles": "false",
                "spark.sql.session.timeZone": "UTC"}
CATALOG_MEMORY = 1 << 30
_LOG4J = "rootLogger.level = off\nrootLogger.appenderRef.stderr.ref = console\n" \
         "appender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_ERR\n" \
         "appender.console.layout.type = PatternLayout\n"
_TYPES = {"tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INTEGER", "bigint": "BIGINT", "float": "FLOAT",
          "double": "DOUBLE", "string": "VARCHAR", "boolean": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP",
          "timestamp_ntz": "TIMESTAMP", "binary": "BLOB"}
_BASE: list[Any] = []  # the process's one SparkSession; each engine works in its own newSession()
_BASE_LOCK = threading.Lock()
_UNIQUE_UNITS: dict[tuple[Any, ...], bool] = {}


def classic_master(master: str | None, environ: Mapping[str, str]) -> str | None:
    """The master a classic session is built on: ``--spark-master`` when given (it used to be
    overridden by a later ``spark.master`` default, so ``spark://`` ran on ``local[*]``), else
    $SPARK_MASTER, else none when spark-submit's arguments name one, else ``local[*]``."""
    if master:
        return master
    if environ.get("SPARK_MASTER"):
        return environ["SPARK_MASTER"]
    return None if "spark.master" in environ.get("PYSPARK_SUBMIT_ARGS", "") else "local[*]"


def spark_session(master: str | None = None) -> Any:
    """The process's Spark session: Spark Connect when ``master`` is ``sc://...`` (or, with no
    master, SPARK_REMOTE is set), else classic on ``master`` (default: spark.master from the
    Spark configuration, else ``local[*]``), with Spark's logs off from the start."""
    if SparkSession is None:
        raise EngineUnavailable("the Spark engine needs pyspark, which is not installed",
                                hint="pip install 'dpsql[spark]' (pyspark 4 and a Java 17 runtime).")
    with _BASE_LOCK:
        if _BASE:
            return _BASE[0]
        remote = master if master and master.startswith("sc://") else (None if master else os.environ.get("SPARK_REMOTE"))
        try:
            builder = SparkSession.builder.appName("dpsql")
            if remote:
                builder = builder.remote(remote)
            else:
                log4j = Path(tempfile.mkdtemp(prefix="dpsql-spark-")) / "log4j2.properties"
                log4j.write_text(_LOG4J)
                builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}") \
                    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                chosen = classic_master(master, os.environ)
                if chosen:
                    builder = builder.master(chosen)
                if (chosen or "").startswith("local"):  # one machine: a few partitions, not 200
                    builder = builder.config("spark.sql.shuffle.partitions", "4")
            for key, value in SESSION_CONF.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            if not remote:
                spark.sparkContext.setLogLevel("OFF")
        except Exception as exc:  # noqa: BLE001 - Java missing, a master that does not answer
            raise EngineUnavailable(f"the Spark session did not start ({type(exc).__name__})",
                                    hint="check --spark-master / SPARK_REMOTE and that Java 17 is installed.") from None
        _BASE.append(spark)
        return spark


def _duckdb_type(spark_type: str) -> str:
    if spark_type.startswith("decimal"):
        return spark_type.upper()
    return _TYPES.get(spark_type, spark_type.upper())


def _value(v: Any) -> Any:
    """Spark's DECIMAL(38,0) sums as Python ints, as DuckDB gives its HUGEINT sums."""
    if isinstance(v, Decimal) and v.is_finite() and v == v.to_integral_value() and v.as_tuple().exponent >= 0:
        return int(v)
    return v


class _Canceller:
    """What :class:`StickyInterrupt` calls: cancels this engine's running Spark jobs by tag."""

    def __init__(self, spark: Any, tag: str) -> None:
        self._spark, self._tag = spark, tag

    def interrupt(self) -> None:
        try:
            self._spark.interruptTag(self._tag)
        except Exception:  # noqa: BLE001 - nothing running, or the session is gone
            pass


class SparkEngine:
    """The policy's Parquet tables on Spark, as temporary views of a session of their own."""

    #: many rows per unit (``max_groups``) is not answered on Spark yet: refused when the session opens
    many_rows = False

    def __init__(self, path: str | Path, parquet: dict[str, str], master: str | None = None) -> None:
        self.path = Path(path)
        self._parquet = dict(parquet)
        base = spark_session(master)
        try:
            self._spark = base.newSession()
        except Exception:  # noqa: BLE001 - Spark Connect has one session per client
            self._spark = base
        for key, value in SESSION_CONF.items():
            self._spark.conf.set(key, value)
        kept = [k for k, v in TOTAL_CONF.items() if str(self._spark.conf.get(k)).lower() != v.lower()]
        if kept:  # e.g. a Spark Connect server that pins ANSI on: casts and overflows would raise per row
            raise EngineUnavailable(f"the Spark session keeps its own {', '.join(kept)}: dpsql's exact query is total on "
                                    "Spark only with " + ", ".join(f"{k} = {TOTAL_CONF[k]}" for k in kept),
                                    hint="let dpsql's session set it (do not pin it on the Spark Connect server).")
        self._tag = f"dpsql-{uuid.uuid4().hex[:12]}"
        self._interrupt = StickyInterrupt()
        self._cancel = _Canceller(self._spark, self._tag)
        self._types: dict[str, dict[str, str]] = {}
        self._frames: dict[str, Any] = {}
        for table, where in self._parquet.items():
            try:
                frame = self._spark.read.parquet(where)
                frame.createOrReplaceTempView(table)
                self._frames[table] = frame
                self._types[table] = {f.name.lower(): _duckdb_type(f.dataType.simpleString()) for f in frame.schema.fields}
            except Exception as exc:  # noqa: BLE001 - a missing file, not Parquet, no access
                raise DatabaseFileError(f"Spark cannot read the Parquet data of table {table} at {where} "
                                        f"({type(exc).__name__})",
                                        hint="check the table's parquet = path in the policy.") from None
        self._ddl = [f'CREATE TABLE "{t}" ({", ".join(f"{chr(34)}{c}{chr(34)} {ty}" for c, ty in cols.items())})'
                     for t, cols in self._types.items()]
        try:
            self._twin = schema_twin(self._ddl)
        except Exception as exc:  # noqa: BLE001 - duckdb.Error: a type DuckDB cannot create
            raise DatabaseFileError(f"cannot mirror the Parquet schema to check queries before they run ({exc})",
                                    hint="dpsql supports columns of integer, decimal, float, text, boolean, date "
                                         "and timestamp types.") from None
        self._checked: set[str] = set()

    def close(self) -> None:
        for table in self._parquet:
            try:
                self._spark.catalog.dropTempView(table)
            except Exception:  # noqa: BLE001 - the session is gone already
                pass
        self._twin.close()

    def schema(self, tables: list[str]) -> dict[str, dict[str, str]]:
        return {t: dict(self._types.get(t, {})) for t in tables}

    def not_null_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Parquet read by Spark declares every column nullable: no NOT NULL facts."""
        return {t: set() for t in tables}

    def nonnegative_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Spark has no unsigned types and Parquet no CHECK constraints: no such facts."""
        return {t: set() for t in tables}

    def units_unique(self, table: str, unit: str) -> bool:
        """One scan (pass/fail only), remembered per process while local files are unchanged: by
        DuckDB over the very files Spark reads when this machine's files are what every executor
        reads (:meth:`local_files`), in seconds where Spark took minutes; else on Spark."""
        where = self._parquet[table]
        stamp: tuple[Any, ...] = (where,)
        if "://" not in where and Path(where).exists():  # a file, or every file below a folder
            stamp = (where, *file_stamps([Path(where)]))
        key = (*stamp, table, unit)
        if key not in _UNIQUE_UNITS:
            files = self.local_files(table)
            verdict = None if files is None else parquet_units_unique(files, unit, self._types[table].get(unit.lower(), ""))
            _UNIQUE_UNITS[key] = self.units_unique_on_spark(table, unit) if verdict is None else verdict
        return _UNIQUE_UNITS[key]

    def units_unique_on_spark(self, table: str, unit: str) -> bool:
        """The unit check on Spark: no NULL unit, no repeated one (DISTINCT: -0.0 is 0.0, NaN is NaN)."""
        q = f"SELECT COUNT(*) = COUNT(DISTINCT `{unit}`) AND COUNT(`{unit}`) = COUNT(*) FROM `{table}`"
        return bool(self._collect(q)[0][0])

    def local_files(self, table: str) -> list[str] | None:
        """The paths of the files Spark reads for ``table`` (``DataFrame.inputFiles()``) when each
        is a ``file:`` URI and every executor reads this machine's files (a ``local`` master, or a
        standalone master on loopback); else None: HDFS, S3, Spark Connect (the server's files),
        a cluster on other hosts (its executors may hold other copies of a ``file:`` path)."""
        try:
            master = self._spark.sparkContext.master
            if not (master.startswith("local") or master.startswith("spark://")
                    and urlparse(master).hostname in ("127.0.0.1", "localhost", "::1")):
                return None
            uris = [urlparse(u) for u in self._frames[table].inputFiles()]
        except Exception:  # noqa: BLE001 - Spark Connect has no sparkContext; a master with several hosts
            return None
        if not uris or any(u.scheme != "file" or u.netloc not in ("", "localhost") for u in uris):
            return None
        return [unquote(u.path) for u in uris]

    def public_values(self, table: str, column: str) -> list[Any]:
        return [r[0] for r in self._collect(f"SELECT DISTINCT `{column}` FROM `{table}` WHERE `{column}` IS NOT NULL ORDER BY 1")]

    #: Spark's analysis is part of the check: passes are not remembered across processes
    check_identity = None

    engine_version = "spark"

    def catalog(self) -> None:
        """None: Spark's catalog is read from its session each time."""
        return None

    def adopt_catalog(self, catalog: dict[str, Any]) -> None:
        raise ValueError("Spark reads its catalog itself")

    def check(self, sql: str) -> None:
        """The DuckDB twin's check (the same refusals as the embedded engine), then Spark's
        analysis of the Spark form (binding only: no row is read)."""
        if sql in self._checked:
            return
        message = twin_check(self._twin.con, sql)
        if message is not None:
            raise QueryRefused(f"the rewritten query does not run on this schema, whatever the data: {message}",
                               code="DP120", hint="check the types in the query: compare text with text and numbers "
                                                  "with numbers, and use literals DuckDB can represent.")
        try:
            spark_sql = to_spark(sql, self._types, check=True)
        except UnsupportedOnSpark as exc:
            raise QueryRefused(f"{exc} is not supported on the Spark engine yet (it would not give DuckDB's values)",
                               code="DP120", hint="write it another way (another date function), or run it with the "
                                                  "DuckDB engine.") from None
        try:
            self._spark.sql(spark_sql).schema  # noqa: B018 - analysis binds the plan
        except Exception as exc:  # noqa: BLE001 - an AnalysisException: about the schema, not rows
            raise QueryRefused(f"the query does not run on Spark, whatever the data ({type(exc).__name__})",
                               code="DP120", hint="run it with the DuckDB engine, or simplify the expression.") from None
        if len(self._checked) > 1000:
            self._checked.clear()
        self._checked.add(sql)

    def describe(self, sql: str) -> list[str]:
        self.check(sql)
        return twin_describe(self._twin.con, sql)

    def public_catalog(self, tables: list[str], public: list[str], name: str) -> Any:
        """The schema of ``tables`` with no row and the rows of the ``public`` ones, collected
        from Spark into a locked-down in-memory DuckDB (public data only)."""
        wanted = {t.lower() for t in tables}
        ddl = [d for t, d in zip(self._types, self._ddl) if t in wanted]
        rows = {t: self._collect(f"SELECT * FROM `{t}`") for t in public}
        return catalog_of(name, ddl, rows, CATALOG_MEMORY)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """The exact query (dpsql's DuckDB SQL) on Spark; exact rows that never leave dpsql."""
        try:
            spark_sql = to_spark(sql, self._types)
        except Exception:  # noqa: BLE001 - sqlglot cannot read or write it: nothing ran
            raise QueryRefused("dpsql cannot translate the rewritten query to Spark SQL", code="DP120",
                               hint="run it with the DuckDB engine.") from None
        return self._collect(spark_sql)

    def run_arrays(self, sql: str) -> list[tuple[Any, ...]]:
        """:meth:`run`, lists as numpy arrays (a quantile's values: quantiles are refused on Spark)."""
        import numpy as np

        return [tuple(np.array(v, dtype=np.int64) if isinstance(v, list) else v for v in row) for row in self.run(sql)]

    def spark_sql(self, sql: str) -> str:
        """The Spark SQL that :meth:`run` sends for ``sql`` (for EXPLAIN and the benchmark)."""
        return to_spark(sql, self._types)

    def _collect(self, spark_sql: str) -> list[tuple[Any, ...]]:
        finished = self._interrupt.start()  # raises InterruptedBeforeStart if one is pending
        try:
            self._spark.addTag(self._tag)
            try:
                rows = self._spark.sql(spark_sql).collect()
            finally:
                self._spark.removeTag(self._tag)
            return [tuple(_value(v) for v in row) for row in rows]
        except Exception:  # noqa: BLE001 - Spark's messages can quote rows: never passed on
            if self._interrupt.clear():
                raise KeyboardInterrupt from None
            raise QueryRefused("the Spark engine could not run the rewritten query; its message is withheld because "
                               "it could contain private values", code="DP120",
                               hint="run it with the DuckDB engine to see whether the query itself is at fault.") from None
        finally:
            self._interrupt.end(finished)

    def interrupt(self) -> None:
        self._interrupt.request(self._cancel)

    def clear_interrupt(self) -> bool:
        return self._interrupt.clear()

    @property
    def running(self) -> bool:
        return self._interrupt.running
