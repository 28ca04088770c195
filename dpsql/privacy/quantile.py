"""DP quantiles: the exponential mechanism over a public grid of candidates.

Which mechanism, and why. For one quantile per group with public bounds, the exponential
mechanism (McSherry & Talwar 2007) scoring each candidate by how far its rank is from the
target is the standard choice: Smith (2011) over the intervals between data points, Gillenwater,
Joseph & Kulesza (2021, "Differentially Private Quantiles") show it is the most accurate single
quantile method in practice and build JointExp on it for many quantiles at once, and OpenDP
releases quantiles the same way over a public candidate list (``make_quantile_score_candidates``).
dpsql scores a public grid (``policy.QuantileGrid``) rather than the data's own intervals, so
the exact query only counts values per grid bin (bounded memory, total SQL) and no released
value is a data point.

Scores, as OpenDP, for candidate c and quantile q = a/b in lowest terms (times b, so integers):

    s(c) = |(b − a) · #{x < c} − a · #{x > c}|        (b · |(1 − q) · #{x < c} − q · #{x > c}|)

Adding or removing one unit changes #{x < c} or #{x > c} by one, so s changes by at most
Δ = max(a, b − a). The mechanism releases c with probability ∝ exp(−ε · s(c) / (2Δ)): ε-DP
(Dwork & Roth 2014, Theorem 3.10), and ε-bounded-range (Durfee & Rogers 2019), so
ε²/8-zCDP (Cesar & Rogers 2021, "Bounding, Concentrating, and Truncating": an ε-bounded-range
mechanism is ε²/8-zCDP). dpsql charges a quantile its ρ and uses the
largest ε ≤ √(8ρ) with six decimals; under pure DP (``SET dpsql.mechanism = geometric``) it
uses ε and charges ε²/2 like every pure-DP release.

Accuracy (Dwork & Roth 2014, Theorem 3.11): with m candidates, Pr[s(out) ≥ s_min + (2Δ/ε)
(ln m + t)] ≤ e^−t. In units (s / b): with probability 95 % the released candidate's score
|(1 − q)·#{x < c} − q·#{x > c}| exceeds the best candidate's by at most ``rank_error95`` =
2 · max(q, 1 − q) / ε · ln(20 m). That score gap is what the theorem proves — not the rank
distance (the number of units between the released value and the best), which it bounds
only where the score changes by at least one per unit passed (no ties on grid values). ``tests/test_quantiles.py`` checks the sampler's distribution
against these exact probabilities and the error against this bound.

Sampling is exact, and vectorised across groups (issue 34). Each decision is a comparison
"U < e^−γ" of a uniform real with the exponential of an exact rational γ = ε (s − s_min) / (2Δ),
taken in floats only where that is provably the exact decision, as ``guided.py``'s samplers do
(docs/noise.md, "Float-guided exact sampling"):

* a proposal j is drawn with probability A_j / Σ A, for integers A_j = ⌊2^32 ŵ_j + 2^32·2^−40⌋ + 1
  (at most 2^32) read off the float weight ŵ_j = e^−γ̂_j. γ̂ = float(d) · float(num/den) is γ
  within a relative 2^−51, and x e^−x ≤ 1/e, so |ŵ − e^−γ| < 2^−50 and A_j ≥ 2^32 e^−γ_j: the
  integers need no proof of accuracy beyond that bound, only that they are known exactly;
* j is accepted when U' < e^−γ_j, U' uniform on [0, A_j / 2^32) (the proposal's own offset
  inside A_j, uniform given j, then 31 fresh bits, then more as needed), so
  P(j accepted) = A_j / Σ A · 2^32 e^−γ_j / A_j ∝ e^−γ_j: the mechanism's distribution. The
  comparison is decided in floats when U' and ŵ_j differ by more than MARGIN = 2^−40 (2^10
  times the float error), else by ``guided.less_exp`` on more bits of the same U' against
  ``decimal`` bounds of e^−γ_j — exact whatever the floats.

A round accepts with probability Σ 2^32 e^−γ / Σ A ≥ 1 − m / 2^32 (the best candidate weighs 1),
so all groups are nearly always drawn in one numpy round of one proposal each: one uniform
below each row's total, one search over the chunk's cumulated weights, one 63-bit word each.
ε reaches the sampler as before: num/den = ε / (2Δ), the one line the spy tests watch
(``tests/test_oracles_quantile.py``). Before issue 34, proposals were uniform over the m
candidates and accepted by CKS20's Bernoulli(exp(−γ)) in integers (``bernoulli.py``): about
m / Σ e^−γ proposals a group, 1.2–2 ms a released group.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpsql.errors import DpsqlInternalError
from dpsql.policy.model import QuantileGrid

if TYPE_CHECKING:  # a small answer is released without numpy (dpsql/pipeline/release.py)
    import numpy as np

    from dpsql.privacy.em_runs import Runs
    from dpsql.privacy.randomness import RandomSource

#: most (group, bin) entries scored at once (:func:`draw`): the score and sampling arrays of
#: one chunk of groups, about a dozen of this many 8-byte integers, whatever the groups
SCORE_ENTRIES = 1 << 20
#: the most bytes :func:`draw` holds at once, for the phase-1 memory bound (pipeline/memory.py)
DRAW_BYTES = 12 * 8 * SCORE_ENTRIES
#: ε ≤ √(8ρ) is rounded down to this many decimals (a rational ε makes exact sampling possible)
_EPS_DIGITS = 10**6


def epsilon_for_rho(rho: Fraction) -> Fraction:
    """The largest ε with six decimals such that ε²/8 ≤ ρ (the mechanism is charged ρ)."""
    eps = Fraction(math.isqrt(int(8 * rho * _EPS_DIGITS**2)), _EPS_DIGITS)
    if eps * eps / 8 > rho:  # cannot happen (the floor of the root of the floor), checked all the same
        raise DpsqlInternalError(f"the exponential mechanism's epsilon {eps} exceeds its charge; this is a bug in dpsql")
    return eps


def sensitivity(q: Fraction) -> int:
    """Δ of the integer scores for quantile ``q`` = a/b: max(a, b − a)."""
    return max(q.numerator, q.denominator - q.numerator)


def rank_error95(q: Fraction, epsilon: Fraction, m: int) -> float:
    """With probability 95 %, the released candidate's score s/b = |(1 − q)·#{x < c} − q·#{x > c}|
    exceeds the best candidate's by at most 2 · max(q, 1 − q) / ε · ln(20 m) units (Dwork & Roth
    2014, Theorem 3.11). What is proven is this score gap; it is not a bound on how many units lie
    between the released value and the best one."""
    return 2 * max(float(q), 1 - float(q)) / float(epsilon) * math.log(20 * m)


def scores(hists: list[Any], grid: QuantileGrid, q: Fraction) -> np.ndarray:
    """s(c_i) for each group (row) and each candidate c_i of ``grid`` (column), from each
    group's histogram over ``grid.bounds()`` (the exact query's ``HISTOGRAM``: the values in
    (b_{j−1}, b_j] per bound b_j, values above the last under another key). An empty or
    missing histogram scores every candidate 0. The entries of all groups are read into flat
    arrays once (no Python loop per entry): bin keys and counts are integers below 2^63."""
    import numpy as np

    from dpsql.privacy.em_runs import flat_histograms

    bs = np.array(grid.bounds(), dtype=np.int64)
    candidates = grid.candidates()
    other = len(bs)  # values above every bound
    group, keys, counts = flat_histograms(hists)
    col = np.minimum(np.searchsorted(bs, keys), other - 1)
    col[bs[col] != keys] = other  # the key of values above every bound
    # no data can overflow numpy: Python ints when a score could reach 2^62 (a float total is
    # within a factor 1 + 2^-40 of the exact one, far inside the factor 2 of room left)
    dtype = object if float(counts.sum(dtype=float)) * q.denominator >= 2**61 else np.int64
    per = np.zeros((len(hists), other + 1), dtype=dtype)
    np.add.at(per, (group, col), counts.astype(dtype))
    cum = np.cumsum(per[:, :other], axis=1)  # cum[:, j] = #{x <= bs[j]}
    total = per.sum(axis=1, keepdims=True)
    where = {int(b): j for j, b in enumerate(bs)}
    below = cum[:, [where[c - 1] for c in candidates]]  # #{x < c}
    above = total - cum[:, [where[c] for c in candidates]]  # #{x > c}
    a, b = q.numerator, q.denominator
    return np.abs((b - a) * below - a * above)


def draw(hists: list[Any], grid: QuantileGrid, q: Fraction, epsilon: Fraction, rng: RandomSource,
         values: bool = False) -> list[int]:
    """One candidate index per group: the groups' runs of equal score (``em_runs.py``), then
    :func:`sample`, in chunks of groups so that the arrays held at once are bounded by
    :data:`SCORE_ENTRIES` candidates whatever the number of groups (issue 29: all groups at
    once held ~50 KB a group on the demo's grid, 165 GB at dpsql's 2,000,000 cells) and a
    chunk's proposal weights stay in int64. Rows are independent, so chunking changes no
    distribution. ``values``: each group's values instead (``em_bins.value_runs``)."""
    import numpy as np

    from dpsql.privacy.em_bins import value_runs
    from dpsql.privacy.em_runs import CHUNK_WEIGHT, Runs, runs_from_entries, runs_from_histograms

    m = len(grid.candidates())
    # a group holds at most len(bounds) + 1 entries and m runs: half of SCORE_ENTRIES entries a
    # chunk keeps the two dozen arrays of runs_from_histograms and draw_runs within DRAW_BYTES
    per = max(1, min(SCORE_ENTRIES // (2 * (len(grid.bounds()) + 1)), CHUNK_WEIGHT // m))
    out: list[int] = []
    if not values:
        for start in range(0, len(hists), per):
            out += sample(runs_from_histograms(hists[start:start + per], grid, q), q, epsilon, rng)
        return out
    # each group's values, counted a chunk of groups at a time (em_runs.value_runs): scored from
    # the chunk's counters (every candidate) where that costs less than the entries' searches, else
    # from its entries in chunks of groups holding at most SCORE_ENTRIES // 2 entries (one group at
    # least) and SCORE_ENTRIES // 8 groups (a run each at least): the same bound as above, on the
    # entries the groups hold rather than on the most they could hold
    for first, last, counts in value_runs(hists, grid, q):
        if isinstance(counts, Runs):
            out += sample(counts, q, epsilon, rng)
            continue
        if isinstance(counts, np.ndarray):
            key = np.flatnonzero(counts)
            group, pos, counts = key // (2 * m + 1), key % (2 * m + 1), counts[key]
        else:
            group, pos, counts = counts[0] - first, counts[1], counts[2]
        edges = np.searchsorted(group, np.arange(last - first + 1), side="left")  # each group's entries
        start = 0
        while start < last - first:
            stop = int(np.searchsorted(edges, edges[start] + SCORE_ENTRIES // 2, side="right")) - 1
            stop = min(max(stop, start + 1), start + CHUNK_WEIGHT // m, start + SCORE_ENTRIES // 8, last - first)
            a, b = edges[start], edges[stop]
            out += sample(runs_from_entries(group[a:b] - start, pos[a:b], counts[a:b], stop - start, m, q), q, epsilon, rng)
            start = stop
    return out


def sample(score_rows: np.ndarray | Runs, q: Fraction, epsilon: Fraction, rng: RandomSource) -> list[int]:
    """One candidate index per row of :func:`scores` (or per group of ``em_runs.Runs``), each
    drawn with probability ∝ exp(−ε · s / (2Δ)), exactly; rows are independent (the module
    docstring, "Sampling")."""
    from dpsql.privacy.em_runs import CHUNK_WEIGHT, Runs, draw_runs, runs_from_rows

    if len(score_rows) == 0 if not isinstance(score_rows, Runs) else len(score_rows.first) <= 1:
        return []
    delta = sensitivity(q)
    num, den = epsilon.numerator, 2 * delta * epsilon.denominator
    if isinstance(score_rows, Runs):
        return draw_runs(score_rows, num, den, rng).tolist()
    per = max(1, CHUNK_WEIGHT // score_rows.shape[1])  # a round's integer weights stay in int64
    return [j for start in range(0, len(score_rows), per)
            for j in draw_runs(runs_from_rows(score_rows[start:start + per]), num, den, rng).tolist()]


def probabilities(score_row: np.ndarray, q: Fraction, epsilon: Fraction) -> np.ndarray:
    """The mechanism's exact output distribution over one row's candidates (for tests and for
    the accuracy study; floats)."""
    import numpy as np

    s = np.array(score_row, dtype=float)
    w = np.exp(-float(epsilon) * (s - s.min()) / (2 * sensitivity(q)))
    return w / w.sum()
