"""The exponential mechanism of ``quantile.py`` over runs of equal scores, for many groups at once.

A group's score s(c_i) = |(b − a)·#{x < c_i} − a·#{x > c_i}| changes only next to a grid bin
that holds a value, so a group's m candidates fall into *runs* of consecutive candidates with
one score: at most 2k + 1 runs for k occupied bins. :func:`runs_from_histograms` builds them
from the exact query's sparse histograms for a chunk of groups with flat numpy arrays (no
Python loop per entry nor per group), :func:`runs_from_rows` from dense score rows (one run per
candidate), and :func:`draw_runs` draws one candidate per group, exactly, in one vectorised
round (the proof is in ``quantile.py``'s docstring, "Sampling"): the work is proportional to
the data's occupied bins, not to groups × m.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from dpsql.policy.model import QuantileGrid
    from dpsql.privacy.randomness import RandomSource

#: L: a proposal weighs 2^L e^−γ rounded up (:func:`_round`); a group's total is below
#: m · 2^L <= 10,000 · 2^32 < 2^46, and a chunk's (:data:`CHUNK_WEIGHT`) below 2^62: int64
_BITS = 32
_SCALE = float(1 << _BITS)
#: the most groups × candidates one round may weigh: Σ of the proposals' integer weights < 2^62
CHUNK_WEIGHT = 1 << (62 - _BITS)
#: the key the exact query gives values above every bound (sql/quantiles.py's OTHER_BIN)
_OTHER = 2**63 - 1


@dataclass(frozen=True)
class Runs:
    """Runs of equal score for g groups: group r's runs are entries first[r] .. first[r + 1] − 1,
    run e covers candidates start[e] .. start[e] + length[e] − 1, all scoring s_min(r) + d[e]."""

    first: np.ndarray
    start: np.ndarray
    length: np.ndarray
    d: np.ndarray  # int64, or Python ints (object) when a score could pass 2^62


def _pair(h: Any) -> tuple[Any, Any]:
    """(bin keys, counts) of one group's histogram: the exact query's [bins, counts]
    (``sql/quantiles.py``), a map, or None / [NULL, NULL] for a group with no value."""
    if not h:
        return (), ()
    if isinstance(h, dict):
        return tuple(h), tuple(h.values())
    bins, counts = h
    return ((), ()) if bins is None else (bins, counts)


def flat_histograms(hists: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, bin key, count) of every entry of ``hists``, as int64 arrays (keys are bounds,
    |b| <= 2^62, or 2^63 − 1; counts are row counts): one pass of C iteration per column."""
    pairs = [_pair(h) for h in hists]
    sizes = np.fromiter((len(b) for b, _ in pairs), dtype=np.int64, count=len(pairs))
    n = int(sizes.sum())
    keys = np.fromiter(chain.from_iterable(b for b, _ in pairs), dtype=np.int64, count=n)
    counts = np.fromiter(chain.from_iterable(c for _, c in pairs), dtype=np.int64, count=n)
    return np.repeat(np.arange(len(pairs), dtype=np.int64), sizes), keys, counts


def positions(keys: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Where each bin lies among the m candidates, in half steps: 2i + 1 for the bin that is
    exactly c_i (key c_i), 2i for the values strictly between c_{i−1} and c_i (key c_i − 1; 0:
    below c_0), 2m for values above c_{m−1} (key 2^63 − 1, or a key that is no bound)."""
    m = len(candidates)
    # the bounds in order, each with its position: c_i − 1 (when it is not c_{i−1}) then c_i
    bounds = np.stack([candidates - 1, candidates], axis=1).ravel()
    at = np.stack([2 * np.arange(m), 2 * np.arange(m) + 1], axis=1).ravel()
    keep = np.concatenate(([True], bounds[1:] != bounds[:-1]))
    bounds, at = bounds[keep], np.append(at[keep], 2 * m)
    j = np.searchsorted(bounds, keys)
    found = bounds[np.minimum(j, bounds.size - 1)] == keys
    return np.where(found, at[j], 2 * m)


def runs_from_histograms(hists: list[Any], grid: QuantileGrid, q: Fraction) -> Runs:
    """The runs of every group of ``hists`` (the exact query's histograms over ``grid.bounds()``)."""
    group, keys, counts = flat_histograms(hists)
    cands = np.array(grid.candidates(), dtype=np.int64)
    return runs_from_entries(group, positions(keys, cands), counts, len(hists), len(cands), q)


def runs_from_entries(group: np.ndarray, pos: np.ndarray, counts: np.ndarray, g: int, m: int, q: Fraction) -> Runs:
    """The runs of g groups from their entries (group, position, count; ``em_bins.value_entries``).

    With a group's entries at positions p (:func:`positions`) and counts n, candidate i has
    #{x < c_i} = Σ n over p <= 2i and #{x > c_i} = total − Σ n over p <= 2i + 1, so a run starts
    at 0 and at p // 2 and (p + 1) // 2 of every entry (below m)."""
    width = 2 * m + 1
    # no data can overflow numpy: Python ints when a score could reach 2^62 (a float total is
    # within a factor 1 + 2^-40 of the exact one, far inside the factor 2 of room left)
    big = float(counts.sum(dtype=float)) * q.denominator >= 2**61
    ekey = group * width + pos
    if (g and not big and g * m <= DENSE_ENTRIES * (pos.size + 1) and g * width <= DENSE_COUNTERS
            and np.all(ekey[1:] > ekey[:-1])):
        return _dense_runs(ekey, counts, g, m, q)
    if ekey.size and not np.all(ekey[1:] >= ekey[:-1]):  # DuckDB's maps come sorted; else sort
        order = np.argsort(ekey, kind="stable")
        group, pos, counts, ekey = group[order], pos[order], counts[order], ekey[order]
    cum = np.concatenate(([0], np.cumsum(counts.astype(object) if big else counts)))
    # run starts: 0 for every group, then p // 2 and (p + 1) // 2 of each entry, in order
    starts = np.empty(g + 2 * pos.size, dtype=np.int64)
    owner = np.empty_like(starts)
    head = np.arange(g, dtype=np.int64) + 2 * np.searchsorted(group, np.arange(g), side="left")
    starts[head], owner[head] = 0, np.arange(g)
    rest = np.ones(starts.size, dtype=bool)
    rest[head] = False
    starts[rest] = np.stack([pos // 2, (pos + 1) // 2], axis=1).ravel()
    owner[rest] = np.repeat(group, 2)
    skey = owner * (m + 1) + starts
    keep = (starts < m) & np.concatenate(([True], skey[1:] != skey[:-1]))
    starts, owner = starts[keep], owner[keep]
    first = np.searchsorted(owner, np.arange(g + 1), side="left")
    nxt = np.append(starts[1:], m)
    nxt[first[1:] - 1] = m  # a group's last run ends at m
    edges = np.searchsorted(ekey, np.arange(g + 1) * width, side="left")  # each group's entries
    before = cum[edges[:-1]][owner]
    below = cum[np.searchsorted(ekey, owner * width + 2 * starts, side="right")] - before
    upto = cum[np.searchsorted(ekey, owner * width + 2 * starts + 1, side="right")] - before
    total = cum[edges[1:]][owner] - before
    a, b = q.numerator, q.denominator
    s = np.abs((b - a) * below - a * (total - upto))
    return Runs(first, starts, nxt - starts, s - np.minimum.reduceat(s, first[:-1])[owner])


#: every candidate of every group is scored (:func:`dense_runs`) when the groups × candidates are
#: at most this many times the entries (occupied bins): ~10 ns a candidate against ~170 ns an
#: entry by the searches of :func:`runs_from_entries` (docs/performance.md, "Quantiles")
DENSE_ENTRIES = 16
#: ... and when their counters are at most this many (16 MiB: the bound of 4 × SCORE_ENTRIES / 2
#: entries the dense scores had before, so quantile.DRAW_BYTES still bounds a chunk)
DENSE_COUNTERS = 1 << 21


def _dense_runs(ekey: np.ndarray, counts: np.ndarray, g: int, m: int, q: Fraction) -> Runs:
    """:func:`runs_from_entries` through each group's counts at every position: for entries of
    distinct keys r · (2m + 1) + p, in int64 (the caller's checks: no score reaches 2^62)."""
    n = np.zeros(g * (2 * m + 1), dtype=np.int64)
    n[ekey] = counts
    return dense_runs(n, g, m, q, own=True)


def dense_runs(n: np.ndarray, g: int, m: int, q: Fraction, own: bool = False) -> Runs:
    """The runs of g groups from their counts n (a g × (2m + 1) array, or flat: group r's count at
    position p is n[r · (2m + 1) + p]): with C_p = Σ n over positions <= p (a cumulated sum of each
    group's counters), candidate i has B_i = #{x < c_i} = C_{2i}, #{x = c_i} = C_{2i+1} − C_{2i}
    and #{x > c_i} = T − C_{2i+1} (T = C_{2m}), so its score |b · B_i + a · #{x = c_i} − a · T| is
    |(b − a) · C_{2i} + a · C_{2i+1} − a · T|; a run starts at 0 and wherever the score changes.
    In int64: the caller keeps b · T below 2^61 (:func:`fits_dense`), so no score passes 2^62.
    ``own``: n is the caller's to overwrite (the sums are made in place)."""
    n = n.reshape(g, 2 * m + 1)
    a, b = q.numerator, q.denominator
    c = np.cumsum(n, axis=1, out=n if own else None)  # C
    s = np.empty((g, m), dtype=np.int64)
    if b - a == a:  # the median: C_{2i} + C_{2i+1} in one pass
        np.add(c[:, 0:2 * m:2], c[:, 1:2 * m:2], out=s)
    else:
        np.multiply(c[:, 0:2 * m:2], b - a, out=s)
        s += a * c[:, 1:2 * m:2]
    s -= (a * c[:, 2 * m])[:, None]
    np.abs(s, out=s)
    change = np.empty((g, m), dtype=bool)
    change[:, 0] = True
    np.not_equal(s[:, 1:], s[:, :-1], out=change[:, 1:])
    at = np.flatnonzero(change)
    first = np.searchsorted(at, np.arange(g + 1, dtype=np.int64) * m)  # a group's runs: its changes
    owner = np.repeat(np.arange(g, dtype=np.int64), np.diff(first))
    starts = at - owner * m
    nxt = np.append(starts[1:], m)
    nxt[first[1:] - 1] = m  # a group's last run ends at m
    d = s.ravel()[at]
    d -= np.minimum.reduceat(d, first[:-1])[owner]  # each group's least score is one of its runs'
    return Runs(first, starts, nxt - starts, d)


def fits_dense(n: np.ndarray, g: int, m: int, q: Fraction) -> bool:
    """Whether :func:`dense_runs` should score the g groups of the counters n: its scores stay in
    int64 (n holds row counts: its int64 sum cannot overflow), its arrays within
    :data:`DENSE_COUNTERS`, and every candidate costs less than the entries' searches would
    (:data:`DENSE_ENTRIES`)."""
    return (n.size <= DENSE_COUNTERS and int(n.sum()) * q.denominator < 2**61
            and g * m <= DENSE_ENTRIES * np.count_nonzero(n))


def runs_from_rows(score_rows: np.ndarray) -> Runs:
    """Dense score rows (groups × candidates) as runs of one candidate each."""
    g, m = score_rows.shape
    d = score_rows - score_rows.min(axis=1, keepdims=True)
    return Runs(np.arange(g + 1, dtype=np.int64) * m, np.tile(np.arange(m, dtype=np.int64), g),
                np.ones(g * m, dtype=np.int64), d.ravel())


def draw_runs(runs: Runs, num: int, den: int, rng: RandomSource) -> np.ndarray:
    """One candidate index per group, candidate c drawn with probability ∝ exp(−γ_c),
    γ_c = num · d_c / den (exact rationals), exactly. Groups a round rejects (rarely: with
    probability at most m / 2^32) are drawn again, each on its own."""
    g = len(runs.first) - 1
    if int(runs.length.sum()) > CHUNK_WEIGHT:  # Σ of the proposals' weights would pass int64
        raise ValueError(f"draw_runs: at most {CHUNK_WEIGHT} candidates a call; draw in chunks of groups")
    weight = np.exp(-(runs.d.astype(float) * (num / den)))  # e^−γ within 2^−50 (quantile.py)
    out = _round(runs, weight, num, den, rng)
    for r in np.flatnonzero(out < 0).tolist():
        lo, hi = int(runs.first[r]), int(runs.first[r + 1])
        one = Runs(np.array([0, hi - lo]), runs.start[lo:hi], runs.length[lo:hi], runs.d[lo:hi])
        while out[r] < 0:
            out[r] = _round(one, weight[lo:hi], num, den, rng)[0]
    return out[:g]


def _round(runs: Runs, weight: np.ndarray, num: int, den: int, rng: RandomSource) -> np.ndarray:
    """One proposal per group, accepted or not: the candidate, or −1 (quantile.py, "Sampling")."""
    from dpsql.privacy.guided import MARGIN, _Lazy, less_exp

    # A > 2^L e^−γ (the float error is below 2^L · 2^−50), and at most 2^L (e^−γ <= 1)
    a = np.minimum(np.floor(weight * _SCALE + _SCALE * MARGIN) + 1, _SCALE).astype(np.int64)
    block = a * runs.length  # a run proposes each of its candidates with weight A
    cum = np.cumsum(block)
    lo = np.concatenate(([0], cum))[runs.first]  # a group's block of the cumulated weights
    y = lo[:-1] + rng.uniform_below(lo[1:] - lo[:-1])
    run = np.searchsorted(cum, y, side="right")
    offset = y - (cum[run] - block[run])  # uniform on [0, A · length) given the run
    step, x = np.divmod(offset, a[run])  # the candidate in the run, and X uniform on [0, A)
    w = (x << (63 - _BITS)) | (rng.bits63(run.size) >> _BITS)  # U''s first 63 bits
    uf = w * 2.0**-63
    wf = weight[run]
    accept = uf < wf - MARGIN
    unsure = np.flatnonzero(~accept & (uf <= wf + MARGIN))
    if unsure.size:
        def word() -> int:
            return int(rng.bits63(1)[0])  # more bits of U' (rarely)
        for k in unsure.tolist():
            gamma = Fraction(int(runs.d[run[k]]) * num, den)
            accept[k] = less_exp(_Lazy(int(w[k]), word), gamma)
    return np.where(accept, runs.start[run] + step, -1)
