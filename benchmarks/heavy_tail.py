"""Paper 000 §6.3 on its simulated data (SIM, Table 4): ARE against the share of records split
(Figure 2, left) and the policy-loss CDFs (Figure 2, right).

SIM, as in Table 4: CatIX ~ Categorical(phi) on {1, ..., 1000}; HT1 ~ Pareto(1, 1.2) and
HT2 ~ Pareto(1, 1.5) on [1, inf) (both with infinite variance). The paper does not give phi or
the number of records; we take phi uniform and N = 100,000 records (100 per category on average;
``--sim-rows``). Values are kept at granularity 0.01 (integers in hundredths), as dpsql keeps a
non-integer measure, so that the discrete Gaussian is added to integers.

Workload: SUM(HT) GROUP BY CatIX, one query per variable, at rho per query (the figure's
"minimum policy loss"). Univariate splitting of HT at a threshold T: exact sums + N_Z(T^2/(2 rho)),
P(r) = rho * ceil(HT/T)^2. The thresholds are the Pareto model's quantiles for a target share of
records split, s = P(HT > T) = T^-alpha, i.e. T = s^(-1/alpha): chosen from the public model, not
from the data. For contrast, the zCDP answer top-coded at the same T has the same noise and
the bias of the clamped tail.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpsql.testing import seeded_random

from .dpmath import are, ecdf_from_counts, noisy_answers, summarize_are, topcode

VARIABLES = (("HT1", 1.2), ("HT2", 1.5))
CATEGORIES = 1000
SHARES_SPLIT = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5)
RHOS = (Fraction(1, 10), Fraction(1), Fraction(10))
SCALE = 100  # granularity 0.01: values are integers in hundredths
ARE_CUTS = (0.10, 1.00)  # Figure 2's green (10%) and red (100%) lines


def simulate(n: int, seed: int) -> dict[str, np.ndarray]:
    """SIM (paper 000 Table 4): CatIX uniform on 1..1000, HT ~ Pareto(1, alpha), in hundredths."""
    gen = np.random.default_rng([seed, 4])
    out = {"catix": gen.integers(1, CATEGORIES + 1, size=n)}
    for name, alpha in VARIABLES:
        x = 1.0 + gen.pareto(alpha, size=n)  # numpy's pareto is Lomax: shift to Pareto(1, alpha)
        out[name] = np.minimum(np.rint(x * SCALE), 2**40).astype(np.int64)  # cap far beyond any sum's noise
    return out


def threshold(alpha: float, share: float) -> int:
    """T (in hundredths) with P(HT > T) = share under Pareto(1, alpha)."""
    return int(np.ceil(share ** (-1.0 / alpha) * SCALE))


@dataclass
class HeavyTailResult:
    n: int
    seed: int
    summary: list[dict[str, Any]] = field(default_factory=list)
    are: dict[tuple[str, str, float, Fraction], np.ndarray] = field(default_factory=dict)
    shares: dict[tuple[str, float], float] = field(default_factory=dict)  # realised share split
    ecdf: dict[tuple[str, float], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # P/rho
    seconds: float = 0.0


def run_heavy_tail(n: int, seed: int, rhos: Sequence[Fraction] = RHOS,
                   shares: Sequence[float] = SHARES_SPLIT) -> HeavyTailResult:
    t0 = time.perf_counter()
    data = simulate(n, seed)
    rng = seeded_random(seed)
    res = HeavyTailResult(n=n, seed=seed)
    cat = data["catix"] - 1
    for name, alpha in VARIABLES:
        x = data[name]
        exact = _group_sums(cat, x)
        present = np.bincount(cat, minlength=CATEGORIES) > 0
        exact = exact[present]
        for share in shares:
            t = threshold(alpha, share)
            splits = -(-x // t)  # ceil(x / T) >= 1 since x >= 1
            realised = float(np.mean(splits > 1))
            res.shares[(name, share)] = realised
            a_vals, a_counts = np.unique(splits, return_counts=True)
            res.ecdf[(name, share)] = ecdf_from_counts(a_vals.astype(float) ** 2, a_counts)
            clamped = _group_sums(cat, topcode(x, t))[present]
            for rho in rhos:
                a_split = are(noisy_answers(exact, t, rho, rng), exact)
                a_top = are(noisy_answers(clamped, t, rho, rng), exact)
                res.are[(name, "split", share, rho)] = a_split
                res.are[(name, "topcode", share, rho)] = a_top
                ss, st = summarize_are(a_split, ARE_CUTS), summarize_are(a_top, ARE_CUTS)
                res.summary.append({
                    "variable": name, "alpha": alpha, "records": n, "rho": float(rho),
                    "target_share_split": share, "threshold": t / SCALE, "share_split": realised,
                    "max_P_over_rho": float(a_vals.max()) ** 2, "queries": ss["n"],
                    "split_are_median": ss["median"], "split_are_p25": ss["p25"], "split_are_p75": ss["p75"],
                    "split_share_below_10pct": ss["share_below_0.1"], "split_share_below_100pct": ss["share_below_1"],
                    "topcode_are_median": st["median"], "topcode_are_p25": st["p25"], "topcode_are_p75": st["p75"],
                    "topcode_share_below_10pct": st["share_below_0.1"],
                    "topcode_share_below_100pct": st["share_below_1"],
                })
    res.seconds = time.perf_counter() - t0
    return res


def _group_sums(cat: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Exact int64 sums per category (bincount's weights would round through float64)."""
    out = np.zeros(CATEGORIES, dtype=np.int64)
    np.add.at(out, cat, x)
    return out


def best_topcode(res: HeavyTailResult, name: str, rho: Fraction) -> dict[str, Any]:
    """The top-code T (over the swept thresholds) with the smallest median ARE: the best the zCDP
    baseline does here, if an oracle picked T from the data (paper 000 Figure 1's optimal Delta)."""
    rows = [r for r in res.summary if r["variable"] == name and r["rho"] == float(rho)]
    return min(rows, key=lambda r: r["topcode_are_median"])
