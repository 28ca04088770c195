"""A series limit read from one release (issue 33; docs/bi.md and docs/privacy.md, "A series limit
read from one release").

Superset's series limit joins a table to ``(SELECT k AS k__, COUNT(*) AS mme_inner__ FROM t WHERE W
GROUP BY k ORDER BY COUNT(*) DESC LIMIT n)``. When the subquery's ranking can be read off the outer
query's own answer, the statement is **one release**, not two:

* the subquery's WHERE is the outer's (the same conjuncts, normalised), both read the same source
  (the table, or the same virtual dataset's subquery), and the subquery has no HAVING, DISTINCT or
  OFFSET;
* each of its GROUP BY keys is a plain column the outer query groups by and selects;
* it orders by one additive aggregate — ``COUNT(*)``, ``COUNT(col)``, ``SUM(col)`` — that the outer
  query also selects, so the subquery's value of a key is the sum of the outer's cells of that key
  over the outer's other keys;
* the outer query has no HAVING (which would drop cells from that sum) and its LIMIT / OFFSET are
  numbers.

Then the outer query is released once **without the join** and without its LIMIT / OFFSET (all its
groups, in its ORDER BY): :attr:`Derived.base`, an ordinary dpsql query (charged, or shown again
free). The ranking is computed from its released cells only (:func:`top_keys`: the sum of each
key's noisy cells; ties by the key's values ascending, NULL keys never kept, as a join on NULL
keeps nothing), the rows of the top ``n`` keys are kept in the released order, and the outer LIMIT /
OFFSET are applied to them. All of it is post-processing of the one release: free. Which path runs
is decided from the SQL text alone (and ``SET dpsql.series_limit``), in phase 1.

The trade (docs/bi.md): one charge instead of two, but the ranking's noise is the sum of T cells'
(√T times one cell's σ, T the number of the outer's cells per key) instead of one cell's at the
subquery's own ρ. ``SET dpsql.series_limit = 'separate'`` keeps the two releases.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from dpsql.pipeline.result import ColumnError, Receipt, Result
from dpsql.privacy.budget import fmt
from dpsql.sql.parse import parse

#: the additive aggregates whose per-key value is the sum of a finer grouping's cells
_ADDITIVE = (exp.Count, exp.Sum)


@dataclass(frozen=True)
class Derived:
    """The one release of a derivable series limit and how to read its ranking off the answer."""

    base: str  # the outer query without the join, LIMIT and OFFSET: the one release
    keys: tuple[int, ...]  # the positions of the subquery's keys in the base's answer
    metric: int  # the position of the ranking's aggregate in the base's answer
    descending: bool  # the subquery's ORDER BY direction
    n: int | None  # the subquery's LIMIT (None: every key)
    limit: int | None  # the outer query's LIMIT and OFFSET, applied after the rows are kept
    offset: int
    what: str  # the ranking in words, for the receipt and EXPLAIN
    #: time buckets the WHERE leaves empty, left out of the ranking's sums (:func:`_windows`):
    #: (position of a DATE_TRUNC key, its unit, lower bound, inclusive, upper bound, inclusive)
    windows: tuple[tuple[int, str, Any, bool, Any, bool], ...] = ()


def _int(node: exp.Expression | None) -> int | None | bool:
    """The number of a LIMIT / OFFSET clause, None when absent, False when not a plain integer."""
    if node is None:
        return None
    value = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    return int(value.this) if isinstance(value, exp.Literal) and value.is_int else False


def _norm(node: exp.Expression, qualifiers: set[str]) -> str:
    """``node``'s text with unquoted identifiers in lower case and the qualifiers that name its own
    source dropped: ``establishments.Naics2`` and ``naics2`` read the same."""
    node = node.copy()
    for col in list(node.find_all(exp.Column)):
        if col.table and col.table.lower() in qualifiers and not col.args.get("db"):
            col.set("table", None)
    for ident in node.find_all(exp.Identifier):
        if not ident.quoted:
            ident.set("this", ident.this.lower())
    return node.sql(dialect="duckdb")


def _conjuncts(select: exp.Select, qualifiers: set[str]) -> list[str] | None:
    where = select.args.get("where")
    if where is None:
        return []
    cond = where.this
    parts = list(cond.flatten()) if isinstance(cond, exp.And) else [cond]
    return sorted(_norm(p.unnest() if isinstance(p, exp.Paren) else p, qualifiers) for p in parts)


def _source(select: exp.Select) -> tuple[exp.Expression, set[str]] | None:
    """The FROM of ``select`` (one table or one subquery, no join) and the names that qualify it."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None or select.args.get("joins"):
        return None
    src = from_.this
    names = {src.alias.lower()} - {""}
    if isinstance(src, exp.Table):
        names.add(src.name.lower())
        return exp.Table(this=src.this.copy()), names
    if isinstance(src, exp.Subquery):
        return src.this, names
    return None


def _items(select: exp.Select) -> list[tuple[str, exp.Expression]]:
    return [(i.alias_or_name.lower(), i.this if isinstance(i, exp.Alias) else i) for i in select.expressions]


def _resolve(select: exp.Select, node: exp.Expression) -> exp.Expression:
    """An ORDER BY / GROUP BY item as the expression it names: an ordinal or an output name is the
    SELECT-list item's expression, anything else itself."""
    items = _items(select)
    if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.this) <= len(items):
        return items[int(node.this) - 1][1]
    if isinstance(node, exp.Column) and not node.table:
        named = [e for n, e in items if n == node.name.lower() and not (isinstance(e, exp.Column) and e.name.lower() == n)]
        if named:
            return named[0]
    return node


def _position(select: exp.Select, target: str, qualifiers: set[str]) -> int | None:
    for i, (_, e) in enumerate(_items(select)):
        if _norm(e, qualifiers) == target:
            return i
    return None


def derivable(inner_sql: str, outer: exp.Select, pairs: tuple[tuple[exp.Column, str], ...]) -> Derived | None:
    """The one release of a series limit whose ranking can be read off the outer query's answer
    (module docstring), or None: two releases. From the SQL text alone."""
    inner = parse(inner_sql)
    if not isinstance(inner, exp.Select) or not isinstance(outer, exp.Select):
        return None
    if any(q.args.get(k) for q in (inner, outer) for k in ("having", "distinct", "qualify", "with_", "with")):
        return None
    src_in, src_out = _source(inner), _source(outer)
    if src_in is None or src_out is None or _norm(src_in[0], set()) != _norm(src_out[0], set()):
        return None
    q_in, q_out = src_in[1], src_out[1]
    if _conjuncts(inner, q_in) != _conjuncts(outer, q_out):
        return None
    order = inner.args.get("order")
    n, offset = _int(inner.args.get("limit")), _int(inner.args.get("offset"))
    if order is None or len(order.expressions) != 1 or n is False or offset is not None:
        return None
    ordered = order.expressions[0]
    metric = _resolve(inner, ordered.this)
    if not isinstance(metric, _ADDITIVE) or isinstance(metric.this, exp.Distinct) or \
            not isinstance(metric.this, (exp.Star, exp.Column)):
        return None
    metric_at = _position(outer, _norm(metric, q_in), q_out)
    groups = {_norm(_resolve(outer, g), q_out) for g in (outer.args.get("group").expressions if outer.args.get("group") else [])}
    inner_items = dict(_items(inner))
    keys = []
    for col, name in pairs:
        key = inner_items.get(name)
        if not isinstance(key, exp.Column) or _norm(key, q_in) != _norm(col, q_out) or _norm(col, q_out) not in groups:
            return None
        at = _position(outer, _norm(col, q_out), q_out)
        if at is None:
            return None
        keys.append(at)
    limit, out_offset = _int(outer.args.get("limit")), _int(outer.args.get("offset"))
    if metric_at is None or limit is False or out_offset is False:
        return None
    base = outer.copy()
    base.set("limit", None)
    base.set("offset", None)
    what = (f"the top {n if n is not None else 'all'} of {', '.join(c.sql('duckdb') for c, _ in pairs)} by "
            f"{metric.sql('duckdb')} {'DESC' if ordered.args.get('desc') else 'ASC'}")
    windows = _windows(outer, q_out)
    if windows:
        what += " (cells of time buckets the WHERE leaves empty left out of the sums)"
    return Derived(base.sql(dialect="duckdb"), tuple(keys), metric_at, bool(ordered.args.get("desc")), n, limit,
                   out_offset or 0, what, windows)


_UNITS = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY")


def _instant(node: exp.Expression) -> dt.datetime | None:
    """A date or timestamp literal of the WHERE (``'2015-01-01'``, ``DATE '…'``, ``CAST('…' AS
    TIMESTAMP)``, ``TO_DATE('…', 'YYYY-MM-DD')``) as a naive datetime, or None."""
    if isinstance(node, exp.Cast) and node.to.this in (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP,
                                                        exp.DataType.Type.DATETIME, exp.DataType.Type.TIMESTAMPNTZ):
        node = node.this
    elif isinstance(node, exp.Anonymous) and node.name.upper() == "TO_DATE" and len(node.expressions) == 2 and \
            isinstance(node.expressions[1], exp.Literal) and node.expressions[1].this == "YYYY-MM-DD":
        node = node.expressions[0]
    if not isinstance(node, exp.Literal) or not node.is_string:
        return None
    try:
        value = dt.datetime.fromisoformat(node.this.strip())
    except ValueError:
        return None
    return value if value.tzinfo is None else None


def _bounds(select: exp.Select, qualifiers: set[str]) -> dict[str, list[Any]]:
    """Per column, [lower, inclusive, upper, inclusive] from the WHERE's top-level comparisons with a
    date literal (the tightest of each; None where there is none)."""
    out: dict[str, list[Any]] = {}
    where = select.args.get("where")
    conds = [] if where is None else (list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this])
    flip = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}
    for cond in conds:
        parts = []
        if isinstance(cond, exp.Between):
            parts = [(exp.GTE, cond.this, cond.args.get("low")), (exp.LTE, cond.this, cond.args.get("high"))]
        elif type(cond) in flip:
            col, lit, kind = cond.this, cond.expression, type(cond)
            if not isinstance(col, exp.Column):
                col, lit, kind = lit, col, flip[kind]
            parts = [(kind, col, lit)]
        for kind, col, lit in parts:
            value = _instant(lit) if lit is not None else None
            if not isinstance(col, exp.Column) or value is None:
                continue
            b = out.setdefault(_norm(col, qualifiers), [None, True, None, True])
            if kind in (exp.GT, exp.GTE) and (b[0] is None or value >= b[0]):
                b[0], b[1] = value, kind is exp.GTE and not (value == b[0] and not b[1])
            if kind in (exp.LT, exp.LTE) and (b[2] is None or value <= b[2]):
                b[2], b[3] = value, kind is exp.LTE and not (value == b[2] and not b[3])
    return out


def _windows(outer: exp.Select, qualifiers: set[str]) -> tuple[tuple[int, str, Any, bool, Any, bool], ...]:
    """The outer's DATE_TRUNC keys whose column the WHERE bounds by date literals."""
    bounds = _bounds(outer, qualifiers)
    out = []
    for i, (_, e) in enumerate(_items(outer)):
        if isinstance(e, (exp.TimestampTrunc, exp.DateTrunc)) and isinstance(e.this, exp.Column):
            unit = e.args.get("unit")
            name = unit.name.upper() if unit is not None else ""
            if name in _UNITS and _norm(e.this, qualifiers) in bounds:
                out.append((i, name, *bounds[_norm(e.this, qualifiers)]))
    return tuple(out)


def _end(start: dt.datetime, unit: str) -> dt.datetime:
    if unit in ("WEEK", "DAY"):
        return start + dt.timedelta(days=7 if unit == "WEEK" else 1)
    months = start.year * 12 + start.month - 1 + {"YEAR": 12, "QUARTER": 3, "MONTH": 1}[unit]
    return dt.datetime(months // 12, months % 12 + 1, 1)


def empty_by_where(row: tuple[Any, ...], windows: tuple[tuple[int, str, Any, bool, Any, bool], ...]) -> bool:
    """Whether the WHERE leaves ``row``'s cell empty whatever the data: its time bucket [start,
    end) of a DATE_TRUNC key lies wholly outside the WHERE's bounds on that column. Public (the
    query text and the cell's key); a NULL key's cell is never left out (rows outside a date key's
    declared range are counted there)."""
    for at, unit, lo, lo_in, hi, hi_in in windows:
        start = row[at]
        if not isinstance(start, dt.date) or getattr(start, "tzinfo", None) is not None:
            continue
        start = start if isinstance(start, dt.datetime) else dt.datetime(start.year, start.month, start.day)
        if (hi is not None and (start > hi if hi_in else start >= hi)) or (lo is not None and _end(start, unit) <= lo):
            return True
    return False


def top_keys(rows: list[tuple[Any, ...]], keys: tuple[int, ...], metric: int, descending: bool,
             n: int | None) -> list[tuple[Any, ...]]:
    """The ranking read from released rows: each key's total is the sum of its rows' noisy
    ``metric`` cells (NULL cells add nothing; a key with no non-NULL cell ranks last); keys holding
    NULL are never kept (a join on NULL matches no row); ties by the key's values ascending; the
    first ``n`` in the subquery's direction."""
    totals: dict[tuple[Any, ...], Any] = {}
    for row in rows:
        key = tuple(row[i] for i in keys)
        if any(v is None for v in key):
            continue
        value = row[metric]
        if value is None:
            totals.setdefault(key, None)
        else:
            totals[key] = value if totals.get(key) is None else totals[key] + value
    ranked = sorted(totals, key=lambda k: k)  # ties: ascending key
    valued = sorted((k for k in ranked if totals[k] is not None), key=lambda k: totals[k], reverse=descending)
    ordered = valued + [k for k in ranked if totals[k] is None]
    return ordered if n is None else ordered[:n]


def finish(derived: Derived, base: Result, note: str) -> Result:
    """The answer from the one release ``base``: the rows of the top keys, in the released order,
    then the outer LIMIT / OFFSET; post-processing only."""
    ranked = [r for r in base.rows if not empty_by_where(r, derived.windows)]
    kept = set(top_keys(ranked, derived.keys, derived.metric, derived.descending, derived.n))
    end = None if derived.limit is None else derived.offset + derived.limit
    shown = [i for i, r in enumerate(base.rows) if tuple(r[k] for k in derived.keys) in kept][derived.offset:end]
    ranking = (f"series limit read from the released cells: {derived.what}, each key's total the sum of its released "
               "cells of this answer (post-processing, charged 0; ties by key ascending); "
               f"{len(kept)} key(s) kept, {note}")
    receipt = replace(base.receipt, notes=(ranking, *base.receipt.notes), columns=rows_of(base.receipt, shown, len(base.rows)))
    return replace(base, rows=[base.rows[i] for i in shown], receipt=receipt)


def rows_of(receipt: Receipt, shown: list[int], n: int) -> dict[str, ColumnError]:
    """The receipt's per-row σ, MOE and further figures of the rows ``shown`` (indices into the
    ``n`` released rows), so that they stay aligned with the rows the answer shows."""
    def take(values: tuple) -> tuple:
        return tuple(values[i] for i in shown) if len(values) == n else values

    return {name: replace(e, sigma=take(e.sigma), moe95=take(e.moe95), extra=tuple((s, take(tuple(v))) for s, v in e.extra))
            for name, e in receipt.columns.items()}


def charge_note(result: Result) -> str:
    r = result.receipt
    if r.reused:
        return f"one release, reused: released at {r.reused['released_at']} (charge {r.reused['charge_id']}), charged 0 now"
    if r.charge_id is None:
        return "one release, public keysets only, charged 0"
    return f"one release, charged rho={fmt(r.rho)} (charge {r.charge_id})"


def inner_note(result: Result, what: str) -> str:
    """What a release of SQL over released answers cost, for the receipt's notes."""
    r = result.receipt
    if r.reused:
        return f"{what}: reused, released at {r.reused['released_at']} (charge {r.reused['charge_id']}), charged 0 now"
    if r.charge_id is None:
        return f"{what}: public keysets only, charged 0"
    return f"{what}: charged rho={fmt(r.rho)} (charge {r.charge_id})"
