"""PostgreSQL's ``TO_DATE(text, format)`` and ``TO_TIMESTAMP(text, format)`` in DuckDB's terms.

BI tools speaking to ``dpsql serve`` as to PostgreSQL write their time-range filters this way
(Superset: ``opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD')``); DuckDB's parser reads the first as
an unknown function and the second as ``TO_TIMESTAMP(epoch)``. With two string literals they are
the same as DuckDB's ``STRPTIME`` with the format translated (sqlglot's PostgreSQL time mapping),
so :func:`postgres_date_literals` rewrites them before validation; any other form is left to be
refused by name.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.time import format_time

if TYPE_CHECKING:
    from sqlglot.dialects.postgres import Postgres


@functools.cache
def _postgres() -> Postgres:
    """sqlglot's PostgreSQL dialect, imported when a query first needs its time mapping (every
    query is looked at here, few use TO_DATE: not a cost of every process's start)."""
    from sqlglot.dialects.postgres import Postgres

    return Postgres()


def _strftime_format(literal: exp.Literal) -> exp.Literal:
    pg = _postgres()
    return exp.Literal.string(format_time(literal.name, pg.TIME_MAPPING, pg.TIME_TRIE) or "")


def _is_text(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def postgres_date_literals(tree: exp.Expression) -> exp.Expression:
    """``tree`` with PostgreSQL's two-argument TO_DATE / TO_TIMESTAMP of string literals as
    DuckDB's StrToDate / StrToTime (parsed with a format, written ``STRPTIME``)."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and str(node.this).upper() == "TO_DATE" and len(node.expressions) == 2 \
                and all(_is_text(a) for a in node.expressions):
            return exp.StrToDate(this=node.expressions[0].copy(), format=_strftime_format(node.expressions[1]))
        if isinstance(node, exp.UnixToTime) and _is_text(node.this) and _is_text(node.args.get("scale")):
            return exp.StrToTime(this=node.this.copy(), format=_strftime_format(node.args["scale"]))
        return node

    return tree.transform(rewrite)
