"""Superset's Samples pane: a row count it shows only beside the sample's rows (issue 33).

Explore's Samples pane (Superset 6, ``views/datasource/utils.py: get_samples``) first sends the
row count of the dataset, ``SELECT COUNT(*) AS "COUNT(*)" FROM t [WHERE …] LIMIT <ROW_LIMIT>``,
then the sample's rows, ``SELECT <every column> FROM t … LIMIT 50``. On a private table the rows
are always refused (DP201: raw rows), and Superset then shows that error and drops the count: the
count was a charged release that nobody sees. Refusing the count instead costs nothing and
Superset stops there (a failed count ends ``get_samples`` before the rows are asked for); it
shows the refusal, which says why.

Decided in phase 1 from the text alone: the statement's one item is ``COUNT(*)`` labelled exactly
``"COUNT(*)"`` (Superset's label for its own count; a person writes ``COUNT(*)`` or
``COUNT(*) AS n``), with a LIMIT, no GROUP BY, HAVING, ORDER BY, OFFSET or DISTINCT. A chart
whose metric is an ad-hoc ``COUNT(*)`` with that same label and no grouping (a Big Number) sends
the same text and is refused too: the message says to label the metric otherwise (Superset's
saved metric ``count``) — text cannot tell the two apart, and a count charged and thrown away on
every opening of the pane is the worse of the two. Public tables never reach this check
(:mod:`dpsql.intercept.public_tables` answers them, samples included).
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.sql.parse import position

#: the label Superset gives the Samples pane's count (``count_star_metric``)
LABEL = "COUNT(*)"


def is_samples_count(select: exp.Select) -> bool:
    """Whether ``select`` is the Samples pane's row count (module docstring)."""
    if len(select.expressions) != 1 or select.args.get("limit") is None:
        return False
    if any(select.args.get(a) for a in ("group", "having", "order", "offset", "distinct")):
        return False
    item = select.expressions[0]
    alias = item.args.get("alias") if isinstance(item, exp.Alias) else None
    return (alias is not None and alias.name == LABEL and isinstance(item.this, exp.Count)
            and isinstance(item.this.this, exp.Star))


def check_samples_count(select: exp.Select, sql: str) -> None:
    """Refuse (DP128) the Samples pane's row count, before anything is charged."""
    if is_samples_count(select):
        line, column = position(select.expressions[0], sql)
        raise QueryRefused(
            f'this is the row count of Superset\'s Samples pane (COUNT(*) AS "{LABEL}" with a LIMIT and no GROUP BY), '
            "which Superset shows only with the sample's rows, and the rows of a private table are never shown: "
            "answering it would charge a release nobody sees", code="DP128", line=line, column=column,
            hint='a private table has no samples (use a chart or SQL Lab). To chart a count, label it otherwise '
                 '(Superset\'s saved metric "count", or COUNT(*) AS n) or leave out the LIMIT.')
