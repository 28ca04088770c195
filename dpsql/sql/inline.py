"""Inlines a CTE or a subquery in FROM that only filters or renames columns of one table.

Runs before validation (``validate.check_statement``), which refuses every other subquery or
CTE (DP104): after inlining, the query is one SELECT over one table that the planner plans and
protects as usual.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.sql.parse import position

#: Clauses a subquery may not have to be inlined: it must only filter and rename columns.
_NOT_A_FILTER = ("group", "having", "order", "limit", "offset", "distinct", "joins", "laterals", "qualify",
                 "windows", "with_", "with", "sample", "pivots")


def inline_derived_tables(tree: exp.Expression, sql: str) -> exp.Expression:
    """Inline a CTE or a subquery in FROM that only filters or renames columns of one table.

    ``WITH t AS (SELECT payann AS pay FROM establishments WHERE state = 'CA') SELECT SUM(pay) FROM t``
    becomes ``SELECT SUM(payann) FROM establishments AS t WHERE state = 'CA'``: the same rows,
    one SELECT over one table, which the rest of the pipeline plans and protects as usual.
    Anything else (an aggregate, GROUP BY, LIMIT, a join, an expression in the inner SELECT
    list, a CTE used twice or not at all) is left as it is, for validation to refuse (DP104).
    Pure: returns a new tree, never changes ``tree``.

    Raises:
        QueryRefused: DP203 when the outer query names a column the subquery does not select.
    """
    if not isinstance(tree, exp.Select):
        return tree
    out = tree.copy()
    with_ = out.args.get("with_") or out.args.get("with")
    if with_ is not None and (with_.args.get("recursive") or not _ctes_into_subqueries(out, with_)):
        return tree
    return _inline_from(out, sql)


def _ctes_into_subqueries(tree: exp.Select, with_: exp.With) -> bool:
    """Replace each CTE's single use in a FROM by the CTE's query, in place; False (and the
    tree unusable) when a CTE is used other than exactly once."""
    ctes = list(with_.expressions)
    for i, cte in enumerate(ctes):
        name = cte.alias_or_name.lower()
        # a use is in the main query or in a later CTE (a CTE cannot see itself or later ones)
        uses = [t for t in tree.find_all(exp.Table) if not t.args.get("db") and t.name.lower() == name
                and (t.find_ancestor(exp.CTE) is None or ctes.index(t.find_ancestor(exp.CTE)) > i)]
        if len(uses) != 1 or not isinstance(uses[0].parent, exp.From):
            return False
        alias = uses[0].alias or cte.alias_or_name
        uses[0].replace(exp.Subquery(this=cte.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias))))
    tree.set("with_" if "with_" in tree.args else "with", None)
    return True


def _at(new: exp.Column, old: exp.Column) -> exp.Column:
    """``new`` carrying the position of ``old`` in the SQL text, for error messages."""
    new.this.meta.update({k: v for k, v in old.this.meta.items() if k in ("line", "col", "start", "end")})
    return new


def _inline_from(select: exp.Select, sql: str) -> exp.Select:
    from_ = select.args.get("from_") or select.args.get("from")
    sub = from_.this if from_ is not None else None
    if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Select) or select.args.get("joins"):
        return select
    inner = _inline_from(sub.this, sql)
    inner_from = inner.args.get("from_") or inner.args.get("from")
    table = inner_from.this if inner_from is not None else None
    if (not isinstance(table, exp.Table) or any(inner.args.get(k) for k in _NOT_A_FILTER)
            or any(isinstance(n, (exp.AggFunc, exp.Window)) for n in inner.walk())):
        return select
    inner_qualifiers = {table.name.lower(), table.alias.lower()} - {""}

    def unqualify(node: exp.Expression) -> exp.Expression:
        return exp.column(node.name, quoted=node.this.quoted) if isinstance(node, exp.Column) else node

    renames: dict[str, exp.Column] | None = {}  # None: SELECT * passes every column through
    for item in inner.expressions:
        target = item.this if isinstance(item, exp.Alias) else item
        if isinstance(target, exp.Star) or isinstance(target, exp.Column) and isinstance(target.this, exp.Star):
            renames = None if len(inner.expressions) == 1 else renames
            if renames is not None:
                return select
            continue
        if not isinstance(target, exp.Column) or target.table and target.table.lower() not in inner_qualifiers:
            return select  # an expression, not a rename: leave it for validation to refuse
        renames[item.alias_or_name.lower()] = unqualify(target)
    for col in inner.find_all(exp.Column):
        if col.table and col.table.lower() not in inner_qualifiers:
            return select

    alias = sub.alias  # the outer query may qualify columns by the subquery's alias
    outer_aliases = {i.alias.lower() for i in select.expressions if isinstance(i, exp.Alias)}

    def substitute(node: exp.Expression, prefer_alias: bool = False) -> exp.Expression:
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return node
        if prefer_alias and not node.table and node.name.lower() in outer_aliases:
            return node  # ORDER BY names the query's own outputs first
        if node.table and node.table.lower() != alias.lower():
            return node  # an unknown qualifier: the planner refuses it (DP203)
        if renames is None:
            return _at(exp.column(node.name, quoted=node.this.quoted), node)
        if node.name.lower() in renames:
            return _at(renames[node.name.lower()].copy(), node)
        if not node.table and node.name.lower() in outer_aliases:
            return node
        line, column = position(node, sql)
        raise QueryRefused(f"column {node.name.lower()!r} is not selected by the subquery (it selects: {', '.join(renames)})",
                           code="DP203", line=line, column=column,
                           hint="select the column in the subquery or CTE, or use one of its outputs.")

    out = select.copy()
    items = []
    for item in out.expressions:
        if isinstance(item, exp.Column) and not isinstance(item.this, exp.Star):
            items.append(exp.alias_(substitute(item), item.name, quoted=item.this.quoted))  # keeps its output name
        elif isinstance(item, exp.Alias):
            items.append(item.transform(substitute))
        else:
            items.append(exp.alias_(item.transform(substitute), item.sql("duckdb"), quoted=True))
    out.set("expressions", items)
    for part in ("where", "group", "having", "order"):
        if out.args.get(part) is not None:
            out.set(part, out.args[part].transform(substitute, prefer_alias=part == "order"))
    new_table = exp.Table(this=table.this.copy(), db=table.args.get("db"), catalog=table.args.get("catalog"))
    if alias:
        new_table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    out.set("from_" if "from_" in out.args else "from", exp.From(this=new_table))
    inner_where = inner.args.get("where")
    if inner_where is not None:
        cond = inner_where.this.transform(unqualify)
        outer_where = out.args.get("where")
        out.set("where", exp.Where(this=cond if outer_where is None else exp.and_(cond, outer_where.this)))
    return out
