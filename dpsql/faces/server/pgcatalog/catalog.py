"""Catalog queries of PostgreSQL clients, answered on the public catalog twin.

psql's ``\\d``, pgjdbc's ``DatabaseMetaData``, SQLAlchemy's inspector and the BI tools built on
them read ``pg_catalog`` and ``information_schema``. :class:`PgCatalog` answers them from an
emulation of PostgreSQL 15's catalog built in the twin (:mod:`~dpsql.faces.server.pgcatalog.build`)
from the schema and the policy only. A statement is parsed with sqlglot (PostgreSQL dialect),
rewritten by the small rules of :data:`RULES`, each one concern, and run on the twin as DuckDB
SQL:

* ``name_columns``: result columns named as PostgreSQL names them (``version``, ``?column?``);
* ``point_tables``: ``pg_catalog.*`` and ``information_schema.*`` relations to the emulation;
  the analyst's own rows (``pg_settings``, ``pg_roles``) added per connection;
* ``resolve_casts``: ``'t'::regclass`` and its kin to OIDs (an unknown name fails as in
  PostgreSQL), ``oid::regclass`` shown as a name, PostgreSQL's own types to DuckDB's;
* ``point_functions``: ``pg_catalog.f()`` to the emulation's macros; ``current_user``,
  ``current_setting()``, ``version()`` and the like to this connection's values;
* ``plain_operators``: ``OPERATOR(pg_catalog.~)`` and ``COLLATE pg_catalog.default`` away;
* ``system_columns``: ``x.tableoid`` to the OID of the catalog ``x`` is.

The twin holds no private row and cannot open the database file (docs/server.md, "What the
catalog answers"), so whatever a statement routed here does, it cannot read private data; the
rewrite only makes PostgreSQL's spellings run. A statement sqlglot cannot read runs as written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import sqlglot

from dpsql.backends import PublicCatalog
from dpsql.faces.server.pgcatalog.build import Names, build
from dpsql.faces.server.pgcatalog.casts import array_casts, resolve_casts
from dpsql.faces.server.pgcatalog.rules import (
    CatalogLookupError, Context, Rule, name_columns, plain_operators, point_functions, point_tables, system_columns)
from dpsql.faces.server.pgsession import PgSettings

RULES: tuple[Rule, ...] = (name_columns, point_tables, system_columns, resolve_casts, point_functions, plain_operators)


def rewrite(sql: str, ctx: Context) -> str:
    """``sql`` (PostgreSQL) as DuckDB SQL over the emulated catalog (see the module docstring)."""
    try:
        trees = sqlglot.parse(array_casts(sql), read="postgres")
    except sqlglot.errors.SqlglotError:
        return sql  # runs as written; DuckDB reads much of PostgreSQL's grammar itself
    if len(trees) != 1 or trees[0] is None:
        return sql
    tree = trees[0]
    try:
        for rule in RULES:
            tree = rule(tree, ctx)
        return tree.sql("duckdb", normalize_functions=False)
    except CatalogLookupError:
        raise
    except Exception:  # noqa: BLE001 - a construct a rule does not foresee: DuckDB reads the original
        return sql


class PgCatalog:
    """The catalog twin with PostgreSQL's catalog in it; what :class:`Served` serves catalog
    statements from (``run`` without a connection's settings runs DuckDB SQL as it is)."""

    def __init__(self, twin: PublicCatalog, names: Names) -> None:
        self.twin, self.names = twin, names
        self._cache: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def build(cls, twin: PublicCatalog, database: str, public: set[str],
              comments: dict[tuple[str, str], str]) -> PgCatalog:
        return cls(twin, build(twin, database, public, comments))

    def sql(self, sql: str, pg: PgSettings) -> str:
        """The DuckDB SQL of a client's catalog statement (remembered per text and settings)."""
        ctx = Context(self.names, pg)
        key = (sql, *ctx.key())
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        out = rewrite(sql, ctx)
        with self._lock:
            self._cache[key] = out
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        return out

    def run(self, sql: str, parameters: list[Any] | None = None, pg: PgSettings | None = None
            ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        return self.twin.run(self.sql(sql, pg) if pg is not None else sql, parameters)

    def define(self, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
        self.twin.define(sql, rows)

    def view(self) -> PgCatalog:
        """A handle for one connection (its own interrupts), sharing the twin, names and cache."""
        other = PgCatalog(self.twin.view(), self.names)
        other._cache, other._lock = self._cache, self._lock
        return other

    def interrupt(self) -> None:
        self.twin.interrupt()

    def close(self) -> None:
        self.twin.close()


def policy_comments(tables: list[str], comment: Callable[[str], str], role: Callable[[str, str], str | None],
                    schema: dict[str, dict[str, str]]) -> dict[tuple[str, str], str]:
    """(table, column or "") -> what the policy lets an analyst do with it, for ``pg_description``."""
    out: dict[tuple[str, str], str] = {}
    for table in tables:
        out[(table, "")] = comment(table)
        for column in schema.get(table.lower(), {}):
            text = role(table, column)
            if text:
                out[(table, column)] = text
    return out
