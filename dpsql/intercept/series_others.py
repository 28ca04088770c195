"""Superset's "group others" of a series limit (issue 32; docs/bi.md, "Group others", and
docs/privacy.md, "The Others row of a series limit").

With ``group_others_when_limit_reached`` (Superset 6, ``models/helpers.py``) the series-limit join
is a LEFT JOIN and every series column, in the SELECT list and in GROUP BY, is written
``CASE WHEN series_limit.k__ IS NOT NULL THEN k ELSE 'Others' END``: the rows of the top n keys
keep their key, every other row (a NULL key too: the join matches nothing) is grouped under the
label. :func:`unwrap` reads each such CASE as its column (the statement is then the plain series
limit of :mod:`.answer_shapes`) and keeps the label.

It is answered from released cells only: the outer query is released **without its join, LIMIT
and OFFSET** — every key's cells, an ordinary dpsql query —, the ranking is read off that release
(:mod:`.series_derived`, one release) or off the subquery's own release (two), and
:func:`finish` keeps the cells of the top keys as released and adds up, per value of the other
GROUP BY keys, the released cells of all other keys into one row under the label. Summing noisy
cells is post-processing: charged 0; each Others cell's σ is the root of the sum of its cells' σ²
(independent noise). Only additive aggregates (``COUNT(*)``, ``COUNT(col)``, ``SUM(col)``) can be
summed; anything else in the SELECT list, a HAVING, a series column that is not text, or an ORDER
BY item that is not an output column is refused in phase 1 (DP133), before any charge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from fractions import Fraction

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.intercept.answer_shapes import JOIN_HINT, inner_errors, refuse
from dpsql.intercept.series_derived import charge_note, derivable, empty_by_where, inner_note, top_keys
from dpsql.ledger import answers
from dpsql.pipeline import reuse
from dpsql.pipeline.result import ColumnError, Result

HINT = ("turn off \"group others\" (the series limit alone is answered), or chart COUNT(*), COUNT(col) or SUM(col) "
        "grouped by the selected columns only: the Others row is the sum of the other keys' released cells.")


def _refuse(message: str) -> QueryRefused:
    return QueryRefused(message, code="DP133", hint=HINT)


@dataclass(frozen=True)
class Layout:
    """How the answer's columns are merged into the Others rows: from the SQL text, phase 1."""

    label: str
    base: str  # the outer query without its join, LIMIT and OFFSET: every key's cells, one release
    keys: tuple[int, ...]  # the series columns' positions
    groups: tuple[int, ...]  # the other GROUP BY keys' positions
    sums: tuple[int, ...]  # the additive aggregates' positions
    order: tuple[tuple[int, bool], ...]  # the outer ORDER BY as (position, descending)
    limit: int | None
    offset: int


def _norm(node: exp.Expression) -> str:
    node = node.copy()
    for col in node.find_all(exp.Column):
        col.set("table", None)
    for ident in node.find_all(exp.Identifier):
        if not ident.quoted:
            ident.set("this", ident.this.lower())
    return node.sql(dialect="duckdb")


def _number(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression")
    if not (isinstance(value, exp.Literal) and value.is_int):
        raise _refuse(f"the {what} of a series limit with \"group others\" must be a number")
    return int(value.this)


def layout(outer: exp.Select, series: list[exp.Column], label: str) -> Layout:
    """The layout of ``outer`` (its CASEs unwrapped), or DP133 naming what cannot be summed."""
    if outer.args.get("having"):
        raise _refuse("a HAVING drops cells before the Others row adds them up")
    items = [(i.alias_or_name.lower(), i.this if isinstance(i, exp.Alias) else i) for i in outer.expressions]
    forms = [_norm(e) for _, e in items]
    group = outer.args.get("group")
    grouped = set()
    for g in (group.expressions if group is not None else []):
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.this) <= len(items):
            grouped.add(int(g.this) - 1)
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in [n for n, _ in items] \
                and _norm(g) not in forms:
            grouped.add([n for n, _ in items].index(g.name.lower()))
        elif _norm(g) in forms:
            grouped.add(forms.index(_norm(g)))
        else:
            raise _refuse(f"the GROUP BY key {g.sql('duckdb')} is not selected: the Others rows could not be told apart")
    keys = tuple(forms.index(_norm(c)) if _norm(c) in forms else -1 for c in series)
    if -1 in keys or not set(keys) <= grouped:
        raise _refuse("every series column must be selected and grouped by")
    sums = []
    for i, (name, e) in enumerate(items):
        if i in grouped:
            continue
        if not (isinstance(e, (exp.Count, exp.Sum)) and isinstance(e.this, (exp.Star, exp.Column))):
            raise _refuse(f"{e.sql('duckdb')} is not a COUNT or SUM of a column: the Others row cannot add it up "
                          "from the other keys' released cells")
        sums.append(i)
    order = []
    for o in (outer.args.get("order").expressions if outer.args.get("order") else []):
        node = o.this
        if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.this) <= len(items):
            at = int(node.this) - 1
        elif isinstance(node, exp.Column) and not node.table and node.name.lower() in [n for n, _ in items]:
            at = [n for n, _ in items].index(node.name.lower())
        elif _norm(node) in forms:
            at = forms.index(_norm(node))
        else:
            raise _refuse(f"the ORDER BY item {node.sql('duckdb')} is not an output column")
        order.append((at, bool(o.args.get("desc"))))
    base = outer.copy()
    base.set("limit", None)
    base.set("offset", None)
    return Layout(label, base.sql(dialect="duckdb"), keys, tuple(sorted(grouped - set(keys))), tuple(sums),
                  tuple(order), _number(outer.args.get("limit"), "LIMIT"), _number(outer.args.get("offset"), "OFFSET") or 0)


def check_types(lay: Layout, types: list[str]) -> None:
    """DP133 when a series column is not text: its Others rows hold the label."""
    for k in lay.keys:
        if types[k].upper() not in ("VARCHAR", "TEXT", "STRING"):
            raise _refuse(f"the series column at position {k + 1} is {types[k]}, not text: it cannot hold the label "
                          f"{lay.label!r}")


def _rss(values: list[Any]) -> float | None:
    """The root of the sum of squares (σ of a sum of independent noisy cells), None if one is unknown."""
    if any(v is None for v in values):
        return None
    return math.sqrt(sum(float(v) ** 2 for v in values))


def _add(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known[1:], known[0]) if known else None


def finish(lay: Layout, base: Result, kept: set[tuple[Any, ...]], note: str) -> Result:
    """The cells of the ``kept`` keys as released, and one row under the label per value of the
    other GROUP BY keys adding up the released cells of every other key (module docstring); then
    the outer ORDER BY (NULLs last), OFFSET and LIMIT. Post-processing only."""
    width, names = len(base.columns), [c.lower() for c in base.columns]
    rows: list[list[Any]] = []
    origin: list[list[int]] = []
    others: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(base.rows):
        if tuple(r[k] for k in lay.keys) in kept:
            rows.append(list(r))
            origin.append([i])
            continue
        g = tuple(r[p] for p in lay.groups)
        if g not in others:
            others[g] = len(rows)
            rows.append([r[p] if p in lay.groups else lay.label if p in lay.keys else None for p in range(width)])
            origin.append([])
        origin[others[g]].append(i)
    sums = set(lay.sums)
    # error columns (dpsql.error_columns) after the SELECT list: <column>_moe95 / _sigma add as σ does
    spread = {p for p in range(width) for s in ("_moe95", "_sigma")
              if names[p].endswith(s) and names[p][:-len(s)] in names and names.index(names[p][:-len(s)]) in sums}
    for j in others.values():
        for p in sums:
            rows[j][p] = _add([base.rows[i][p] for i in origin[j]])
        for p in spread:
            rows[j][p] = _rss([base.rows[i][p] for i in origin[j]])
    merged_rows = set(others.values())

    def figure(values: tuple[Any, ...], j: int, summed: bool) -> Any:
        if j not in merged_rows:
            return values[origin[j][0]]
        return _rss([values[i] for i in origin[j]]) if summed else None

    columns = {}
    for name, err in base.receipt.columns.items():
        if len(err.sigma) != len(base.rows) or name.lower() not in names:
            continue
        summed = names.index(name.lower()) in sums
        columns[name] = ColumnError(name, tuple(figure(err.sigma, j, summed) for j in range(len(rows))),
                                    tuple(figure(err.moe95, j, summed) for j in range(len(rows))), err.note)
    at = list(range(len(rows)))
    for pos, desc in reversed(lay.order):  # stable sorts, last key first; NULLs last either way
        known = sorted((j for j in at if rows[j][pos] is not None), key=lambda j: rows[j][pos], reverse=desc)
        at = known + [j for j in at if rows[j][pos] is None]
    end = None if lay.limit is None else lay.offset + lay.limit
    at = at[lay.offset:end]
    columns = {n: replace(e, sigma=tuple(e.sigma[j] for j in at), moe95=tuple(e.moe95[j] for j in at))
               for n, e in columns.items()}
    merged = sum(len(origin[j]) for j in merged_rows)
    text = (f"group others: {len(others)} row(s) labelled {lay.label!r}, each the sum of the released cells of the "
            f"keys outside the top {len(kept)} with its other GROUP BY keys ({merged} cell(s) in all): post-processing, "
            "charged 0; its σ is the root of the sum of those cells' σ² (groups partition selection did not release "
            f"are in no sum); {note}")
    receipt = replace(base.receipt, columns=columns, notes=(text, *base.receipt.notes))
    return replace(base, rows=[tuple(rows[j]) for j in at], receipt=receipt)


# ---------------------------------------------------------------------- phase 1, then the release(s)
def decide(session: Any, series: Any, rho: Any = None) -> tuple[Layout, Any]:
    """Phase 1, from public information: the layout (DP133), the subquery decided as it would be
    alone, the release of every key's cells decided and its series columns' types checked; for two
    releases the budget checked for both. Returns the layout and the one-release form, or None."""
    lay = layout(series.outer, [c for c, _ in series.pairs], series.others)
    one = derivable(series.inner, series.outer, series.pairs) if session.output.series_limit == "derived" else None
    with inner_errors(series):
        names, _ = session.describe(series.inner)
        d_inner = session.decide(series.inner, rho=rho, check_budget=False)
    if missing := [n for _, n in series.pairs if n not in [x.lower() for x in names]]:
        raise refuse("DP126", f"the subquery has no output column {missing[0]!r}", JOIN_HINT)
    d_base = session.decide(lay.base, rho=rho, check_budget=False)
    check_types(lay, session.describe(lay.base)[1])
    if one is None:
        key = reuse.key(session.policy, session.analyst, session.database, d_inner.plan, d_inner.query, d_inner.allocs,
                        session.output.clamp_negative)
        free = answers.find(session.ledger, key, session.output.reuse) is not None
        session.ledger.check(d_base.rho + (0 if free else d_inner.rho), d_base.delta + (0 if free else d_inner.delta))
    return lay, one


def execute(session: Any, series: Any, rho: Any = None) -> Result:
    """Phase 1 (:func:`decide`), then one release (the ranking read off it: :mod:`.series_derived`)
    or two (the subquery, whose released keys are the top n, then every key's cells), then
    :func:`finish`."""
    lay, one = decide(session, series, rho)
    if one is not None:
        base = session.execute(one.base, rho=rho)
        ranked = [r for r in base.rows if not empty_by_where(r, one.windows)]
        kept = set(top_keys(ranked, one.keys, one.metric, one.descending, one.n))
        return finish(lay, base, kept, f"the ranking ({one.what}) read off the same release; {charge_note(base)}")
    with inner_errors(series):
        first = session.execute(series.inner, rho=rho)
    index = [[x.lower() for x in first.columns].index(n) for _, n in series.pairs]
    kept = {tuple(row[i] for i in index) for row in first.rows if all(row[i] is not None for i in index)}
    second = session.execute(lay.base, rho=rho)
    note = (f"{inner_note(first, f'release 1 of 2, the ranking ({series.inner})')}; "
            f"{inner_note(second, 'release 2 of 2, every key of the query without its join')}")
    result = finish(lay, second, kept, note)
    charged = [r for r in (first.receipt, second.receipt) if r.charge_id is not None]
    receipt = replace(result.receipt, rho=sum((r.rho for r in charged), Fraction(0)),
                      delta=sum((r.delta for r in charged), Fraction(0)))
    return replace(result, receipt=receipt)


def explain_note(session: Any, series: Any) -> str:
    """EXPLAIN's first paragraph for "group others" (DP133 here too), from public information."""
    lay = layout(series.outer, [c for c, _ in series.pairs], series.others)
    check_types(lay, session.describe(lay.base)[1])
    return (f"group others: the rows of the keys outside the top n are added up per value of the other GROUP BY keys "
            f"into one row labelled {lay.label!r}, from the released cells of every key (the query without its join, "
            "LIMIT and OFFSET): post-processing, charged 0; with two releases the second is that query, not one "
            "restricted to the top keys.")
