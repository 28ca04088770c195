"""How one query's budget is split over its noisy primitives, and each primitive's noise.

Two ways to ask (docs/privacy.md, "Composition inside one query"):

* budget-first (default): the query's ρ (zCDP) or ε (pure DP) is split over its primitives in
  proportion to their weights (equal unless ``SET dpsql.weights`` says otherwise);
* accuracy-first: a target 95% margin of error per cell (``SET dpsql.moe``); each primitive
  gets the least budget whose margin is within the target (paper 004 eq. 37-38, with the exact
  constant 1.96²/2 = 2401/1250 rather than eq. 37's rounded 1.92, so the margin dpsql reports —
  ⌈1.96σ⌉ — never exceeds the target).

Quantiles take the exponential mechanism (``quantile.py``) at their share of the budget.

Mechanisms: the discrete Gaussian (ρ-zCDP, σ² = Δ²/(2ρ), paper 004 Algorithm 5) and the
two-sided geometric (ε-DP, b = Δ/ε, paper 004 Algorithm 4). A pure ε-DP release is charged
ε²/2 in the ledger's zCDP currency (Bun & Steinke 2016, Prop. 1.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from dpsql.errors import BudgetValueError, DpsqlInternalError
from dpsql.privacy.mechanisms import (
    discrete_laplace_variance,
    gaussian_sigma2,
    geometric_scale,
    moe95_discrete_gaussian,
    moe95_geometric,
)
from dpsql.privacy.quantile import epsilon_for_rho
from dpsql.sql.plan import Primitive

if TYPE_CHECKING:  # a small answer is released without numpy (dpsql/pipeline/release.py)
    import numpy as np

    from dpsql.privacy.randomness import RandomSource

GAUSSIAN = "discrete_gaussian"
GEOMETRIC = "geometric"
#: quantiles: the exponential mechanism over the measure's public grid (``quantile.py``)
EXPONENTIAL = "exponential"
#: 1.96² / 2, exactly: ρ = (2401/1250)·Δ²/⌊MOE⌋² makes ⌈1.96σ⌉ ≤ ⌊MOE⌋.
_Z2_HALF = Fraction(2401, 1250)
#: Most nudges an accuracy-first allocation may take before it is declared a bug. Measured need
#: (every MOE target 1..3000 and 10^4..7·10^8, Δ from 1 to 10^6): at most 2 for the Gaussian
#: (float rounding), 165 for the geometric (MOE 1, Δ = 1); 1000 nudges raise ε by 2.7× and ρ by
#: 0.1%, far beyond either. A formula that stops converging must fail, not hang: the Gaussian's
#: exact ρ gains six digits per nudge, so an unbounded loop would also slow down as it went.
MAX_NUDGES = 1000


@dataclass(frozen=True)
class Settings:
    """Per-connection query settings (changed by ``SET dpsql.*`` or the connection)."""

    mechanism: str = GAUSSIAN
    rho: Fraction = Fraction(1, 10)
    epsilon: Fraction = Fraction(1)
    #: target 95% MOE per cell, in the aggregate's own units: key "*" (every aggregate),
    #: "count" (counts), or a measure name (its SUM and the SUM part of its AVG)
    moe: dict[str, Fraction] = field(default_factory=dict)
    #: relative weight per primitive label (e.g. "SUM(payann)", "COUNT(units)"); default 1
    weights: dict[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True)
class Allocation:
    """One primitive's share: its mechanism and its parameter."""

    primitive: Primitive
    mechanism: str
    rho: Fraction  # what it is charged, in zCDP ρ
    epsilon: Fraction | None = None  # pure-DP ε (geometric, and quantiles under pure DP)
    #: the exponential mechanism's ε (quantiles): ε ≤ √(8ρ) under zCDP, the pure-DP ε otherwise
    em_epsilon: Fraction | None = None

    def scale(self, sensitivity: int) -> Fraction:
        """σ² of the discrete Gaussian, or b of the discrete Laplace, for Δ = ``sensitivity``."""
        if self.mechanism == GAUSSIAN:
            return gaussian_sigma2(sensitivity, self.rho)
        assert self.epsilon is not None
        return geometric_scale(sensitivity, self.epsilon)

    def sample(self, scales: list[Fraction], group: np.ndarray, rng: RandomSource) -> np.ndarray:
        """One draw of this mechanism per cell, cell i at scale ``scales[group[i]]`` (σ² or b)."""
        from dpsql.privacy.samplers import sample_grouped

        return sample_grouped(self.mechanism == GAUSSIAN, scales, group, rng)

    def sigma(self, sensitivity: int) -> float:
        """The noise's standard deviation parameter, in granularity units."""
        s = self.scale(sensitivity)
        return math.sqrt(s) if self.mechanism == GAUSSIAN else math.sqrt(discrete_laplace_variance(s))

    def moe(self, sensitivity: int) -> int:
        """95% margin of error in granularity units (paper 004 E.2 / D.3, rounded up)."""
        s = self.scale(sensitivity)
        return moe95_discrete_gaussian(math.sqrt(s)) if self.mechanism == GAUSSIAN else moe95_geometric(float(s))


#: the largest noise scale (σ of the discrete Gaussian, b of the discrete Laplace, in
#: granularity units) a release draws: the samplers work in int64, and below 2^57 a draw's
#: intermediate values overflow with probability below e^-63 (CKS20's Laplace step X = U + tV,
#: t <= 2^57, needs V < 2^63 / t = 64, and V is geometric with P(V >= k) = e^-k); near 2^61 one
#: draw in a few dozen failed after the charge (DP901). Above it a query is refused in phase 1
#: (DP212), before any charge: it depends only on the policy's thresholds and ρ.
SCALE_LIMIT = 2**57


def scale_fits(a: Allocation, sensitivity: int) -> bool:
    """Whether ``a``'s noise at ``sensitivity`` is below :data:`SCALE_LIMIT` (quantiles and the
    selection's shared count draw no such noise)."""
    if a.mechanism not in (GAUSSIAN, GEOMETRIC):
        return True
    s = a.scale(sensitivity)
    return s < SCALE_LIMIT ** 2 if a.mechanism == GAUSSIAN else s < SCALE_LIMIT


def allocate(primitives: tuple[Primitive, ...], settings: Settings, sensitivity: dict[Primitive, int],
             granularity: dict[Primitive, Fraction]) -> list[Allocation]:
    """The allocation of each primitive, in order.

    Args:
        sensitivity: the largest L2 (Gaussian) / L1 (geometric) sensitivity of each primitive
            over the query's cells, in granularity units.
        granularity: each primitive's granularity (1 for counts).
    """
    if settings.moe:
        return [_for_moe(p, settings, sensitivity[p], granularity[p]) for p in primitives]
    weights = [settings.weights.get(p.label, Fraction(1)) for p in primitives]
    total_w = sum(weights, Fraction(0))
    out = []
    for p, w in zip(primitives, weights):
        if p.kind == "quantile":
            out.append(_quantile(p, settings, w / total_w))
        elif settings.mechanism == GAUSSIAN:
            out.append(Allocation(p, GAUSSIAN, settings.rho * w / total_w))
        else:
            eps = settings.epsilon * w / total_w
            out.append(Allocation(p, GEOMETRIC, eps * eps / 2, eps))
    return out


def _quantile(p: Primitive, settings: Settings, share: Fraction) -> Allocation:
    """A quantile's share: the exponential mechanism at ε ≤ √(8ρ), charged ρ (ε-bounded range is
    ε²/8-zCDP), or under pure DP at its share of ε, charged ε²/2 like every pure-DP release."""
    if settings.mechanism == GAUSSIAN:
        rho = settings.rho * share
        return Allocation(p, EXPONENTIAL, rho, em_epsilon=epsilon_for_rho(rho))
    eps = settings.epsilon * share
    return Allocation(p, EXPONENTIAL, eps * eps / 2, eps, em_epsilon=eps)


def _for_moe(p: Primitive, settings: Settings, delta: int, g: Fraction) -> Allocation:
    if p.kind == "quantile":
        raise BudgetValueError(f"{p.label} has no margin of error in its own units to aim at (its accuracy is stated in "
                               "ranks), so an accuracy-first budget (SET dpsql.moe) cannot size it",
                               hint="RESET dpsql.moe and give the query a budget (SET dpsql.rho = ...), or ask for "
                                    "the quantile in a query of its own.")
    key = "count" if p.kind == "count" else p.column
    target = settings.moe.get(key, settings.moe.get("*"))
    if target is None:
        raise BudgetValueError(f"no target margin of error for {p.label}",
                               hint=f"SET dpsql.moe = X for every aggregate, or SET dpsql.moe_{key} = X.")
    m = math.floor(target / g)
    if m < 1:
        raise BudgetValueError(f"the target margin of error {target} for {p.label} is below its granularity {g}")
    if settings.mechanism == GAUSSIAN:
        # paper 004 eq. 37 (scaled by Δ²), with 1.96²/2 exactly; the reported margin is computed
        # in floats, so nudge ρ up in the rare case rounding puts it one above the target.
        a = Allocation(p, GAUSSIAN, _Z2_HALF * delta * delta / (m * m))
        steps = 0
        while a.moe(delta) > m:
            steps = _nudged(steps, p, target)
            a = replace(a, rho=a.rho * Fraction(1_000_001, 1_000_000))
        return a
    # paper 004 eq. 38, ε = ln 20 / (⌊MOE⌋ + 1), scaled by Δ; then made exact and checked
    # against the margin dpsql reports, nudging ε up until it fits.
    # (Whatever ε is chosen is charged exactly, so simplifying it is safe.)
    eps = Fraction(math.log(20) * delta / (m + 1)).limit_denominator(10**9)
    if eps < Fraction(1, 10**9):  # a margin so wide the ε would round to zero: nothing worth releasing
        raise BudgetValueError(f"the target margin of error {target} for {p.label} is too wide: it needs "
                               "epsilon below 1e-9", hint="ask for a margin below a billion times the sensitivity.")
    steps = 0
    while moe95_geometric(float(delta / eps)) > m:
        steps = _nudged(steps, p, target)
        eps = (eps * Fraction(1001, 1000)).limit_denominator(10**9)
    return Allocation(p, GEOMETRIC, eps * eps / 2, eps)


def _nudged(steps: int, p: Primitive, target: Fraction) -> int:
    """Count one nudge of an accuracy-first budget; past :data:`MAX_NUDGES` it is a bug (the
    margin formula and the budget formula disagree), reported as such rather than looping."""
    if steps >= MAX_NUDGES:
        raise DpsqlInternalError(
            f"the budget for {p.label} did not reach the target margin of error {target} after {MAX_NUDGES} "
            "adjustments; this is a bug in dpsql (its margin and budget formulas disagree), please report it")
    return steps + 1
