"""``?`` parameters of SQL over released answers and of a series limit (issue 32; docs/sql.md,
"SQL over released answers").

A plain query binds its ``?`` values as literals in its tree before phase 1
(:func:`dpsql.sql.query.bind_parameters`); the shapes of :mod:`.answer_shapes` are read from the
text, so a statement with parameters that may be one of them is bound the same way first and
its text rendered with the literals in place: the outer query, the subquery (whose values then
are part of its release: another value, another release, another key for reuse) and the series
limit's join are decided from that text like any other. The values are the analyst's own,
public like the text; nothing private is read here.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.sql.parse import parse
from dpsql.sql.query import bind_parameters

#: a parenthesised SELECT or WITH, or a statement starting with WITH: the only texts that may read
#: an aggregate subquery (anything else goes to the pipeline with its values untouched)
_MAY_NEST = re.compile(r"\(\s*(?:select|with)\b|^\s*with\b", re.IGNORECASE)


def bound(sql: str, parameters: Any) -> str | None:
    """``sql`` with its ``?`` placeholders replaced by the literals of ``parameters`` (in order, as
    the pipeline binds them; DP118 when their numbers differ), rendered in DuckDB's dialect; None
    when the text cannot read a subquery, does not parse or has numbered parameters (the pipeline
    then answers or refuses it as it would)."""
    if not _MAY_NEST.search(sql):
        return None
    try:
        tree = parse(sql)
    except QueryRefused:
        return None
    if any(p.this is not None for p in tree.find_all(exp.Placeholder)):
        return None  # $1 / :name: the pipeline refuses them (DP118)
    return bind_parameters(tree, parameters).sql(dialect="duckdb")
