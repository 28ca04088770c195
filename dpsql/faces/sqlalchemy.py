"""SQLAlchemy 2.x dialect over dpsql's DB-API: ``create_engine("dpsql:///db.duckdb?policy=p.toml")``.

Registered as the ``dpsql`` entry point of ``sqlalchemy.dialects`` (install the ``sqlalchemy``
extra). Every statement still goes through :class:`dpsql.session.Session`: the same refusals,
the same noise, the same budget; a refused query surfaces as ``sqlalchemy.exc.ProgrammingError``
(``.orig`` is dpsql's error, with its ``code``), a query the budget cannot cover as
``sqlalchemy.exc.OperationalError``.

URL: ``dpsql:///relative/path.duckdb``, ``dpsql:////absolute/path.duckdb`` or ``dpsql://`` (the
demo database and its policy), with query parameters ``policy``, ``rho`` (charged per query),
``analyst``, ``threads``, ``error_columns`` and ``clamp_negative``. See ``docs/bi.md``.

What the dialect adds to the DB-API:

* reflection of what an analyst may use: the tables the policy declares and their columns
  (from the catalog; never a row), with each column's dpsql role as its comment; no keys,
  indexes or constraints;
* a compiler that renders LIMIT / OFFSET as literal integers (dpsql requires them; rendered at
  execution time so cached statements stay correct), FETCH FIRST as LIMIT, and ILIKE natively;
* server version, default schema, ping and rollback answered without SQL: nothing touches
  private data or the budget;
* :func:`last_receipt` and :func:`budget`, since cursors are closed before tools hand back rows.
"""

from __future__ import annotations

import re
import weakref
from types import ModuleType
from typing import Any

from sqlalchemy import exc
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import Connection as SAConnection
from sqlalchemy.engine import Engine, reflection
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.engine.interfaces import ReflectedColumn, ReflectedPrimaryKeyConstraint, ReflectedTableComment
from sqlalchemy.engine.url import URL
from sqlalchemy.sql import compiler

import dpsql  # the PEP 249 module import_dbapi() returns
from dpsql.errors import ConnectionClosedError
from dpsql.faces.dbapi import Connection as DpsqlConnection
from dpsql.intercept.catalog import SCHEMA, catalog_tables, column_role, table_comment
from dpsql.pipeline.result import Receipt
from dpsql.session import Session
from dpsql.version import __version__

__all__ = ["DpsqlDialect", "budget", "last_receipt"]

#: URL query parameters and the ``dpsql.connect`` argument each one sets.
URL_PARAMETERS = ("policy", "rho", "analyst", "threads", "error_columns", "clamp_negative")


# --------------------------------------------------------------------------- types

#: DuckDB type names (as the catalog spells them) -> SQLAlchemy types.
ischema_names: dict[str, Any] = {
    "BOOLEAN": sqltypes.Boolean,
    "TINYINT": sqltypes.SmallInteger,
    "SMALLINT": sqltypes.SmallInteger,
    "UTINYINT": sqltypes.SmallInteger,
    "INTEGER": sqltypes.Integer,
    "USMALLINT": sqltypes.Integer,
    "BIGINT": sqltypes.BigInteger,
    "UINTEGER": sqltypes.BigInteger,
    "UBIGINT": sqltypes.BigInteger,
    "HUGEINT": sqltypes.BigInteger,
    "UHUGEINT": sqltypes.BigInteger,
    "FLOAT": sqltypes.REAL,
    "REAL": sqltypes.REAL,
    "DOUBLE": sqltypes.Double,
    "DECIMAL": sqltypes.Numeric,
    "NUMERIC": sqltypes.Numeric,
    "VARCHAR": sqltypes.String,
    "TEXT": sqltypes.String,
    "STRING": sqltypes.String,
    "ENUM": sqltypes.String,
    "DATE": sqltypes.Date,
    "TIME": sqltypes.Time,
    "TIMESTAMP": sqltypes.DateTime,
    "DATETIME": sqltypes.DateTime,
    "TIMESTAMP_S": sqltypes.DateTime,
    "TIMESTAMP_MS": sqltypes.DateTime,
    "TIMESTAMP_NS": sqltypes.DateTime,
    "INTERVAL": sqltypes.Interval,
    "BLOB": sqltypes.LargeBinary,
    "UUID": sqltypes.Uuid,
    "JSON": sqltypes.JSON,
}

_TYPE = re.compile(r"^\s*([A-Z_ ]+?)\s*(?:\((\d+)\s*,\s*(\d+)\))?\s*$")


def sqlalchemy_type(duckdb_type: str) -> sqltypes.TypeEngine[Any]:
    """The SQLAlchemy type of a DuckDB type name; NullType for lists, structs and the unknown."""
    text = duckdb_type.upper()
    if text.startswith("TIMESTAMP WITH TIME ZONE") or text == "TIMESTAMPTZ":
        return sqltypes.DateTime(timezone=True)
    if text.startswith("ENUM("):
        return sqltypes.String()
    match = _TYPE.match(text)
    if match is None or match.group(1) not in ischema_names:
        return sqltypes.NullType()
    cls = ischema_names[match.group(1)]
    if cls is sqltypes.Numeric and match.group(2):
        return sqltypes.Numeric(int(match.group(2)), int(match.group(3)))
    return cls()


# --------------------------------------------------------------------------- compiler


class DpsqlCompiler(compiler.SQLCompiler):
    """Generic SQL, with the few renderings dpsql's grammar (docs/sql.md) needs."""

    def _whole_number(self, select: Any, clause: Any, **kw: Any) -> str:
        # A plain int given to .limit()/.offset() is rendered inline at execution time (dpsql
        # refuses `LIMIT ?`); the compiled string keeps a placeholder, so caching stays right.
        if select._simple_int_clause(clause):
            clause = clause.render_literal_execute()
        return str(self.process(clause, **kw))

    def limit_clause(self, select: Any, **kw: Any) -> str:
        text = ""
        if select._limit_clause is not None:
            text += "\n LIMIT " + self._whole_number(select, select._limit_clause, **kw)
        if select._offset_clause is not None:  # DuckDB takes OFFSET alone: no `LIMIT -1`
            text += "\n OFFSET " + self._whole_number(select, select._offset_clause, **kw)
        return text

    def fetch_clause(self, select: Any, fetch_clause: Any = None, require_offset: bool = False,
                     use_literal_execute_for_simple_int: bool = False, **kw: Any) -> str:
        options = select._fetch_clause_options if fetch_clause is None else {}
        if options and (options.get("percent") or options.get("with_ties")):
            raise exc.CompileError("dpsql supports FETCH FIRST n ROWS ONLY (as LIMIT n), not PERCENT or WITH TIES")
        fetch = select._fetch_clause if fetch_clause is None else fetch_clause
        text = ""
        if fetch is not None:
            text += "\n LIMIT " + self._whole_number(select, fetch, **kw)
        if select._offset_clause is not None:
            text += "\n OFFSET " + self._whole_number(select, select._offset_clause, **kw)
        return text

    def visit_ilike_op_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return self._ilike(binary, "ILIKE", **kw)

    def visit_not_ilike_op_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return self._ilike(binary, "NOT ILIKE", **kw)

    def _ilike(self, binary: Any, op: str, **kw: Any) -> str:
        escape = binary.modifiers.get("escape", None)
        text = f"{self.process(binary.left, **kw)} {op} {self.process(binary.right, **kw)}"
        if escape is not None:
            text += " ESCAPE " + self.render_literal_value(escape, sqltypes.STRINGTYPE)
        return text


# --------------------------------------------------------------------------- dialect


class DpsqlDialect(DefaultDialect):
    """SQLAlchemy dialect of dpsql: read-only, one schema (``main``), qmark parameters."""

    name = "dpsql"
    driver = "dpsql"
    default_paramstyle = "qmark"
    statement_compiler = DpsqlCompiler
    ischema_names = ischema_names

    supports_statement_cache = True
    # Honest capability flags: dpsql answers SELECT only and never writes.
    supports_alter = False
    supports_sequences = False
    supports_comments = False
    supports_default_values = False
    supports_default_metavalue = False
    supports_empty_insert = False
    supports_multivalues_insert = False
    supports_server_side_cursors = False
    supports_sane_rowcount = False
    supports_sane_multi_rowcount = False
    supports_native_boolean = True
    supports_native_decimal = True
    supports_native_enum = False
    supports_is_distinct_from = True
    insert_returning = False
    update_returning = False
    delete_returning = False
    postfetch_lastrowid = False
    use_insertmanyvalues = False
    requires_name_normalize = False
    div_is_floordiv = False  # DuckDB's `/` divides integers exactly

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._receipts: weakref.WeakKeyDictionary[DpsqlConnection, Receipt] = weakref.WeakKeyDictionary()
        self._last: tuple[Receipt, weakref.ref[DpsqlConnection]] | None = None

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        return dpsql

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        if url.host or url.port or url.username or url.password:
            raise exc.ArgumentError(
                "dpsql is embedded: its URL takes no host, port or user. Write dpsql:///relative/path.duckdb, "
                "dpsql:////absolute/path.duckdb, or dpsql:// for the demo database")
        unknown = sorted(set(url.query) - set(URL_PARAMETERS))
        if unknown:
            raise exc.ArgumentError(f"unknown dpsql URL parameter(s) {', '.join(unknown)}; "
                                    f"dpsql takes {', '.join(URL_PARAMETERS)}")
        kwargs: dict[str, Any] = {"database": url.database or None}
        for key, value in url.query.items():
            value = value[-1] if isinstance(value, tuple) else value
            if key == "threads":
                try:
                    kwargs[key] = int(value)
                except ValueError:
                    raise exc.ArgumentError(f"dpsql URL parameter threads must be a whole number, got {value!r}") from None
            else:
                kwargs[key] = value  # rho stays text: dpsql reads '0.1' exactly, as 1/10
        return [], kwargs

    # -- executing: the DB-API runs the intercept hook only for statements without parameters
    def do_execute(self, cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        cursor.execute(statement, parameters or None)
        self._remember(cursor)

    def do_execute_no_params(self, cursor: Any, statement: str, context: Any = None) -> None:
        cursor.execute(statement)
        self._remember(cursor)

    def do_executemany(self, cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        cursor.executemany(statement, parameters)
        self._remember(cursor)

    def _remember(self, cursor: Any) -> None:
        receipt = getattr(cursor, "receipt", None)
        if receipt is not None:
            self._receipts[cursor.connection] = receipt
            self._last = (receipt, weakref.ref(cursor.connection))

    # -- connection life: answered without SQL, so nothing reaches the data or the budget
    def _get_server_version_info(self, connection: SAConnection) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", __version__))

    def _get_default_schema_name(self, connection: SAConnection) -> str:
        return SCHEMA

    def do_ping(self, dbapi_connection: Any) -> bool:
        dbapi_connection.session  # noqa: B018 - raises ConnectionClosedError when closed
        return True

    def do_rollback(self, dbapi_connection: Any) -> None:
        """Nothing to roll back: dpsql is read-only, and a charge is never undone."""

    def is_disconnect(self, e: Any, connection: Any, cursor: Any) -> bool:
        return isinstance(e, ConnectionClosedError)

    def get_isolation_level(self, dbapi_connection: Any) -> Any:
        raise NotImplementedError("dpsql is read-only: it has no transactions to isolate")

    # -- reflection: the policy's tables and their catalog columns
    @staticmethod
    def _session(connection: SAConnection) -> Session:
        session: Session = connection.connection.dbapi_connection.session  # type: ignore[union-attr]
        return session

    def _table(self, connection: SAConnection, table_name: str, schema: str | None) -> tuple[Session, str]:
        session = self._session(connection)
        name = table_name.lower()
        if schema not in (None, SCHEMA) or name not in catalog_tables(session):
            raise exc.NoSuchTableError(table_name)
        return session, name

    @reflection.cache
    def get_schema_names(self, connection: SAConnection, **kw: Any) -> list[str]:
        return [SCHEMA]

    def has_schema(self, connection: SAConnection, schema_name: str, **kw: Any) -> bool:
        return schema_name == SCHEMA

    @reflection.cache
    def get_table_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        if schema not in (None, SCHEMA):
            return []
        return catalog_tables(self._session(connection))

    def has_table(self, connection: SAConnection, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        try:
            self._table(connection, table_name, schema)
        except exc.NoSuchTableError:
            return False
        return True

    @reflection.cache
    def get_columns(self, connection: SAConnection, table_name: str, schema: str | None = None,
                    **kw: Any) -> list[ReflectedColumn]:
        session, table = self._table(connection, table_name, schema)
        not_null = session.not_null.get(table, set())
        return [{"name": col, "type": sqlalchemy_type(typ), "nullable": col not in not_null, "default": None,
                 "autoincrement": False, "comment": column_role(session, table, col)}
                for col, typ in session.schema[table].items()]

    @reflection.cache
    def get_table_comment(self, connection: SAConnection, table_name: str, schema: str | None = None,
                          **kw: Any) -> ReflectedTableComment:
        session, table = self._table(connection, table_name, schema)
        return {"text": table_comment(session, table)}

    def get_pk_constraint(self, connection: SAConnection, table_name: str, schema: str | None = None,
                          **kw: Any) -> ReflectedPrimaryKeyConstraint:
        self._table(connection, table_name, schema)
        return {"constrained_columns": [], "name": None}

    def _none(self, connection: SAConnection, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        self._table(connection, table_name, schema)
        return []

    get_foreign_keys = _none
    get_indexes = _none
    get_unique_constraints = _none
    get_check_constraints = _none

    def get_view_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def get_materialized_view_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def get_temp_table_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def get_temp_view_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def get_sequence_names(self, connection: SAConnection, schema: str | None = None, **kw: Any) -> list[str]:
        return []

    def has_sequence(self, connection: SAConnection, sequence_name: str, schema: str | None = None, **kw: Any) -> bool:
        return False


# --------------------------------------------------------------------------- helpers for callers


def _dbapi_connection(bind: Any) -> DpsqlConnection:
    if isinstance(bind, DpsqlConnection):
        return bind
    if isinstance(bind, SAConnection):
        raw = bind.connection.dbapi_connection
        if isinstance(raw, DpsqlConnection):
            return raw
    raise TypeError(f"expected a dpsql SQLAlchemy Engine or Connection, got {type(bind).__name__}")


def _dialect(engine: Engine) -> DpsqlDialect:
    if not isinstance(engine.dialect, DpsqlDialect):
        raise TypeError(f"expected a dpsql engine, got a {engine.dialect.name} engine")
    return engine.dialect


def last_receipt(bind: Engine | SAConnection) -> Receipt | None:
    """The receipt of the last statement run: what it cost, σ and 95% MOE per column.

    With an ``Engine``, the last statement any of its connections ran (``pd.read_sql(sql,
    engine)`` checks a connection out and back in); with a ``Connection``, its own last one.
    None before the first statement. Probes answered for free (``SELECT 1``) have receipts too,
    with ``rho == 0``.
    """
    if isinstance(bind, Engine):
        last = _dialect(bind)._last
        return None if last is None else last[0]
    if isinstance(bind, SAConnection):
        return _dialect(bind.engine)._receipts.get(_dbapi_connection(bind))
    raise TypeError(f"expected a dpsql SQLAlchemy Engine or Connection, got {type(bind).__name__}")


def budget(bind: Engine | SAConnection) -> dict[str, str]:
    """Spent / remaining / total ρ of the analyst's budget (``dpsql.Connection.budget``).

    The ledger is durable and per analyst (it lives beside the policy), so every connection of
    an engine, and every process, reads the same budget; ``rho_per_query`` is the setting of
    the connection asked (with an ``Engine``, the one that ran its last statement).
    """
    if isinstance(bind, Engine):
        last = _dialect(bind)._last
        raw = last[1]() if last is not None else None
        if raw is not None and raw._session is not None:
            return raw.budget
        with bind.connect() as conn:
            return _dbapi_connection(conn).budget
    return _dbapi_connection(bind).budget
