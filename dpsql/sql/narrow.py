"""A public keyset narrowed by the query's own WHERE on that key (docs/sql.md, "WHERE on a public key").

A public key's groups are released for every value of its keyset, whatever the rows hold (empty
groups as noise on zero). When the query's WHERE has a conjunct that reads only the key's own
columns — ``WHERE age BETWEEN 20 AND 30 GROUP BY age``, Superset's time range ``WHERE opened >=
'2015-01-01' AND opened < '2016-01-01' GROUP BY DATE_TRUNC('month', opened)`` — a group whose
every keyset value the conjunct excludes (FALSE or NULL, as WHERE reads it) can hold no row of the
answer, whatever the data: no row passes the WHERE with such a key. Its noise-only group is
dropped. Which groups are dropped is a function of the query text and the keyset, both public:
the domain (``pipeline/domain.py``) evaluates the conjuncts on the keyset's values themselves
(the product of the key's columns' keysets, as for the image of an expression), never on a row.

A conjunct narrows a key only when it reads nothing but columns of that key, every one of them a
column whose keyset value is the row's own value: not a TIMESTAMP declared by a coarser grain
(its keyset holds only grain-aligned instants, while a row at 18:00 of a day passes
``ts >= '… 12:00'`` that the day's midnight fails), and nothing that varies between runs
(``RANDOM()``, ``CURRENT_DATE``: the keyset is cached with the plan). Conjuncts of OR, of several
keys, or of private columns narrow nothing: the keyset stays whole, as before.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from dpsql.policy.model import TablePolicy
from dpsql.sql.plan import GroupKey

#: functions whose value is not fixed by their arguments: a conjunct holding one narrows nothing
_VOLATILE_NAMES = frozenset({"random", "rand", "uuid", "gen_random_uuid", "now", "today", "getdate",
                             "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
                             "get_current_time", "get_current_timestamp", "transaction_timestamp", "setseed"})
_NOT_ROW_LOCAL = (exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Placeholder, exp.Parameter)


def conjuncts(where: exp.Expression | None) -> list[exp.Expression]:
    """The top-level AND terms of a WHERE condition (parentheses looked through)."""
    if where is None:
        return []
    while isinstance(where, exp.Paren):
        where = where.this
    if isinstance(where, exp.And):
        return conjuncts(where.this) + conjuncts(where.expression)
    return [where]


def _fixed(node: exp.Expression) -> bool:
    """Whether ``node`` is a function of its columns alone: no subquery, aggregate, window,
    parameter or function whose value varies between runs."""
    for n in node.walk():
        if isinstance(n, _NOT_ROW_LOCAL) or isinstance(n, exp.Rand) or type(n).__name__.startswith("Current"):
            return False
        if isinstance(n, exp.Func) and (n.sql_name() if not isinstance(n, exp.Anonymous) else n.name).lower() in _VOLATILE_NAMES:
            return False
    return True


def exact_values(column: str, table: TablePolicy, types: dict[str, str]) -> bool:
    """Whether a row's value of key column ``column`` is one of its keyset's values (or outside
    every released group): true of a keyset, an integer range and a DATE range; false of a
    TIMESTAMP range, whose keyset holds only the instants of its grain."""
    key = table.keys.get(column)
    if key is None or key.range is None or key.numeric:
        return True
    return types.get(column, "").upper() == "DATE"


def narrow_keys(keys: list[GroupKey], where: exp.Expression | None, table: TablePolicy,
                types: dict[str, str]) -> list[GroupKey]:
    """``keys`` with each public key's ``narrowed`` set: the AND of the WHERE conjuncts that read
    only its columns (DuckDB text over the same internal names as the key), or None."""
    terms = [c for c in conjuncts(where) if _fixed(c)]
    if not terms:
        return keys
    out = []
    for key in keys:
        own = set(key.sources)
        mine = [c for c in terms
                if key.public and (cols := {n.name for n in c.find_all(exp.Column)}) and cols <= own
                and all(exact_values(n, table, types) for n in cols)]
        narrowed = " AND ".join(f"({c.sql('duckdb')})" for c in mine) or None
        out.append(dataclasses.replace(key, narrowed=narrowed) if narrowed else key)
    return out
