"""The GROUP BY keys of one query, checked against the policy.

A key is a declared key column of the private table (or of a private table joined on the unit),
a column of a joined public table, or an expression of those; it is public when every column it
reads has a public keyset, otherwise its groups go through partition selection.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.policy.model import TablePolicy
from dpsql.sql.parse import written_name
from dpsql.sql.plan import GroupKey
from dpsql.sql.scopes import Scopes
from dpsql.sql.time_keys import BUCKET_HINT, bounded, check_buckets, key_days


def group_keys(select: exp.Select, table: TablePolicy, scopes: Scopes, items: list[exp.Expression],
               aliases: dict[str, exp.Expression]) -> list[GroupKey]:
    """The keys of ``select``'s GROUP BY, by column, SELECT alias or position (``items`` is the
    SELECT list, ``aliases`` its aliases); a key listed twice is one key."""
    group = select.args.get("group")
    if group is None:
        return []
    if group.args.get("all"):
        raise scopes.refuse(group, "DP114", "GROUP BY ALL is not supported", "list the key columns.")
    keys: list[GroupKey] = []
    for g in group.expressions:
        target = g
        if isinstance(g, exp.Literal) and not g.is_string:
            idx = int(g.this) - 1
            if not 0 <= idx < len(items):
                raise scopes.refuse(g, "DP114", f"GROUP BY position {g.this} is not in the SELECT list")
            target = items[idx].this if isinstance(items[idx], exp.Alias) else items[idx]
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases and not scopes.in_scopes(g.name.lower()):
            target = aliases[g.name.lower()]
        if any(isinstance(n, exp.AggFunc) for n in target.walk()):
            raise scopes.refuse(g, "DP114", "GROUP BY cannot contain an aggregate", "group by key columns; filter on aggregates with HAVING.")
        expr = scopes.normalise_columns(target.copy())
        while isinstance(expr, exp.Paren):  # (a + b) groups as a + b, which the SELECT list matches inside its parentheses
            expr = expr.this
        sources = list(dict.fromkeys(c.name for c in expr.find_all(exp.Column)))
        if not sources:
            raise scopes.refuse(g, "DP114", "GROUP BY a constant groups nothing",
                                "group by key columns (by name, alias or position) or expressions of them.")
        public = True
        for name in sources:
            if name in table.keys:
                public = public and table.keys[name].public
            elif name not in scopes.columns or name in scopes.scopes[0].columns or name in scopes.private_names:
                declared = ", ".join(sorted(scopes.shown(k) for k in table.keys)) or "none"
                joined = [f"{sc.name}.*" for sc in scopes.scopes[1:] if scopes.policy.table(sc.name) is None]
                raise scopes.refuse(g, "DP206", f"column {scopes.shown(name)!r} is not a group-by key of {table.name!r} in the policy",
                                    f"group by the declared keys ({declared}){', columns of ' + ', '.join(joined) if joined else ''}"
                                    " or expressions of them.")
        if expr.sql("duckdb") in {k.expr.sql("duckdb") for k in keys}:
            continue
        ranged = {n: table.keys[n] for n in sources if n in table.keys and table.keys[n].range is not None}
        stamps = {n: k for n, k in ranged.items() if not k.numeric and scopes.columns.get(n, "").upper() != "DATE"}
        days = {n: d for n in sources if n in table.keys
                and (d := key_days(n, table.keys[n], scopes.columns.get(n, ""))) is not None}
        if stamps:
            check_buckets(expr, stamps, lambda msg, node: scopes.refuse(
                g, "DP114", msg.format(fn="CAST" if isinstance(node, exp.Cast) else written_name(node, scopes.sql)),
                BUCKET_HINT.format(c=next(iter(stamps)))))
        within = bounded(expr, days, scopes.columns) if days else None
        if isinstance(expr, exp.Column):
            name = expr.name
            key = GroupKey(name, expr, scopes.shown(name), (name,), public, name if name in table.keys else None,
                           bounded=within)
        else:
            key = GroupKey(f"__k{len(keys)}", expr, target.sql("duckdb"), tuple(sources), public, bounded=within)
        keys.append(key)
    return keys


def keys_by_text(keys: list[GroupKey]) -> dict[str, GroupKey]:
    """The keys by the DuckDB text of their expression, as ``key_for`` looks them up."""
    return {k.expr.sql("duckdb"): k for k in keys}


def key_for(node: exp.Expression, scopes: Scopes, lookup: dict[str, GroupKey]) -> GroupKey | None:
    """The GROUP BY key ``node`` is (a key column or the same expression), if any."""
    if not any(isinstance(n, exp.Column) for n in node.walk()) or any(isinstance(n, exp.AggFunc) for n in node.walk()):
        return None
    try:
        text = scopes.normalise_columns(node.copy()).sql("duckdb")
    except QueryRefused:
        return None  # an alias or an unknown column: not a key (refused by to_finish if it matters)
    return lookup.get(text)
