"""The rewrite rules of catalog statements: each takes a sqlglot tree and the connection's
:class:`Context` and returns the tree (sqlglot's optimizer rules are the model). The casts'
rule is :mod:`~dpsql.faces.server.pgcatalog.casts`; the driver that runs them in order,
:mod:`~dpsql.faces.server.pgcatalog.catalog`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from dpsql.backends import CatalogQueryError
from dpsql.faces.server.pgcatalog.build import SYSTEM_RELATIONS, Names
from dpsql.faces.server.pgcatalog.schema import (
    ANALYST_OID, DATABASE, INFO, PER_CONNECTION, PG, RELATIONS, VIEWS, columns)
from dpsql.faces.server.pgcatalog.views import FUNCTIONS, INFORMATION_SCHEMA
from dpsql.faces.server.pgsession import DEFAULTS, VERSION_TEXT, PgSettings


class CatalogLookupError(CatalogQueryError):
    """A name the catalog does not have (``'nosuch'::regclass``), with PostgreSQL's SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Context:
    """What a rewrite may depend on besides the text: the catalog's names and the connection."""

    def __init__(self, names: Names, pg: PgSettings) -> None:
        self.names, self.user = names, pg.user
        self.settings = {k.lower(): v for k, v in pg.values.items()}
        self.search_path = [s.strip().strip('"') for s in self.settings.get("search_path", "main").split(",")]

    def key(self) -> tuple[Any, ...]:
        return self.user, tuple(sorted(self.settings.items()))


Rule = Callable[[exp.Expression, Context], exp.Expression]
PG_SCHEMAS = ("pg_catalog",)
QUALIFIED = f"{DATABASE}.{PG}"  # where the macros are


def string(value: str | None) -> exp.Expression:
    return exp.Null() if value is None else exp.Literal.string(value)


def call(qualified: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=qualified, expressions=list(args))


# ---------------------------------------------------------------------------------- naming
def _figure(node: exp.Expression) -> tuple[str | None, int]:
    """PostgreSQL's name of an unnamed result column and its strength (FigureColnameInternal:
    2 for a column or a function, 1 for a type or a keyword, 0 for ``?column?``); None: DuckDB's."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return _figure(node.expression)
    if isinstance(node, (exp.Column, exp.Star)):
        return None, 2
    if isinstance(node, exp.Cast):
        if isinstance(node.this, exp.Column):  # named after the column, whatever the rewrite makes of the cast
            return node.this.name, 2
        inner, strength = _figure(node.this)
        if strength > 1:
            return inner, strength
        to = node.to
        kind = to.args.get("kind") if isinstance(to, exp.DataType) else None
        return (kind.name if kind is not None else to.sql("postgres").split(".")[-1]).lower().strip('"'), 1
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and node.this.expressions:
        first = node.this.expressions[0]
        return (first.alias, 2) if isinstance(first, exp.Alias) else _figure(first)
    if isinstance(node, exp.Anonymous):
        return str(node.this).split(".")[-1].lower(), 2
    for kind, name in (*_SQL_VALUE.items(), (exp.Case, "case"), (exp.Array, "array"), (exp.Exists, "exists")):
        if isinstance(node, kind):
            return name, 1 if kind in (exp.Case, exp.Array) else 2
    if isinstance(node, exp.Func):  # sqlglot's name of PostgreSQL's function, but for its keywords
        name = node.sql_name().lower()
        return (None if name.startswith("current_") or not name.isidentifier() else name), 2
    return "?column?", 0


def name_columns(tree: exp.Expression, ctx: Context) -> exp.Expression:
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if isinstance(select, exp.Select):
        for i, node in enumerate(select.expressions):
            name = None if isinstance(node, exp.Alias) else _figure(node)[0]
            if name:
                select.expressions[i] = exp.alias_(node, name, quoted=True)
                select.expressions[i].parent = select
    return tree


# ---------------------------------------------------------------------------------- relations
def _session_rows(name: str, ctx: Context) -> list[tuple[Any, ...]]:
    if name == "pg_settings":
        return [(key, value, None, "", "", None, "user", "string",
                 "default" if DEFAULTS.get(key) == value else "session", None, None, None, DEFAULTS.get(key, value),
                 DEFAULTS.get(key, value), None, None, False)
                for key, value in sorted(ctx.settings.items())]
    if name == "pg_roles" and ctx.user != "dpsql":
        return [(ctx.user, False, True, False, False, True, False, -1, "********", None, False, None, ANALYST_OID)]
    if name == "pg_user" and ctx.user != "dpsql":
        return [(ctx.user, ANALYST_OID, False, False, False, False, "********", None, None)]
    return []


def _per_connection(name: str, ctx: Context) -> exp.Expression:
    """``(SELECT * FROM the emulation UNION ALL the connection's rows)``."""
    base = exp.select("*").from_(exp.table_(name, db=PG, catalog=DATABASE))
    rows = _session_rows(name, ctx)
    if not rows:
        return base
    kinds = [duck for _, duck in columns(RELATIONS[name])]
    values = [exp.select(*[exp.cast(string(v) if isinstance(v, str) or v is None else exp.convert(v), kind,
                                    dialect="duckdb") for v, kind in zip(row, kinds)]) for row in rows]
    query: exp.Expression = base
    for select in values:
        query = exp.union(query, select, distinct=False)
    return query


def point_tables(tree: exp.Expression, ctx: Context) -> exp.Expression:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):
        db, catalog = table.text("db").lower(), table.text("catalog")
        if not isinstance(table.this, exp.Identifier):  # a table function: pg_catalog.unnest(...)
            if db in (*PG_SCHEMAS, "information_schema"):
                table.set("db", None)
            continue
        name = table.name.lower()
        if catalog:
            continue
        alias = table.alias or name
        if db == "information_schema" and name in INFORMATION_SCHEMA:
            table.replace(exp.table_(name, db=INFO, catalog=DATABASE, alias=alias))
        elif (db in PG_SCHEMAS or (not db and name not in ctes and name not in ctx.names.tables)) and (
                name in RELATIONS or name in VIEWS):
            if name in PER_CONNECTION:
                table.replace(exp.Subquery(this=_per_connection(name, ctx), alias=exp.TableAlias(
                    this=exp.to_identifier(alias))))
            else:
                table.replace(exp.table_(name, db=PG, catalog=DATABASE, alias=alias))
    for column in tree.find_all(exp.Column):  # pg_catalog.pg_class.oid: the table is named by its alias now
        if column.text("db").lower() in (*PG_SCHEMAS, "information_schema") and not column.text("catalog"):
            column.set("db", None)
    return tree


def system_columns(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """``x.tableoid``: the OID of the catalog relation ``x`` stands for (psql's ``\\dd``)."""
    aliases = {}
    for table in tree.find_all(exp.Table):
        if table.text("catalog") == DATABASE and table.name in SYSTEM_RELATIONS:
            aliases[table.alias_or_name.lower()] = SYSTEM_RELATIONS[table.name]
    for column in list(tree.find_all(exp.Column)):
        if column.name.lower() == "tableoid" and column.table.lower() in aliases:
            column.replace(exp.Literal.number(aliases[column.table.lower()]))
    return tree


# ---------------------------------------------------------------------------------- functions
def _setting(name: str, ctx: Context, missing_ok: bool) -> exp.Expression:
    value = ctx.settings.get(name.lower())
    if value is None and not missing_ok:
        raise CatalogLookupError(f'unrecognized configuration parameter "{name}"', "42704")
    return string(value)


def _context_call(name: str, args: list[exp.Expression], ctx: Context) -> exp.Expression | None:
    """The value of a function that depends on the connection, or None for any other."""
    if name in ("current_user", "session_user", "user", "current_role", "getpgusername"):
        return exp.Literal.string(ctx.user)
    if name == "version":
        return exp.Literal.string(VERSION_TEXT)
    if name in ("current_schema",):
        return string(next((s for s in ctx.search_path if s not in ("$user", "")), None))
    if name == "current_schemas":
        implicit = bool(args) and args[0].sql().upper() not in ("FALSE", "0")
        path = (["pg_catalog"] if implicit else []) + [s for s in ctx.search_path if s in ("main",)]
        return exp.Array(expressions=[exp.Literal.string(s) for s in path])
    if name in ("current_database", "current_catalog"):
        return exp.Literal.string(ctx.names.database)
    if name == "current_setting" and args:
        missing_ok = len(args) > 1 and args[1].sql().upper() in ("TRUE", "'T'", "'TRUE'")
        if isinstance(args[0], exp.Literal) and args[0].is_string:
            return _setting(args[0].this, ctx, missing_ok)
        settings = exp.Map(keys=exp.Array(expressions=[exp.Literal.string(k) for k in ctx.settings]),
                           values=exp.Array(expressions=[exp.Literal.string(v) for v in ctx.settings.values()]))
        return call(f"{QUALIFIED}.current_setting", args[0], settings)
    if name == "set_config" and len(args) >= 2:
        return args[1]  # answered, not kept: SET is the way to change a setting
    if name == "pg_backend_pid":
        return exp.Literal.number(0)
    if name in ("inet_server_addr", "inet_server_port", "inet_client_addr", "inet_client_port"):
        return exp.Null()
    if name == "pg_get_userbyid" and args:
        return call(f"{QUALIFIED}.pg_get_userbyid", args[0], exp.Literal.string(ctx.user))
    if name.startswith("pg_stat_get_"):  # statistics counters: none, read from nothing
        return exp.Null() if "time" in name or "reset" in name else exp.cast(exp.Literal.number(0), "BIGINT")
    return None


def _format(node: exp.Format) -> exp.Expression:
    """PostgreSQL's ``format('%I.%I', a, b)`` as DuckDB's ``format('{}.{}', quote_ident(a), b)``."""
    if not (isinstance(node.this, exp.Literal) and node.this.is_string):
        return node
    args, out, used = list(node.expressions), [], []
    parts = re.split(r"(%[%sIL])", node.this.this)
    for part in parts:
        if part == "%%":
            out.append("%")
        elif part in ("%s", "%I", "%L") and args:
            arg = args.pop(0)
            if part == "%I":
                arg = call(f"{QUALIFIED}.quote_ident", exp.cast(arg, "VARCHAR"))
            elif part == "%L":
                arg = call(f"{QUALIFIED}.quote_literal", exp.cast(arg, "VARCHAR"))
            out.append("{}")
            used.append(arg)
        else:
            out.append(part.replace("{", "{{").replace("}", "}}"))
    return exp.Anonymous(this="format", expressions=[exp.Literal.string("".join(out)), *used])


#: PostgreSQL functions DuckDB has under another name
_RENAMED = {"json_build_object": "json_object", "jsonb_build_object": "json_object", "json_agg": "json_group_array",
            "jsonb_agg": "json_group_array", "to_json": "to_json", "jsonb_object_agg": "json_group_object",
            "json_object_agg": "json_group_object"}
_SQL_VALUE = {exp.CurrentUser: "current_user", exp.SessionUser: "session_user", exp.CurrentSchema: "current_schema",
              exp.CurrentSchemas: "current_schemas", exp.CurrentCatalog: "current_catalog",
              exp.CurrentDatabase: "current_database", exp.CurrentVersion: "version"}


def point_functions(tree: exp.Expression, ctx: Context) -> exp.Expression:
    for dot in list(tree.find_all(exp.Dot)):
        if isinstance(dot.this, exp.Identifier) and isinstance(dot.expression, exp.Func):
            schema = dot.this.name.lower()
            if schema in PG_SCHEMAS:
                dot.replace(dot.expression)
            elif schema == "information_schema" and isinstance(dot.expression, exp.Anonymous):
                dot.expression.set("this", f"{DATABASE}.{INFO}.{dot.expression.name}")
                dot.replace(dot.expression)
    for node in list(tree.find_all(exp.Func, exp.Column)):
        if isinstance(node, exp.Column):
            if node.table or node.this.quoted or node.name.lower() not in ("user", "current_role", "session_user",
                                                                            "current_user", "current_catalog"):
                continue
            replacement = _context_call(node.name.lower(), [], ctx)
        elif type(node) in _SQL_VALUE:
            replacement = _context_call(_SQL_VALUE[type(node)], [a for a in node.args.values()
                                                                 if isinstance(a, exp.Expression)], ctx)
        elif isinstance(node, exp.Format):
            replacement = _format(node)
        elif isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            replacement = _context_call(name, list(node.expressions), ctx)
            if replacement is None and name in FUNCTIONS:
                node.set("this", f"{QUALIFIED}.{name}")
            elif replacement is None and name in _RENAMED:
                node.set("this", _RENAMED[name])
        else:
            continue
        if replacement is not None:
            node.replace(replacement)
    return tree


# ---------------------------------------------------------------------------------- operators
_OPERATORS: dict[str, Callable[[exp.Expression, exp.Expression], exp.Expression]] = {
    "~": lambda a, b: exp.RegexpLike(this=a, expression=b),
    "!~": lambda a, b: exp.not_(exp.RegexpLike(this=a, expression=b)),
    "~*": lambda a, b: exp.RegexpILike(this=a, expression=b),
    "!~*": lambda a, b: exp.not_(exp.RegexpILike(this=a, expression=b)),
    "~~": lambda a, b: exp.Like(this=a, expression=b),
    "!~~": lambda a, b: exp.not_(exp.Like(this=a, expression=b)),
    "~~*": lambda a, b: exp.ILike(this=a, expression=b),
    "!~~*": lambda a, b: exp.not_(exp.ILike(this=a, expression=b)),
    "=": lambda a, b: exp.EQ(this=a, expression=b),
    "<>": lambda a, b: exp.NEQ(this=a, expression=b),
    "!=": lambda a, b: exp.NEQ(this=a, expression=b),
    "<": lambda a, b: exp.LT(this=a, expression=b),
    ">": lambda a, b: exp.GT(this=a, expression=b),
    "<=": lambda a, b: exp.LTE(this=a, expression=b),
    ">=": lambda a, b: exp.GTE(this=a, expression=b),
    "||": lambda a, b: exp.DPipe(this=a, expression=b),
}


def plain_operators(tree: exp.Expression, ctx: Context) -> exp.Expression:
    for collate in list(tree.find_all(exp.Collate)):
        collate.replace(collate.this)
    for op in list(tree.find_all(exp.Operator)):
        symbol = str(op.args.get("operator", "")).split(".")[-1].strip()
        make = _OPERATORS.get(symbol)
        if make is None:
            raise CatalogLookupError(f"operator does not exist: {symbol}", "42883")
        op.replace(exp.Paren(this=make(op.this, op.expression)))
    return tree
