"""NULL as a key value (issue 32; docs/sql.md "NULL keys", docs/policy.md "NULL keys").

SQL puts the rows whose key is NULL in one group of their own. Whether a column can hold NULL is
a fact of the schema, which is public: a key column the schema lets hold NULL has NULL in its
public keyset, and its NULL group is released like any other group — noise on zero when no row
is NULL, so the group's presence says nothing about the rows. A NOT NULL column has no NULL
group. A key the policy marks ``null = false`` has none either: rows whose key is NULL fall in
no group (a filter of the exact query), for a public and a private key alike. A private key's
NULL group is a group like any other for partition selection.

A date key is read within its days (``time_keys.bounded``: NULL outside them). Where its NULL is a
value, a row outside the days would land in the NULL group; so the exact query keeps only rows
whose date is NULL or within the days, and a row outside the range still falls in no group.
Everything here is decided from the policy and the schema, in phase 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from dpsql.policy.model import TablePolicy
from dpsql.sql.plan import GroupKey
from dpsql.sql.time_keys import key_days, range_condition


def null_columns(table: TablePolicy, keys: Sequence[GroupKey], nullable: Callable[[str], bool]) -> tuple[str, ...]:
    """The private key columns read by public keys whose keyset holds NULL: nullable in the
    schema (``nullable`` of the column's internal name) and not ``null = false``."""
    return tuple(sorted({c for k in keys if k.public for c in k.sources
                         if c in table.keys and table.keys[c].null and nullable(c)}))


def null_filters(table: TablePolicy, keys: Sequence[GroupKey], nullable: Callable[[str], bool],
                 types: dict[str, str]) -> list[exp.Expression]:
    """The conditions the exact query adds to its WHERE for the keys' nullable columns: ``c IS
    NOT NULL`` for a key marked ``null = false``; ``c IS NULL OR c within its days`` for a date key
    whose NULL is a value (the module docstring). Empty for NOT NULL columns."""
    out: list[exp.Expression] = []
    for c in dict.fromkeys(c for k in keys for c in k.sources if c in table.keys and nullable(c)):
        col = exp.column(c, quoted=True)
        is_null = exp.Is(this=col, expression=exp.Null())
        if not table.keys[c].null:
            out.append(exp.Not(this=is_null))
        elif (days := key_days(c, table.keys[c], types.get(c, ""))) is not None:
            # TRY_CAST of the range's literal days: CAST is not on the allow-list, and TRY() of the
            # whole condition would lose DuckDB's filter pushdown
            within = range_condition(c, days, types[c]).transform(
                lambda n: exp.TryCast(this=n.this, to=n.to) if isinstance(n, exp.Cast) else n)
            out.append(exp.or_(is_null, within))
    return out
