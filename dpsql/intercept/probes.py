"""Public answers to the probes BI tools and drivers send on connect.

SQLAlchemy, pandas, Superset and generic SQL clients check a connection with statements such as
``SELECT 1``, ``SELECT version()``, ``SELECT current_schema()``, ``SHOW TABLES``,
``DESCRIBE t`` or a listing from ``information_schema``. None of them asks about private rows,
so dpsql answers them itself (:mod:`dpsql.intercept`), from the policy and the catalog of the
tables it declares, at zero cost. Nothing here opens a table, and nothing here charges.

Each handler matches one exact shape of the parsed statement and returns None for anything
else, which then goes on to the private pipeline (and is refused there if it is not a
supported aggregate). The shapes:

* ``SELECT <items>`` with no FROM and no other clause, each item (optionally aliased) a
  literal or one of ``version()``, ``current_schema()``, ``current_database()``,
  ``current_catalog``;
* ``SHOW TABLES`` (the tables of the policy, private and public);
* ``DESCRIBE <policy table>`` (its columns, types and dpsql roles);
* ``SELECT ... FROM information_schema.schemata | tables | columns``: in
  :mod:`dpsql.intercept.information_schema`, which shares this module's shape helpers
  (:func:`parsed`, :func:`only_args`, :func:`literal_value`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.intercept.catalog import SCHEMA, catalog_name, catalog_tables, column_role
from dpsql.intercept.public import public_result
from dpsql.pipeline.result import Result
from dpsql.session import Session
from dpsql.sql.parse import parse
from dpsql.version import __version__


# --------------------------------------------------------------------------- shared helpers


#: statements longer than this are parsed afresh each time instead of kept in the cache
CACHED_LENGTH = 8192


def parsed(sql: str, analyst: str) -> exp.Expression | None:
    """The one statement of ``sql``, or None when it does not parse (the pipeline reports it).

    Every handler asks for the tree of the same text, and dashboards repeat the same text: the
    tree is parsed once and shared (a parse is ~2 ms, five handlers made it a third of a small
    query's fixed cost). Shared, so read-only: handlers look at it and never change it. Kept per
    analyst: a cached text answers faster, so a cache shared in a wire server would tell one
    analyst, by timing, which texts another had sent."""
    return _parsed_cached(analyst, sql) if len(sql) <= CACHED_LENGTH else _parsed(analyst, sql)


def _parsed(analyst: str, sql: str) -> exp.Expression | None:  # noqa: ARG001 - the analyst is the cache key's
    try:
        return parse(sql)
    except QueryRefused:
        return None


_parsed_cached = functools.lru_cache(maxsize=256)(_parsed)


def only_args(node: exp.Expression, *allowed: str) -> bool:
    """Whether ``node`` sets no argument other than ``allowed``."""
    return all(key in allowed or value in (None, False, []) for key, value in node.args.items())


def _version() -> str:
    return f"dpsql {__version__}"


# --------------------------------------------------------------------------- SELECT <constants>

_LITERAL_TYPES = {bool: "BOOLEAN", int: "INTEGER", float: "DOUBLE", str: "VARCHAR", type(None): "INTEGER"}

_SERVER_FUNCTIONS: dict[type[exp.Expression], tuple[str, Callable[[Session], Any]]] = {
    exp.CurrentVersion: ("version()", lambda s: _version()),
    exp.CurrentSchema: ("current_schema()", lambda s: SCHEMA),
    exp.CurrentDatabase: ("current_database()", catalog_name),
    exp.CurrentCatalog: ("current_catalog", catalog_name),
}


def literal_value(node: exp.Expression) -> tuple[bool, Any]:
    """(True, value) when ``node`` is a constant literal, else (False, None)."""
    if isinstance(node, exp.Null):
        return True, None
    if isinstance(node, exp.Boolean):
        return True, bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        text = node.this
        try:
            return True, int(text)
        except ValueError:
            try:
                return True, float(text)
            except ValueError:
                return False, None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        ok, value = literal_value(node.this)
        return ok, (-value if ok else None)
    return False, None


def answer_constant_select(session: Session, sql: str) -> Result | None:
    """``SELECT 1``, ``SELECT version()``, ``SELECT current_schema() AS s, 'x'``: no FROM, no data."""
    tree = parsed(sql, session.analyst)
    if not isinstance(tree, exp.Select) or not tree.expressions or not only_args(tree, "expressions"):
        return None
    names, types, values = [], [], []
    for item in tree.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        ok, value = literal_value(node)
        if ok:
            name = node.sql("duckdb")
            typ = _LITERAL_TYPES[type(value)]
            if typ == "INTEGER" and value is not None and abs(value) >= 2**31:
                typ = "BIGINT"
        elif type(node) in _SERVER_FUNCTIONS and not any(v for v in node.args.values()):
            name, answer = _SERVER_FUNCTIONS[type(node)]
            value, typ = answer(session), "VARCHAR"
        else:
            return None
        names.append(item.alias if isinstance(item, exp.Alias) else name)
        types.append(typ)
        values.append(value)
    return public_result(session, names, types, [tuple(values)])


# --------------------------------------------------------------------------- SHOW TABLES, DESCRIBE


def answer_show_tables(session: Session, sql: str) -> Result | None:
    """``SHOW TABLES``: the tables of the policy (other tables of the file are not listed)."""
    tree = parsed(sql, session.analyst)
    if not isinstance(tree, exp.Show) or str(tree.this).upper() != "TABLES" or not only_args(tree, "this"):
        return None
    return public_result(session, ["name"], ["VARCHAR"], [(t,) for t in catalog_tables(session)])


def _policy_table(session: Session, table: exp.Expression) -> str | None:
    """The policy table a bare or ``main.``-qualified table reference names, else None."""
    if not isinstance(table, exp.Table) or not only_args(table, "this", "db"):
        return None
    if table.args.get("db") is not None and table.db.lower() != SCHEMA:
        return None
    name = table.name.lower()
    return name if name in catalog_tables(session) else None


def answer_describe(session: Session, sql: str) -> Result | None:
    """``DESCRIBE t`` for a policy table: DuckDB's six columns; ``extra`` holds the dpsql role."""
    tree = parsed(sql, session.analyst)
    if not isinstance(tree, exp.Describe) or not only_args(tree, "this"):
        return None
    table = _policy_table(session, tree.this)
    if table is None:
        return None
    not_null = session.not_null.get(table, set())
    rows = [(col, typ, "NO" if col in not_null else "YES", None, None, column_role(session, table, col))
            for col, typ in session.schema[table].items()]
    return public_result(session, ["column_name", "column_type", "null", "key", "default", "extra"],
                         ["VARCHAR"] * 6, rows)
