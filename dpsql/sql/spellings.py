"""Other spellings of forms dpsql answers, read as the form they spell (phase 1, the text only).

* ``SELECT TOP n ...`` (T-SQL, which SmartNoise's suite and some BI tools write) is ``... LIMIT
  n``: :func:`top_as_limit` blanks ``TOP n`` out of the text (same length, so positions in error
  messages stay right) and :func:`fetch_as_limit` sets the LIMIT on the outermost SELECT;
* ``FETCH FIRST n ROWS ONLY`` / ``FETCH NEXT n ROWS ONLY`` (the SQL standard's) is ``LIMIT n``;
  ``WITH TIES`` and ``PERCENT`` are refused (DP110), as their rows depend on the values;
* ``x = ANY(ARRAY[a, b])`` is ``x IN (a, b)`` and ``x <> ALL(ARRAY[a, b])`` is ``NOT x IN (a, b)``
  (:func:`any_as_in`);
* ``WIDTH_BUCKET(x, low, high, n)`` (PostgreSQL's, which DuckDB lacks) is the CASE it computes
  (:func:`width_bucket_as_case`), with literal bounds and count;
* ``SQUARE(x)`` (T-SQL's, which SmartNoise's users write) is ``POWER(x, 2)`` (:func:`square_as_power`).

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


#: WIDTH_BUCKET's bounds are read as DOUBLE: within ±2^52, and with |high − low| · n ≤ 2^53, an
#: integer x's bucket (x − low) · n / (high − low) is computed exactly before FLOOR
_EXACT = 2 ** 52


def _number(node: exp.Expression | None) -> float | int | None:
    """The value of a numeric literal (or its negation), else None."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this  # type: ignore[union-attr]
    if not isinstance(node, exp.Literal) or node.is_string:
        return None
    try:
        value = int(node.this) if node.is_int else float(node.this)
    except ValueError:
        return None
    return -value if negative else value


def width_bucket_as_case(tree: exp.Expression) -> exp.Expression:
    """``WIDTH_BUCKET(x, low, high, n)`` as PostgreSQL defines it, as a CASE DuckDB runs: 0 below
    ``low``, n + 1 from ``high`` on, else FLOOR((x − low) · n / (high − low)) + 1 (and mirrored when
    high < low); NULL for NULL. The arithmetic is in DOUBLE (never an error: ``sql/totality.py``)
    and the bucket is a BIGINT. The bounds and n must be literals (PostgreSQL fails on n ≤ 0 or
    low = high, per row; here that is decided from the text): DP110 otherwise."""
    for node in list(tree.find_all(exp.WidthBucket)):
        x = node.this
        low, high, n = (_number(node.args.get(a)) for a in ("min_value", "max_value", "num_buckets"))
        if low is None or high is None or not isinstance(n, int) or n < 1 or low == high \
                or max(abs(low), abs(high)) > _EXACT or abs(high - low) * n > 2 * _EXACT:
            raise QueryRefused("WIDTH_BUCKET needs literal bounds that differ and a literal count of buckets n ≥ 1",
                               code="DP110", hint="write WIDTH_BUCKET(column, 0, 100, 10), or a CASE of the column.")
        flip = high < low  # PostgreSQL's reversed buckets: 0 above low, n + 1 from high down
        below, beyond = (exp.GT, exp.LTE) if flip else (exp.LT, exp.GTE)
        as_double = exp.Cast(this=x.copy(), to=exp.DataType.build("DOUBLE"))
        offset = exp.Sub(this=exp.Literal.number(low), expression=as_double) if flip \
            else exp.Sub(this=as_double, expression=exp.Literal.number(low))
        share = exp.Div(this=exp.Mul(this=exp.Paren(this=offset), expression=exp.Literal.number(n)),
                        expression=exp.Literal.number(abs(high - low)))
        bucket = exp.TryCast(this=exp.Add(this=exp.Floor(this=share), expression=exp.Literal.number(1)),
                             to=exp.DataType.build("BIGINT"))
        case = exp.Case(ifs=[exp.If(this=below(this=x.copy(), expression=exp.Literal.number(low)), true=exp.Literal.number(0)),
                             exp.If(this=beyond(this=x.copy(), expression=exp.Literal.number(high)),
                                    true=exp.Literal.number(n + 1))],
                        default=bucket)
        if isinstance(node.parent, exp.Select) and node.arg_key == "expressions":  # an output column: named as written
            case = exp.alias_(case, node.sql("duckdb"), quoted=True)
        node.replace(case)
    return tree


def square_as_power(tree: exp.Expression) -> exp.Expression:
    """``SQUARE(x)`` as ``POWER(x, 2)``: the same value, a form the allow-list knows."""
    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and str(node.this).upper() == "SQUARE" and len(node.expressions) == 1:
            out = exp.Pow(this=node.expressions[0].copy(), expression=exp.Literal.number(2))
            out.meta.update(node.meta)
            return out
        return node

    return tree.transform(fix) if any(isinstance(n, exp.Anonymous) for n in tree.walk()) else tree
