"""Truncated geometric thresholding: partition selection that also releases noisy counts.

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022), Definitions 6-8 and Theorems 4-6. Setting as in
:mod:`dpsql.privacy.selection`: every privacy unit is in at most one partition, n counts the
distinct units of a partition, neighbours differ by adding or removing one unit.

What this module offers:

* :func:`tsgd_threshold` -- k of Definition 7, decided rigorously (exact rational bounds on
  e^eps, :func:`dpsql.privacy.selection_numbers._exp_bounds`).
* :func:`sample_truncated_geometric` -- exact draws of the k-TSGD (Definition 6), by rejection
  from the exact discrete Laplace of :mod:`dpsql.privacy.samplers`.
* :func:`thresholded_release` -- the k-TSGD thresholded release (Definition 8, Theorems 4 and 6):
  releases the partitions *and* their noisy counts for one (epsilon, delta).
* :func:`tsgd_release_probability` -- its release probability, eq. (8): pi_opt for
  (epsilon, delta_hat) (Theorem 5), an analysis value.

Numbers: epsilon and delta of the mechanism (:func:`thresholded_release`,
:func:`sample_truncated_geometric`) are ``int`` or ``fractions.Fraction``; floats are refused
(0.1 is not 1/10). The analysis functions also take floats at their exact binary values.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpsql.privacy.randomness import RandomSource, default_random
from dpsql.privacy.samplers import sample_discrete_laplace
from dpsql.privacy.selection_numbers import (
    _DEC_PREC,
    _Q,
    Counts,
    Real,
    _counts,
    _dyadic_floor,
    _exact,
    _exp_bounds,
    _privacy_params,
)

__all__ = [
    "refusal",
    "tsgd_threshold",
    "sample_truncated_geometric",
    "thresholded_release",
    "tsgd_release_probability",
]


def _pow_floor(num: int, bits: int, k: int) -> int:
    """A lower bound r / 2^bits of (num / 2^bits)^k: square and multiply, truncating products."""
    result = 1 << bits
    base = num
    while k:
        if k & 1:
            result = (result * base) >> bits
        k >>= 1
        if k:
            base = (base * base) >> bits
    return result


@functools.lru_cache(maxsize=256)
def _tsgd_threshold(eps: Fraction, delta: Fraction) -> int:
    # Start from a 70-digit estimate of t = (1/eps) ln((e^eps + 2 delta - 1)/((e^eps + 1) delta))
    # and take the smallest k that a rigorous test accepts (a near-tie only moves k up by one).
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        e = Decimal(eps.numerator) / eps.denominator
        d = Decimal(delta.numerator) / delta.denominator
        big_e = e.exp()
        t = ((big_e - 1 + 2 * d) / ((big_e + 1) * d)).ln() / e
        k = max(1, int(t.to_integral_value(rounding=ROUND_CEILING)) - 1)
    lo, hi = _exp_bounds(eps)
    lo_num = _dyadic_floor(lo, _Q)
    lo_q = Fraction(lo_num, 1 << _Q)

    def accepted(k: int) -> bool:
        # P[X = k] <= delta  <=>  delta (x^k (x + 1) - 2) - (x - 1) >= 0 with x = e^eps (proof of
        # Theorem 4). The left side grows with x in its first term and falls in its second, so
        # x^k >= lo^k, x + 1 >= lo + 1 and x - 1 <= hi - 1 give a lower bound of it.
        xk = Fraction(_pow_floor(lo_num, _Q, k), 1 << _Q)
        return delta * (xk * (lo_q + 1) - 2) - (hi - 1) >= 0

    while not accepted(k):
        k += 1
    return k


def tsgd_threshold(epsilon: Real, delta: Real) -> int:
    """k of the truncated geometric mechanism (paper 002 Definition 7).

    k = ceil((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta))), the smallest k >= 1 with
    P[X = k] = e^(-k eps) (1 - e^-eps) / (1 + e^-eps - 2 e^(-(k+1) eps)) <= delta for the k-TSGD
    X of parameter p = 1 - e^-eps. Decided rigorously (exact rational bounds on e^eps), so the
    inequality that Theorem 4's proof needs always holds; only within ~1e-60 of a tie (which
    rational inputs never reach exactly, e^eps being transcendental) would k come out one larger.

    Note k = n1 - 1 of Theorem 1 when the logarithm is an integer, else k = n1.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("the truncated geometric mechanism needs epsilon > 0 and 0 < delta < 1")
    return _tsgd_threshold(eps, d)


def sample_truncated_geometric(epsilon: int | Fraction, k: int, rng: RandomSource | None = None,
                               *, size: int | None = None) -> np.ndarray:
    """Exact samples of the k-TSGD of parameter p = 1 - e^-eps (paper 002 Definition 6).

    P[X = x] = c e^(-eps |x|) for |x| <= k, 0 otherwise,
    c = (1 - e^-eps)/(1 + e^-eps - 2 e^(-(k+1) eps)).
    Drawn by rejection from the exact two-sided geometric L_Z(1/eps)
    (:func:`dpsql.privacy.samplers.sample_discrete_laplace`, P ~ e^(-|x|/b) with b = 1/eps): draws
    with |x| > k are redrawn, which conditions on |X| <= k exactly -- the construction the paper
    gives after Definition 6. Rejection rate 2 e^(-(k+1) eps)/(1 + e^-eps) per round.

    Args:
        epsilon: > 0, ``int`` or ``Fraction`` (numerator and denominator below 2^62).
        k: the truncation, >= 1.
        rng: the random source; ``None`` means the OS CSPRNG.
        size: number of samples (default 1).
    """
    eps = _exact(epsilon, "epsilon", allow_float=False)
    if eps <= 0:
        raise ValueError("epsilon must be > 0")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError("k must be an int >= 1")
    rng = default_random() if rng is None else rng
    size = 1 if size is None else int(size)
    scale = 1 / eps
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        x = sample_discrete_laplace(scale, rng, size=pending.size)
        ok = np.abs(x) <= k
        out[pending[ok]] = x[ok]
        pending = pending[~ok]
    return out


#: ``sample_truncated_geometric`` redraws |x| > k from L_Z(1/ε): each round keeps a draw with
#: probability 1 − 2e^{−(k+1)ε}/(1 + e^{−ε}), about kε when ε ≪ δ (ε = 10⁻¹², δ = 10⁻⁶: 5·10⁻⁷, an
#: hour per group). Below this acceptance the selection is refused in phase 1 (:func:`refusal`).
MIN_ACCEPTANCE = 2.0**-10


def refusal(epsilon: Fraction, delta: Fraction) -> str | None:
    """Why the truncated geometric selection at the policy's (ε, δ) cannot run in bounded time, or
    None: public values only (``decide.selection_cost``, DP213). The sampler takes the scale 1/ε
    as a fraction of numerator and denominator below 2⁶², below the samplers' 2⁵⁷ (DP212's
    limit), and rejection keeps a draw with probability at least :data:`MIN_ACCEPTANCE`."""
    if epsilon.numerator >= 2**62 or epsilon.denominator >= 2**62 or epsilon.denominator >= 2**57 * epsilon.numerator:
        return (f"selection.epsilon = {float(epsilon):.17g} makes the truncated geometric noise's scale 1/epsilon "
                "2^57 or more, or a fraction of more than 62 bits: write a simpler epsilon")
    try:
        k = _tsgd_threshold(epsilon, delta)
    except ArithmeticError:  # e^ε past the decimals' range (ε of about 2.3·10⁶ and more)
        return f"selection.epsilon = {float(epsilon):.3g} is too large for the truncated geometric's threshold (e^epsilon overflows)"
    e = float(epsilon)
    if -math.expm1(-(k + 1) * e) + math.exp(-(k + 1) * e) * math.expm1(-e) / (1 + math.exp(-e)) < MIN_ACCEPTANCE:
        return (f"selection.epsilon = {e:.3g} is so far below selection.delta = {float(delta):.3g} that the truncated "
                "geometric sampler would redraw its noise more than 1,000 times per group")
    return None


def thresholded_release(n: Counts, epsilon: int | Fraction, delta: int | Fraction,
                        rng: RandomSource | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Partition selection that also releases a noisy count: the k-TSGD thresholded release.

    Mechanism (paper 002 Definition 8): c_hat = n + X with X from the k-TSGD of parameter
    p = 1 - e^-eps (Definition 6, :func:`sample_truncated_geometric`), k = :func:`tsgd_threshold`
    (Definition 7); release the partition, with c_hat as its count, iff c_hat > k.

    Privacy: the pair (set of released partitions, their noisy counts) is (epsilon, delta)-DP,
    under add/remove one unit, when every unit is in at most one partition and n counts distinct
    units (Theorem 6, from Theorem 4: the truncated geometric mechanism on a sensitivity-1 count
    is (epsilon, delta)-DP because P[X = k] <= delta). So the released count needs no budget of its
    own. The actual delta spent is delta_hat = P[X = k] <= delta, and the release probability is
    exactly pi_opt for (epsilon, delta_hat) (Theorem 5: for delta_hat the logarithm defining k is
    the integer k) -- slightly below pi_opt for (epsilon, delta).

    Accuracy of the counts: |c_hat - n| <= k always, but the released counts are biased upwards
    near the threshold (only draws with n + X > k survive).

    Args:
        n: distinct units per partition (int array); partitions with n = 0 are never released.
        epsilon: > 0, ``int`` or ``Fraction``.
        delta: in (0, 1), ``int`` or ``Fraction``.
        rng: the random source; ``None`` means the OS CSPRNG.

    Returns:
        (released, counts): a bool array of n's shape, and the int64 noisy counts of the released
        partitions in the order of ``n[released]``.
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("the truncated geometric mechanism needs epsilon > 0 and 0 < delta < 1")
    k = _tsgd_threshold(eps, d)
    flat = counts.ravel()
    noisy = flat + sample_truncated_geometric(eps, k, rng, size=flat.size)
    released = noisy > k
    return released.reshape(counts.shape), noisy[released]


def _tsgd_delta_hat(eps: float, k: int) -> float:
    """P[X = k] for the k-TSGD with p = 1 - e^-eps (Definition 7), float."""
    em = math.exp(-eps)
    return math.exp(-k * eps) * (-math.expm1(-eps)) / (1 + em - 2 * math.exp(-(k + 1) * eps))


def tsgd_release_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """P[n + X > k]: the release probability of :func:`thresholded_release` (float64).

    Eq. (8) of paper 002 with y = k + 1 and delta_hat = P[X = k]::

        (e^(n eps) - 1)/(e^eps - 1) delta_hat                  1 <= n <= k + 1
        1 - (e^((2k+1-n) eps) - 1)/(e^eps - 1) delta_hat        k + 1 < n <= 2k + 1
        1                                                       n > 2k + 1

    i.e. pi_opt for (epsilon, delta_hat) (Theorem 5). An analysis value (plain float rounding).
    """
    counts = _counts(n)
    eps_f = float(_exact(epsilon, "epsilon", allow_float=True))
    k = tsgd_threshold(epsilon, delta)
    dh = _tsgd_delta_hat(eps_f, k)
    out = np.zeros(counts.shape, dtype=np.float64)

    def ratio(j: np.ndarray) -> np.ndarray:  # (e^(j eps) - 1)/(e^eps - 1), without overflow
        return np.exp((j - 1) * eps_f) * np.expm1(-j * eps_f) / np.expm1(-eps_f)

    low = (counts >= 1) & (counts <= k + 1)
    out[low] = dh * ratio(counts[low].astype(np.float64))
    high = (counts > k + 1) & (counts <= 2 * k + 1)
    out[high] = 1.0 - dh * ratio((2 * k + 1 - counts[high]).astype(np.float64))
    out[counts > 2 * k + 1] = 1.0
    return out
