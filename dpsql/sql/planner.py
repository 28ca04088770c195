"""Checks a SELECT against the policy and builds the frozen plan of one query.

The driver of planning: it resolves the tables (``scopes.py``), the WHERE filter, the GROUP BY
keys (``keys.py``) and the aggregates and finish SELECT (``aggregates.py``), in that order,
which is the order in which a query breaking several rules is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dpsql.policy.model import Policy
from dpsql.sql.session_cap import cap_table
from dpsql.sql.aggregates import FinishRewriter
from dpsql.sql.finish_forms import base_sql, forms
from dpsql.sql.keys import group_keys
from dpsql.sql.narrow import narrow_keys
from dpsql.sql.null_keys import null_columns, null_filters
from dpsql.sql.plan import Join, Plan
from dpsql.sql.scopes import Scopes
from dpsql.sql import units


def build_plan(select: exp.Select, sql: str, policy: Policy, schema: dict[str, dict[str, str]],
               not_null: dict[str, set[str]] | None = None) -> Plan:
    """Build the plan of a SELECT that passed ``validate.check_statement``.

    Args:
        select: the statement.
        sql: its text, for error positions.
        policy: the loaded policy.
        schema: table name -> {column name -> DuckDB type} of the tables the policy declares.
        not_null: table name -> columns the schema declares NOT NULL.
    """
    not_null = not_null or {}
    select = distinct_as_group(select)
    scopes = Scopes(select, sql, policy, schema)
    table = scopes.resolve_tables()
    for join in scopes.joins:  # the join keys are read whatever the query selects
        scopes.note_public(join.left)
        scopes.note_public(join.internal(join.key))

    where = select.args.get("where")
    where_expr = None
    if where is not None:
        if any(isinstance(n, exp.AggFunc) for n in where.this.walk()):
            raise scopes.refuse(where, "DP112", "aggregates are not allowed in WHERE", "filter on aggregates with HAVING.")
        where_expr = scopes.normalise_columns(where.this.copy())
        scopes.check_ordering_types(where_expr)

    items = list(select.expressions)
    if not items:
        raise scopes.refuse(select, "DP112", "the SELECT list is empty")
    aliases = {item.alias.lower(): item.this for item in items if isinstance(item, exp.Alias)}
    keys = narrow_keys(group_keys(select, table, scopes, items, aliases), where_expr, table, scopes.columns)
    nullable = _nullable(scopes, policy, table.name, not_null)
    filters = null_filters(table, keys, nullable, scopes.columns)  # NULL keys (sql/null_keys.py)
    if filters:
        where_expr = exp.and_(*([where_expr] if where_expr is not None else []), *filters)
    if table.many_rows:
        table = units.grouping_table(table, policy, keys, scopes.joins)  # κ of this grouping (max_groups_by)
        table = cap_table(table, policy)  # at most the session's SET dpsql.max_groups
        units.check_plan(scopes, select, table, policy, keys)

    rewriter = FinishRewriter(scopes, table, keys, not_null)
    finish, outputs = rewriter.finish(select, items, aliases)

    joins = tuple(Join(j.table, j.alias, j.side, j.left, j.key,
                       tuple(dict.fromkeys([j.key, *scopes.used_public.get(j.alias, [])]))) for j in scopes.joins)
    public_types = {j.internal(c): scopes.columns[j.internal(c)] for j in joins for c in j.columns}
    # a private table joined on the unit is no public data: its columns are never read as keysets
    public_columns = {j.internal(c): (j.table, c) for j in joins for c in j.columns if policy.table(j.table) is None}
    private = any(not k.public for k in keys)
    finish_sql, finish_names, projection = forms(finish, tuple(outputs))
    finish_base = base_sql(finish) if any(finish.args.get(a) for a in ("order", "limit", "offset")) else finish_sql
    return Plan(sql=sql, table=table, where=where_expr, keys=tuple(keys),
                primitives=tuple(rewriter.primitives), finish=finish, outputs=tuple(outputs),
                selection_count=policy.selection.count if private else None,
                joins=joins, public_types=public_types, public_columns=public_columns,
                finish_sql=finish_sql, finish_names=finish_names, projection=projection, finish_base_sql=finish_base,
                null_columns=null_columns(table, keys, nullable))


def _nullable(scopes: Scopes, policy: Policy, table: str, not_null: dict[str, set[str]]) -> Callable[[str], bool]:
    """Whether the schema lets a private column (by internal name) hold NULL: not declared NOT
    NULL in its table, the private one or a private table joined on the unit (``alias_column``)."""
    joined = {j.alias: j.table for j in scopes.joins if policy.table(j.table) is not None}

    def nullable(column: str) -> bool:
        of = next(((t, column[len(a) + 1:]) for a, t in joined.items() if column.startswith(a + "_")), (table, column))
        return of[1] not in not_null.get(of[0], set())
    return nullable


def distinct_as_group(select: exp.Select) -> exp.Select:
    """``SELECT DISTINCT a, b FROM t`` as ``SELECT a, b FROM t GROUP BY a, b``: the same groups
    (validate.py refused DISTINCT with GROUP BY or aggregates), released as any query without
    an aggregate: a public keyset free, private keys through partition selection."""
    if not select.args.get("distinct"):
        return select
    out = select.copy()
    out.set("distinct", None)
    out.set("group", exp.Group(expressions=[(i.this if isinstance(i, exp.Alias) else i).copy() for i in out.expressions]))
    return out
