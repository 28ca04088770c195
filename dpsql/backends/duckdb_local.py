"""The in-memory DuckDBs that never hold a private row: the finish stage's (noisy, already
charged cells) and the wire server's public catalog twin (the schema with no row, the public
tables' rows), and the lockdown every DuckDB connection of dpsql gets (:mod:`dpsql.backends.duckdb`
opens the data file itself). Their own error messages may therefore be shown.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import duckdb

from dpsql.backends.base import CatalogQueryError
from dpsql.errors import DpsqlInternalError

if TYPE_CHECKING:  # on first use: a small answer is released without numpy (dpsql/pipeline/release.py)
    import numpy as np

LOCKDOWN = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "lock_configuration": True,
}


#: path settings of the public catalog twin, which clients can read: none names a server folder
CATALOG_PATHS = {"temp_directory": "", "secret_directory": "", "extension_directory": "/nonexistent"}

#: Rows one statement over public information may return (a cross join of reference tables
#: grows fast: the 51 states four times over are 6.8 million rows, kept in memory whole).
MAX_PUBLIC_ROWS = 1_000_000


def _lock_down(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Apply :data:`LOCKDOWN` to an in-memory connection (the finisher, the schema twin)."""
    for setting, value in LOCKDOWN.items():
        con.execute(f"SET {setting} = {str(value).lower()}")
    return con


class DuckDBCatalog:
    """:class:`dpsql.backends.base.PublicCatalog` on an in-memory DuckDB (a cursor per statement:
    many server connections share it). :meth:`view` gives each client its own handle, whose
    :meth:`interrupt` stops that client's statements only."""

    def __init__(self, con: duckdb.DuckDBPyConnection, name: str, owner: bool = True) -> None:
        self._con, self._name, self._owner = con, name, owner
        self._use = f'USE "{name}"'  # a cursor starts in DuckDB's default database
        self._lock = threading.Lock()
        self._running: set[duckdb.DuckDBPyConnection] = set()

    def view(self) -> DuckDBCatalog:
        """The same catalog, for one client: :meth:`close` leaves the database open."""
        return DuckDBCatalog(self._con, self._name, owner=False)

    def run(self, sql: str, parameters: list[Any] | None = None
            ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        cur = self._con.cursor()
        with self._lock:
            self._running.add(cur)
        try:
            cur.execute(self._use)
            # One query, read as DuckDB itself reads it: nothing any client sends may change the
            # twin that every connection shares (CREATE, INSERT, ATTACH, SET, several statements).
            statements = cur.extract_statements(sql)
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                raise CatalogQueryError("only one query (SELECT, VALUES, TABLE) runs on the catalog")
            cur.execute(sql, parameters or None)
            if cur.description is None:
                return [], [], []
            rows = cur.fetchmany(MAX_PUBLIC_ROWS + 1)
            if len(rows) > MAX_PUBLIC_ROWS:
                raise CatalogQueryError(f"the answer has more than {MAX_PUBLIC_ROWS:,} rows; "
                                        "add a LIMIT, a WHERE or an aggregate")
            return [d[0] for d in cur.description], [str(d[1]) for d in cur.description], rows
        except duckdb.InterruptException:
            raise KeyboardInterrupt("the statement read public information only; nothing was charged") from None
        except duckdb.Error as exc:
            # Nothing private is in this database, so its message is safe to show.
            raise CatalogQueryError(str(exc)) from None
        except (TypeError, ValueError, OverflowError) as exc:  # a parameter DuckDB cannot bind
            raise CatalogQueryError(f"{type(exc).__name__}: {exc}") from None
        finally:
            with self._lock:
                self._running.discard(cur)
            cur.close()

    def interrupt(self) -> None:
        """Stop the statements running through this handle (a statement not started yet is not
        stopped: call again while it runs)."""
        with self._lock:
            for cur in self._running:
                cur.interrupt()

    def define(self, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
        """Run one statement of the server's own set-up (DDL, or an INSERT of ``rows``): never a
        client's."""
        cur = self._con.cursor()
        try:
            cur.execute(self._use)
            if rows is None:
                cur.execute(sql)
            elif rows:
                one = literal_rows(sql, rows)
                if one is None:
                    cur.executemany(sql, rows)
                else:
                    cur.execute(one)
        except duckdb.Error as exc:
            raise CatalogQueryError(str(exc)) from None
        finally:
            cur.close()

    def close(self) -> None:
        if self._owner:
            self._con.close()


def literal_rows(sql: str, rows: list[tuple[Any, ...]]) -> str | None:
    """``INSERT … VALUES (?, …)`` of ``rows`` as one statement of literal rows, or None when a
    value is not plain (None, bool, int, a finite float, text, a list of text) or the template
    holds a quote. The server's set-up inserts each catalog table this way: ``executemany`` ran
    a statement a row (1.3 ms a row of pg_type), and one statement binding thousands of
    parameters is slower than DuckDB parsing their literals. The table's column types decide
    the stored values, as they do for bound parameters."""
    head, sep, tail = sql.partition(" VALUES ")
    parts = tail.split("?")
    if not sep or "'" in sql or len(parts) < 2:
        return None
    out = []
    for row in rows:
        if len(row) != len(parts) - 1:
            return None
        text = [parts[0]]
        for value, after in zip(row, parts[1:]):
            lit = _literal(value)
            if lit is None:
                return None
            text += [lit, after]
        out.append("".join(text))
    return f"{head} VALUES {', '.join(out)}"


def _literal(value: Any) -> str | None:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else None
    if type(value) is str:
        return "'" + value.replace("'", "''") + "'"
    if type(value) is list and all(type(v) is str for v in value):
        return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in value) + "]"
    return None


class DuckDBFinisher:
    """Runs the finish SELECT (HAVING, ORDER BY, LIMIT, arithmetic) over noisy cells.

    One in-memory DuckDB per session, locked down like the engine's connection before it sees
    anything; each query registers its noisy cells on a fresh cursor (a registered relation is
    visible to that cursor only) and closes it. Opening a connection per query cost 15-25 ms
    (docs/performance.md). ``connect`` makes the connection when it is first needed (default:
    a new locked-down in-memory DuckDB); the DuckDB engine passes a cursor of its empty schema
    twin's instance instead (:meth:`dpsql.backends.duckdb.DuckDBEngine.finisher`).
    """

    def __init__(self, connect: Callable[[], duckdb.DuckDBPyConnection] | None = None) -> None:
        self._connect = connect or (lambda: _lock_down(duckdb.connect(":memory:")))
        self._con: duckdb.DuckDBPyConnection | None = None

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = self._connect()
        return self._con

    def run(self, columns: dict[str, np.ndarray | list[Any]], sql: str) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        """Returns (column names, DuckDB type names, rows) of ``sql`` over ``__noisy``."""
        cur = self._connection().cursor()
        try:
            if columns:  # none: the query brings its own (empty) relation, to describe its result
                cur.register("__noisy", {name: _column_array(values) for name, values in columns.items()})
            cur.execute(sql)
            names = [d[0] for d in cur.description]
            types = [str(d[1]) for d in cur.description]
            return names, types, cur.fetchall()
        except duckdb.Error as exc:
            # Fixed text: DuckDB's message may quote a value, and here the values are noisy and
            # charged — an answer shows them with their receipt, an error must not (issue 29).
            raise DpsqlInternalError(f"post-processing of the noisy values failed ({type(exc).__name__}); "
                                     "this is a bug in dpsql") from None
        finally:
            cur.close()

    def image(self, columns: dict[str, list[Any]], sql: str) -> tuple[Any, ...]:
        """The values of a one-column query over public values (a GROUP BY expression over
        keysets), sorted, NULL last."""
        _, _, rows = self.run(columns, sql)
        values = [r[0] for r in rows]
        return tuple(sorted((v for v in values if v is not None), key=lambda v: (type(v).__name__, v))) + \
            ((None,) if None in values else ())

    def close(self) -> None:
        if self._con is not None:
            self._con.close()


def _column_array(values: np.ndarray | list[Any]) -> np.ndarray:
    import numpy as np

    if isinstance(values, np.ndarray):
        return values
    kinds = set(map(type, values))
    if values and kinds == {int}:  # ints only (a bool's type is bool)
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:  # beyond int64: DuckDB takes them as Python objects
            pass
    if values and kinds == {float}:  # a small answer's noisy values, σ and margins (release.py)
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)  # strings stay VARCHAR (a str array would become an ENUM)


class Twin:
    """One user's handle on an empty schema twin: a cursor (``con``) of an in-memory DuckDB that
    holds the tables of a DDL and no row, locked down. Twins are shared in the process, one
    instance per schema (:func:`schema_twin`): a new DuckDB instance costs 15-30 ms, which every
    new connection paid on its first query. Sharing is safe because nothing in a twin is private
    or can change — no row ever, the configuration locked, and what a user registers (the
    finisher's noisy cells) is visible to that user's own cursor only. Which statements passed
    the check stays with each user (a shared record would tell, by timing, what others ran)."""

    def __init__(self, key: tuple[str, ...], con: duckdb.DuckDBPyConnection) -> None:
        self._key, self.con, self._open = key, con, True

    def close(self) -> None:
        """Close this handle's cursor (once: a second call changes nothing); the instance stays
        for the next user of the schema."""
        if self._open:
            self._open = False
            self.con.close()
            _TWINS.release(self._key)


class _TwinRegistry:
    """The process's schema twins by DDL, with how many handles each has. An instance is closed
    only when no handle is open (closing a DuckDB connection closes its cursors) and more than
    :data:`IDLE_TWINS` schemas are idle, least recently used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, ...], list[Any]] = {}  # key -> [root, open handles]; insertion = recency

    def acquire(self, ddl: list[str]) -> Twin:
        key = tuple(ddl)
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                entry = [_new_twin(ddl), 0]
            self._entries[key] = entry  # most recent last
            entry[1] += 1
            return Twin(key, entry[0].cursor())

    def release(self, key: tuple[str, ...]) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            entry[1] -= 1
            idle = [k for k, e in self._entries.items() if e[1] <= 0]
            for k in idle[:max(len(idle) - IDLE_TWINS, 0)]:
                self._entries.pop(k)[0].close()


#: schemas whose twin stays open with no user (a process rarely sees more than a few)
IDLE_TWINS = 4
_TWINS = _TwinRegistry()


def _new_twin(ddl: list[str]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    try:
        for statement in ddl:
            con.execute(statement)
    except duckdb.Error:
        con.close()
        raise
    return _lock_down(con)


def schema_twin(ddl: list[str]) -> Twin:
    """A handle on the empty, locked-down in-memory DuckDB with the tables of ``ddl`` and no row
    (shared in the process: :class:`Twin`): the DuckDB engine, and another engine (Spark), check
    and describe dpsql's DuckDB SQL there before a private row is read. Raises duckdb.Error."""
    return _TWINS.acquire(ddl)


def twin_check(twin: duckdb.DuckDBPyConnection, sql: str) -> str | None:
    """None when ``sql`` runs on the empty twin, else DuckDB's message (safe: no row is there)."""
    try:
        twin.execute(sql).fetchall()
    except duckdb.Error as exc:
        return str(exc)
    return None


def twin_describe(twin: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The DuckDB type names of ``sql``'s result columns on the empty twin."""
    cur = twin.cursor()
    try:
        cur.execute(f"DESCRIBE {sql}")
        return [str(r[1]) for r in cur.fetchall()]
    finally:
        cur.close()


def catalog_of(name: str, ddl: list[str], rows: dict[str, list[tuple[Any, ...]]], memory: int) -> DuckDBCatalog:
    """A :class:`DuckDBCatalog` named ``name``: the tables of ``ddl`` with no row, then ``rows``
    of the public tables, bounded to one thread and what it holds plus ``memory`` bytes."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f'ATTACH \':memory:\' AS "{name}"')
        con.execute(f'USE "{name}"')
        for statement in ddl:
            con.execute(statement)
        for table, values in rows.items():
            if values:
                con.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(values[0]))})', values)
        held = con.execute("SELECT COALESCE(SUM(memory_usage_bytes), 0) FROM duckdb_memory()").fetchone()[0]
        con.execute(f"SET memory_limit = '{int(held) + memory}B'")
        con.execute("SET threads = 1")
        # Clients may read duckdb_settings(): none of the server's paths (its temporary folder,
        # its user's home in the secret and extension folders) is theirs to see. No spilling here.
        for setting, value in CATALOG_PATHS.items():
            con.execute(f"SET {setting} = '{value}'")
    except duckdb.Error as exc:
        con.close()
        raise CatalogQueryError(f"cannot build the public catalog ({type(exc).__name__}: {exc})") from None
    return DuckDBCatalog(_lock_down(con), name)
