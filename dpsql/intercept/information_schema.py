"""Public answers to ``SELECT ... FROM information_schema.schemata | tables | columns``.

BI tools and drivers list tables and columns from ``information_schema``. dpsql answers these
queries itself (:mod:`dpsql.intercept`), at zero cost, from views that hold only the policy's
tables (:mod:`dpsql.intercept.catalog`): other tables of the database file are not listed, and
nothing here opens a table or charges.

The shape answered: plain columns (or ``*``), an optional WHERE made of AND-ed comparisons of
columns with literals, ORDER BY, LIMIT and OFFSET. A query on these views outside this shape
is refused with a code; any other statement is left to the next handler (None).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.intercept.catalog import SCHEMA, catalog_name, catalog_tables, column_role, table_comment
from dpsql.intercept.probes import literal_value, only_args, parsed
from dpsql.intercept.public import public_result
from dpsql.pipeline.result import Result
from dpsql.session import Session


def _schemata(session: Session) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    return ["catalog_name", "schema_name"], ["VARCHAR", "VARCHAR"], [(catalog_name(session), SCHEMA)]


def _tables(session: Session) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    cat = catalog_name(session)
    names = ["table_catalog", "table_schema", "table_name", "table_type", "is_insertable_into", "table_comment"]
    rows = [(cat, SCHEMA, t, "BASE TABLE", "NO", table_comment(session, t)) for t in catalog_tables(session)]
    return names, ["VARCHAR"] * len(names), rows


def _columns(session: Session) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    cat = catalog_name(session)
    names = ["table_catalog", "table_schema", "table_name", "column_name", "ordinal_position", "column_default",
             "is_nullable", "data_type", "column_comment"]
    types = ["VARCHAR"] * len(names)
    types[4] = "INTEGER"
    rows = []
    for t in catalog_tables(session):
        not_null = session.not_null.get(t, set())
        for i, (col, typ) in enumerate(session.schema[t].items(), start=1):
            rows.append((cat, SCHEMA, t, col, i, None, "NO" if col in not_null else "YES", typ,
                         column_role(session, t, col)))
    return names, types, rows


VIEWS: dict[str, Callable[[Session], tuple[list[str], list[str], list[tuple[Any, ...]]]]] = {
    "schemata": _schemata,
    "tables": _tables,
    "columns": _columns,
}


def _refuse(view: str, what: str, code: str = "DP110") -> QueryRefused:
    return QueryRefused(
        f"information_schema.{view}: {what}",
        code=code,
        hint="dpsql answers information_schema.schemata, .tables and .columns with plain columns or *, "
             "AND-ed comparisons of columns with literals (=, <>, <, >, IN, LIKE, ILIKE, IS NULL), "
             "ORDER BY, LIMIT and OFFSET.")


class _View:
    """One public information_schema view and a query's references into it."""

    def __init__(self, name: str, alias: str | None, columns: list[str], types: list[str]) -> None:
        self.name, self.alias, self.columns, self.types = name, alias, columns, types

    def index(self, col: exp.Column) -> int:
        qualifier = col.table.lower()
        if qualifier and qualifier not in {self.name, self.alias or self.name}:
            raise _refuse(self.name, f"unknown qualifier {col.table!r}", code="DP203")
        name = col.name.lower()
        if name not in self.columns:
            raise _refuse(self.name, f"no column {col.name!r} (dpsql provides: {', '.join(self.columns)})", code="DP203")
        return self.columns.index(name)


_COMPARE: dict[type[exp.Expression], Callable[[Any, Any], bool]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
}
_FLIPPED: dict[type[exp.Expression], type[exp.Expression]] = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT,
                                                             exp.GTE: exp.LTE}


def _like(pattern: str, value: str, ignore_case: bool) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL | (re.IGNORECASE if ignore_case else 0)) is not None


def _constant(view: _View, node: exp.Expression) -> Any:
    ok, value = literal_value(node)
    if not ok:
        raise _refuse(view.name, f"compare columns with literals only, not {node.sql('duckdb')}")
    return value


def _predicate(view: _View, node: exp.Expression) -> Callable[[tuple[Any, ...]], bool | None]:
    """A row test in SQL's three-valued logic (None = unknown)."""
    if isinstance(node, exp.Paren):
        return _predicate(view, node.this)
    if isinstance(node, exp.And):
        left, right = _predicate(view, node.this), _predicate(view, node.expression)

        def both(row: tuple[Any, ...]) -> bool | None:
            a, b = left(row), right(row)
            return False if a is False or b is False else (None if a is None or b is None else True)
        return both
    if isinstance(node, exp.Not):
        inner = _predicate(view, node.this)
        return lambda row: None if (v := inner(row)) is None else not v
    if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
        i = view.index(node.this)
        return lambda row: row[i] is None
    if isinstance(node, tuple(_COMPARE)):
        op: type[exp.Expression] = type(node)
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column):
            left, right, op = right, left, _FLIPPED.get(op, op)
        if not isinstance(left, exp.Column):
            raise _refuse(view.name, f"compare a column with a literal, not {node.sql('duckdb')}")
        i, value, compare = view.index(left), _constant(view, right), _COMPARE[op]

        def test(row: tuple[Any, ...]) -> bool | None:
            if row[i] is None or value is None:
                return None
            try:
                return compare(row[i], value)
            except TypeError:  # text against a number: DuckDB would cast; equal they are not
                return compare(str(row[i]), str(value))
        return test
    if isinstance(node, exp.In) and isinstance(node.this, exp.Column) and node.expressions and not node.args.get("query"):
        i, values = view.index(node.this), [_constant(view, v) for v in node.expressions]
        return lambda row: None if row[i] is None else row[i] in values
    if isinstance(node, (exp.Like, exp.ILike)) and isinstance(node.this, exp.Column):
        i, pattern = view.index(node.this), _constant(view, node.expression)
        if not isinstance(pattern, str):
            raise _refuse(view.name, "LIKE takes a string pattern")
        ignore_case, negate = isinstance(node, exp.ILike), bool(node.args.get("negate"))

        def like(row: tuple[Any, ...]) -> bool | None:
            if row[i] is None:
                return None
            return _like(pattern, str(row[i]), ignore_case) != negate
        return like
    raise _refuse(view.name, f"this condition is not supported: {node.sql('duckdb')}")


def _whole_number(view: _View, clause: exp.Expression | None) -> int | None:
    if clause is None:
        return None
    value = _constant(view, clause.expression)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _refuse(view.name, "LIMIT and OFFSET take whole numbers", code="DP113")
    return value


def _information_schema_view(tree: exp.Expression) -> tuple[str, str | None] | None:
    """(view, alias) when ``tree`` is a SELECT whose FROM is one information_schema table."""
    if not isinstance(tree, exp.Select):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if isinstance(source, exp.From) else None
    if not isinstance(table, exp.Table) or table.db.lower() != "information_schema":
        return None
    return table.name.lower(), (table.alias or None)


def answer_information_schema(session: Session, sql: str) -> Result | None:
    """``SELECT ... FROM information_schema.{schemata,tables,columns}`` over the policy's tables."""
    tree = parsed(sql, session.analyst)
    found = _information_schema_view(tree) if tree is not None else None
    if found is None:
        return None
    assert isinstance(tree, exp.Select)
    name, alias = found
    if name not in VIEWS:
        raise _refuse(name, "dpsql provides information_schema.schemata, .tables and .columns only", code="DP202")
    table = tree.args.get("from_") or tree.args["from"]
    if (not only_args(tree, "expressions", "from_", "from", "where", "order", "limit", "offset", "distinct")
            or not only_args(table.this, "this", "db", "catalog", "alias")
            or (tree.args.get("distinct") is not None and tree.args["distinct"].args.get("on"))
            or any(isinstance(n, (exp.Subquery, exp.Select)) and n is not tree for n in tree.walk())):
        raise _refuse(name, "joins, subqueries, GROUP BY, HAVING and window clauses are not supported")
    columns, types, rows = VIEWS[name](session)
    view = _View(name, alias.lower() if alias else None, columns, types)

    # The select list: columns or *, each optionally aliased.
    picks: list[int] = []
    out_names: list[str] = []
    for item in tree.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star):
            picks.extend(range(len(columns)))
            out_names.extend(columns)
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            view.index(exp.column("table_name", table=node.table))  # checks the qualifier
            picks.extend(range(len(columns)))
            out_names.extend(columns)
        elif isinstance(node, exp.Column):
            picks.append(view.index(node))
            out_names.append(item.alias if isinstance(item, exp.Alias) else node.name)
        else:
            raise _refuse(name, f"select columns or *, not {node.sql('duckdb')}")

    where = tree.args.get("where")
    if where is not None:
        keep = _predicate(view, where.this)
        rows = [r for r in rows if keep(r) is True]

    # ORDER BY: output positions, output aliases or view columns; DuckDB's default NULLS LAST.
    order = tree.args.get("order")
    keyed = [(r, tuple(r[i] for i in picks)) for r in rows]
    for ordered in reversed(order.expressions if order is not None else []):
        node = ordered.this
        ok, position = literal_value(node)
        if ok and isinstance(position, int) and 1 <= position <= len(picks):
            def key_of(pair: tuple[tuple[Any, ...], tuple[Any, ...]], j: int = position - 1) -> Any:
                return pair[1][j]
        elif isinstance(node, exp.Column) and not node.table and node.name in out_names:
            def key_of(pair: tuple[tuple[Any, ...], tuple[Any, ...]], j: int = out_names.index(node.name)) -> Any:
                return pair[1][j]
        elif isinstance(node, exp.Column):
            def key_of(pair: tuple[tuple[Any, ...], tuple[Any, ...]], j: int = view.index(node)) -> Any:
                return pair[0][j]
        else:
            raise _refuse(name, f"ORDER BY columns or positions, not {node.sql('duckdb')}")
        desc, nulls_first = bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))
        present = sorted((p for p in keyed if key_of(p) is not None), key=key_of, reverse=desc)
        missing = [p for p in keyed if key_of(p) is None]
        keyed = missing + present if nulls_first else present + missing

    out = [values for _, values in keyed]
    if tree.args.get("distinct") is not None:
        out = list(dict.fromkeys(out))
    offset = _whole_number(view, tree.args.get("offset")) or 0
    limit = _whole_number(view, tree.args.get("limit"))
    out = out[offset:] if limit is None else out[offset:offset + limit]
    return public_result(session, out_names, [types[i] for i in picks], out)
