"""The maths of the utility study, as small pure numpy functions (tested in
``tests/test_benchmarks_smoke.py`` on hand-made examples).

Sources (paper 000 = Seeman et al., ``../shared/papers/000_*.txt``):

* ARE(M(D), S(D)) = |M(D) - S(D)| / |S(D)| — paper 000 eq. 13.
* Unit splitting: a record r is split into |A(r)| = max(1, max_a ceil(|r(a)| / T(a))) parts
  (Algorithm 1); the split values sum to the original value, so a SUM over the split relation is
  the exact SUM (Lemma 5.2), with sensitivity T(a) per split row. A rho-zCDP mechanism on the
  split relation is P-PRzCDP with P(r) = rho * |A(r)|^2 (Lemma 5.1).
* Top-coding (the standard zCDP approach of §6.4, Table 7): each value is clamped at the
  top-code C, so the SUM has sensitivity C and is biased by -sum(max(0, r(a) - C)).
* The discrete Gaussian with sigma^2 = Delta^2 / (2 rho) is rho-zCDP for sensitivity Delta
  (``dpsql.privacy.mechanisms.gaussian_sigma2``).
* Composition: sequential composition adds rho's and policy functions (Lemma 4.2); disjoint
  groups of one GROUP BY compose in parallel (Lemma 4.3); COUNT needs no splitting, P(r) = rho
  (Lemma 5.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpsql.privacy.mechanisms import gaussian_sigma2
from dpsql.privacy.randomness import RandomSource
from dpsql.privacy.samplers import sample_discrete_gaussian


@dataclass(frozen=True)
class Scheme:
    """A named set of per-attribute values: split thresholds T(a) or top-codes C(a)."""

    name: str
    method: str  # "split" (PRzCDP, unit splitting) or "topcode" (zCDP, clamping)
    values: Mapping[str, int]


# Paper 000 Table 8: establishment splitting thresholds (payroll in $1000s).
SPLIT_SCHEMES = (
    Scheme("Conservative", "split", {"employees": 100, "payann": 10000, "payqtr1": 2500}),
    Scheme("Moderate", "split", {"employees": 5, "payann": 500, "payqtr1": 125}),
    Scheme("Median", "split", {"employees": 2, "payann": 104, "payqtr1": 24}),
)
# Paper 000 Table 7: top-codes of the zCDP baseline.
TOPCODE_SCHEMES = (
    Scheme("Conservative", "topcode", {"employees": 1000, "payann": 100_000, "payqtr1": 25_000}),
    Scheme("Moderate", "topcode", {"employees": 300, "payann": 10_000, "payqtr1": 2_500}),
    Scheme("Aggressive", "topcode", {"employees": 100, "payann": 1_000, "payqtr1": 250}),
)


def are(noisy: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Absolute relative error |noisy - exact| / |exact| (paper 000 eq. 13); NaN where exact = 0."""
    noisy = np.asarray(noisy, dtype=float)
    exact = np.asarray(exact, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.abs(noisy - exact) / np.abs(exact)
    return np.where(exact == 0, np.nan, out)


def split_counts(values: Mapping[str, np.ndarray], thresholds: Mapping[str, int]) -> np.ndarray:
    """|A(r)| = max(1, max_a ceil(|r(a)| / T(a))) per record (paper 000 Algorithm 1)."""
    out: np.ndarray | None = None
    for name, t in thresholds.items():
        v = np.abs(np.asarray(values[name], dtype=np.int64))
        m = -(-v // int(t))  # ceil for non-negative integers, exact
        out = m if out is None else np.maximum(out, m)
    assert out is not None, "at least one threshold"
    return np.maximum(out, 1)


def topcode(values: np.ndarray, cap: int) -> np.ndarray:
    """Values clamped to [-cap, cap]: the top-coded data a zCDP SUM with sensitivity cap sees."""
    return np.clip(np.asarray(values, dtype=np.int64), -int(cap), int(cap))


def sum_sensitivity(scheme: Scheme, measure: str) -> int:
    """The L2 sensitivity of SUM(measure) under the scheme: the threshold T for a split relation
    (every split row is bounded by T, a unit's rows all fall in its one group), the top-code C
    for clamped data. Either way it is the scheme's value for the measure."""
    return int(scheme.values[measure])


def noisy_answers(exact: np.ndarray, sensitivity: int, rho: Fraction, rng: RandomSource) -> np.ndarray:
    """exact + N_Z(Delta^2 / (2 rho)) per cell, with dpsql's exact sampler; integers in, floats out
    (a float64 holds every value here exactly: |values| < 2^53)."""
    sigma2 = gaussian_sigma2(int(sensitivity), rho)
    noise = sample_discrete_gaussian(sigma2, rng, size=len(exact))
    return np.asarray(exact, dtype=np.int64).astype(float) + noise.astype(float)


def workload_policy_loss(splits: np.ndarray, rho_counts: Fraction | float, rho_sums: Fraction | float) -> np.ndarray:
    """P(r) = rho_counts + rho_sums * |A(r)|^2 for one workload: COUNT queries (no splitting,
    Lemma 5.6) plus SUM queries on one split relation (Lemma 5.1), composed (Lemma 4.2)."""
    a = np.asarray(splits, dtype=float)
    return float(rho_counts) + float(rho_sums) * a * a


def group_policy_loss(n_records: np.ndarray, total_splits: np.ndarray, rho_counts: Fraction | float,
                      rho_sums: Fraction | float) -> np.ndarray:
    """An upper bound on the loss of a group of records (a firm of establishments): removing it
    removes n_records rows from the counted relation and sum(|A(r)|) rows from the split one,
    so by zCDP's group privacy (the argument of paper 000 Lemma 5.1) P = rho_c n^2 + rho_s S^2."""
    n = np.asarray(n_records, dtype=float)
    s = np.asarray(total_splits, dtype=float)
    return float(rho_counts) * n * n + float(rho_sums) * s * s


def summarize_are(x: np.ndarray, cuts: Sequence[float] = (0.05, 0.20)) -> dict[str, float]:
    """Median, quartiles, p90 and the share of queries with ARE below each cut (NaNs dropped)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {"n": 0, "median": float("nan"), "p25": float("nan"), "p75": float("nan"), "p90": float("nan"),
                **{f"share_below_{c:g}": float("nan") for c in cuts}}
    q25, q50, q75, q90 = np.quantile(x, [0.25, 0.5, 0.75, 0.9])
    out = {"n": int(x.size), "median": float(q50), "p25": float(q25), "p75": float(q75), "p90": float(q90)}
    out.update({f"share_below_{c:g}": float(np.mean(x < c)) for c in cuts})
    return out


def ecdf_from_counts(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of a weighted sample: sorted distinct values and P(X <= value)."""
    order = np.argsort(values)
    v = np.asarray(values, dtype=float)[order]
    c = np.asarray(counts, dtype=float)[order]
    return v, np.cumsum(c) / c.sum()
