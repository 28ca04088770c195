"""The one totality check of the exact query, on the text that runs (docs/privacy.md, "The exact
query is total").

The analyst's conditions and keys are checked where they are planned, but the exact query also
holds what dpsql writes itself: join conditions, a measure scaled to its granularity, the split
count, the quantile histogram, a workload's partition condition. Issue 29 found two of those
failing per row (a BIGINT joined to a DECIMAL(38,31) key; an INTEGER scaled by 100) while every
analyst expression was proven total. So :func:`check_final` parses the final SQL, whoever wrote
each part of it, and proves every expression that reads a row total with the one allow-list
(:data:`dpsql.sql.totality.ALLOW_LIST`) and the columns' types: each projection, aggregate,
join condition, WHERE conjunct and GROUP BY key is built only from allow-listed forms or runs
inside ``TRY()`` / ``TRY_CAST``. A fragment that is not is refused here, in phase 1, with
DP122 — before any row is read, and whatever the rows.

It runs where the exact SQL is made (:func:`dpsql.sql.rewrite.exact_sql`), once per plan: the
plan cache and the plan record (:mod:`dpsql.records.plan`) keep the checked text, so a recorded
plan runs without sqlglot. No I/O; nothing here reads a row.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.sql.totality import condition_total, expression_total, value_type

#: how much of a fragment a refusal quotes (it is the query's and dpsql's text: public)
_SHOWN = 200


def check_final(sql: str, types: dict[str, str]) -> None:
    """Refuse (DP122) unless every expression of the exact query ``sql`` is total.

    Args:
        sql: the exact query, as :func:`~dpsql.sql.rewrite.exact_sql` wrote it.
        types: DuckDB type of every column it reads: the private table's columns and the joined
            public columns under their internal names (``__j1_region``).
    """
    tree = sqlglot.parse_one(sql, read="duckdb")
    bad = first_not_total(tree, types)
    if bad is not None:
        fragment = bad.sql("duckdb")
        raise QueryRefused(
            "dpsql cannot prove that the exact query it would run cannot fail for some row: "
            f"{fragment[:_SHOWN]}{'…' if len(fragment) > _SHOWN else ''}", code="DP122",
            hint="whether a query fails must not depend on private rows, so dpsql refuses it before reading "
                 "any; rewrite the expression named (or the policy's declaration that produced it), or report "
                 "it as a gap in dpsql's allow-list (docs/privacy.md).")


def first_not_total(tree: exp.Expression, types: dict[str, str]) -> exp.Expression | None:
    """The first expression of the exact query that could fail for some row, or None. Only the
    shapes :func:`~dpsql.sql.rewrite.exact_sql` writes are known: one SELECT with projections, a
    FROM of the private table and joined projections of public tables, WHERE and GROUP BY; or,
    for a table with many rows per unit (:mod:`dpsql.sql.units`), such SELECTs chained by WITH,
    each reading the table or an earlier one, with the bounding's QUALIFY. Anything else is
    returned whole."""
    if not isinstance(tree, exp.Select):
        return tree
    types, ctes, partial = dict(types), set(), set()
    with_ = tree.args.get("with_") or tree.args.get("with")
    for cte in with_.expressions if with_ is not None else []:
        bad = _select(cte.this, types, ctes, partial)
        if bad is not None:
            return bad
        _outputs(cte.this, types, partial)
        ctes.add(cte.alias)
    return _select(tree, types, ctes, partial)


def _select(tree: exp.Expression, types: dict[str, str], ctes: set[str], partial: set[str]) -> exp.Expression | None:
    if not isinstance(tree, exp.Select):
        return tree
    known = {"expressions", "from", "from_", "joins", "where", "group", "with", "with_", "qualify"}
    if any(v for k, v in tree.args.items() if k not in known):
        return tree
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None or not isinstance(source.this, exp.Table) or source.this.args.get("db"):
        return tree
    from_cte = source.this.name in ctes
    for item in tree.expressions:
        value = item.this if isinstance(item, exp.Alias) else item
        if isinstance(value, exp.Star) and from_cte:
            continue  # the earlier step's columns, each checked where it was made
        if isinstance(value, exp.Window):  # a rank (units.py's __first): numbering rows cannot fail
            bad = _numbering(value, types)
            if bad is not None:
                return bad
            types[item.alias_or_name] = "BIGINT"
            continue
        if not (expression_total(value, types) or _resum(value, types, partial)):
            return value
    for join in tree.args.get("joins") or []:
        bad = _join(join, types, ctes)
        if bad is not None:
            return bad
    where = tree.args.get("where")
    if where is not None:
        parts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
        for part in parts:
            if not condition_total(part, types):
                return part
    group = tree.args.get("group")
    for key in group.expressions if group is not None else []:
        if not expression_total(key, types):
            return key
    qualify = tree.args.get("qualify")
    return None if qualify is None else _bounding(qualify.this, types)


def _outputs(select: exp.Select, types: dict[str, str], partial: set[str]) -> None:
    """The types of a WITH step's columns, for the steps after it. A SUM of integers of at most
    64 bits is a *partial sum* (:func:`_resum`)."""
    for item in select.expressions:
        value = item.this if isinstance(item, exp.Alias) else item
        if isinstance(value, exp.Star):
            continue
        t = value_type(value, types)
        if t is not None:
            types[item.alias_or_name] = t.name
        elif isinstance(value, exp.Sum) and _resum(value, types, partial):
            types[item.alias_or_name] = "HUGEINT"  # a re-sum of partial sums (units.py's __agg step)
        if isinstance(value, exp.Sum):
            partial.add(item.alias_or_name)


#: what a re-sum of partial sums may apply to them: caps and defaults, never arithmetic or casts
_CAPS = (exp.Least, exp.Greatest, exp.Coalesce, exp.Paren, exp.Column, exp.Literal, exp.Neg, exp.Case, exp.If,
         exp.Identifier, exp.EQ, exp.Boolean, exp.Null)


def _resum(node: exp.Expression, types: dict[str, str], partial: set[str]) -> bool:
    """SUM over per-(unit, group) partial sums (a HUGEINT each), capped by literals: the records
    partition the rows, so the total is a sum over a subset of rows of values of at most 64 bits,
    each only moved towards 0 by a cap — below 2^127 for fewer than 2^64 rows: it cannot overflow.
    Checked with the partial sums read as BIGINT, which only the forms of :data:`_CAPS` may touch."""
    if not isinstance(node, exp.Sum) or not any(c.name in partial for c in node.find_all(exp.Column)):
        return False
    if any(not isinstance(n, _CAPS) for n in node.this.walk()):
        return False
    narrow = {**types, **{name: "BIGINT" for name in partial}}
    return expression_total(node, narrow)


def _bounding(node: exp.Expression, types: dict[str, str]) -> exp.Expression | None:
    """``ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) <= κ``, or ``DENSE_RANK()`` (the rows of the
    kept records, units.py): numbering rows cannot fail; its partition and order expressions
    must be total (HASH of the unit, the keys and the salt)."""
    window = node.this if isinstance(node, exp.LTE) else None
    if not (isinstance(window, exp.Window) and isinstance(window.this, (exp.RowNumber, exp.DenseRank))
            and isinstance(node.expression, exp.Literal) and not node.expression.is_string):
        return node
    return _numbering(window, types, (exp.RowNumber, exp.DenseRank))


def _numbering(window: exp.Window, types: dict[str, str],
               functions: tuple[type, ...] = (exp.RowNumber,)) -> exp.Expression | None:
    """``ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)`` (or another of ``functions``) and nothing
    else (no frame): numbering rows cannot fail; its partition and order expressions must be total."""
    if not isinstance(window.this, functions) or window.args.get("spec") is not None:
        return window
    order = window.args.get("order")
    parts = list(window.args.get("partition_by") or []) + [o.this for o in (order.expressions if order else [])]
    return next((p for p in parts if not expression_total(p, types)), None)


def _join(join: exp.Join, types: dict[str, str], ctes: set[str]) -> exp.Expression | None:
    """A joined public table: ``JOIN (SELECT col AS __jN_col, ... FROM table) AS __jN ON cond``.
    Its projections read bare columns (each typed by its internal name); the condition compares
    a row's column with the key and must be total. Or an earlier WITH step joined by a total
    condition (units.py joins per-group steps on their keys): a join reads no expression but it."""
    sub = join.this
    if isinstance(sub, exp.Table) and sub.name in ctes and not sub.args.get("db") and not sub.args.get("alias"):
        on = join.args.get("on")
        return None if on is not None and not join.args.get("using") and condition_total(on, types) else (on or join)
    inner = sub.this if isinstance(sub, exp.Subquery) else None
    if not isinstance(inner, exp.Select) or set(k for k, v in inner.args.items() if v) - {"expressions", "from", "from_"}:
        return join
    for item in inner.expressions:
        if not (isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.alias in types):
            return item
    on = join.args.get("on")
    if on is None or join.args.get("using") or not condition_total(on, types):
        return on if on is not None else join
    return None
