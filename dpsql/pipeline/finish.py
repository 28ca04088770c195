"""The finish stage: the analyst's SELECT list, HAVING, ORDER BY and LIMIT on noisy values.

Runs after the charge, on the noisy cells only (a separate in-memory DuckDB that never holds an
exact value). The finish query carries one hidden column, each row's position in the noisy
cells, and each row's σ and 95% MOE are looked up by it, so error bars follow the rows through
filtering and sorting.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from dpsql.backends import Finisher
from dpsql.pipeline.result import ColumnError
from dpsql.sql.plan import (NOISY_RELATION, ROW_COLUMN, OutputColumn, Plan, moe_column, primitive_column, rank_column,
                            sigma_column)

if TYPE_CHECKING:  # numpy: imported by the release of any but a small answer (release.py)
    import numpy as np


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
    import numpy as np

    names, types, rows = finisher.run(columns, plan.finish_sql)
    at = np.fromiter(map(itemgetter(n_visible), rows), dtype=np.int64, count=len(rows))
    errors = column_errors(plan, columns, at)
    return names[:n_visible], types[:n_visible], list(map(itemgetter(slice(0, n_visible)), rows)), errors


# A finish query that only projects (dpsql/sql/finish_forms.py) is computed here, with DuckDB's own
# semantics, instead of registering the cells in DuckDB and reading its rows back (1.5-2 ms a
# query, ~15 ms at 15,000 cells). Keys of text or BIGINT-range integers, BIGINT or DOUBLE
# primitives only; anything else goes through DuckDB. DuckDB's x / y of BIGINT or DOUBLE is
# DOUBLE(x) / DOUBLE(y) (IEEE round-to-nearest conversions and division, as numpy's), and the
# CASE gives NULL when the noisy count is below 1. tests/test_finish_projection.py checks every
# row, type and name against DuckDB's. A small answer's noisy values come in lists (release.py),
# typed as their arrays would be: ints BIGINT, floats DOUBLE.
_NUMERIC = {"int64": "BIGINT", "float64": "DOUBLE"}
_INT64 = (-2**63, 2**63 - 1)


def _noisy_type(v: Any) -> str | None:
    """BIGINT or DOUBLE for a primitive's noisy values (an int64 or float64 array, or a list of
    ints in int64's range or of floats), else None."""
    dtype = getattr(v, "dtype", None)
    if dtype is not None:
        return _NUMERIC.get(dtype.name) if v.ndim == 1 else None
    kinds = set(map(type, v))
    if kinds == {int} and _INT64[0] <= min(v) and max(v) <= _INT64[1]:
        return "BIGINT"
    return "DOUBLE" if kinds == {float} else None


def _projected(plan: Plan, columns: dict[str, Any]
               ) -> tuple[list[str], list[str], list[list[Any]]] | None:
    """(names, DuckDB types, values per column) of a projection finish, or None (DuckDB runs it)."""
    shape = plan.projection
    n = len(columns.get(ROW_COLUMN, ()))
    if shape is None or n == 0:
        return None
    types: list[str] = []
    values: list[list[Any]] = []
    noisy = {primitive_column(i) for i in range(len(plan.primitives))}
    for kind, *cols in shape:
        if kind == "avg":
            s, c = (columns[x] for x in cols)
            if _noisy_type(s) is None or _noisy_type(c) is None:
                return None
            if hasattr(s, "dtype") and hasattr(c, "dtype"):  # arrays: one vectorised division
                import numpy as np

                with np.errstate(divide="ignore", invalid="ignore"):
                    avg = (s.astype(np.float64) / c.astype(np.float64)).tolist()
                for j in np.flatnonzero(c < 1).tolist():
                    avg[j] = None
            else:  # a small answer's lists: float(x) / float(y) is numpy's astype and / (IEEE)
                s_list, c_list = (x.tolist() if hasattr(x, "tolist") else x for x in (s, c))
                avg = [None if y < 1 else float(x) / float(y) for x, y in zip(s_list, c_list)]
            types.append("DOUBLE")
            values.append(avg)
            continue
        v = columns[cols[0]]
        if cols[0] in noisy or hasattr(v, "dtype"):
            typ = _noisy_type(v)
            if typ is None:
                return None
            types.append(typ)
            values.append(v.tolist() if hasattr(v, "tolist") else v)
            continue
        kinds = set(map(type, v))
        if kinds == {str} or kinds == {str, type(None)}:  # a text key's NULL group (sql/null_keys.py): VARCHAR in DuckDB too
            types.append("VARCHAR")
        elif kinds == {int} and _INT64[0] <= min(v) and max(v) <= _INT64[1]:
            types.append("BIGINT")
        else:
            return None  # dates, decimals, an integer key with NULL (DuckDB types it INTEGER), ...: as DuckDB types them
        values.append(v)  # the release's list, only read from here on
    return list(plan.finish_names), types, values


_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}


def describe(plan: Plan, key_types: list[str], finisher: Finisher, one_row: bool = False,
             finish_tree: Any = None) -> tuple[list[str], list[str]]:
    """(names, types) of the analyst's answer, without a value: the finish query over an empty
    relation of noisy cells typed as :func:`dpsql.pipeline.release.release` makes them (keys as the
    exact query types them, counts and sums of granularity 1 as BIGINT, others DOUBLE). ``one_row``:
    over one row instead, keys NULL and every noisy value 0, so that what DuckDB evaluates only
    when a row reaches it (a literal compared with a number) runs too. ``finish_tree``: this
    finish SELECT instead of the plan's."""
    from sqlglot import exp  # a plan from planning (describe is never given a recorded plan)

    # Keys reach the noisy relation as Python values: integers as BIGINT (release.py, _column_array).
    cells = [(k.name, "BIGINT" if t in _INTEGERS else t) for k, t in zip(plan.keys, key_types)]
    for i, p in enumerate(plan.primitives):
        m = plan.table.measures.get(p.column) if p.kind in ("sum", "sumsq", "quantile") and p.column else None
        integral = m is None or m.granularity == 1
        cells += [(primitive_column(i), "BIGINT" if integral else "DOUBLE"), (sigma_column(i), "DOUBLE"),
                  (moe_column(i), "DOUBLE")]
    nk = len(plan.keys)
    empty = exp.select(*(exp.cast(exp.Literal.number(0) if one_row and i >= nk else exp.Null(), t).as_(n, quoted=True)
                         for i, (n, t) in enumerate(cells)))
    if not one_row:
        empty = empty.where(exp.false())
    query = (finish_tree if finish_tree is not None else plan.finish).copy().with_(NOISY_RELATION, as_=empty)
    names, types, _ = finisher.run({}, query.sql("duckdb"))
    n = len(plan.outputs)
    return names[:n], types[:n]


def check_finish(plan: Plan, key_types: list[str], finisher: Finisher) -> None:
    """Phase 1: refuse (DP120) a finish query that fails whatever the noisy values — one that
    does not bind (``HAVING COUNT(*) > 'abc'``, ``LOWER(COUNT(*))``) failed after the charge,
    a charged query without its rows. Bound over an empty relation typed as the release makes
    it (:func:`describe`); errors that depend on values are NULL by then (TRY, finish_forms.py)."""
    from sqlglot import exp

    from dpsql.errors import DpsqlInternalError, QueryRefused
    from dpsql.sql.finish_forms import total_finish

    # The finish as it runs (TRY around what values can make fail), with its filter moved into
    # the SELECT list: on the one row every expression is evaluated, none filtered out first.
    tree = total_finish(plan.finish)
    where = tree.args.get("where")
    for arg in ("where", "limit", "offset"):
        tree.set(arg, None)
    if where is not None:
        tree = tree.select(exp.alias_(where.this.copy(), "__filter", quoted=True))
    try:
        describe(plan, key_types, finisher, one_row=True, finish_tree=tree)
    except DpsqlInternalError:
        raise QueryRefused("the SELECT list, HAVING or ORDER BY over the aggregates does not run whatever the "
                           "values (a type that does not bind: text compared with a number, a text function "
                           "of a count)", code="DP120", hint="compare numbers with numbers and cast "
                           "aggregates explicitly (CAST(COUNT(*) AS VARCHAR)).") from None


def column_errors(plan: Plan, columns: dict[str, Any], at: np.ndarray | None) -> list[ColumnError | None]:
    """Per-row σ and 95% MOE of each visible column (None for keys and for expressions whose
    error dpsql cannot state), looked up in the release's columns at each answer row's position
    ``at`` (the row column the finish query carried along, so they follow HAVING / ORDER BY /
    LIMIT); None: every cell, in order (a projection)."""

    def hidden(name: str) -> list[Any]:  # one value per answer row
        values = columns[name]
        if at is not None:
            import numpy as np

            return np.asarray(values)[at].tolist()
        return values.tolist() if hasattr(values, "tolist") else list(values)

    def raw(name: str) -> Any:  # one value per answer row, as the release made the column (an array, a list)
        values = columns[name]
        if at is not None:
            import numpy as np

            return np.asarray(values)[at]
        return values

    def floats(name: str) -> tuple[float, ...]:  # σ and MOE: float64 arrays, or lists of floats
        v = columns[name]
        if getattr(v, "dtype", None) is not None and v.dtype.name == "float64" and v.size and v[0] != 0 and bool((v == v[0]).all()):
            return (v[0].item(),) * n_rows  # one σ for every cell (one sensitivity): the same floats, no list of them
        values = hidden(name)
        kind = columns[name].dtype.name if hasattr(columns[name], "dtype") else "list"
        return tuple(values) if kind in ("float64", "list") else tuple(map(float, values))

    n_rows = len(columns[ROW_COLUMN]) if at is None else at.size
    out: list[ColumnError | None] = []
    for oc in plan.outputs:
        if oc.primitive is not None and plan.primitives[oc.primitive].kind == "quantile":
            out.append(quantile_errors(plan, oc, hidden, n_rows))
        elif oc.primitive is not None:
            i = oc.primitive
            out.append(ColumnError(oc.name, floats(sigma_column(i)), floats(moe_column(i))))
        elif oc.ratio is not None or oc.derived is not None:
            from dpsql.pipeline.propagate import derived_errors

            # AVG is the derived column ("avg", s, c): one delta method, one rule near a 0 divisor
            form = ("avg", *oc.ratio) if oc.ratio is not None else oc.derived
            # a small answer's lists row by row in Python floats, unless numpy is loaded anyway (a
            # server, a notebook): one pass in arrays costs ~0.1 ms where 24 rows cost ~1 ms
            arrays = at is not None or hasattr(columns[ROW_COLUMN], "dtype") or "numpy" in sys.modules
            sig_list, moe_list, near_zero = derived_errors(form, raw if arrays else hidden, n_rows, arrays)
            what = "noisy SUM / noisy COUNT" if oc.ratio is not None else "the noisy aggregates it is computed from"
            out.append(ColumnError(oc.name, sig_list, moe_list, note=f"approximate (delta method on {what})",
                                   flagged=near_zero))
        elif oc.spread is not None:
            q_i, s_i, c_i, kind = oc.spread
            parts = [list(zip(hidden(primitive_column(i)), hidden(sigma_column(i)))) for i in (q_i, s_i, c_i)]
            spread_list = [None if None in (q, s, c) else spread_sigma(kind, float(q), qs, float(s), ss, float(c), cs)
                           for (q, qs), (s, ss), (c, cs) in zip(*parts)]
            out.append(ColumnError(oc.name, tuple(spread_list), tuple(None if s is None else 1.96 * s for s in spread_list),
                                   note="approximate (delta method on noisy sums of squares, SUM and COUNT)"))
        else:
            out.append(None)
    return out


def quantile_errors(plan: Plan, oc: OutputColumn, hidden: Callable[[str], list[Any]], n_rows: int) -> ColumnError:
    """A quantile column's errors: no σ or ± in the measure's units (its error is in ranks), and
    each row's rank interval as a share of the group when the query counts the values it ranks
    (``pipeline/propagate.py``), else NULL."""
    none: tuple[None, ...] = (None,) * n_rows
    note = ("a value of the measure's public grid, drawn by the exponential mechanism; its error is in ranks "
            "(the receipt's rank_error95)")
    assert oc.primitive is not None
    p = plan.primitives[oc.primitive]
    if oc.ranked_by is None:
        why = (f"the query has no COUNT(DISTINCT {plan.table.privacy_unit}) (a lower bound on the values it ranks when "
               f"{p.column} is NOT NULL; with NULLs no count bounds them)" if plan.table.many_rows
               else f"the query has no COUNT({p.column}), the noisy number of values it ranks")
        return ColumnError(oc.name, none, none, note=f"{note}; no rank interval: {why}",
                           extra=(("rank_lo", none), ("rank_hi", none)))
    from dpsql.pipeline.propagate import rank_interval

    assert p.q is not None
    lo, hi, whole = rank_interval(float(p.q), hidden(rank_column(oc.primitive)), hidden(primitive_column(oc.ranked_by)),
                                  hidden(moe_column(oc.ranked_by)))
    return ColumnError(oc.name, none, none, note=note, extra=(("rank_lo", lo), ("rank_hi", hi)), flagged=whole)


def spread_sigma(kind: str, q: float, q_sd: float, s: float, s_sd: float, n: float, n_sd: float) -> float | None:
    """σ of a spread by the delta method at the noisy values (Q, S, N independent, each with its
    σ), or None where it is undefined (the count too small, a standard deviation of 0, not finite)."""
    samp = kind.endswith("samp")
    if n < (2 if samp else 1):
        return None
    d = n - 1 if samp else n
    v = max((q - s * s / n) / d, 0.0)
    if samp:  # V = (Q − S²/N)/(N − 1)
        dq, ds, dn = 1 / d, -2 * s / (n * d), (s * s / (n * n) - v) / d
    else:  # V = Q/N − S²/N²
        dq, ds, dn = 1 / n, -2 * s / (n * n), -q / (n * n) + 2 * s * s / n**3
    sd = math.sqrt((dq * q_sd) ** 2 + (ds * s_sd) ** 2 + (dn * n_sd) ** 2)
    if kind.startswith("stddev"):
        sd = sd / (2 * math.sqrt(v)) if v > 0 else math.nan
    return sd if math.isfinite(sd) else None
