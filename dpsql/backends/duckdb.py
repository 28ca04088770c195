"""The DuckDB engine (:class:`dpsql.backends.base.Engine`): the only module that imports duckdb.

Runs the rewritten SQL on a locked-down, read-only connection (DESIGN.md "Must never
happen": no file access, no extension loading, configuration locked), and runs the finish
stage on a separate in-memory connection that holds nothing but noisy values.

DuckDB's own error messages are never passed on: they can quote values from the rows they
failed on ("Could not convert string 'CA' ..."). Errors are translated here, and only here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import duckdb

from dpsql.backends.base import CatalogQueryError, memory_budget
from dpsql.backends.columns import Columns, assemble, columns_sql
from dpsql.backends.check_bounds import bounded_below_by_zero
from dpsql.backends import duckdb_local
from dpsql.backends.files import file_stamps
from dpsql.backends.duckdb_arrays import fetch_arrays
from dpsql.backends import duckdb_units
from dpsql.backends.duckdb_units import parquet_units_unique  # noqa: F401 - re-exported (backends/spark.py)
from dpsql.backends.duckdb_local import DuckDBCatalog, DuckDBFinisher, Twin, catalog_of, schema_twin  # noqa: F401 - re-exported
from dpsql.backends.interrupt import StickyInterrupt
from dpsql.errors import DatabaseFileError, QueryRefused

#: the data file's configuration (one per file and process in DuckDB): the lockdown and the public
#: memory a query may take (pipeline/memory.py); beyond it DuckDB spills beside the file, and what
#: still cannot run fails after the read, charged, with fixed text (DP901).
LOCKDOWN = {**duckdb_local.LOCKDOWN, "memory_limit": f"{memory_budget() >> 20}MiB"}
#: memory a public catalog may use beyond what its tables hold (bytes)
CATALOG_MEMORY = 1 << 30
#: ... and at least this much under a smaller memory_limit: PostgreSQL's catalog emulation is built in it
CATALOG_FLOOR = 64 << 20
#: (file, size, mtime, [its WAL's,] table, unit) -> whether the unit column is unique, for this process.
_UNIQUE_UNITS: dict[tuple[Any, ...], bool] = {}

_UNSIGNED = {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}


def _parquet_views(parquet: dict[str, str], threads: int | None, memory_limit: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per table over its Parquet file(s), then locked down:
    ``allowed_paths`` / ``allowed_directories`` name exactly the policy's files, external access
    is off and the configuration locked, so SQL run here reads those files and no other path
    (checked on DuckDB 2.0: read_parquet / read_csv of another file, COPY, ATTACH fail)."""
    files, folders = [], []
    for table, where in parquet.items():
        if "://" in where:
            raise DatabaseFileError(f"table {table}: DuckDB reads local Parquet files only, not {where}",
                                    hint="run with --engine spark for hdfs:// or s3a:// data.")
        path = Path(where)
        if path.is_dir():
            folders.append(str(path))
        elif path.is_file():
            files.append(str(path))
        else:  # a glob: its folder
            folders.append(str(path.parent))
    con = duckdb.connect(":memory:")
    try:
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute("SET memory_limit = '%s'" % (f"{int(memory_limit)}B" if memory_limit else LOCKDOWN["memory_limit"]))
        con.execute(f"SET allowed_paths = {files!r}")
        con.execute(f"SET allowed_directories = {folders!r}")
        for setting, value in duckdb_local.LOCKDOWN.items():
            if setting != "lock_configuration":
                con.execute(f"SET {setting} = {str(value).lower()}")
        for table, where in parquet.items():
            source = f"{where}/**/*.parquet" if Path(where).is_dir() else where
            con.execute(f"CREATE VIEW \"{table}\" AS SELECT * FROM read_parquet('{_sq(source)}')")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as exc:
        con.close()
        raise DatabaseFileError(f"cannot read the policy's Parquet files ({type(exc).__name__})",
                                hint="is every parquet = path of the policy a readable Parquet file?") from None
    return con


def _sq(text: str) -> str:
    return text.replace("'", "''")


class DuckDBEngine:
    """A read-only DuckDB database file, opened so that only the plan's SQL can run; or, with
    ``parquet`` (table -> local Parquet path, from the policy), an in-memory DuckDB whose views
    read those files and nothing else (``path`` is then the policy file)."""

    def __init__(self, path: str | Path, threads: int | None = None, parquet: dict[str, str] | None = None,
                 memory_limit: int | None = None) -> None:
        self.path = Path(path)
        self.memory_limit = memory_limit
        self._parquet = dict(parquet or {})
        self._interrupt = StickyInterrupt()
        self._twin: Twin | None = None  # the empty schema twin (check), shared in the process
        self._checked: set[str] = set()  # this session's (a process-wide set would tell, by timing, what others ran)
        self._column_rows: list[tuple[str, str, str, bool]] | None = None  # _columns(), read once
        self._constraint_rows: list[tuple[str, str, str | None, list[str]]] | None = None
        self._ddl_rows: list[tuple[str, str]] | None = None
        self._identity: str | None = None
        self._types: dict[str, tuple[list[str], list[str]]] = {}  # exact SQL -> its result's names, types
        if self._parquet:
            self._con = _parquet_views(self._parquet, threads, memory_limit)
            return
        if not self.path.is_file():
            raise DatabaseFileError(f"database file {self.path} does not exist",
                                    hint="run `dpsql demo` to build the demo database, or pass --db PATH.")
        config: dict[str, Any] = dict(LOCKDOWN)
        if threads:
            config["threads"] = threads
        if memory_limit:
            config["memory_limit"] = f"{int(memory_limit)}B"
        try:
            self._con = duckdb.connect(str(self.path), read_only=True, config=config)
        except duckdb.ConnectionException:
            # DuckDB shares one instance per file and process, with one configuration.
            raise DatabaseFileError(f"database file {self.path} is already open in this process with another "
                                    "threads or memory_limit setting", hint="open every connection to one file in a "
                                    "process with the same threads= and memory_limit= (or none).") from None
        except duckdb.Error as exc:
            raise DatabaseFileError(f"cannot open database file {self.path} read-only ({type(exc).__name__})",
                                    hint="is it a DuckDB file, and is no other process writing to it?") from None

    def close(self) -> None:
        self._con.close()
        if self._twin is not None:
            self._twin.close()

    def _columns(self) -> list[tuple[str, str, str, bool]]:
        """(table, column, type, nullable) of every column in schema main (names lower-cased), in
        table and column order: the catalog read once for :meth:`schema`, :meth:`not_null_columns`
        and :meth:`nonnegative_columns` (``information_schema.columns`` is a view of
        ``duckdb_columns()``; three reads of it were ~10-20 ms of every session's opening). The
        file is open read-only and no process can write it meanwhile, so the catalog cannot change."""
        if self._column_rows is None:
            self._column_rows = self._con.execute(
                "SELECT lower(table_name), lower(column_name), data_type, is_nullable FROM duckdb_columns() "
                "WHERE schema_name = 'main' ORDER BY table_name, column_index").fetchall()
        return self._column_rows

    def _constraints(self) -> list[tuple[str, str, str | None, list[str]]]:
        """(table, constraint type, CHECK expression, column names) of every constraint in schema
        main (table names lower-cased), read once like :meth:`_columns`."""
        if self._constraint_rows is None:
            self._constraint_rows = self._con.execute(
                "SELECT lower(table_name), constraint_type, expression, constraint_column_names "
                "FROM duckdb_constraints() WHERE schema_name = 'main'").fetchall()
        return self._constraint_rows

    def schema(self, tables: list[str]) -> dict[str, dict[str, str]]:
        """Column names and types of the given tables (names lower-cased). Reads the catalog only."""
        out: dict[str, dict[str, str]] = {t: {} for t in tables}
        for table, column, dtype, _ in self._columns():
            if table in out:
                out[table][column] = dtype
        return out

    def not_null_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Columns declared NOT NULL in the schema (a schema fact, not a look at the rows)."""
        out: dict[str, set[str]] = {t: set() for t in tables}
        for table, column, _, nullable in self._columns():
            if table in out and not nullable:
                out[table].add(column)
        return out

    def nonnegative_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Columns the schema says cannot be negative: unsigned integer types, and columns a
        CHECK constraint bounds below by zero (``CHECK (x >= 0)``, ``CHECK (0 <= x AND x < 100)``).
        A schema fact, read from the catalog; only ever used to post-process noisy values."""
        out: dict[str, set[str]] = {t: set() for t in tables}
        for table, column, dtype, _ in self._columns():
            if table in out and dtype.upper() in _UNSIGNED:
                out[table].add(column)
        for table, kind, expression, _ in self._constraints():
            if table in out and kind == "CHECK":
                out[table] |= bounded_below_by_zero(expression or "")
        return out

    def units_unique(self, table: str, unit: str) -> bool:
        """Whether the privacy-unit column identifies one row (a configuration check of the
        data owner's policy; the answer is never shown to analysts beyond pass/fail).

        A PRIMARY KEY (or UNIQUE and NOT NULL) on the column proves it from the catalog;
        otherwise one scan, remembered per process for this file as long as it is unchanged.
        """
        kinds = {kind for t, kind, _, columns in self._constraints()
                 if t == table and len(columns) == 1 and columns[0].lower() == unit}
        if "PRIMARY KEY" in kinds or {"UNIQUE", "NOT NULL"} <= kinds:
            return True
        # the WAL too: rows inserted and not yet checkpointed are there, and a reader replays them
        files = [self.path, Path(f"{self.path}.wal")] if not self._parquet else [Path(p) for p in self._parquet.values()]
        key = (*file_stamps(files), table, unit)
        if key not in _UNIQUE_UNITS:
            _UNIQUE_UNITS[key] = self._units_unique_scan(table, unit)
        return _UNIQUE_UNITS[key]

    def _units_unique_scan(self, table: str, unit: str) -> bool:
        """No NULL unit and no repeated one, in passes over disjoint hash classes of the unit (a
        repeated value is always in one class), as few as fit in a share of the memory this
        DuckDB may use (:func:`duckdb_units.unique_in_passes`; docs/performance.md)."""
        return duckdb_units.unique_in_passes(self._run, f'"{table}"', unit, self.memory_limit or memory_budget())

    def public_values(self, table: str, column: str) -> list[Any]:
        """The distinct non-NULL values of a column of a table the policy declares public (its
        keyset when an analyst groups by it). Only ever called for public tables."""
        return [r[0] for r in self._run(f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL ORDER BY 1')]

    def public_catalog(self, tables: list[str], public: list[str], name: str) -> DuckDBCatalog:
        """An in-memory database named ``name``: the DDL of ``tables`` (no row) and the rows of
        the ``public`` ones, then locked down (no file, no extension, no setting change, no
        server path in its settings: :func:`dpsql.backends.duckdb_local.catalog_of`)."""
        wanted = {t.lower() for t in tables}
        ddl = [d for table, d in self._ddl() if table in wanted]
        rows = {table: self._con.execute(f'SELECT * FROM "{table}"').fetchall() for table in public}
        try:
            return catalog_of(name, ddl, rows, min(CATALOG_MEMORY, max(CATALOG_FLOOR, self.memory_limit or CATALOG_MEMORY)))
        except CatalogQueryError as exc:
            raise DatabaseFileError(f"{exc} ({self.path})") from None

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """Run a rewritten query; returns exact per-group rows that must never leave the engine."""
        return self._run(sql)

    def run_arrays(self, sql: str) -> list[tuple[Any, ...]]:
        """:meth:`run`, its integer LIST columns as numpy arrays (``duckdb_arrays.py``)."""
        return self._run(sql, arrays=True)

    def run_columns(self, sql: str) -> Columns | list[tuple[Any, ...]]:
        """:meth:`run`, the rows as exact columns (backends/columns.py) when every result type has an
        exact array form, else as rows. The types are bound first, before any row is read."""
        return self._run(sql, columns=True)

    def check(self, sql: str) -> None:
        """Bind and run ``sql`` on an empty twin of the schema — no row of any table — so that
        every error DuckDB raises whatever the data (a type that does not bind, a literal it
        cannot represent) is a refusal decided from public information, before a private row is
        read (DESIGN.md, "Phases of a query"). The twin holds no data, so DuckDB's message is
        safe to show; errors that only rows could trigger are excluded by the rewrite's
        allow-list (totality.py)."""
        if sql in self._checked:
            return
        twin = self._twin_connection()
        try:
            twin.execute(sql).fetchall()
        except duckdb.Error as exc:
            raise QueryRefused(f"the rewritten query does not run on this schema, whatever the data: {exc}",
                               code="DP120",
                               hint="check the types in the query: compare text with text and numbers with numbers, "
                                    "and use literals DuckDB can represent.") from None
        if len(self._checked) > 1000:
            self._checked.clear()
        self._checked.add(sql)

    @property
    def check_identity(self) -> str:
        """What decides :meth:`check`'s answer besides the SQL: DuckDB's version and the twin's
        DDL (read from the catalog), hashed (dpsql/records/check.py)."""
        if self._identity is None:
            self._identity = hashlib.sha256(repr(("duckdb", duckdb.__version__, self._ddl())).encode()).hexdigest()
        return self._identity

    engine_version = f"duckdb {duckdb.__version__}"

    def catalog(self) -> dict[str, Any] | None:
        """The catalog rows this engine reads (columns, constraints, the tables' DDL); None over
        Parquet views (no one file stands for them)."""
        if self._parquet:
            return None
        return {"columns": self._columns(), "constraints": self._constraints(), "ddl": self._ddl()}

    def adopt_catalog(self, catalog: dict[str, Any]) -> None:
        """Take the catalog rows a process read from this very file before (dpsql/records/catalog.py)."""
        columns = [(str(t), str(c), str(d), bool(n)) for t, c, d, n in catalog["columns"]]
        constraints = [(str(t), str(k), None if e is None else str(e), [str(c) for c in cols])
                       for t, k, e, cols in catalog["constraints"]]
        ddl = [(str(t), str(sql)) for t, sql in catalog["ddl"]]
        self._column_rows, self._constraint_rows, self._ddl_rows = columns, constraints, ddl

    def describe(self, sql: str) -> list[str]:
        """The DuckDB types of ``sql``'s result columns, bound on the empty twin (no row read)."""
        self.check(sql)
        cur = self._twin_connection().cursor()
        try:
            cur.execute(f"DESCRIBE {sql}")
            return [str(r[1]) for r in cur.fetchall()]
        finally:
            cur.close()

    def finisher(self) -> DuckDBFinisher:
        """The finish stage's DuckDB on a cursor of the empty schema twin's in-memory database,
        made when first needed: one DuckDB instance fewer to open and close per session (~20-30 ms
        of a fresh process). Neither holds a private row: the twin's tables stay empty, and the
        finisher registers each query's noisy cells on a cursor of its own, which the twin's
        checks cannot see. The lockdown is the instance's, so the cursor has it too. Closing the
        engine closes the finisher's connection with the twin."""
        return DuckDBFinisher(lambda: self._twin_connection().cursor())

    def _twin_connection(self) -> duckdb.DuckDBPyConnection:
        """This engine's cursor on the process's empty twin of the schema (:class:`~dpsql.backends.duckdb_local.Twin`)."""
        if self._twin is None:
            try:
                self._twin = schema_twin([ddl for _, ddl in self._ddl()])
            except duckdb.Error as exc:
                raise DatabaseFileError(f"cannot mirror the schema of {self.path} to check queries before they run "
                                        f"({type(exc).__name__}: {exc})",
                                        hint="dpsql supports tables whose column types DuckDB can create without "
                                             "user-defined types.") from None
        return self._twin.con

    def _ddl(self) -> list[tuple[str, str]]:
        """(lower-cased table name, CREATE TABLE statement) of every table (of every Parquet view:
        its columns and types, no constraint), read once."""
        if self._ddl_rows is None:
            self._ddl_rows = self._read_ddl()
        return self._ddl_rows

    def _read_ddl(self) -> list[tuple[str, str]]:
        if not self._parquet:
            return self._con.execute("SELECT lower(table_name), sql FROM duckdb_tables() "
                                     "WHERE schema_name = 'main' AND NOT temporary ORDER BY table_name").fetchall()
        rows = self._con.execute("SELECT lower(table_name), column_name, data_type FROM information_schema.columns "
                                 "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall()
        columns: dict[str, list[str]] = {}
        for table, column, dtype in rows:
            columns.setdefault(table, []).append(f'"{column}" {dtype}')
        return [(t, f'CREATE TABLE "{t}" ({", ".join(cols)})') for t, cols in sorted(columns.items())]

    def _run(self, sql: str, arrays: bool = False, columns: bool = False) -> Any:
        finished = self._interrupt.start()  # raises KeyboardInterrupt if one is pending
        try:
            if columns:
                if sql not in self._types:  # bound, not run: the same for every data
                    bound = self._con.execute(f"DESCRIBE {sql}").fetchall()
                    if len(self._types) >= 64:  # a salted query (sql/units.py) is new every time
                        self._types.clear()
                    self._types[sql] = [str(r[0]) for r in bound], [str(r[1]) for r in bound]
                names, types = self._types[sql]
                if (wrapped := columns_sql(sql, types)) is not None:
                    return assemble(names, types, self._con.execute(wrapped).fetchnumpy())
            cur = self._con.execute(sql)
            return fetch_arrays(cur) if arrays else cur.fetchall()
        except duckdb.InterruptException:
            self._interrupt.consume()
            raise KeyboardInterrupt from None
        except duckdb.Error as exc:
            # Withhold DuckDB's message: it may quote private values.
            raise QueryRefused(
                f"the database could not run the rewritten query ({type(exc).__name__}); its message is withheld "
                "because it could contain private values",
                code="DP120",
                hint="check the types in the query: compare text columns with text literals and numbers with numbers.",
            ) from None
        finally:
            self._interrupt.end(finished)

    def interrupt(self) -> None:
        """Stop the running query or, if none runs yet, the next one (thread-safe; for Ctrl-C).

        Sticky: the request stays until a run ends because of it, which then raises
        KeyboardInterrupt; a run that starts with a request pending raises at once without
        starting. So one call cancels exactly one run, even when it comes before DuckDB has
        started the query (DuckDB itself forgets an interrupt that arrives then). Whoever
        interrupts a statement calls :meth:`clear_interrupt` when the statement is over, so a
        request that came too late to stop anything does not cancel the next statement.
        """
        self._interrupt.request(self._con)

    def clear_interrupt(self) -> bool:
        """Drop a pending :meth:`interrupt`; returns whether one was pending."""
        return self._interrupt.clear()

    @property
    def running(self) -> bool:
        """Whether a query is running (from the moment it passed the pending check)."""
        return self._interrupt.running
