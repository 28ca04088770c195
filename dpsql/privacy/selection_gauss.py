"""Partition selection for units in up to κ groups, as the query path runs it (issue 31).

:func:`plan` decides, from public values only (the policy's ε, δ and the table's κ =
``max_groups``), which of paper 002 §5's two methods a query's selection runs, and what it costs
in the ledger's currency; :meth:`DiscreteThresholding.keep` runs Gaussian thresholding with the
exact discrete Gaussian sampler (:func:`dpsql.privacy.samplers.sample_discrete_gaussian`: no
float in any sampling decision). The mathematics of both methods is in
:mod:`dpsql.privacy.selection_kappa`; docs/partition_selection.md, "κ > 1 on the query path",
states what is charged and why.

**Gaussian thresholding, discrete.** Keep a group of n units iff n + Z ≥ t, Z ~ N_Z(σ²)
independent per group, t an integer:

* σ² (rounded *up* to a multiple of 2⁻²⁰), by the policy's ``selection.kappa_rule``:
  **"charge"** (the default) σ² = κ/ε², so the charge κ/(2σ²) below is at most ε²/2, what every
  selection is charged (π_opt's too), and δ_thr = δ, the whole δ (the Gaussian part is zCDP and
  needs none); **"paper"** the continuous method's σ
  (:func:`~dpsql.privacy.selection_kappa.gaussian_thresholding`, [BW18] at (ε, δ_noise) and L2
  sensitivity √κ, the δ split minimising the threshold), as paper 002 Figure 4 compares the
  methods at equal (ε, δ). Its charge in ρ is far below ε²/2 (ε = 0.158, δ = 10⁻⁶, κ = 35: 0.00085
  of 0.0125), which is why its threshold is 4× "charge"'s (808 against 205 units);
* t is the smallest integer ≥ 2 with P[Z ≥ t − 1] ≤ 1 − (1 − δ_thr)^{1/κ}, the tail summed from
  the discrete Gaussian's own mass (rounded up by a relative 10⁻⁹, far above the float error of
  the sums; past σ ≈ 4,369 an integral upper bound, :func:`_tail_bound`, so phase 1 is bounded
  in time and memory: :func:`refusal` lists what it refuses, DP213): a group only the added unit
  is in has n = 1, so some one of its ≤ κ new groups is kept with probability ≤ δ_thr.
* **Charge: δ_thr-approximate κ/(2σ²)-zCDP** (ρ = κ/(2σ²) exactly, δ = δ_thr). For neighbours
  D, D' = D + u with u in m ≤ κ groups: the groups of both sides shift by 1 in at most κ
  coordinates; each coordinate's discrete Gaussian is 1/(2σ²)-zCDP for a shift of 1 (Canonne,
  Kamath & Steinke 2020, Theorem 4), the coordinates are independent, so the Rényi divergences add
  (Bun & Steinke 2016, Lemma 2.3; the argument of docs/privacy.md, "P(u)"): κ/(2σ²), and keeping
  is post-processing. The new groups are the part of probability ≤ δ_thr.
* The rule: the lower mid-point, π_opt's at (ε/κ, δ/κ) against the discrete mechanism's (t:
  P[n + Z ≥ t] ≥ 1/2 iff n ≥ t, Z being symmetric), ties to π_opt, π_opt only where its exact
  table fits (:func:`dpsql.privacy.selection.table_fits`). With "paper" both are
  (ε, δ)-DP, as the paper compares them; with "charge" both are charged (ε²/2, δ) at most, as the
  ledger compares them, and Gaussian thresholding wins in every case computed for κ ≥ 2 but at
  t = 2 (its t grows as √κ·√(2 ln(κ/δ))/ε, π_opt's mid-point as κ·ln(1/δ)/ε). The rule is a public choice:
  whichever it picks, the ledger charges what that method costs.

No I/O.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpsql.privacy.randomness import RandomSource

__all__ = ["DiscreteThresholding", "SelectionPlan", "plan", "refusal", "tail", "KAPPA_RULES"]

_GRID = 2**20  # σ² is rounded up to a multiple of 1/_GRID
_SLACK = 1e-9  # relative margin on the float sums of the discrete Gaussian's tail


#: Up to this reach (60σ + 2 ≤ 2¹⁸, σ ≤ ~4,369) the tail is summed term by term; beyond it, bounded
#: by integrals in O(1) time and memory (:func:`_tail_bound`): phase 1 must not size an array by σ.
_EXACT_REACH = 2**18
#: σ² at or above 2¹¹⁴ (σ ≥ 2⁵⁷, the sampler's limit: DP212) is refused in phase 1 (:func:`refusal`).
_MAX_SIGMA2 = Fraction(2) ** 114
#: 1 − (1 − δ_thr)^{1/κ} below this is refused in phase 1: floats cannot bound such tails soundly.
_MIN_TAIL = 1e-250


def tail(sigma2: Fraction, a: int) -> float:
    """An upper bound on P[Z ≥ a] for Z ~ N_Z(σ²) (relative margin :data:`_SLACK`): the mass
    e^{−x²/(2σ²)} summed over x ≥ a, over the whole-line sum, each to 60σ past where it matters;
    for a reach past :data:`_EXACT_REACH`, :func:`_tail_bound`."""
    import numpy as np

    s2 = float(sigma2)
    reach = int(60 * math.sqrt(s2)) + 2
    if reach > _EXACT_REACH:
        return _tail_bound(math.sqrt(s2), a)
    lo = max(a, -reach)
    if lo > reach:
        return 0.0
    x = np.arange(lo, reach + 1, dtype=np.float64)
    num = math.fsum(np.exp(-x * x / (2 * s2)).tolist())
    y = np.arange(1, reach + 1, dtype=np.float64)
    den = 1.0 + 2.0 * math.fsum(np.exp(-y * y / (2 * s2)).tolist())
    return min(1.0, num / den * (1 + _SLACK))


def _tail_bound(s: float, a: int) -> float:
    """An upper bound on P[Z ≥ a], Z ~ N_Z(s²), from integrals of f(x) = e^{−x²/(2s²)}, whose
    ∫_b^∞ f = s·√(π/2)·erfc(b/(s√2)):

    * the whole-line sum Σ_Z f ≥ √(2π)·s (Poisson summation: Σ_Z f = √(2π)·s·Σ_k e^{−2π²s²k²});
    * for a ≥ 1, f decreasing on [a − 1, ∞): f(x) ≤ ∫_{x−1}^{x} f, and where f is convex (x − ½ ≥ s)
      f(x) ≤ ∫_{x−½}^{x+½} f (Hermite-Hadamard); so Σ_{x≥a} f ≤ ∫_{a−½}^∞ f when a − ½ ≥ s, else
      ≤ ∫_{a−1}^∞ f (the concave part by the first, the rest by the second, ≤ the union);
    * for a ≤ 0, P[Z ≥ a] = 1 − P[Z ≥ 1 − a] with P[Z ≥ b] ≥ ∫_b^∞ f / (1 + √(2π)·s)
      (f(x) ≥ ∫_x^{x+1} f for x ≥ 0, and Σ_Z f ≤ 1 + 2∫_0^∞ f).

    The midpoint bound is within a relative ~(a/s²)²/24 of the sum: the threshold matches the
    summed one (``tests/test_selection_tail.py``). erfc's float error (a few ulp) is far below
    :data:`_SLACK`; a tail that underflows is below 10⁻³⁰⁰, under every p_max phase 1 accepts
    (:data:`_MIN_TAIL`)."""
    root2, half_pi = math.sqrt(2.0), math.sqrt(math.pi / 2)
    if a <= 0:
        lower = s * half_pi * math.erfc((1 - a) / (s * root2)) / (1 + 2 * half_pi * s)
        return min(1.0, (1 - lower) * (1 + _SLACK))
    b = a - 0.5 if a - 0.5 >= s else a - 1
    return min(1.0, s * half_pi * math.erfc(b / (s * root2)) / (2 * half_pi * s) * (1 + _SLACK))


@dataclass(frozen=True)
class DiscreteThresholding:
    """Gaussian thresholding with the discrete Gaussian (the module docstring)."""

    kappa: int
    sigma2: Fraction
    threshold: int
    noise_delta: float
    threshold_delta: float

    @property
    def charge(self) -> tuple[Fraction, Fraction]:
        """(ρ, δ) in the ledger's currency: κ/(2σ²) and δ_thr, exact."""
        return Fraction(self.kappa) / (2 * self.sigma2), Fraction(self.threshold_delta)

    def keep_probability(self, n: int) -> float:
        """P[n + Z ≥ t] (an upper bound, for the analysis; 0 at n = 0: such groups are never seen)."""
        return 0.0 if n <= 0 else tail(self.sigma2, self.threshold - n)

    def keep(self, n: Any, rng: RandomSource) -> Any:
        """A bool array: keep group i iff n_i + Z_i ≥ t, Z_i exact discrete Gaussian draws."""
        import numpy as np

        from dpsql.privacy.samplers import sample_discrete_gaussian

        counts = np.asarray(n, dtype=np.int64)
        if counts.size == 0:
            return np.zeros(0, dtype=bool)
        z = sample_discrete_gaussian(self.sigma2, rng, size=int(counts.size))
        return counts + z >= self.threshold  # counts < 2^62 and |z| small: no overflow


@dataclass(frozen=True)
class SelectionPlan:
    """Which method a κ > 1 selection runs, and its charge (ρ, δ) in the ledger's currency."""

    method: str  # "optimal" (π_opt at (ε/κ, δ/κ)) or "gaussian" (discrete Gaussian thresholding)
    kappa: int
    rho: Fraction
    delta: Fraction
    optimal_midpoint: int
    gaussian_midpoint: int
    gaussian: DiscreteThresholding
    kappa_rule: str = "charge"  # how Gaussian thresholding was calibrated (:func:`plan`)
    #: whether π_opt's exact table at (ε/κ, δ/κ) fits (``selection.table_fits``): where it does
    #: not, Gaussian thresholding runs even when π_opt's mid-point is the lower or equal one
    optimal_fits: bool = True

    def params(self, epsilon: Fraction, delta: Fraction) -> dict[str, Any]:
        """The public parameters a receipt and EXPLAIN state."""
        from dpsql.privacy.budget import fmt, fmt_up

        g = self.gaussian
        out: dict[str, Any] = {"kappa_method": self.method, "kappa_rule": self.kappa_rule, "rule": (
            f"the lower mid-point, a tie to pi_opt, pi_opt only where its exact table fits: pi_opt at (epsilon/kappa, "
            f"delta/kappa) keeps a group with probability 1/2 from {self.optimal_midpoint} units, Gaussian thresholding "
            f"from {self.gaussian_midpoint}; " + self.why() + "; "
            + ("both charged at most (epsilon^2/2, delta)" if self.kappa_rule == "charge" else "both (epsilon, delta)-DP"))}
        if self.method == "gaussian":
            out["gaussian"] = (f"keep iff units + N_Z(sigma^2) >= {g.threshold}, sigma = {math.sqrt(float(g.sigma2)):.6g} "
                               f"(L2 sensitivity sqrt({g.kappa})), delta split: noise {fmt_up(g.noise_delta)}, "
                               f"threshold {fmt_up(g.threshold_delta)}; charged rho = kappa/(2 sigma^2) = {fmt(self.rho)}, "
                               f"delta = {fmt_up(self.delta)}")
            out.update({"sigma2_exact": str(g.sigma2), "threshold": g.threshold, "noise_delta": repr(g.noise_delta),
                        "threshold_delta": repr(g.threshold_delta)})
        else:
            out["per_group"] = (f"epsilon {fmt_up(epsilon / self.kappa)}, delta {fmt_up(delta / self.kappa)} "
                                f"(max_groups = {self.kappa})")
        return out


    def why(self) -> str:
        """Which method ran and why, in words: the lower mid-point, a tie going to π_opt, unless π_opt's
        exact table does not fit (then Gaussian thresholding runs whatever the mid-points)."""
        from dpsql.privacy.selection import _MAX_EPS, _MAX_TABLE

        which = ("pi_opt's mid-point is the lower" if self.optimal_midpoint < self.gaussian_midpoint
                 else "the mid-points are equal (a tie goes to pi_opt)")
        if self.method == "optimal":
            return f"{which}: pi_opt ran"
        if self.optimal_fits:
            return "Gaussian thresholding's mid-point is the lower: Gaussian thresholding ran"
        return (f"{which}, but its exact table at (epsilon/{self.kappa}, delta/{self.kappa}) does not fit (more than "
                f"{_MAX_TABLE:,} steps, or epsilon/kappa above {_MAX_EPS:,}): Gaussian thresholding ran")


def _discrete_paper(epsilon: Fraction, delta: Fraction, kappa: int) -> DiscreteThresholding:
    """Calibrated as paper 002 Figure 4 does, at equal (ε, δ): σ of [BW18] at (ε, δ_noise) and L2
    sensitivity √κ, the δ split minimising the threshold (``kappa_rule = "paper"``)."""
    from dpsql.privacy.selection_kappa import gaussian_thresholding

    g = gaussian_thresholding(epsilon, delta, kappa)
    s2 = Fraction(g.sigma) ** 2
    sigma2 = Fraction(math.ceil(s2 * _GRID), _GRID)
    return _at(sigma2, kappa, g.noise_delta, g.threshold_delta, math.floor(g.threshold) - 2)


def _discrete_charge(epsilon: Fraction, delta: Fraction, kappa: int) -> DiscreteThresholding:
    """Calibrated to what every selection is charged, ε²/2 in ρ and δ in δ (``kappa_rule =
    "charge"``, the default): σ² = κ/ε² rounded *up* to the grid, so κ/(2σ²) ≤ ε²/2, and the whole δ
    to the threshold (the zCDP part needs no δ_noise). The module docstring says why."""
    from dpsql.privacy.selection_numbers import _float_down

    sigma2 = Fraction(math.ceil(Fraction(kappa) / epsilon**2 * _GRID), _GRID)
    threshold_delta = _float_down(delta)
    z = math.sqrt(2 * math.log(kappa / threshold_delta))  # Q(z) ≤ e^{-z²/2}/2: z is past the tail sought
    return _at(sigma2, kappa, 0.0, threshold_delta, math.floor(1 + math.sqrt(float(sigma2)) * z) + 2)


def _at(sigma2: Fraction, kappa: int, noise_delta: float, threshold_delta: float, guess: int) -> DiscreteThresholding:
    """The discrete mechanism at σ²: t the smallest integer ≥ 2 with P[Z ≥ t − 1] ≤ 1 − (1 − δ_thr)^{1/κ}.
    :func:`tail` is non-increasing in a, so t is bracketed by steps doubling away from ``guess``
    and bisected: O(log |t − guess|) tails, not one per integer between ``guess`` and t (σ = 2,828
    took 38 s that way), and two or three when the guess is close."""
    p_max = _p_max(kappa, threshold_delta)

    def passes(u: int) -> bool:
        return tail(sigma2, u - 1) <= p_max

    lo = hi = max(2, guess)  # below: t > lo (lo = 1, or lo fails) and t <= hi (hi passes)
    step = 1
    if passes(hi):
        lo = max(1, hi - step)
        while lo > 1 and passes(lo):
            hi, step = lo, 2 * step
            lo = max(1, hi - step)
    else:
        hi = lo + step
        while not passes(hi):
            lo, step = hi, 2 * step
            hi = lo + step
    from dpsql.privacy.selection_numbers import first_true

    return DiscreteThresholding(kappa, sigma2, first_true(passes, lo, hi), noise_delta, threshold_delta)


def _p_max(kappa: int, threshold_delta: float) -> float:
    return -math.expm1(math.log1p(-threshold_delta) / kappa) * (1 - _SLACK)


KAPPA_RULES = ("charge", "paper")


@functools.lru_cache(maxsize=64)
def plan(epsilon: Fraction, delta: Fraction, kappa: int, rule: str = "charge") -> SelectionPlan:
    """The selection a query runs for units in up to ``kappa`` > 1 groups at the policy's
    (ε, δ), and its charge: π_opt at (ε/κ, δ/κ) is (ε, δ)-DP per unit (basic composition) and is
    charged ε²/2 and δ as every selection (docs/privacy.md, "Approximate zCDP"); Gaussian
    thresholding is charged κ/(2σ²) and δ_thr (the module docstring), calibrated by ``rule``
    (the policy's ``selection.kappa_rule``): "charge", σ² = κ/ε² and δ_thr = δ, the same charge as
    π_opt's; "paper", [BW18] at (ε, δ_noise), as paper 002 compares them."""
    from dpsql.privacy.selection_analysis import midpoint

    if rule not in KAPPA_RULES:
        raise ValueError(f"kappa_rule must be one of {KAPPA_RULES}")
    from dpsql.privacy.selection import table_fits

    g = (_discrete_charge if rule == "charge" else _discrete_paper)(epsilon, delta, kappa)
    opt = midpoint(epsilon / kappa, delta / kappa, "optimal")
    fits = opt > g.threshold or table_fits(epsilon / kappa, delta / kappa)  # asked only where π_opt would run
    if opt <= g.threshold and fits:  # π_opt only where its exact table runs
        return SelectionPlan("optimal", kappa, epsilon**2 / 2, delta, opt, g.threshold, g, rule)
    rho, d = g.charge
    return SelectionPlan("gaussian", kappa, rho, d, opt, g.threshold, g, rule, fits)


def refusal(epsilon: Fraction, delta: Fraction, kappa: int, rule: str = "charge") -> str | None:
    """Why phase 1 cannot plan a κ > 1 selection at the policy's (ε, δ, κ), or None: public values
    only, bounded time and memory for every policy. Gaussian thresholding's σ ≥ 2⁵⁷ (the sampler's
    limit, as DP212; its threshold would be past any count of units), or a per-group tail
    1 − (1 − δ)^{1/κ} below :data:`_MIN_TAIL` (floats cannot bound it soundly)."""
    from dpsql.privacy.selection_numbers import _float_down

    if Fraction(kappa) / epsilon**2 >= _MAX_SIGMA2:  # before any float of σ² is made
        return (f"selection.epsilon = {float(epsilon):.3g} with max_groups = {kappa} needs Gaussian thresholding "
                "noise of sigma = sqrt(max_groups)/epsilon = 2^57 or more, beyond what dpsql draws exactly")
    if _p_max(kappa, _float_down(delta)) < _MIN_TAIL:
        return (f"selection.delta = {float(delta):.3g} with max_groups = {kappa} asks a per-group tail below "
                f"{_MIN_TAIL:.0e}, which dpsql cannot bound soundly in floats")
    try:
        how = plan(epsilon, delta, kappa, rule)
    except ArithmeticError:  # e^ε: [BW18]'s in floats ("paper", ε of several hundred), Theorem 1's in decimals
        return (f"selection.epsilon = {float(epsilon):.3g} is too large to calibrate the selection "
                '(e^epsilon overflows; with kappa_rule = "paper" from a few hundred): use a smaller epsilon')
    if how.method == "gaussian" and how.gaussian.sigma2 >= _MAX_SIGMA2:
        return f"the Gaussian thresholding at selection.epsilon = {float(epsilon):.3g} needs a noise of sigma 2^57 or more"
    return None
