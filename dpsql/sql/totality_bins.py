"""Allow-list rules for the forms ``quantiles.binned_sql`` writes into the exact query (issue 34),
beside :mod:`dpsql.sql.totality` (which registers them in its ``ALLOW_LIST``, passing its own
``value_type`` / ``condition_total`` for the parts): each states why it cannot raise for any row.
"""

from __future__ import annotations

import re

from sqlglot import exp

from collections.abc import Callable

from dpsql.sql.sql_types import SqlType

Typer = Callable[[exp.Expression, dict[str, str]], "SqlType | None"]
DOUBLE, LIST = SqlType("float", "DOUBLE"), SqlType("other", "LIST")
_BIGINT_MAX = 2**63 - 1


def _int_literal_within(node: exp.Expression, bound: int) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this) is not None \
        and int(node.this) <= bound


def clamped(node: exp.Expression) -> bool:
    """LEAST(GREATEST(x, a), b) with integer literals |a|, |b| <= 2^53 (exact as doubles): a
    double in [a, b] whatever x — ±inf is clamped, and NaN, DuckDB's greatest double, gives b
    (quantiles.binned_sql's bucket) — so its CAST to BIGINT cannot fail."""
    if not (isinstance(node, exp.Least) and len(node.expressions) == 1 and isinstance(node.this, exp.Greatest)
            and len(node.this.expressions) == 1):
        return False
    return all(_int_literal_within(e, 2**53) for e in (node.expressions[0], node.this.expressions[0]))


def ln(node: exp.Expression, schema: dict[str, str], value_type: Typer) -> SqlType | None:
    # LN(GREATEST(x, c)) of a float x and a positive literal c: the logarithm of a double >= c
    # (or of NaN: NaN) is a double, never DuckDB's error for 0 or a negative number.
    arg = node.this
    ok = isinstance(arg, exp.Greatest) and len(arg.expressions) == 1 and value_type(arg, schema) == DOUBLE \
        and isinstance(arg.expressions[0], exp.Literal) and not arg.expressions[0].is_string \
        and float(arg.expressions[0].this) > 0
    return DOUBLE if ok else None


def list_agg(node: exp.Expression, schema: dict[str, str], value_type: Typer) -> SqlType | None:
    # LIST(x) / LIST(x ORDER BY y) of total values: collecting values cannot fail (its memory
    # is one entry per row read, as a COUNT's group; docs/performance.md "Memory").
    inner = node.this
    parts = [inner.this, *[o.this for o in inner.expressions]] if isinstance(inner, exp.Order) else [inner]
    return LIST if all(value_type(p, schema) is not None for p in parts) else None


def filtered(node: exp.Expression, schema: dict[str, str], value_type: Typer) -> SqlType | None:
    # an aggregate's FILTER (WHERE condition): a total aggregate of the rows a total condition keeps
    where = node.expression
    condition = value_type(where.this, schema) if isinstance(where, exp.Where) else None
    return value_type(node.this, schema) if condition is not None and condition.kind == "bool" else None


def bigint_array(node: exp.Expression) -> bool:
    """``'[1, -2, ...]'::BIGINT[n]``: a text literal of n integers that fit a BIGINT (read
    here), cast to a fixed-size ARRAY: a constant, so the cast cannot fail for any row."""
    to = node.to.sql("duckdb") if isinstance(node, exp.Cast) else ""
    sized = re.fullmatch(r"BIGINT\[(\d+)\]", to)
    text = node.this.this if sized and isinstance(node.this, exp.Literal) and node.this.is_string else ""
    m = re.fullmatch(r"\[(-?\d+(?:, -?\d+)*)\]", text)
    values = m.group(1).split(", ") if m else []
    return bool(values) and len(values) == int(sized.group(1)) and all(abs(int(v)) <= _BIGINT_MAX for v in values)
