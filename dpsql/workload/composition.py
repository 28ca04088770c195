"""The composition rules of a workload, as pure functions (no I/O).

Sources:
    [SafeTab] Haney et al., "Differentially Private Algorithms for 2020 Census Detailed DHC
        Race & Ethnicity" (paper 004): eq. 37-38 (budget of one count for a target 95% MOE),
        Appendix F.1 (per level: base budget x stability s, divided by the stage-2 share
        1 - gamma), Tables 1 and 4, Lemma 9 (generalised parallel composition, pure DP) and
        Lemma 10 (the same for zCDP), Appendix B.2, eq. 18 (the degree of a set family).
    [RP] paper 001, Section 5: answering k queries on the parts of a secret uniformly random
        partition; Example 2 (the sampling part of the error, p(1-p)(1/s - 1/n)) and Table I.

Budgets are exact ``Fraction``s (the ledger's currency) where the formula is rational (zCDP);
the pure-DP epsilons involve ln 20 and are floats, reported only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpsql.privacy.mechanisms import epsilon_for_moe, rho_for_moe
from dpsql.privacy.randomness import RandomSource

__all__ = [
    "LevelBudget",
    "level_budget",
    "sequential",
    "parallel",
    "generalised_parallel",
    "degree",
    "sampling_sigma",
    "random_partition",
]


@dataclass(frozen=True)
class LevelBudget:
    """One population-group level of SafeTab (one row of Table 1 / Table 4).

    ``stage2_rho`` / ``total_rho`` are what the whole level costs (all its groups together, by
    Lemma 10: stability s times the per-group budget); ``group_*`` are one group's budgets.
    """

    moe: int
    stability: int
    stage1_share: Fraction
    group_stage2_rho: Fraction  # eq. 37: the base mechanism's rho for the MOE target
    group_stage1_rho: Fraction
    stage2_rho: Fraction  # Table 1 "Step 2" (discrete Gaussian)
    total_rho: Fraction  # Table 1 "Total" (discrete Gaussian)
    stage2_epsilon: float  # Table 1 "Step 2" (geometric), eq. 38
    total_epsilon: float  # Table 1 "Total" (geometric)

    @property
    def group_rho(self) -> Fraction:
        """One group's budget over both stages (sequential composition of its two releases)."""
        return self.group_stage1_rho + self.group_stage2_rho


def level_budget(moe: int, stability: int, stage1_share: Fraction = Fraction(1, 10)) -> LevelBudget:
    """SafeTab Appendix F.1: a level's budget from its stage-2 MOE target.

    * eq. 37: the base discrete Gaussian of one stage-2 count has rho_b = 1.92 / floor(MOE)^2;
      eq. 38: the base geometric has eps_b = ln 20 / (floor(MOE) + 1);
    * Lemma 10 (Lemma 9 for pure DP): every person is in at most s groups of the level
      (stability Delta(g_i) = s = 9 in F.1), so stage 2 over all groups is s * rho_b-zCDP;
    * stage 2 gets 1 - gamma of the level (gamma = 0.1, F.1; Table 1's caption: "Step 2 loss
      is 90% of Total loss"), so the level's total is s * rho_b / (1 - gamma) and stage 1 gets
      gamma of it. (F.1's text writes rho = (1/gamma) rho_base; Table 1's numbers are
      s * rho_b / (1 - gamma), which is what the algorithm's split means and what we use.)

    Table 1: MOE 6 -> rho 0.480 / 0.533, MOE 11 -> 0.143 / 0.159, MOE 50 -> 0.0069 / 0.0077.
    """
    if not 0 < stage1_share < 1:
        raise ValueError("the stage-1 share must be in (0, 1)")
    if stability < 1:
        raise ValueError("stability must be a positive int")
    gamma = Fraction(stage1_share)
    rho_b = rho_for_moe(moe)
    group_total = rho_b / (1 - gamma)
    eps_b = epsilon_for_moe(moe)
    return LevelBudget(
        moe=int(moe), stability=int(stability), stage1_share=gamma,
        group_stage2_rho=rho_b, group_stage1_rho=group_total - rho_b,
        stage2_rho=stability * rho_b, total_rho=stability * group_total,
        stage2_epsilon=stability * eps_b, total_epsilon=stability * eps_b / float(1 - gamma))


def sequential(charges: Iterable[Fraction]) -> Fraction:
    """Sequential composition (SafeTab Lemma 1 pure DP, Lemma 2 zCDP): the charges add up.
    This is what answering the parts as separate queries costs."""
    return sum((Fraction(c) for c in charges), Fraction(0))


def parallel(charges: Iterable[Fraction]) -> Fraction:
    """Parallel composition over disjoint parts of the units (a partition by a key or by a
    public mapping): the most any part costs (Lemma 9/10 with degree 1)."""
    values = [Fraction(c) for c in charges]
    return max(values, default=Fraction(0))


def generalised_parallel(charges: Iterable[Fraction], stability: int) -> Fraction:
    """SafeTab Lemma 9 (pure DP, eps) and Lemma 10 (zCDP, rho), Appendix B.2: mechanisms run on
    the sets of a family of degree z (every unit in at most z sets, eq. 18), each of cost at
    most c, compose to z * c. With unequal costs the bound is z times the largest (a unit pays
    at most the sum of the z largest; we charge z * max, never less). Degree 1 is parallel
    composition."""
    if isinstance(stability, bool) or not isinstance(stability, int) or stability < 1:
        raise ValueError("stability must be a positive int")
    return stability * parallel(charges)


def degree(memberships: Iterable[Iterable[object]]) -> int:
    """eq. 18: the maximum, over units, of the number of sets that contain the unit, from each
    unit's list of sets (duplicates counted once)."""
    return max((len(set(m)) for m in memberships), default=0)


def sampling_sigma(p: float, part: int, n: int) -> float:
    """[RP] Example 2: the standard deviation that answering a proportion query on a uniformly
    random part of ``part`` units out of ``n`` adds, sqrt(p (1 - p) (1/part - 1/n)).
    Table I (n = 2^15, p = 1/2): 32 parts -> .0153, 64 -> .0219, ..., 512 -> .0624."""
    if not 0 < part <= n:
        raise ValueError("the part size must be in (0, n]")
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must be a proportion")
    return math.sqrt(p * (1 - p) * (1 / part - 1 / n))


def random_partition(n: int, k: int, rng: RandomSource) -> list[np.ndarray]:
    """A uniformly random partition of units 0..n-1 into k parts of sizes differing by at most
    one ([RP] Section 5: the partition is secret and uniform). Each unit gets a 63-bit key from
    ``rng`` and the units are ordered by key; the keys are drawn again in the (2^-33 for
    n = 2^15) event that two are equal, so the order is an exactly uniform permutation."""
    if not 1 <= k <= n:
        raise ValueError("k must be in [1, n]")
    while True:
        keys = rng.bits63(n)
        if len(np.unique(keys)) == n:
            break
    order = np.argsort(keys, kind="stable")
    return [part for part in np.array_split(order, k)]
