"""Allow-list rules for the forms ``quantiles.values_sql`` writes into the exact query (issue 34),
beside :mod:`dpsql.sql.totality` (which registers them in its ``ALLOW_LIST``, passing its own
``value_type`` / ``condition_total`` for the parts): each states why it cannot raise for any row.
"""

from __future__ import annotations

from sqlglot import exp

from collections.abc import Callable

from dpsql.sql.sql_types import SqlType

Typer = Callable[[exp.Expression, dict[str, str]], "SqlType | None"]
LIST = SqlType("other", "LIST")


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
