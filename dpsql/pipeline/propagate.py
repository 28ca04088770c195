"""Error bars of what is computed from noisy values: derived columns and quantiles' rank intervals.

Post-processing of charged noisy values and public figures only (Dwork and Roth 2014,
Proposition 2.1): nothing here reads an exact value or draws randomness, so it costs nothing and
changes no released value (docs/privacy.md, "Derived columns" and "Quantiles").

**Derived columns** (``sql/derived.py``: ``SUM(a) / SUM(b)``, ``100.0 * COUNT(*) / SUM(x)``,
``AVG(x) * 2``, and AVG itself): first-order (delta-method) propagation. The primitives' noises
are independent, zero-mean, each with its stated σ_i, so f(v) has σ_f² ≈ Σ_i (∂f/∂v_i)² σ_i²,
the partial derivatives taken at the noisy values (forward-mode differentiation over the form;
a primitive read twice, as in ``SUM(a) / (SUM(a) + SUM(b))``, is one variable). ± = 1.96 σ_f,
as AVG's always was. Honest when f is close to linear over the ± of its inputs; it is not near a
pole, so a row in which any divisor's own 95% interval contains 0 (|d| ≤ its MOE) gets no ±
(NULL), and the receipt says how many rows did: the ratio may then be anything. A function of
one primitive (``COUNT(*) * 2``, a divisor ``SUM(b)``) takes that primitive's own MOE times
|f'| (exact for its discrete noise); of several, 1.96 σ_f.

**Quantile rank intervals**: the exponential mechanism's 95% error is public and in ranks (``r``,
``privacy/quantile.py``: the released value's score is within r of the best grid value's). With
the query's own noisy count n̂ of the values ranked (``COUNT(m)``) it reads as a share of the
group: the released value lies between the group's ``q − r/n`` and ``q + r/n`` quantiles (up
to the grid's own spacing), n taken as n̂ less the count's 95% margin (an under-estimate, so a
wider interval). When r ≥ max(q, 1 − q)·n the interval is [0, 1]: the 95% bound allows any value
of the grid, and the row says so.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy: imported on first use (a small answer is released without it, release.py)
    import numpy as np

#: z of a two-sided 95% interval, as every MOE of dpsql (AVG's, the spreads')
Z95 = 1.96

Grad = dict[int, Any]  # a variable (primitive) -> ∂f/∂v per row


def _floats(values: Any) -> np.ndarray:  # noqa: F821 (numpy: under TYPE_CHECKING)
    """A float array of one column's values (a list or an array), NaN where a value is NULL or
    not a number (text is never read as one)."""
    import numpy as np

    arr = np.asarray(values)
    if arr.dtype.kind in "fiub":  # numbers: one conversion (a column without NULL or text)
        try:
            return arr.astype(np.float64)
        except OverflowError:
            pass
    out = np.full(len(values), np.nan)
    for j, v in enumerate(values):
        if type(v) in (int, float) or isinstance(v, (np.integer, np.floating)):
            out[j] = float(v)
        elif v is not None and not isinstance(v, (str, bytes)) and hasattr(v, "as_integer_ratio"):  # Decimal
            out[j] = float(v)
    return out


class _Columns:
    """Every row at once, in numpy arrays (an answer released in arrays: numpy is loaded)."""

    def __init__(self, value: Callable[[str], Any], n_rows: int):
        import numpy as np

        self.np, self.value, self.n = np, value, n_rows
        self.false = np.zeros(n_rows, dtype=bool)

    def col(self, name: str) -> Any:
        return _floats(self.value(name))

    def const(self, x: float) -> Any:
        return self.np.full(self.n, x)

    def quiet(self) -> Any:
        return self.np.errstate(divide="ignore", invalid="ignore", over="ignore")

    def div(self, a: Any, b: Any) -> Any:
        return a / b

    def sign(self, a: Any) -> Any:
        return self.np.sign(a)

    def sqrt(self, a: Any) -> Any:
        return self.np.sqrt(a)

    def finite(self, a: Any) -> Any:
        return self.np.isfinite(a)

    def null_where(self, v: Any, cond: Any) -> Any:
        return self.np.where(cond, self.np.nan, v)

    def not_(self, a: Any) -> Any:
        return ~a

    def listed(self, a: Any, shown: Any) -> list[float | None]:
        out: list[float | None] = a.tolist()
        for j in self.np.flatnonzero(~shown).tolist():
            out[j] = None
        return out

    def count(self, a: Any) -> int:
        return int(a.sum())


class _Row:
    """One row, in Python floats (a small answer's lists: released without numpy, release.py)."""

    false = False

    def __init__(self, value: Callable[[str], list[Any]], r: int):
        self.value, self.r = value, r

    def col(self, name: str) -> float:
        v = self.value(name)[self.r]
        return float(v) if v is not None and (type(v) in (int, float) or hasattr(v, "as_integer_ratio")) else math.nan

    def const(self, x: float) -> float:
        return x

    def quiet(self) -> Any:
        return contextlib.nullcontext()

    def div(self, a: float, b: float) -> float:
        if b == 0 or math.isnan(b) or math.isnan(a):  # IEEE, as numpy: ±inf, or NaN for 0/0 and NaN
            return math.nan if a == 0 or math.isnan(a) or math.isnan(b) else math.copysign(math.inf, a) * math.copysign(1, b)
        return a / b  # a Python float overflows to ±inf here, as numpy's

    def sign(self, a: float) -> float:
        return math.nan if math.isnan(a) else float((a > 0) - (a < 0))

    def sqrt(self, a: float) -> float:
        return math.sqrt(a) if a >= 0 else math.nan

    def finite(self, a: float) -> bool:
        return math.isfinite(a)

    def null_where(self, v: float, cond: bool) -> float:
        return math.nan if cond else v

    def not_(self, a: bool) -> bool:
        return not a

    def listed(self, a: float, shown: bool) -> list[float | None]:
        return [float(a) if shown else None]

    def count(self, a: bool) -> int:
        return int(a)


def derived_errors(form: tuple[Any, ...], value: Callable[[str], Any], n_rows: int, arrays: bool = True
                   ) -> tuple[tuple[float | None, ...], tuple[float | None, ...], int]:
    """(each row's σ and 95% MOE, or None, and how many rows have a divisor within its 95%
    margin of 0) of a derived column's ``form``; ``value(name)``: a column of the noisy relation
    per answer row (``__p0``, ``__s0``, ``__m0``, a key; a list, or an array with ``arrays``). A function of one primitive has MOE
    |f'|·MOE_i (that primitive's own, exact for its discrete noise: ``COUNT(*) * 2`` is ± twice
    the count's); of several, 1.96·σ_f. ``arrays``: all rows at once in numpy; else row by row
    in Python floats (a small answer, released without numpy): the same operations, in order."""
    if arrays:
        sig, moe, n = _evaluate(form, _Columns(value, n_rows))
        return tuple(sig), tuple(moe), n
    cache: dict[str, list[Any]] = {}

    def column(name: str) -> list[Any]:  # each column read once, not once a row
        if name not in cache:
            cache[name] = value(name)
        return cache[name]

    sig_out: list[float | None] = []
    moe_out: list[float | None] = []
    flagged = 0
    for r in range(n_rows):
        s, m, n = _evaluate(form, _Row(column, r))
        sig_out += s
        moe_out += m
        flagged += n
    return tuple(sig_out), tuple(moe_out), flagged


def _evaluate(form: tuple[Any, ...], ops: Any) -> tuple[list[Any], list[Any], int]:
    """Forward-mode differentiation of ``form`` over ``ops`` (all rows, or one): each row's σ and
    MOE (None where not stated) and how many rows (of those with a value) have a divisor within
    its own 95% margin of 0."""
    from dpsql.sql.plan import moe_column, primitive_column, sigma_column

    near_zero = ops.false
    sigmas: dict[int, Any] = {}
    moes: dict[int, Any] = {}

    def sd(grad: Grad) -> Any:
        total = ops.const(0.0)
        for i, g in grad.items():
            if i not in sigmas:
                sigmas[i] = ops.col(sigma_column(i))
            term = g * sigmas[i]
            total = total + term * term  # not ** 2: a Python float's power raises on overflow, a product is inf
        return ops.sqrt(total)

    def margin(grad: Grad) -> Any:  # a function of one primitive: |f'|·its own MOE; else 1.96 σ_f
        if len(grad) == 1:
            (i, g), = grad.items()
            if i not in moes:
                moes[i] = ops.col(moe_column(i))
            return abs(g) * moes[i]
        return Z95 * sd(grad)

    def divide(a: Any, ga: Grad, b: Any, gb: Grad) -> tuple[Any, Grad]:
        nonlocal near_zero
        m_b = margin(gb)  # the divisor's own 95% interval b ± m_b holds 0: no honest ±
        near_zero = near_zero | (b == 0) | ((m_b > 0) & (abs(b) <= m_b))
        grad = {i: ops.div(ga.get(i, 0.0), b) - ops.div(a * gb.get(i, 0.0), b * b) for i in set(ga) | set(gb)}
        return ops.div(a, b), grad

    def ev(f: tuple[Any, ...]) -> tuple[Any, Grad]:
        op = f[0]
        if op == "p":
            return ops.col(primitive_column(f[1])), {f[1]: ops.const(1.0)}
        if op == "c":
            return ops.const(float(f[1])), {}
        if op == "k":
            return ops.col(f[1]), {}
        if op == "avg":  # NULL when the noisy count is below 1 (aggregates.py)
            (s, gs), (c, gc) = ev(("p", f[1])), ev(("p", f[2]))
            v, g = divide(s, gs, c, gc)
            return ops.null_where(v, c < 1), g
        if op in ("neg", "abs", "same"):
            a, ga = ev(f[1])
            if op == "same":
                return a, ga
            k = ops.const(-1.0) if op == "neg" else ops.sign(a)
            return k * a, {i: k * g for i, g in ga.items()}
        (a, ga), (b, gb) = ev(f[1]), ev(f[2])
        if op == "/":
            return divide(a, ga, b, gb)
        keys = set(ga) | set(gb)
        if op == "*":
            return a * b, {i: ga.get(i, 0.0) * b + a * gb.get(i, 0.0) for i in keys}
        s = 1.0 if op == "+" else -1.0
        return (a + b if op == "+" else a - b), {i: ga.get(i, 0.0) + s * gb.get(i, 0.0) for i in keys}

    with ops.quiet():
        v, grad = ev(form)
        out, m = sd(grad), margin(grad)
    has_value = ops.finite(v)
    shown = has_value & ops.finite(out) & ops.finite(m) & ops.not_(near_zero)
    return ops.listed(out, shown), ops.listed(m, shown), ops.count(has_value & near_zero)


def rank_interval(q: float, rank_error: list[Any], count: list[Any], count_moe: list[Any]
                  ) -> tuple[tuple[float | None, ...], tuple[float | None, ...], int]:
    """(each row's lower and upper share of the group, and how many rows' interval is the whole
    group) of a quantile at level ``q`` whose 95% rank error is ``rank_error`` (public), given
    the query's noisy count of the values it ranks and that count's 95% margin (module docstring)."""
    import numpy as np

    r, n_hat, moe = _floats(rank_error), _floats(count), _floats(count_moe)
    n = n_hat - np.nan_to_num(moe)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.where(n > 0, r / n, np.inf)
    lo = np.clip(q - width, 0.0, 1.0)
    hi = np.clip(q + width, 0.0, 1.0)
    known = np.isfinite(n_hat) & np.isfinite(r)
    whole = known & (lo <= 0.0) & (hi >= 1.0)
    lo_out = tuple(float(x) if k else None for x, k in zip(lo.tolist(), known.tolist()))
    hi_out = tuple(float(x) if k else None for x, k in zip(hi.tolist(), known.tolist()))
    return lo_out, hi_out, int(whole.sum())
