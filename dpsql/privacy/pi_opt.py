"""pi_opt(n): the largest release probability of DP partition selection (paper 002 Theorem 1).

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022). Setting: every privacy unit is in at most one partition (group), n is
the number of distinct units in a partition, neighbouring data sets differ by adding or removing
one unit (paper 002 Definition 1).

What this module offers:

* :func:`release_probability` -- pi(n) of the optimal primitive, Theorem 1's closed form
  (Theorem 2 for epsilon = 0 or delta = 0) in float64, rounded down: never above the exact
  value, relative error below 1e-12.

It is an evaluation, for the analysis (:func:`dpsql.privacy.selection_analysis.midpoint`, the
benchmarks) and the tests. :func:`dpsql.privacy.selection.select` does *not* sample from it: a
float pi that is never above the exact pi is not enough for (epsilon, delta)-DP (the "Exact
table" of :mod:`dpsql.privacy.selection`). That table takes only its length bound from here
(n2 of :func:`_anchors`).
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpsql.privacy.selection_numbers import Counts, Real, _counts, _float_down, _privacy_params

__all__ = ["release_probability"]

# Relative step-down of the float closed form: its rounding error is below ~64 ulp (docstring
# of _pi_float); 2^-44 = 512 ulp leaves a factor 8 and costs 5.7e-14 relative.
_STEP_DOWN = 1.0 - 2.0**-44


# ---------------------------------------------------------------------------------------------
# pi(n): Theorem 1's closed form in float64, rounded down
# ---------------------------------------------------------------------------------------------


def _step_down(v: np.ndarray) -> np.ndarray:
    """v (1 - 2^-44), rounded down: removes any float error below 512 ulp, relative."""
    return np.nextafter(v * _STEP_DOWN, 0.0)


@functools.lru_cache(maxsize=512)
def _anchors(eps: float, delta: float) -> tuple[int, float, int]:
    """(n1, pi(n1) rounded down to a float, n2) of Theorem 1, for 0 < eps, 0 < delta < 1.

    Evaluated in 60-digit decimal arithmetic on the exact values of the floats, so the floors
    defining n1 and n2 are decided correctly except within ~1e-55 of an integer. There a wrong
    side is harmless: at the first crossover both branches of Lemma 1 give the same value (that
    is what defines it), and near n2 the caller clips at 1 only from n2 + 2 on.
    """
    e, d = Decimal(eps), Decimal(delta)
    with localcontext() as ctx:
        ctx.prec = 60 + max(0, -e.adjusted())  # E - 1 below cancels -log10(eps) digits
        big_e = e.exp()
        a = big_e - 1
        # Theorem 1 / Lemma 4 (eq. 6):
        # n1 = 1 + floor((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta)))
        t1 = ((a + 2 * d) / ((big_e + 1) * d)).ln() / e
        n1 = 1 + int(t1.to_integral_value(rounding=ROUND_FLOOR))
        p1 = d * ((n1 * e).exp() - 1) / a  # pi(n1), first branch of Theorem 1
        # Theorem 1 / Lemma 5: n2 = n1 + floor((1/eps) ln(1 + (e^eps - 1)/delta (1 - pi(n1))))
        t2 = (1 + a / d * (1 - p1)).ln() / e
        n2 = n1 + int(t2.to_integral_value(rounding=ROUND_FLOOR))
    p1f = float(p1)
    if Decimal(p1f) > p1:
        p1f = math.nextafter(p1f, 0.0)
    return n1, p1f, n2


def _pi_float(counts: np.ndarray, eps: float, delta: float) -> np.ndarray:
    """pi(n) for a 1-D array of counts and the exact values of the floats eps and delta, rounded
    down (see below).

    Branches (Theorem 1; Theorem 2 for eps = 0 or delta = 0), written without overflow:

    * 1 <= n <= n1:   delta (e^(n eps) - 1)/(e^eps - 1)
                    = delta e^((n-1) eps) (1 - e^(-n eps)) / (1 - e^(-eps))      (expm1)
    * n1 < n <= n2:   (1 - e^(-m eps)) (1 + delta/(e^eps - 1)) + e^(-m eps) pi(n1), m = n - n1:
                      a sum of two positive terms, no cancellation.
    * n > n2: 1.

    Error: the only amplified rounding is that of the exponent (n-1) eps (or m eps), whose
    relative error u (2^-53) becomes an absolute error u (n-1) eps in the exponent, i.e. a
    relative error u (n-1) eps of that exponential. On these branches (n-1) eps stays below
    ln(1/delta) and m eps below ln(1 + (e^eps - 1)/delta) + eps, < 55 for delta >= 1e-15 and
    eps <= 10 (for larger eps, m eps > 55 only where the term e^(-m eps) pi(n1) is below 1e-23
    of the sum), so with the few ulps of the other operations the result is within ~64 u of
    the exact value. The step-down by a relative 2^-44 = 512 u then puts it at or below the
    exact value; relative error < 6e-14.
    At n = n2 + 1 the second branch is still evaluated (and clipped at 1), so a floor of n2
    decided on the wrong side of an integer cannot produce a 1 where pi(n) < 1.
    """
    out = np.zeros(counts.shape, dtype=np.float64)
    pos = counts >= 1
    if delta == 0:
        return out  # Theorem 2.1: no partition can be released under (eps, 0)-DP
    if delta >= 1:
        out[pos] = 1.0
        return out
    if eps == 0:
        # Theorem 2.2: pi(n) = min(1, n delta); 1 exactly from the smallest n with n delta >= 1.
        q = 1 / Fraction(delta)
        n_one = q.numerator // q.denominator + (q.denominator != 1)
        low = pos & (counts < n_one)
        out[low] = _step_down(counts[low].astype(np.float64) * delta)
        out[counts >= n_one] = 1.0
        return out
    n1, p1, n2 = _anchors(eps, delta)
    with np.errstate(over="ignore"):
        a = np.expm1(eps)  # inf for eps > ~709; delta / a = 0 then, which rounds down
    r1 = pos & (counts <= n1)
    x = counts[r1].astype(np.float64)
    out[r1] = delta * np.exp((x - 1.0) * eps) * (np.expm1(-x * eps) / np.expm1(-eps))
    r2 = (counts > n1) & (counts <= n2 + 1)
    m = (counts[r2] - n1).astype(np.float64)
    out[r2] = -np.expm1(-m * eps) * (1.0 + delta / a) + np.exp(-m * eps) * p1
    out = _step_down(out)
    np.minimum(out, 1.0, out=out)
    out[counts > n2 + 1] = 1.0
    return out


def release_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """pi_opt(n): the largest probability with which any (epsilon, delta)-DP partition selection
    can keep a partition of n units (paper 002 Theorem 1; Theorem 2 for epsilon = 0 or delta = 0).

    Formula (Theorem 1), for epsilon > 0 and 0 < delta < 1, with
    n1 = 1 + floor((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta))),
    n2 = n1 + floor((1/eps) ln(1 + (e^eps - 1)/delta (1 - pi(n1)))) and m = n - n1::

        pi(n) = delta (e^(n eps) - 1) / (e^eps - 1)                               n <= n1
        pi(n) = (1 - e^(-m eps)) (1 + delta/(e^eps - 1)) + e^(-m eps) pi(n1)     n1 < n <= n2
        pi(n) = 1                                                                 n > n2

    pi(0) = 0; delta = 0 gives 0 everywhere (Theorem 2.1); epsilon = 0 gives min(1, n delta)
    (Theorem 2.2).

    Privacy: keeping each partition independently with probability pi(n) is (epsilon, delta)-DP
    when each unit is in at most one partition (Definition 3, Theorem 1), and optimal among all
    such mechanisms (Theorem 3). This function only *evaluates* pi;
    :func:`dpsql.privacy.selection.select` samples.

    Numerics: float64, vectorised, no overflow for n up to 2^62. The value returned is never
    above the exact pi(n) of the given epsilon and delta (floats are taken at their exact binary
    value; Fractions are first rounded down to floats, which can only lower pi) and is within a
    relative 1e-13 of it (tested against 80-digit arithmetic for eps in [0.01, 10], delta in
    [1e-15, 0.1], n up to 1e9).

    Args:
        n: a count or an array of counts (non-negative integers).
        epsilon: >= 0 (int, float or Fraction).
        delta: in [0, 1] (int, float or Fraction).

    Returns:
        float64 array of n's shape (0-d for a scalar n).
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    return _pi_float(counts.ravel(), _float_down(eps), _float_down(d)).reshape(counts.shape)
