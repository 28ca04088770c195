"""Other spellings of forms dpsql answers, read as the form they spell (phase 1, the text only).

* ``SELECT TOP n ...`` (T-SQL, which SmartNoise's suite and some BI tools write) is ``... LIMIT
  n``: :func:`top_as_limit` blanks ``TOP n`` out of the text (same length, so positions in error
  messages stay right) and :func:`fetch_as_limit` sets the LIMIT on the outermost SELECT;
* ``FETCH FIRST n ROWS ONLY`` / ``FETCH NEXT n ROWS ONLY`` (the SQL standard's) is ``LIMIT n``;
  ``WITH TIES`` and ``PERCENT`` are refused (DP110), as their rows depend on the values;
* ``x = ANY(ARRAY[a, b])`` is ``x IN (a, b)`` and ``x <> ALL(ARRAY[a, b])`` is ``NOT x IN (a, b)``
  (:func:`any_as_in`).

No I/O here.
"""

from __future__ import annotations

import re

from sqlglot import exp

from dpsql.errors import QueryRefused

#: ``SELECT [DISTINCT | ALL] TOP n`` as the statement's first words (the outermost SELECT only)
_TOP = re.compile(r"^(\s*SELECT\s+(?:DISTINCT\s+|ALL\s+)?)(TOP\s+(\d{1,18})\s)", re.IGNORECASE)


def top_as_limit(sql: str) -> tuple[str, int | None]:
    """``sql`` with a leading ``SELECT TOP n`` blanked to ``SELECT``, and n (None when absent)."""
    if not isinstance(sql, str):
        return sql, None
    m = _TOP.match(sql)
    if m is None:
        return sql, None
    return sql[:m.start(2)] + " " * len(m.group(2)) + sql[m.end(2):], int(m.group(3))


def fetch_as_limit(tree: exp.Expression, top: int | None, sql: str) -> exp.Expression:
    """FETCH FIRST n ROWS ONLY as LIMIT n, and TOP n (from :func:`top_as_limit`) as LIMIT n."""
    for fetch in list(tree.find_all(exp.Fetch)):
        options = fetch.args.get("limit_options")
        count = fetch.args.get("count")
        odd = options is not None and (options.args.get("percent") or options.args.get("with_ties"))
        if odd or not (isinstance(count, exp.Literal) and not count.is_string) or fetch.args.get("direction") not in ("FIRST", "NEXT"):
            raise QueryRefused("FETCH is supported only as FETCH FIRST n ROWS ONLY", code="DP110",
                               hint="write LIMIT n (WITH TIES and PERCENT are not supported).")
        parent = fetch.parent
        fetch.pop()
        if isinstance(parent, exp.Select):
            if parent.args.get("limit") is not None:
                raise QueryRefused("a query may have LIMIT or FETCH FIRST, not both", code="DP110", hint="write one LIMIT.")
            parent.set("limit", exp.Limit(expression=count))
    if top is not None:
        if not isinstance(tree, exp.Select):
            raise QueryRefused("TOP n is supported on a plain SELECT only", code="DP110", hint="write LIMIT n.")
        if tree.args.get("limit") is not None:
            raise QueryRefused("a query may have TOP n or LIMIT, not both", code="DP110", hint="write one LIMIT.")
        tree.set("limit", exp.Limit(expression=exp.Literal.number(top)))
    return tree


def any_as_in(tree: exp.Expression) -> exp.Expression:
    """``x = ANY(ARRAY[a, b])`` as ``x IN (a, b)``, and ``x <> ALL(ARRAY[a, b])`` as ``x NOT IN (a,
    b)``: the same truth values, NULLs included (PostgreSQL evaluates both sides the same way), for
    an array of literals. That is how drivers send a list: psycopg2 writes the ARRAY literal into
    the text, psycopg 3 and asyncpg bind an array parameter (:func:`literal` makes it the ARRAY).
    An empty array is FALSE for ANY and TRUE for ALL, as in PostgreSQL. Other arrays stay as they
    are, and validation refuses them with its code."""
    for node in list(tree.find_all(exp.EQ, exp.NEQ)):
        quantified = node.expression
        if isinstance(quantified, exp.Anonymous) and quantified.name.upper() == "ALL" and len(quantified.expressions) == 1:
            inner = quantified.expressions[0]  # DuckDB's grammar in sqlglot reads ALL(...) as a function call
        elif isinstance(quantified, (exp.Any, exp.All)):
            inner = quantified.this
        else:
            continue
        if isinstance(node, exp.EQ) != isinstance(quantified, exp.Any):
            continue
        array = inner.unnest() if isinstance(inner, exp.Paren) else inner
        if not isinstance(array, exp.Array) or not all(_is_literal(e) for e in array.expressions):
            continue
        if not array.expressions:
            node.replace(exp.false() if isinstance(node, exp.EQ) else exp.true())
            continue
        test = exp.In(this=node.this, expressions=list(array.expressions))
        node.replace(test if isinstance(node, exp.EQ) else exp.Not(this=test))
    return tree


def _is_literal(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean)) or (
        isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal)) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


