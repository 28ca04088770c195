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

Sampling is exact: a uniformly proposed candidate is accepted with probability
exp(−ε (s − s_min) / (2Δ)), drawn by CKS20's Bernoulli(exp(−γ)) for rational γ
(``bernoulli.py``); the first accepted proposal has exactly the mechanism's distribution.
All groups are sampled together, in batches of proposals.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpsql.errors import DpsqlInternalError
from dpsql.policy.model import QuantileGrid

if TYPE_CHECKING:  # a small answer is released without numpy (dpsql/pipeline/release.py)
    import numpy as np

    from dpsql.privacy.randomness import RandomSource

#: most proposals drawn in one round (memory: a few arrays of this many integers)
_ROUND = 1 << 18
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


def _bins(h: Any) -> list[tuple[int, int]]:
    """(bound, count) pairs of one group's histogram: the exact query's [bins, counts]
    (``sql/quantiles.py``), a map, or None for a group with no value."""
    if not h:
        return []
    if isinstance(h, dict):
        return [(int(b), int(n)) for b, n in h.items()]
    bins, counts = h
    return [] if bins is None else list(zip(map(int, bins), map(int, counts)))


def scores(hists: list[Any], grid: QuantileGrid, q: Fraction) -> np.ndarray:
    """s(c_i) for each group (row) and each candidate c_i of ``grid`` (column), from each
    group's histogram over ``grid.bounds()`` (the exact query's ``HISTOGRAM``: the values in
    (b_{j−1}, b_j] per bound b_j, values above the last under another key). An empty or
    missing histogram scores every candidate 0."""
    import numpy as np

    bs = grid.bounds()
    candidates = grid.candidates()
    where = {b: j for j, b in enumerate(bs)}
    other = len(bs)  # values above every bound
    total_n = sum(int(n) for h in hists for _, n in _bins(h))
    dtype = object if total_n * q.denominator >= 2**62 else np.int64  # no data can overflow numpy
    per = np.zeros((len(hists), other + 1), dtype=dtype)
    rows, cols, counts = [], [], []
    for g, h in enumerate(hists):
        for b, n in _bins(h):
            rows.append(g)
            cols.append(where.get(b, other))
            counts.append(int(n))
    np.add.at(per, (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)), np.array(counts, dtype=dtype))
    cum = np.cumsum(per[:, :other], axis=1)  # cum[:, j] = #{x <= bs[j]}
    total = per.sum(axis=1, keepdims=True)
    below = cum[:, [where[c - 1] for c in candidates]]  # #{x < c}
    above = total - cum[:, [where[c] for c in candidates]]  # #{x > c}
    a, b = q.numerator, q.denominator
    return np.abs((b - a) * below - a * above)


def draw(hists: list[Any], grid: QuantileGrid, q: Fraction, epsilon: Fraction, rng: RandomSource) -> list[int]:
    """One candidate index per group (:func:`scores`, then :func:`sample`), in chunks of groups
    so that the arrays held at once are bounded by :data:`SCORE_ENTRIES` entries whatever the
    number of groups (issue 29: all groups at once held ~50 KB a group on the demo's grid, 165 GB
    at dpsql's 2,000,000 cells). Rows are independent, so chunking changes no distribution."""
    per = max(1, SCORE_ENTRIES // (len(grid.bounds()) + 1))
    out: list[int] = []
    for start in range(0, len(hists), per):
        out += sample(scores(hists[start:start + per], grid, q), q, epsilon, rng)
    return out


def sample(score_rows: np.ndarray, q: Fraction, epsilon: Fraction, rng: RandomSource) -> list[int]:
    """One candidate index per row of :func:`scores`, each drawn with probability
    ∝ exp(−ε · s / (2Δ)), exactly; rows are independent."""
    import numpy as np

    from dpsql.privacy.bernoulli import _bern_exp

    g = len(score_rows)
    if g == 0:
        return []
    m = score_rows.shape[1]
    delta = sensitivity(q)
    num, den = epsilon.numerator, 2 * delta * epsilon.denominator
    # γ = ε (s − s_min) / (2Δ) = num · d / den, split into integer part k and remainder r.
    d = score_rows - score_rows.min(axis=1, keepdims=True)
    big = d.dtype == object or int(d.max()) * num >= 2**62 or den >= 2**62
    dtype = object if big else np.int64
    d = d.astype(dtype)
    k_all, r_all = (d * num) // den, (d * num) % den
    # Proposals per round: about how many the least concentrated pending row needs, from a float
    # estimate of the acceptance rate (it changes how many draws are batched, not which is kept).
    rate = np.exp(-d.astype(float) * (num / den)).mean(axis=1)
    out = np.full(g, -1, dtype=np.int64)
    pending = np.arange(g)
    while pending.size:
        # Rows in chunks, so that one round holds at most _ROUND proposals whatever the groups.
        batch = int(min(max(8, math.ceil(2 / rate[pending].min())), 4 * m, _ROUND))
        chunk = pending[:max(1, _ROUND // batch)]
        rows = np.repeat(chunk, batch)
        prop = rng.uniform_below(np.full(rows.size, m, dtype=np.int64)).astype(np.int64)
        ok = _bern_exp(k_all[rows, prop], r_all[rows, prop], np.full(rows.size, den, dtype=dtype), rng)
        ok = ok.reshape(chunk.size, batch)
        hit = ok.any(axis=1)
        chosen = prop.reshape(chunk.size, batch)[np.arange(chunk.size), ok.argmax(axis=1)]
        out[chunk[hit]] = chosen[hit]
        pending = np.concatenate([pending[chunk.size:], chunk[~hit]])
    return out.tolist()


def probabilities(score_row: np.ndarray, q: Fraction, epsilon: Fraction) -> np.ndarray:
    """The mechanism's exact output distribution over one row's candidates (for tests and for
    the accuracy study; floats)."""
    import numpy as np

    s = np.array(score_row, dtype=float)
    w = np.exp(-float(epsilon) * (s - s.min()) / (2 * sensitivity(q)))
    return w / w.sum()
