"""The finish stage: the analyst's SELECT list, HAVING, ORDER BY and LIMIT on noisy values.

Runs after the charge, on the noisy cells only (a separate in-memory DuckDB that never holds an
exact value). The finish query carries one hidden column, each row's position in the noisy
cells, and each row's σ and 95% MOE are looked up by it, so error bars follow the rows through
filtering and sorting.
"""

from __future__ import annotations

import math
import weakref
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
    names, types, rows = finisher.run(columns, _finish_sql(plan))
    at = np.fromiter(map(itemgetter(n_visible), rows), dtype=np.int64, count=len(rows))
    errors = column_errors(plan, columns, at)
    return names[:n_visible], types[:n_visible], list(map(itemgetter(slice(0, n_visible)), rows)), errors


# The finish SQL of a plan, generated once per plan object (plans are cached, so a repeated
# query skips sqlglot's copy + generate: ~1-2 ms). Keyed on id() and checked through a weak
# reference, so a recycled id never returns another plan's SQL; the text is public (it is built
# from the query and the policy only).
_FINISH_SQL: dict[int, tuple[weakref.ref, str]] = {}
_FINISH_SQL_MAX = 256


def _finish_sql(plan: Plan) -> str:
    hit = _FINISH_SQL.get(id(plan))
    if hit is not None and hit[0]() is plan:
        return hit[1]
    sql = plan.finish.copy().select(exp.column(ROW_COLUMN, quoted=True)).sql("duckdb")
    if len(_FINISH_SQL) >= _FINISH_SQL_MAX:
        _FINISH_SQL.clear()
    _FINISH_SQL[id(plan)] = (weakref.ref(plan), sql)
    return sql


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


def column_errors(plan: Plan, columns: dict[str, Any], at: np.ndarray) -> list[ColumnError | None]:
    """Per-row σ and 95% MOE of each visible column (None for keys and for expressions whose
    error dpsql cannot state), looked up in the release's columns at each answer row's position
    ``at`` (the row column the finish query carried along, so they follow HAVING / ORDER BY /
    LIMIT)."""

    def hidden(name: str) -> list[Any]:  # one value per answer row
        return np.asarray(columns[name])[at].tolist()

    out: list[ColumnError | None] = []
    for oc in plan.outputs:
        if oc.primitive is not None and plan.primitives[oc.primitive].kind == "quantile":
            none: tuple[None, ...] = (None,) * at.size
            out.append(ColumnError(oc.name, none, none, note="a value of the measure's public grid, drawn by the "
                                   "exponential mechanism; its error is in ranks (the receipt's rank_error95)"))
        elif oc.primitive is not None:
            i = oc.primitive
            out.append(ColumnError(oc.name, tuple(map(float, hidden(sigma_column(i)))),
                                   tuple(map(float, hidden(moe_column(i))))))
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
