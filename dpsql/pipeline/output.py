"""How an answer is shown: error columns, clamping at zero, and notes on impossible values.

Everything here is post-processing of noisy values that are already charged, decided from public
information only (the query's plan, the schema): it costs no privacy (post-processing, Dwork and
Roth 2014, Proposition 2.1) and reads no exact value.

* **Error columns** (``SET dpsql.error_columns = on``, ``connect(error_columns=True)``, the URL's
  ``?error_columns=on``): for each noisy column ``c`` of the answer, a column ``c_moe95`` with
  each row's 95% margin of error (and with ``sigma`` or ``all``, also ``c_sigma``), taken from the
  receipt's per-column errors, so pandas, BI tools and the wire server carry error bars in the
  rows themselves. They come after all the columns the query asked for, in the order of theirs: a
  BI tool that keeps an answer's first N columns by position (Superset's charts) shows the values
  it asked for, not a margin under a metric's name. A column computed from noisy aggregates gets its ± propagated from theirs
  (``pipeline/propagate.py``); a quantile also gets ``c_rank_lo`` and ``c_rank_hi``, the shares of
  its group it lies between; a column whose error dpsql cannot state (a quantile or a variance
  inside an expression, CASE, a text function) gets none.
* **Clamping** (``SET dpsql.clamp_negative = on``): a noisy count, or a noisy sum of a measure
  that cannot be negative, below 0 is shown as 0. It is applied to the noisy cells before HAVING,
  ORDER BY, LIMIT and AVG = SUM / COUNT run, so they all see the same values, and the receipt
  says so. The margin of error keeps covering the true value: if the noisy value v < 0 and the
  true value t >= 0 lies in [v - m, v + m], it lies in [0 - m, 0 + m] too.
* **Notes**: when a shown value is negative for a quantity that cannot be (a count; the sum or
  average of a measure that cannot be negative), the receipt says that this is noise.

"Cannot be negative" comes from public information only: a COUNT always; SUM and AVG of a
measure the schema bounds below by zero (an unsigned type, or ``CHECK (x >= 0)``; see
:meth:`dpsql.backends.base.Engine.nonnegative_columns`). The policy says nothing about signs.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

from dpsql.errors import QueryRefused
from dpsql.pipeline.result import ColumnError
from dpsql.policy.model import ROWS
from dpsql.sql.plan import Plan, primitive_column

#: the values ``dpsql.error_columns`` takes, and what each means: off, moe (``_moe95``), all (and ``_sigma``)
ERROR_COLUMN_VALUES = {"off": "off", "false": "off", "no": "off", "0": "off",
                       "on": "moe", "true": "moe", "yes": "moe", "1": "moe", "moe": "moe", "moe95": "moe",
                       "sigma": "all", "all": "all"}
_SWITCH = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class Output:
    """A session's output options (module docstring)."""

    error_columns: str = "off"  # "off", "moe" (<column>_moe95) or "all" (and <column>_sigma)
    clamp_negative: bool = False
    #: a statement released before is answered with that release, charged nothing (pipeline/reuse.py);
    #: off: each statement is a fresh, charged release (SET dpsql.reuse = off)
    reuse: bool = True
    #: a derivable series limit read from one release ("derived"), or always two ("separate"):
    #: SET dpsql.series_limit (dpsql/intercept/series_derived.py)
    series_limit: str = "derived"


def error_columns_mode(value: Any, name: str = "error_columns") -> str:
    """``off``, ``moe`` or ``all`` from a setting's value (on/off, true/false, moe, sigma, all)."""
    key = str(value).strip().lower() if not isinstance(value, bool) else ("on" if value else "off")
    if key not in ERROR_COLUMN_VALUES:
        raise QueryRefused(f"{name} takes on, off, sigma or all, not {value!r}", code="DP119",
                           hint="on adds <column>_moe95 for each noisy column, after the columns asked for; sigma (or all) adds <column>_sigma too.")
    return ERROR_COLUMN_VALUES[key]


def switch(value: Any, name: str) -> bool:
    """True or False from a setting's value (on/off, true/false, yes/no, 1/0)."""
    key = str(value).strip().lower() if not isinstance(value, bool) else ("on" if value else "off")
    if key not in _SWITCH:
        raise QueryRefused(f"{name} takes on or off, not {value!r}", code="DP119")
    return _SWITCH[key]


def shown(mode: str) -> str:
    """How SHOW dpsql.error_columns prints a mode."""
    return {"off": "off", "moe": "on", "all": "all"}[mode]


# --------------------------------------------------------------------------- cannot be negative


def nonnegative_primitives(plan: Plan, nonnegative: dict[str, set[str]]) -> set[int]:
    """The primitives that cannot be negative: every count, and the sums of measures in
    ``nonnegative`` (the schema's facts, :meth:`Engine.nonnegative_columns`)."""
    columns = nonnegative.get(plan.table.name, set())
    return {i for i, p in enumerate(plan.primitives)
            if p.kind == "count" or p.column in columns or (p.column or "").startswith(ROWS)}  # row counts (sql/units.py)


_NUMBERS = (int, float)


def _below_zero(values: list[Any]) -> int:
    """How many ``values`` are numbers (int or float, not bool) below 0: compared in C when every
    value is one (a large answer's column), else one at a time."""
    if set(map(type, values)) <= set(_NUMBERS):
        return 0 if not values or min(values) >= 0 else sum(map(operator.lt, values, repeat(0)))
    return len([v for v in values if type(v) in _NUMBERS and v < 0])


def _nonnegative_outputs(plan: Plan, prims: set[int]) -> list[bool]:
    """Per column of the answer: exactly a primitive that cannot be negative, or AVG of one."""
    return [(oc.primitive is not None and oc.primitive in prims)
            or (oc.ratio is not None and oc.ratio[0] in prims and oc.ratio[1] in prims) for oc in plan.outputs]


def clamp(columns: dict[str, Any], plan: Plan, prims: set[int]) -> tuple[dict[str, Any], int]:
    """The noisy cells with the primitives ``prims`` clamped at 0, and how many cells changed."""
    import numpy as np  # on first use: a small answer is released without numpy (dpsql/pipeline/release.py)

    out, changed = dict(columns), 0
    for i in sorted(prims):
        values = np.asarray(columns[primitive_column(i)])
        negative = values < 0
        changed += int(negative.sum())
        out[primitive_column(i)] = np.where(negative, np.zeros_like(values), values)
    return out, changed


def notes(plan: Plan, names: list[str], rows: list[tuple[Any, ...]], prims: set[int], clamped: int | None,
          errors: Sequence[ColumnError | None] = ()) -> tuple[str, ...]:
    """What the receipt says about post-processing and impossible values: the clamp (when on),
    per column that cannot be negative how many shown values are below 0, and per column whose
    ± some rows cannot have (:func:`error_notes`)."""
    out = list(error_notes(plan, errors))
    if clamped is not None:
        labels = [plan.primitives[i].label for i in sorted(prims)]
        if labels:
            out.append(f"clamped at 0 (post-processing of the noisy values, no privacy cost; the ± still covers "
                       f"the true value): {', '.join(labels)}; {clamped} noisy value{'s' if clamped != 1 else ''} "
                       "below 0 shown as 0")
        else:
            out.append("dpsql.clamp_negative is on, but no aggregate of this query is known to be non-negative "
                       "(COUNT is; SUM and AVG when the schema bounds the measure below by 0)")
    for j, (name, can_not) in enumerate(zip(names, _nonnegative_outputs(plan, prims))):
        below = _below_zero(list(map(itemgetter(j), rows))) if can_not else 0
        if below:
            out.append(f"{name}: {below} value{'s' if below != 1 else ''} below 0, though it cannot be negative: "
                       "that is the noise (SET dpsql.clamp_negative = on shows them as 0)")
    return tuple(out)


def error_notes(plan: Plan, errors: Sequence[ColumnError | None]) -> list[str]:
    """Per column, the rows whose ± cannot be stated from their values (pipeline/propagate.py):
    a divisor within its own 95% margin of 0, or a quantile whose rank interval is the whole group."""
    out = []
    for oc, err in zip(plan.outputs, errors):
        if err is None:
            continue
        n = err.flagged
        rows = f"{n} row{'s' if n != 1 else ''}"
        p = plan.primitives[oc.primitive] if oc.primitive is not None else None
        if p is not None and p.kind == "quantile":
            if n:
                out.append(f"{oc.name}: in {rows} the 95% rank error is as large as the group itself ({oc.name}_rank_lo "
                           f"= 0, {oc.name}_rank_hi = 1): the value may be any of its grid's and says nothing about "
                           "that group")
        elif n:
            out.append(f"{oc.name}: no ± in {rows} (NULL), whose divisor is within its own 95% margin of 0: "
                       "the ratio there may be anything")
    return out


# --------------------------------------------------------------------------- error columns


#: the columns a quantile's rank interval adds after its ± ones (:func:`dpsql.pipeline.finish.quantile_errors`)
RANK_SUFFIXES = ("rank_lo", "rank_hi")


def _extra(name: str, mode: str) -> list[tuple[str, int]]:
    """(column name, 2 for the MOE / 1 for σ) of the error columns after a noisy column."""
    return [] if mode == "off" else [(f"{name}_moe95", 2)] + ([(f"{name}_sigma", 1)] if mode == "all" else [])


def error_column_types(plan: Plan, names: list[str], types: list[str], mode: str) -> tuple[list[str], list[str]]:
    """(names, types) of the answer with its error columns (a Describe, before any value)."""
    out_names, out_types = list(names), list(types)  # the columns asked for first (with_error_columns)
    for name, typ, oc in zip(names, types, plan.outputs):
        if oc.primitive is not None or oc.ratio is not None or oc.spread is not None or oc.derived is not None:
            quantile = oc.primitive is not None and plan.primitives[oc.primitive].kind == "quantile"
            for extra, _ in _extra(name, mode) + ([(f"{name}_{s}", 0) for s in RANK_SUFFIXES] if quantile and mode != "off" else []):
                out_names.append(extra)
                out_types.append("DOUBLE")
    return out_names, out_types


def with_error_columns(names: list[str], types: list[str], rows: list[tuple[Any, ...]],
                       errors: list[ColumnError | None], mode: str
                       ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """The answer with ``<column>_moe95`` (and ``_sigma``, a quantile's rank interval) for each
    column that has errors, after ALL the columns asked for: a client that keeps the first N
    columns of an answer by position and labels them with the N it asked for (Superset's charts:
    ``assign_column_label``) then shows each value under its own name, never a margin."""
    if mode == "off":
        return names, types, rows
    out_names, out_types = list(names), list(types)
    picks = [(j, 0) for j in range(len(names))]  # (column index, 0 value / 1 σ / 2 MOE / 3+ err.extra[k - 3])
    for j, (name, typ, err) in enumerate(zip(names, types, errors)):
        if err is not None:
            for extra, k in _extra(name, mode) + [(f"{name}_{suffix}", 3 + x) for x, (suffix, _) in enumerate(err.extra)]:
                out_names.append(extra)
                out_types.append("DOUBLE")
                picks.append((j, k))

    def cell(r: int, j: int, k: int) -> Any:
        if k == 0:
            return rows[r][j]
        err = errors[j]
        assert err is not None
        return (err.sigma if k == 1 else err.moe95 if k == 2 else err.extra[k - 3][1])[r]

    return out_names, out_types, [tuple(cell(r, j, k) for j, k in picks) for r in range(len(rows))]
