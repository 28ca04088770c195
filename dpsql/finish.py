"""The finish stage: the analyst's SELECT list, HAVING, ORDER BY and LIMIT on noisy values.

Runs after the charge, on the noisy cells only (a separate in-memory DuckDB that never holds an
exact value). The finish query carries one hidden column, each row's position in the noisy
cells, and each row's σ and 95% MOE are looked up by it, so error bars follow the rows through
filtering and sorting.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np
from sqlglot import exp

from dpsql.backends import Finisher
from dpsql.result import ColumnError
from dpsql.sql.plan import NOISY_RELATION, ROW_COLUMN, Plan, moe_column, primitive_column, sigma_column


def finish(plan: Plan, columns: dict[str, Any], finisher: Finisher
           ) -> tuple[list[str], list[str], list[tuple[Any, ...]], list[ColumnError | None]]:
    """(names, types, rows, each column's errors or None) of the analyst's answer over the
    noisy cells."""
    n_visible = len(plan.outputs)
    projected = _projected(plan, columns)
    if projected is not None:
        names, types, values = projected
        rows = list(zip(*values))
        return names, types, rows, column_errors(plan, columns, None)
    names, types, rows = finisher.run(columns, _finish_sql(plan))
    at = np.fromiter(map(itemgetter(n_visible), rows), dtype=np.int64, count=len(rows))
    errors = column_errors(plan, columns, at)
    return names[:n_visible], types[:n_visible], list(map(itemgetter(slice(0, n_visible)), rows)), errors


# A finish query that only renames keys and noisy columns and divides for AVG — no HAVING, ORDER
# BY, LIMIT, DISTINCT or other expression: the usual GROUP BY query — is computed here, with
# DuckDB's own semantics, instead of registering the cells in DuckDB and reading its rows back
# (1.5-2 ms a query, ~15 ms at 15,000 cells). Keys of text or BIGINT-range integers, BIGINT or
# DOUBLE primitives only; anything else goes through DuckDB. DuckDB's x / y of BIGINT or DOUBLE
# is DOUBLE(x) / DOUBLE(y) (IEEE round-to-nearest conversions and division, as numpy's), and
# the CASE gives NULL when the noisy count is below 1. tests/test_finish_projection.py checks
# every row, type and name against DuckDB's.
def _projection(plan: Plan) -> list[tuple[str, ...]] | None:
    """Per output column ("col", relation column) or ("avg", sum column, count column), or None
    when the finish query is more than a projection (once per plan object)."""
    return _per_plan("projection", plan, _make_projection)


def _make_projection(plan: Plan) -> list[tuple[str, ...]] | None:
    f = plan.finish
    out: list[tuple[str, ...]] | None = []
    if any(f.args.get(a) for a in ("where", "having", "order", "limit", "offset", "distinct", "group", "joins", "with")):
        out = None
    for item, oc in zip(f.expressions, plan.outputs):
        if out is None:
            break
        e = item.this if isinstance(item, exp.Alias) else None
        if isinstance(e, exp.Column) and not e.table:
            out.append(("col", e.name))
        elif oc.ratio is not None and e == _avg_tree(*oc.ratio):
            out.append(("avg", primitive_column(oc.ratio[0]), primitive_column(oc.ratio[1])))
        else:
            out = None
    if out is not None and len(out) != len(plan.outputs):
        out = None
    return out


def _avg_tree(s: int, c: int) -> exp.Expression:
    """AVG's finish expression as :mod:`dpsql.sql.aggregates` writes it."""
    num, den = exp.column(primitive_column(s), quoted=True), exp.column(primitive_column(c), quoted=True)
    return exp.Paren(this=exp.Case(ifs=[exp.If(this=exp.GTE(this=den.copy(), expression=exp.Literal.number(1)),
                                                true=exp.Div(this=num, expression=den))]))


_NUMERIC = {np.dtype(np.int64): "BIGINT", np.dtype(np.float64): "DOUBLE"}
_INT64 = (-2**63, 2**63 - 1)


def _projected(plan: Plan, columns: dict[str, Any]
               ) -> tuple[list[str], list[str], list[list[Any]]] | None:
    """(names, DuckDB types, values per column) of a projection finish, or None (DuckDB runs it)."""
    shape = _projection(plan)
    n = len(columns.get(ROW_COLUMN, ()))
    if shape is None or n == 0:
        return None
    types: list[str] = []
    values: list[list[Any]] = []
    for kind, *cols in shape:
        if kind == "avg":
            s, c = (columns[x] for x in cols)
            if not (isinstance(s, np.ndarray) and s.dtype in _NUMERIC and isinstance(c, np.ndarray) and c.dtype in _NUMERIC):
                return None
            with np.errstate(divide="ignore", invalid="ignore"):
                avg = (s.astype(np.float64) / c.astype(np.float64)).tolist()
            for j in np.flatnonzero(c < 1).tolist():
                avg[j] = None
            types.append("DOUBLE")
            values.append(avg)
            continue
        v = columns[cols[0]]
        if isinstance(v, np.ndarray) and v.dtype in _NUMERIC:
            types.append(_NUMERIC[v.dtype])
            values.append(v.tolist())
            continue
        kinds = set(map(type, v))
        if kinds == {str}:
            types.append("VARCHAR")
        elif kinds == {int} and _INT64[0] <= min(v) and max(v) <= _INT64[1]:
            types.append("BIGINT")
        else:
            return None  # dates, decimals, NULL keys, ...: as DuckDB types them
        values.append(v)  # the release's list, only read from here on
    return [item.alias for item in plan.finish.expressions], types, values


# What the finish stage derives from a plan alone is derived once per plan object (plans are
# cached, so a repeated query skips sqlglot's copy + generate: ~1-2 ms). Keyed on id() and
# checked through a weak reference, so a recycled id never returns another plan's value; the
# values are public (built from the query and the policy only).
_PER_PLAN: dict[tuple[str, int], tuple[weakref.ref, Any]] = {}
_PER_PLAN_MAX = 512


def _per_plan(kind: str, plan: Plan, make: Callable[[Plan], Any]) -> Any:
    hit = _PER_PLAN.get((kind, id(plan)))
    if hit is not None and hit[0]() is plan:
        return hit[1]
    value = make(plan)
    if len(_PER_PLAN) >= _PER_PLAN_MAX:
        _PER_PLAN.clear()
    _PER_PLAN[(kind, id(plan))] = (weakref.ref(plan), value)
    return value


def _finish_sql(plan: Plan) -> str:
    return _per_plan("sql", plan, lambda p: p.finish.copy().select(exp.column(ROW_COLUMN, quoted=True)).sql("duckdb"))


_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}


def describe(plan: Plan, key_types: list[str], finisher: Finisher) -> tuple[list[str], list[str]]:
    """(names, types) of the analyst's answer, without a value: the finish query over an empty
    relation of noisy cells typed as :func:`dpsql.release.release` makes them (keys as the
    exact query types them, counts and sums of granularity 1 as BIGINT, others DOUBLE)."""
    # Keys reach the noisy relation as Python values: integers as BIGINT (release.py, _column_array).
    cells = [(k.name, "BIGINT" if t in _INTEGERS else t) for k, t in zip(plan.keys, key_types)]
    for i, p in enumerate(plan.primitives):
        m = plan.table.measures.get(p.column) if p.kind in ("sum", "quantile") and p.column else None
        integral = m is None or m.granularity == 1
        cells += [(primitive_column(i), "BIGINT" if integral else "DOUBLE"), (sigma_column(i), "DOUBLE"),
                  (moe_column(i), "DOUBLE")]
    empty = exp.select(*(exp.cast(exp.Null(), t).as_(n, quoted=True) for n, t in cells)).where(exp.false())
    query = plan.finish.copy().with_(NOISY_RELATION, as_=empty)
    names, types, _ = finisher.run({}, query.sql("duckdb"))
    n = len(plan.outputs)
    return names[:n], types[:n]


def column_errors(plan: Plan, columns: dict[str, Any], at: np.ndarray | None) -> list[ColumnError | None]:
    """Per-row σ and 95% MOE of each visible column (None for keys and for expressions whose
    error dpsql cannot state), looked up in the release's columns at each answer row's position
    ``at`` (the row column the finish query carried along, so they follow HAVING / ORDER BY /
    LIMIT); None: every cell, in order (a projection)."""

    def picked(name: str) -> np.ndarray:  # one value per answer row
        values = np.asarray(columns[name])
        return values if at is None else values[at]

    def hidden(name: str) -> list[Any]:
        return picked(name).tolist()

    def floats(name: str) -> tuple[float, ...]:
        values = picked(name)
        return tuple(values.tolist()) if values.dtype == np.float64 else tuple(map(float, values.tolist()))

    n_rows = len(columns[ROW_COLUMN]) if at is None else at.size
    out: list[ColumnError | None] = []
    for oc in plan.outputs:
        if oc.primitive is not None and plan.primitives[oc.primitive].kind == "quantile":
            none: tuple[None, ...] = (None,) * n_rows
            out.append(ColumnError(oc.name, none, none, note="a value of the measure's public grid, drawn by the "
                                   "exponential mechanism; its error is in ranks (the receipt's rank_error95)"))
        elif oc.primitive is not None:
            i = oc.primitive
            out.append(ColumnError(oc.name, floats(sigma_column(i)), floats(moe_column(i))))
        elif oc.ratio is not None:
            s_i, c_i = oc.ratio
            sig_list: list[float | None] = []
            for s, s_sig, c, c_sig in zip(hidden(primitive_column(s_i)), hidden(sigma_column(s_i)),
                                          hidden(primitive_column(c_i)), hidden(sigma_column(c_i))):
                if c is None or c < 1:
                    sig_list.append(None)
                else:
                    # Delta method for S/C with independent noise: computed from noisy values only.
                    sig_list.append(math.sqrt(s_sig**2 + (float(s) / c) ** 2 * c_sig**2) / c)
            out.append(ColumnError(oc.name, tuple(sig_list), tuple(None if s is None else 1.96 * s for s in sig_list),
                                   note="approximate (delta method on noisy SUM / noisy COUNT)"))
        else:
            out.append(None)
    return out
