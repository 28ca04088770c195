"""Units in up to kappa groups: partition selection for kappa > 1 (issue 31; select_kappa
is on the query path for many-row tables, dpsql/sql/units.py and pipeline/release.py; the rule runs
there as dpsql/privacy/selection_gauss.py, with a discrete Gaussian threshold).

Setting (issue 31; docs/privacy.md, "Many rows per unit"): a privacy unit may have many rows;
neighbouring data sets differ by one unit with all its rows. After the bounding transformation a
unit is in at most kappa = ``max_groups`` of a query's groups, so one unit moves at most kappa
partition counts (distinct units per group), each by at most 1: L0 sensitivity kappa, Linf 1,
L2 sqrt(kappa).

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022), section 5 "Discussion", paragraph "Extension to multiple partitions
per user" (issue 31 says section 6), and Figure 4: "The simplest option ... is to divide the
total privacy budget in kappa"; the paper recommends that (pi_opt at (eps/kappa, delta/kappa))
for kappa <= 3 and Gaussian thresholding beyond, the mid-points crossing at kappa = 3 for
eps = 1, delta = 1e-5. Figure 4's caption fixes the Gaussian variant: sigma "from the formula
in [3]" (= [BW18] Balle & Wang, "Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising", ICML 2018, Theorem 8), and "we split the delta
between noise and thresholding to minimize the threshold".

What this module offers: pi_opt with the budget divided by kappa (:func:`optimal_kappa_budget`,
:func:`select_kappa`, sampled by :func:`dpsql.privacy.selection.select`: kappa = 1 is that
function exactly); Gaussian thresholding (:func:`analytic_gaussian_sigma`,
:func:`gaussian_thresholding`), evaluated only: dpsql samples no continuous Gaussian (Mironov
2012); Figure 4's mid-points and the paper's rule, the lower mid-point, ties to pi_opt
(:func:`kappa_midpoints`, :func:`choose`), and each method's loss for a unit in m <= kappa groups
(:meth:`KappaChoice.unit_loss`). P(u) of the noisy cells over a unit's groups is in
:mod:`dpsql.privacy.policy_function` (:func:`~dpsql.privacy.policy_function.unit_policy_loss`).

Rounding: sigma and the threshold are rounded *up* and the per-partition threshold delta *down*
(each float step carries a relative margin of 2^-40, far above libm's few-ulp error of erfc and
exp), so the mechanism described is at least as private as stated. Charges are exact Fractions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpsql.privacy.randomness import RandomSource
from dpsql.privacy.selection import select
from dpsql.privacy.selection_analysis import midpoint, per_partition_budget
from dpsql.privacy.selection_numbers import Counts, Real, _counts, _float_down, _privacy_params

__all__ = ["optimal_kappa_budget", "select_kappa", "analytic_gaussian_sigma", "GaussianThresholding",
           "gaussian_thresholding", "kappa_midpoints", "KappaChoice", "choose"]

_MARGIN = 2.0**-40  # relative margin on every float step that decides a privacy parameter
_SQRT2 = math.sqrt(2.0)


def _kappa(kappa: object) -> int:
    if isinstance(kappa, bool) or not isinstance(kappa, (int, np.integer)) or kappa < 1:
        raise ValueError("kappa must be an int >= 1")
    return int(kappa)


def _upper_tail(z: float) -> float:
    """Q(z) = P[N(0, 1) >= z] = erfc(z / sqrt 2) / 2, accurate in the tail."""
    return 0.5 * math.erfc(z / _SQRT2)


# ---------------------------------------------------------------------------------------------
# pi_opt with the budget divided by kappa (paper 002 section 5, basic composition)
# ---------------------------------------------------------------------------------------------


def optimal_kappa_budget(epsilon: int | Fraction, delta: int | Fraction,
                         kappa: int) -> tuple[Fraction, Fraction]:
    """(epsilon/kappa, delta/kappa): each group's budget for pi_opt when a unit is in <= kappa groups.

    Privacy map: a unit changes at most kappa counts by 1; each group is kept independently by
    pi_opt at (epsilon/kappa, delta/kappa), (epsilon/kappa, delta/kappa)-DP in its own count
    (paper 002 Theorem 1); the other groups' decisions keep their distribution; basic composition
    over the unit's m <= kappa groups gives (m epsilon/kappa, m delta/kappa) <= (epsilon, delta)
    (:meth:`KappaChoice.unit_loss` in the ledger's currency). Exact
    (:func:`dpsql.privacy.selection_analysis.per_partition_budget`).
    """
    return per_partition_budget(epsilon, delta, _kappa(kappa))


def select_kappa(n: Counts, epsilon: int | Fraction, delta: int | Fraction, kappa: int,
                 rng: RandomSource | None = None) -> np.ndarray:
    """Keep each group independently with pi_opt at (epsilon/kappa, delta/kappa).

    (epsilon, delta)-DP when n counts distinct units per group and every unit is in at most
    kappa groups (:func:`optimal_kappa_budget`). kappa = 1 is :func:`~dpsql.privacy.selection.select`
    itself, draw for draw.
    """
    eps, d = optimal_kappa_budget(epsilon, delta, kappa)
    return select(n, eps, d, rng)


# ---------------------------------------------------------------------------------------------
# Gaussian thresholding (paper 002 Figure 4; [BW18] Theorem 8)
# ---------------------------------------------------------------------------------------------


def _bw_delta_upper(sigma: float, eps: float, l2: float) -> float:
    """An upper bound on [BW18] Theorem 8's delta(sigma):

        delta(sigma) = Phi(l2/(2 sigma) - eps sigma/l2) - e^eps Phi(-l2/(2 sigma) - eps sigma/l2),

    the smallest delta for which N(0, sigma^2) on a query of L2 sensitivity l2 is (eps, delta)-DP.
    Both terms come from erfc and exp (a few ulp each); 2^-40 of their sum covers their error.
    """
    u, v = l2 / (2.0 * sigma), eps * sigma / l2
    t1 = _upper_tail(v - u)  # Phi(u - v)
    t2 = math.exp(eps) * _upper_tail(u + v)  # e^eps Phi(-u - v)
    return t1 - t2 + _MARGIN * (t1 + t2)


def analytic_gaussian_sigma(epsilon: Real, delta: Real, l2_sensitivity: float) -> float:
    """The smallest sigma (rounded up) with which Gaussian noise N(0, sigma^2) on a query of L2
    sensitivity ``l2_sensitivity`` is (epsilon, delta)-DP: [BW18] Theorem 8 (the analytic Gaussian
    mechanism; "the formula in [3]" of paper 002 Figure 4). Theorem 8 is an if-and-only-if and
    delta(sigma) decreases in sigma, so bisection on an upper bound of delta(sigma) returns a sigma
    at which the mechanism is (epsilon, delta)-DP.

    Args: epsilon > 0, delta in (0, 1) (floats at their exact values), l2_sensitivity > 0.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("the analytic Gaussian needs epsilon > 0 and 0 < delta < 1")
    l2 = float(l2_sensitivity)
    if not (math.isfinite(l2) and l2 > 0):
        raise ValueError("l2_sensitivity must be > 0")
    eps_f, d_f = _float_down(eps), _float_down(d)
    hi = l2
    while _bw_delta_upper(hi, eps_f, l2) > d_f:
        hi *= 2.0
    lo = hi / 2 if hi > l2 else 0.0
    return _smallest_ok(lambda x: _bw_delta_upper(x, eps_f, l2) <= d_f, lo, hi)


def _smallest_ok(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """Bisection to adjacent floats for a monotone ``ok``, false at lo (or lo = 0), true at hi;
    returns a point where it is true."""
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)


def _tail_quantile_up(q: float) -> float:
    """A z >= the exact z with P[N(0, 1) >= z] = q (so the computed tail at z is <= q)."""
    if not 1e-300 < q < 1:
        raise ValueError("a tail probability below 1e-300 is out of range")
    return _smallest_ok(lambda z: _upper_tail(z) * (1.0 + _MARGIN) <= q, -40.0, 40.0)


def _per_partition_delta(threshold_delta: float, kappa: int) -> float:
    """1 - (1 - threshold_delta)^(1/kappa), rounded down: the probability p of keeping one group
    that only the added unit is in, such that 1 - (1 - p)^kappa <= threshold_delta."""
    p = -math.expm1(math.log1p(-threshold_delta) / kappa)
    return p * (1.0 - _MARGIN)


@dataclass(frozen=True)
class GaussianThresholding:
    """Keep a group of n units iff n + N(0, sigma^2) >= threshold (noise independent per group).

    Privacy map ((epsilon, delta)-DP, paper 002 Figure 4 with [BW18]; as in Google's
    differential-privacy library, whose code is not used): for neighbours D, D' = D + u with u in
    m <= kappa groups, (a) the groups present in both differ in at most kappa counts by 1, L2
    sensitivity sqrt(kappa): Gaussian noise with ``sigma`` = :func:`analytic_gaussian_sigma`
    (epsilon, noise_delta, sqrt(kappa)) makes their noisy counts, and so their keep decisions,
    (epsilon, noise_delta)-DP; (b) the groups only D' has (count 1) are each kept with
    probability p = P[1 + N >= threshold] <= 1 - (1 - threshold_delta)^(1/kappa), independently,
    so some of them is kept with probability 1 - (1 - p)^m <= threshold_delta. Together
    (epsilon, noise_delta + threshold_delta)-DP, noise_delta + threshold_delta <= delta.

    In the ledger's currency the same mechanism is threshold_delta-approximate
    kappa/(2 sigma^2)-zCDP (:attr:`charge`): (a) is the Gaussian mechanism, rho = L2^2/(2 sigma^2)
    (Bun & Steinke 2016, Prop. 1.6; paper 000 Definition 2.7), post-processed, and (b) is the part
    of probability <= threshold_delta of the equal-weight form of docs/privacy.md.
    """

    kappa: int
    epsilon: float
    delta: float
    noise_delta: float
    threshold_delta: float
    sigma: float
    threshold: float

    def keep_probability(self, n: Counts) -> np.ndarray:
        """P[n + N(0, sigma^2) >= threshold] = erfc((threshold - n)/(sigma sqrt 2))/2; 0 at n = 0."""
        counts = _counts(n)
        flat = counts.ravel().astype(np.float64)
        p = np.array([_upper_tail((self.threshold - x) / self.sigma) for x in flat.tolist()])
        p[flat == 0] = 0.0
        return p.reshape(counts.shape)

    def midpoint(self, level: float = 0.5) -> int:
        """The smallest n kept with probability >= level (0.5: ceil(threshold), at least 1)."""
        if not 0 < level < 1:
            raise ValueError("level must be in (0, 1)")
        top = math.ceil(self.threshold + 40.0 * self.sigma) + 2
        lo, hi = 0, top - 1  # keep_probability is 0 at n = 0 and non-decreasing in n: bisect (O(log top)
        while hi - lo > 1:   # evaluations, not an array of threshold + 40σ counts: σ is the policy's)
            mid = (lo + hi) // 2
            if self.keep_probability(np.array([mid], dtype=np.int64))[0] >= level:
                hi = mid
            else:
                lo = mid
        return hi

    def unit_loss(self, groups: int) -> tuple[Fraction, float]:
        """(rho, delta) a unit in ``groups`` <= kappa groups loses: (groups/(2 sigma^2), exact) and
        1 - (1 - p)^groups (rounded up), p = P[1 + N >= threshold]."""
        m = _kappa(groups)
        if m > self.kappa:
            raise ValueError(f"a unit is in at most kappa = {self.kappa} groups, not {m}")
        p = _upper_tail((self.threshold - 1.0) / self.sigma) * (1.0 + _MARGIN)
        d = -math.expm1(m * math.log1p(-p)) * (1.0 + _MARGIN)
        return Fraction(m) / (2 * Fraction(self.sigma) ** 2), min(d, self.threshold_delta)

    @property
    def charge(self) -> tuple[Fraction, Fraction]:
        """(rho, delta) in the ledger's currency: (kappa/(2 sigma^2), threshold_delta), exact."""
        return Fraction(self.kappa) / (2 * Fraction(self.sigma) ** 2), Fraction(self.threshold_delta)


def _threshold(eps: float, noise_delta: float, threshold_delta: float,
               kappa: int) -> tuple[float, float]:
    sigma = analytic_gaussian_sigma(eps, noise_delta, math.sqrt(kappa))
    z = _tail_quantile_up(_per_partition_delta(threshold_delta, kappa))
    tau = 1.0 + sigma * z
    return sigma, math.nextafter(tau * (1.0 + _MARGIN), math.inf)


def _split(delta: Fraction, share: float) -> tuple[float, float]:
    """(noise_delta, threshold_delta), floats whose exact sum is <= delta."""
    nd = _float_down(delta * Fraction(share))
    return nd, _float_down(delta - Fraction(nd))


@functools.lru_cache(maxsize=256)
def _best_share(eps: float, delta: Fraction, kappa: int) -> float:
    """The noise share of delta that minimises the threshold (Figure 4's caption): golden-section
    search on [1/64, 63/64], the grid point kept if better. Any share is private; this only tunes."""
    def tau(share: float) -> float:
        return _threshold(eps, *_split(delta, share), kappa)[1]

    lo, hi, g = 1 / 64, 63 / 64, (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = tau(a), tau(b)
    for _ in range(48):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = tau(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = tau(b)
    return min((a, b, 0.5), key=tau)


def gaussian_thresholding(epsilon: Real, delta: Real, kappa: int,
                          noise_share: float | None = None) -> GaussianThresholding:
    """Gaussian thresholding for units in <= kappa groups, (epsilon, delta)-DP
    (:class:`GaussianThresholding`).

    delta is split as noise_delta = noise_share delta and threshold_delta = the rest (their exact
    sum <= delta); ``noise_share=None`` picks the share that minimises the threshold, as paper 002
    Figure 4 does. sigma = :func:`analytic_gaussian_sigma` (epsilon, noise_delta, sqrt(kappa));
    threshold = 1 + sigma z, P[N(0,1) >= z] = 1 - (1 - threshold_delta)^(1/kappa).
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    k = _kappa(kappa)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("Gaussian thresholding needs epsilon > 0 and 0 < delta < 1")
    eps_f = _float_down(eps)
    share = _best_share(eps_f, d, k) if noise_share is None else float(noise_share)
    if not 0 < share < 1:
        raise ValueError("noise_share must be in (0, 1)")
    nd, td = _split(d, share)
    sigma, tau = _threshold(eps_f, nd, td, k)
    return GaussianThresholding(k, eps_f, float(d), nd, td, sigma, tau)


# ---------------------------------------------------------------------------------------------
# Figure 4 and the paper's rule
# ---------------------------------------------------------------------------------------------


def kappa_midpoints(epsilon: Real, delta: Real, kappa: int) -> dict[str, float]:
    """Figure 4 at one kappa: the mid-points (smallest n kept with probability >= 1/2) of pi_opt
    and Laplace thresholding at (epsilon/kappa, delta/kappa), and of Gaussian thresholding at
    (epsilon, delta) with the best delta split; ``gaussian_threshold`` is its real threshold."""
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    k = _kappa(kappa)
    g = gaussian_thresholding(eps, d, k)
    return {
        "optimal": midpoint(eps / k, d / k, "optimal"),
        "laplace": midpoint(eps / k, d / k, "laplace"),
        "gaussian": g.midpoint(),
        "gaussian_threshold": g.threshold,
    }


@dataclass(frozen=True)
class KappaChoice:
    """The paper's rule at (epsilon, delta, kappa): ``method`` is "optimal" or "gaussian"."""

    method: str
    optimal_midpoint: int
    gaussian_midpoint: int
    optimal_budget: tuple[Fraction, Fraction]  # each group's (epsilon, delta) for pi_opt
    gaussian: GaussianThresholding

    def unit_loss(self, groups: int) -> tuple[Fraction, Fraction]:
        """(rho, delta) in the ledger's currency for a unit in ``groups`` <= kappa groups under the
        chosen method: m (eps/kappa)^2/2 and m delta/kappa for pi_opt (statements 1-2 of
        docs/privacy.md, composed over the unit's m groups), :meth:`GaussianThresholding.unit_loss`
        for Gaussian thresholding."""
        if self.method == "gaussian":
            rho, d = self.gaussian.unit_loss(groups)
            return rho, Fraction(d)
        m = _kappa(groups)
        if m > self.gaussian.kappa:
            raise ValueError(f"a unit is in at most kappa = {self.gaussian.kappa} groups, not {m}")
        eps, d = self.optimal_budget
        return m * eps * eps / 2, m * d


def choose(epsilon: int | Fraction, delta: int | Fraction, kappa: int) -> KappaChoice:
    """Paper 002 section 5, "Extension to multiple partitions per user": pi_opt with the budget
    divided by kappa, or Gaussian thresholding, whichever keeps a group with probability 1/2 at
    the lower count (the paper: pi_opt for kappa <= 3, Gaussian for kappa >= 4 at epsilon = 1,
    delta = 1e-5). A tie goes to pi_opt, which dpsql samples exactly; at kappa = 1 pi_opt is
    optimal (Theorem 3), so it always wins.
    Both are (epsilon, delta)-DP for units in <= kappa groups.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    k = _kappa(kappa)
    budget = optimal_kappa_budget(eps, d, k)
    opt = midpoint(budget[0], budget[1], "optimal")
    g = gaussian_thresholding(eps, d, k)
    gm = g.midpoint()
    return KappaChoice("optimal" if opt <= gm else "gaussian", opt, gm, budget, g)
