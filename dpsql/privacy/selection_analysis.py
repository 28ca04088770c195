"""Partition selection compared and costed: the Laplace baseline, mid-points, group privacy.

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022). Used by the receipts (:func:`midpoint`), by
``benchmarks/partition_selection_figures.py`` and ``benchmarks/selection_vs_laplace.py``, by
docs/partition_selection.md and by the tests; the mechanisms themselves are
:func:`dpsql.privacy.selection.select` and :func:`dpsql.privacy.tsgd.thresholded_release`.

What this module offers:

* :func:`laplace_threshold`, :func:`laplace_threshold_probability` -- the Laplace baseline
  (Definition 9), evaluated only: dpsql does not sample the continuous Laplace.
* :func:`midpoint` (with :data:`METHODS`) -- the comparison of Figures 2-3: where the release
  probability of each method reaches 1/2 (or another level).
* :func:`group_privacy`, :func:`per_partition_budget` -- the cost when one record moves a count by
  k (selection on split rows, paper 000 section 5.4), and budget splitting for units that are in
  kappa partitions (paper 002 section 5).

Numbers: epsilon and delta of :func:`group_privacy` and :func:`per_partition_budget` are ``int``
or ``fractions.Fraction`` (floats are refused: 0.1 is not 1/10); the analysis functions
(probabilities, mid-points) also take floats and use their exact binary values.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpsql.privacy.pi_opt import _anchors, _pi_float
from dpsql.privacy.selection_numbers import (
    _DEC_PREC,
    Counts,
    Real,
    _counts,
    _exp_bounds,
    _float_down,
    _privacy_params,
    first_true,
)
from dpsql.privacy.tsgd import tsgd_release_probability, tsgd_threshold

__all__ = [
    "laplace_threshold",
    "laplace_threshold_probability",
    "midpoint",
    "group_privacy",
    "per_partition_budget",
]


# ---------------------------------------------------------------------------------------------
# The Laplace baseline (Definition 9) and the comparison (Figures 2-3)
# ---------------------------------------------------------------------------------------------


def laplace_threshold(epsilon: Real, delta: Real) -> float:
    """tau = 1 - ln(2 delta)/eps: the threshold of Laplace partition selection (Definition 9)."""
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if eps == 0 or d == 0:
        raise ValueError("Laplace thresholding needs epsilon > 0 and delta > 0")
    return 1.0 - math.log(2 * float(d)) / float(eps)


def laplace_threshold_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """pi_Lap(n) = P[n + Lap(1/eps) >= tau], tau = 1 - ln(2 delta)/eps (paper 002 Definition 9).

    The baseline of paper 002 section 4 ([KKMN09]): keep a partition iff its count plus Laplace
    noise of scale 1/eps reaches tau. (epsilon, delta)-DP: counts n and n + 1 (n >= 1) are
    eps-indistinguishable by the Laplace mechanism, and a partition of one unit, which is absent
    from the neighbour, is kept with probability exactly pi_Lap(1) = delta. Closed form::

        pi_Lap(n) = delta e^((n-1) eps)               1 <= n <= tau
        pi_Lap(n) = 1 - e^(-(n-1) eps) / (4 delta)    n >= tau

    Only evaluated here, for the comparison: dpsql does not sample the continuous Laplace.
    """
    counts = _counts(n)
    tau = laplace_threshold(epsilon, delta)
    eps_f, d_f = float(Fraction(epsilon)), float(Fraction(delta))
    out = np.zeros(counts.shape, dtype=np.float64)
    low = (counts >= 1) & (counts <= tau)
    out[low] = d_f * np.exp((counts[low] - 1).astype(np.float64) * eps_f)
    high = (counts >= 1) & (counts > tau)
    out[high] = 1.0 - np.exp(-(counts[high] - 1).astype(np.float64) * eps_f) / (4 * d_f)
    return out


METHODS = ("optimal", "laplace", "truncated_geometric")


def midpoint(epsilon: Real, delta: Real, method: str = "optimal", *, level: float = 0.5) -> int:
    """The smallest n whose release probability is >= ``level`` (0.5: the mid-point of Figs. 2-3).

    Methods: ``"optimal"`` (pi_opt, Theorem 1, evaluated by
    :func:`~dpsql.privacy.pi_opt.release_probability`, which rounds down, so a value within 1e-13
    of ``level`` counts as below it), ``"laplace"``
    (Definition 9: n >= tau + ln(2 level)/eps for level <= 1/2, tau - ln(2 (1 - level))/eps above;
    the mid-point is ceil(tau)), ``"truncated_geometric"`` (Definition 8; the mid-point is k + 1).
    The paper's figures also draw level = 0.05 and 0.95.
    """
    if not 0 < level <= 1:
        raise ValueError("level must be in (0, 1]")
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if d == 0:
        raise ValueError("no partition is ever released with delta = 0 (Theorem 2.1)")
    if method == "optimal":
        if eps == 0:  # min(1, n delta) >= level
            q = Fraction(level) / d
            return max(1, q.numerator // q.denominator + (q.denominator != 1))
        if d >= 1:
            return 1
        eps_f, d_f = _float_down(eps), _float_down(d)
        n1, _, n2 = _anchors(eps_f, d_f)
        if n1 >= 2**62:  # π(n1) is about 1/2 (Theorem 1): the mid-point is past any count a table holds
            return 2**62
        if n2 + 3 <= _MAX_SCAN:
            ns = np.arange(0, n2 + 3, dtype=np.int64)
            p = _pi_float(ns, eps_f, d_f)
            return int(np.argmax(p >= level))
        return _first_reaching(eps_f, d_f, level, min(n2 + 2, 2**62))
    if method == "laplace":
        if level >= 1:
            raise ValueError("Laplace thresholding never reaches probability 1")
        tau = laplace_threshold(eps, d)
        eps_f = float(eps)
        if level <= 0.5:
            x = tau + math.log(2 * level) / eps_f
        else:
            x = tau - math.log(2 * (1 - level)) / eps_f
        return max(1, math.ceil(x))
    if method == "truncated_geometric":
        k = tsgd_threshold(eps, d)
        if 2 * k + 3 <= _MAX_SCAN:
            ns = np.arange(0, 2 * k + 3, dtype=np.int64)
            return int(np.argmax(tsgd_release_probability(ns, eps, d) >= level))
        # bisect past the scan's cap: the release probability is non-decreasing in n
        return first_true(lambda n: tsgd_release_probability(np.array([n], dtype=np.int64), eps, d)[0] >= level,
                           0, 2 * k + 2)
    raise ValueError(f"method must be one of {METHODS}")


#: Up to this many counts, :func:`midpoint` evaluates π at every n (n2 ≈ ln(1/δ)/ε: 10⁶ at ε = 1.4e-5,
#: δ = 1e-6); beyond, it bisects, so a tiny ε (phase 1 of a κ > 1 selection at ε/κ) costs O(log n2)
#: evaluations, not an array of n2 floats (12.6 GiB at ε/κ = 1e-9).
_MAX_SCAN = 2**20


def _first_reaching(eps_f: float, d_f: float, level: float, hi: int) -> int:
    """The smallest n ≤ hi with π(n) ≥ level by bisection (π is non-decreasing in n; ``hi`` itself
    when no smaller n reaches it: n ≥ 2⁶² never fits a count anyway)."""
    return first_true(lambda n: _pi_float(np.array([n], dtype=np.int64), eps_f, d_f)[0] >= level, -1, hi)


# ---------------------------------------------------------------------------------------------
# Accounting helpers
# ---------------------------------------------------------------------------------------------


def group_privacy(
    epsilon: int | Fraction, delta: int | Fraction, k: int
) -> tuple[Fraction, Fraction]:
    """(epsilon_k, delta_k) for neighbours that differ by k units' worth of count.

    Used when selection counts split rows (paper 000 section 5.4): a record split into k rows
    moves its partition's count by up to k, so an (epsilon, delta)-DP selection protects it as a
    group of k. Chaining Definition 1 of paper 002 along D_0, D_1, ..., D_k gives
    P[M(D_0) in S] <= e^(k eps) P[M(D_k) in S] + delta (1 + e^eps + ... + e^((k-1) eps)), so::

        epsilon_k = k eps,   delta_k = delta (e^(k eps) - 1)/(e^eps - 1)  (= k delta at eps = 0)

    This is at most the commonly quoted group-privacy bound k e^((k-1) eps) delta (each of the k
    terms is <= e^((k-1) eps)), equal to it for k = 1 and 2 up to the e^eps term. For the optimal
    primitive the chain is tight: pi(k) = delta (e^(k eps) - 1)/(e^eps - 1) for k <= n1.

    epsilon_k is exact; delta_k is rounded *up* to a Fraction of 20 significant digits (e^eps is
    irrational), and capped at 1.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError("k must be an int >= 1")
    k = int(k)
    if d == 0:
        return k * eps, Fraction(0)
    if eps == 0:
        return Fraction(0), min(Fraction(1), k * d)
    _, x_hi = _exp_bounds(eps)
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        ctx.rounding = ROUND_CEILING
        x = Decimal(x_hi.numerator) / x_hi.denominator  # >= e^eps
        total, term = Decimal(0), Decimal(1)
        for _ in range(k):  # sum of e^(i eps), i < k, each term and sum rounded up
            total += term
            term *= x
        upper = Decimal(d.numerator) * total / d.denominator
        ctx.prec = 20
        upper = +upper  # rounds up to 20 digits
    return k * eps, min(Fraction(1), Fraction(upper))


def per_partition_budget(epsilon: int | Fraction, delta: int | Fraction,
                         kappa: int) -> tuple[Fraction, Fraction]:
    """(epsilon/kappa, delta/kappa): the budget of each partition's decision when a unit may be
    in up to kappa partitions (paper 002 section 5, "divide the total privacy budget in kappa").

    Privacy: changing one unit changes at most kappa partition counts by 1 each; each decision
    is (epsilon/kappa, delta/kappa)-DP in its own count and the decisions are independent, so by
    basic composition the whole selection is (epsilon, delta)-DP. The paper recommends this for
    kappa <= 3, Gaussian thresholding beyond: :mod:`dpsql.privacy.selection_kappa` evaluates it
    and picks between the two by their mid-points (weighted Gaussian thresholding [GGK+20] is
    not implemented in dpsql).
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if isinstance(kappa, bool) or not isinstance(kappa, (int, np.integer)) or kappa < 1:
        raise ValueError("kappa must be an int >= 1")
    return eps / int(kappa), d / int(kappa)
