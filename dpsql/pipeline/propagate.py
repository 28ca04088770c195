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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy: imported on first use (a small answer is released without it, release.py)
    import numpy as np

#: z of a two-sided 95% interval, as every MOE of dpsql (AVG's, the spreads')
Z95 = 1.96

Grad = dict[int, Any]  # a variable (primitive) -> ∂f/∂v per row


def _floats(values: list[Any]) -> np.ndarray:
    """A float array of one column's values, NaN where a value is NULL or not a number."""
    import numpy as np

    out = np.full(len(values), np.nan)
    for j, v in enumerate(values):
        if type(v) in (int, float) or isinstance(v, (np.integer, np.floating)):
            out[j] = float(v)
        elif v is not None and hasattr(v, "as_integer_ratio"):  # Decimal, Fraction
            out[j] = float(v)
    return out


def derived_errors(form: tuple[Any, ...], value: Callable[[str], list[Any]], sigma: Callable[[int], list[Any]],
                   moe: Callable[[int], list[Any]], n_rows: int
                   ) -> tuple[tuple[float | None, ...], tuple[float | None, ...], int]:
    """(each row's σ and 95% MOE, or None, and how many rows have a divisor within its 95%
    margin of 0) of a derived column's ``form``; ``value(name)``: a noisy-relation column per
    answer row (``__p0``, a key), ``sigma(i)`` and ``moe(i)``: primitive ``i``'s per answer row.
    A function of one primitive has MOE |f'|·MOE_i (that primitive's own, exact for its
    discrete noise: ``COUNT(*) * 2`` is ± twice the count's); of several, 1.96·σ_f."""
    import numpy as np

    from dpsql.sql.plan import primitive_column

    near_zero = np.zeros(n_rows, dtype=bool)
    sigmas: dict[int, np.ndarray] = {}
    moes: dict[int, np.ndarray] = {}

    def sd(grad: Grad) -> np.ndarray:
        total = np.zeros(n_rows)
        for i, g in grad.items():
            if i not in sigmas:
                sigmas[i] = _floats(sigma(i))
            total = total + (g * sigmas[i]) ** 2
        return np.sqrt(total)

    def margin(grad: Grad) -> np.ndarray:  # a function of one primitive: |f'|·its own MOE; else 1.96 σ_f
        if len(grad) == 1:
            (i, g), = grad.items()
            if i not in moes:
                moes[i] = _floats(moe(i))
            return np.abs(g) * moes[i]
        return Z95 * sd(grad)

    def divide(a: np.ndarray, ga: Grad, b: np.ndarray, gb: Grad) -> tuple[np.ndarray, Grad]:
        nonlocal near_zero
        m_b = margin(gb)  # the divisor's own 95% interval b ± m_b holds 0: no honest ±
        near_zero |= (b == 0) | ((m_b > 0) & (np.abs(b) <= m_b))
        grad = {i: ga.get(i, 0.0) / b - a * gb.get(i, 0.0) / (b * b) for i in set(ga) | set(gb)}
        return a / b, grad

    def ev(f: tuple[Any, ...]) -> tuple[np.ndarray, Grad]:
        op = f[0]
        if op == "p":
            return _floats(value(primitive_column(f[1]))), {f[1]: np.ones(n_rows)}
        if op == "c":
            return np.full(n_rows, float(f[1])), {}
        if op == "k":
            return _floats(value(f[1])), {}
        if op == "avg":  # NULL when the noisy count is below 1 (aggregates.py)
            (s, gs), (c, gc) = ev(("p", f[1])), ev(("p", f[2]))
            v, g = divide(s, gs, c, gc)
            v[c < 1] = np.nan
            return v, g
        if op in ("neg", "abs", "same"):
            a, ga = ev(f[1])
            k = {"neg": -np.ones(n_rows), "abs": np.sign(a), "same": np.ones(n_rows)}[op]
            return (a if op == "same" else k * a), {i: k * g for i, g in ga.items()}
        (a, ga), (b, gb) = ev(f[1]), ev(f[2])
        if op == "/":
            return divide(a, ga, b, gb)
        keys = set(ga) | set(gb)
        if op == "*":
            return a * b, {i: ga.get(i, 0.0) * b + a * gb.get(i, 0.0) for i in keys}
        s = 1.0 if op == "+" else -1.0
        return (a + b if op == "+" else a - b), {i: ga.get(i, 0.0) + s * gb.get(i, 0.0) for i in keys}

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v, grad = ev(form)
        out = sd(grad)
        m = margin(grad)
    bad = near_zero | ~np.isfinite(out) | ~np.isfinite(m) | ~np.isfinite(v)
    shown = int((near_zero & np.isfinite(v)).sum())
    return (tuple(None if b else float(x) for x, b in zip(out.tolist(), bad.tolist())),
            tuple(None if b else float(x) for x, b in zip(m.tolist(), bad.tolist())), shown)


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
