"""Numbers shared by the partition-selection modules: exact arguments and directed rounding.

The partition-selection family of paper 002 (Desfontaines, Voss, Gipson, Mandayam,
"Differentially private partition selection", PoPETs 2022) is :mod:`dpsql.privacy.pi_opt`
(Theorem 1's closed form), :mod:`dpsql.privacy.selection` (Lemma 1's exact table and the
sampler), :mod:`dpsql.privacy.tsgd` (Definitions 6-8, Theorems 4-6) and
:mod:`dpsql.privacy.selection_analysis` (Definition 9, Figures 2-3, group privacy). This module
holds what they share, once; its names are private to that family (hence the underscores):

* argument checks: epsilon and delta as exact ``Fraction``s (:func:`_exact`,
  :func:`_privacy_params`), counts as int64 below 2^62 (:func:`_counts`, the domain of
  :func:`dpsql.privacy.selection.select`);
* directed rounding: the largest float not above a rational (:func:`_float_down`), dyadic
  floors and ceilings, and rational bounds lo <= e^x <= hi that hold rigorously
  (:func:`_exp_bounds`). They make the exact table of Lemma 1 a true lower bound, the threshold
  k of Definition 7 rigorous, and delta_k of group privacy a true upper bound.

Numbers: epsilon and delta of the mechanisms (:func:`dpsql.privacy.selection.select`,
:func:`dpsql.privacy.tsgd.thresholded_release`,
:func:`dpsql.privacy.selection_analysis.group_privacy`,
:func:`dpsql.privacy.selection_analysis.per_partition_budget`) are ``int`` or
``fractions.Fraction``; floats are refused, as in :mod:`dpsql.privacy.mechanisms` (0.1 is not
1/10). The analysis functions (probabilities, mid-points) also take floats and use their exact
binary values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from numbers import Rational

import numpy as np

Real = int | float | Fraction
Counts = int | np.integer | np.ndarray | list

_Q = 192  # the bounds L >= ... and U of e^(+-eps) are multiples of 2^-192
_DEC_PREC = 70  # decimal digits for the bounds on e^eps (2^-232 relative, below 2^-_Q)
_MAX_COUNT = 1 << 62


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------


def _exact(x: object, what: str, *, allow_float: bool) -> Fraction:
    """``x`` as an exact Fraction; floats only when ``allow_float`` (their exact binary value)."""
    if isinstance(x, bool):
        raise TypeError(f"{what} must be a number, not bool")
    if isinstance(x, Rational):
        return Fraction(x)
    if isinstance(x, (float, np.floating)):
        if not allow_float:
            raise TypeError(
                f"{what} must be an int or fractions.Fraction, not float "
                "(a float such as 0.1 is not 1/10; pass Fraction(1, 10))"
            )
        if not math.isfinite(x):
            raise ValueError(f"{what} must be finite")
        return Fraction(float(x))
    raise TypeError(f"{what} must be an int or fractions.Fraction, not {type(x).__name__}")


def _privacy_params(
    epsilon: object, delta: object, *, allow_float: bool
) -> tuple[Fraction, Fraction]:
    eps = _exact(epsilon, "epsilon", allow_float=allow_float)
    d = _exact(delta, "delta", allow_float=allow_float)
    if eps < 0:
        raise ValueError("epsilon must be >= 0")
    if not 0 <= d <= 1:
        raise ValueError("delta must be in [0, 1]")
    return eps, d


def _counts(n: Counts) -> np.ndarray:
    """Non-negative integer counts as int64 (integral floats such as 1e9 are accepted)."""
    arr = np.asarray(n)
    if arr.dtype.kind in "iu":
        c = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise ValueError("counts must be whole numbers")
        c = arr.astype(np.int64)
    elif arr.dtype.kind == "O":
        try:
            c = arr.astype(np.int64)
        except (TypeError, OverflowError) as exc:
            raise TypeError("counts must be integers below 2^62") from exc
    else:
        raise TypeError(f"counts must be integers, not {arr.dtype}")
    if c.size and int(c.min()) < 0:
        raise ValueError("counts must be >= 0")
    if c.size and int(c.max()) >= _MAX_COUNT:
        raise ValueError("counts must be below 2^62")
    return c


# ---------------------------------------------------------------------------------------------
# Directed rounding: floats and dyadic rationals below or above, rigorous bounds on e^x
# ---------------------------------------------------------------------------------------------


def _float_down(x: Fraction) -> float:
    """The largest float <= x."""
    f = float(x)  # correctly rounded
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def _exp_bounds(x: Fraction) -> tuple[Fraction, Fraction]:
    """(lo, hi) with lo <= e^x <= hi, rigorously.

    x is rounded outwards to 70 digits; ``Decimal.exp`` is correctly rounded (half-even) at the
    context precision, so one ulp further out is a strict bound.
    """
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        ctx.rounding = ROUND_FLOOR
        x_lo = Decimal(x.numerator) / x.denominator
        ctx.rounding = ROUND_CEILING
        x_hi = Decimal(x.numerator) / x.denominator
        lo = x_lo.exp(ctx).next_minus(ctx)
        hi = x_hi.exp(ctx).next_plus(ctx)
    return Fraction(lo), Fraction(hi)


def _dyadic_floor(x: Fraction, bits: int) -> int:
    return (x.numerator << bits) // x.denominator


def _dyadic_ceil(x: Fraction, bits: int) -> int:
    return -((-x.numerator << bits) // x.denominator)


def first_true(reaches: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest n in (lo, hi] for which the non-decreasing predicate ``reaches`` holds, by
    bisection (``hi`` when none below it does: the caller's cap or its known passing value; shared by
    ``selection_gauss``'s threshold search and ``selection_analysis``'s mid-points)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return hi

