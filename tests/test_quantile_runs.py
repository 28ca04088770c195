"""The exponential mechanism over runs of equal scores, drawn for many groups at once (issue 34,
``dpsql/privacy/em_runs.py``).

Oracles written here: the scores by counting values directly, the mechanism's distribution
∝ exp(−ε·s/(2Δ)) from its definition (Δ = max(a, b − a) for q = a/b), and each float decision
against the exact comparison of U' with e^−γ bracketed by ``decimal`` at high precision."""

from __future__ import annotations

import decimal
import math
import random
from fractions import Fraction

import duckdb
import numpy as np
import pytest

from dpsql.policy.model import QuantileGrid
from dpsql.privacy import em_bins, em_runs, guided, quantile
from dpsql.sql.quantiles import histogram_sql
from dpsql.testing import seeded_random
from tests.test_noise_distribution import chi2_critical


def _hists(groups: list[list[int]], grid: QuantileGrid) -> list:
    """Each group's exact histogram, as DuckDB computes it from the SQL dpsql runs."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (g INTEGER, v BIGINT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [[g, v] for g, vs in enumerate(groups) for v in vs])
    got = dict(con.execute(f"SELECT g, {histogram_sql('v', grid.bounds())} FROM t GROUP BY g").fetchall())
    con.close()
    return [got.get(g) for g in range(len(groups))]


def _direct_scores(values: list[int], grid: QuantileGrid, q: Fraction) -> list[int]:
    a, b = q.numerator, q.denominator
    return [abs((b - a) * sum(x < c for x in values) - a * sum(x > c for x in values)) for c in grid.candidates()]


def _naive_em(values: list[int], grid: QuantileGrid, q: Fraction, eps: Fraction) -> np.ndarray:
    s = np.array(_direct_scores(values, grid, q), dtype=float)
    w = np.exp(-float(eps) * (s - s.min()) / (2 * max(q.numerator, q.denominator - q.numerator)))
    return w / w.sum()


def _chi2(draws: np.ndarray, p: np.ndarray) -> tuple[float, int]:
    """χ² of ``draws`` (candidate indices) against ``p``; candidates expected fewer than 5 times
    are pooled into one bin."""
    n = draws.size
    observed = np.bincount(draws, minlength=p.size)
    big = n * p >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp_ = np.append(n * p[big], n * p[~big].sum())
    if exp_[-1] < 5:  # pool the rest into the smallest kept bin instead
        j = int(np.argmin(exp_[:-1]))
        obs[j] += obs[-1]
        exp_[j] += exp_[-1]
        obs, exp_ = obs[:-1], exp_[:-1]
    return float(((obs - exp_) ** 2 / exp_).sum()), obs.size - 1


def _critical(dof: int) -> float:
    """χ² at p = 10⁻⁴ (dof 0: one bin holds all the mass, nothing to test but the total)."""
    return {0: 1e-9, 1: 15.137}.get(dof) or chi2_critical(dof)


def _hostile(grid: QuantileGrid, r: random.Random, n: int) -> list[int]:
    cands = grid.candidates()
    values = [r.choice(cands) + r.choice([-2, -1, 0, 0, 1, 2]) for _ in range(n)]
    return values + [grid.lo - 10**9, grid.hi + 10**9, -2**63, 2**63 - 1, grid.lo, grid.hi, grid.lo - 1, grid.hi + 1]


GRIDS = [QuantileGrid(0, 100, "linear", 11), QuantileGrid(0, 10**6, "log", 40), QuantileGrid(-50, 50, "linear", 7),
         QuantileGrid(0, 10**8, "log", 1000)]


@pytest.fixture(params=["sparse", "dense"])
def runs_form(request, monkeypatch):
    """runs_from_entries by its searches (sparse) or every group's every candidate (dense)."""
    monkeypatch.setattr(em_runs, "DENSE_ENTRIES", 0 if request.param == "sparse" else 10**9)
    return request.param


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(99, 100)])
def test_runs_hold_each_candidates_score_counted_directly(grid, q, runs_form):
    """Expanded, a group's runs give every candidate its score minus the group's best, for
    groups with no value, one value, values on / next to / between candidates and far out."""
    r = random.Random(11)
    groups = [[], [grid.lo], _hostile(grid, r, 5), _hostile(grid, r, 300), [grid.hi + 1] * 3, [grid.lo - 1] * 2]
    runs = em_runs.runs_from_histograms(_hists(groups, grid), grid, q)
    m = len(grid.candidates())
    for g, values in enumerate(groups):
        direct = _direct_scores(values, grid, q)
        lo, hi = runs.first[g], runs.first[g + 1]
        expanded = [int(d) for e in range(lo, hi) for d in [runs.d[e]] * int(runs.length[e])]
        assert len(expanded) == m and int(runs.start[lo]) == 0
        assert expanded == [s - min(direct) for s in direct], g


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(99, 100)])
def test_runs_from_values_hold_each_candidates_score_counted_directly(grid, q, runs_form):
    """The same from each group's values (the exact query's lists, ``quantiles.values_sql``),
    as arrays, as lists, or None (a group without a value)."""
    r = random.Random(11)
    groups = [[], [grid.lo], _hostile(grid, r, 5), _hostile(grid, r, 300), [grid.hi + 1] * 3, [grid.lo - 1] * 2]
    given = [None, np.array(groups[1]), groups[2], np.array(groups[3], dtype=np.int64), groups[4], groups[5]]
    runs = em_bins.runs_from_values(given, grid, q)
    m = len(grid.candidates())
    for g, values in enumerate(groups):
        direct = _direct_scores(values, grid, q)
        lo, hi = runs.first[g], runs.first[g + 1]
        expanded = [int(d) for e in range(lo, hi) for d in [runs.d[e]] * int(runs.length[e])]
        assert len(expanded) == m and int(runs.start[lo]) == 0
        assert expanded == [s - min(direct) for s in direct], g


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(99, 100)])
@pytest.mark.parametrize("where", ["middle", "below", "above", "none"])
def test_runs_of_groups_away_from_the_grids_ends(grid, q, where, runs_form):
    """Groups whose values all lie in the middle of the grid, all below c_0, all above c_{m−1}, or
    none at all: every run starts where the one before it ends, and expanded they hold each
    candidate's score counted directly."""
    r = random.Random(3)
    cands = grid.candidates()
    mid = cands[2:-2]
    pick = {"middle": lambda: r.choice(mid) + r.choice([-1, 0, 0, 1]), "below": lambda: grid.lo - r.choice([1, 2, 50]),
            "above": lambda: grid.hi + r.choice([1, 2, 50]), "none": None}[where]
    groups = [[pick() for _ in range(k)] if pick else [] for k in (1, 9, 0, 40)]
    runs = em_bins.runs_from_values([np.array(g, dtype=np.int64) for g in groups], grid, q)
    assert runs.start.dtype == runs.length.dtype == np.int64
    for g, values in enumerate(groups):
        direct = _direct_scores(values, grid, q)
        lo, hi = runs.first[g], runs.first[g + 1]
        assert list(runs.start[lo:hi]) == [0, *np.cumsum(runs.length[lo:hi - 1]).tolist()], g
        expanded = [int(d) for e in range(lo, hi) for d in [runs.d[e]] * int(runs.length[e])]
        assert expanded == [s - min(direct) for s in direct], g


def _naive_bins(values: list[int], grid: QuantileGrid) -> dict[int, int]:
    """{bin key: count} as DuckDB's HISTOGRAM(v, bounds) keys them: the least bound >= v, else 2^63 − 1."""
    bounds = sorted(grid.bounds())
    out: dict[int, int] = {}
    for v in values:
        key = next((b for b in bounds if b >= v), 2**63 - 1)
        out[key] = out.get(key, 0) + 1
    return out


def test_counters_whose_scores_could_pass_int64_are_not_scored_densely():
    """em_runs.fits_dense keeps dense_runs' int64 scores exact: counts whose total times q's
    denominator reaches 2^61 go to the entries' path, which scores in Python integers there.
    At q = 1/10,000 and 2^50 values, b · T passes 2^63: the int64 scores wrap around."""
    m, q = 3, Fraction(1, 10_000)
    pos = np.array([0, 4])

    def both(n: np.ndarray) -> tuple[list[int], list[int]]:
        exact = em_runs.runs_from_entries(np.zeros(pos.size, dtype=np.int64), pos, n[pos], 1, m, q)
        dense = em_runs.dense_runs(n, 1, m, q)
        return [int(d) for d in exact.d], [int(d) for d in dense.d]

    small = np.array([1, 0, 0, 0, 2, 0, 0], dtype=np.int64)
    assert em_runs.fits_dense(small, 1, m, q)
    assert both(small)[0] == both(small)[1]
    big = np.array([2**49, 0, 0, 0, 2**49, 0, 0], dtype=np.int64)  # c_2's score: 9,999 · 2^50 > 2^63
    assert not em_runs.fits_dense(big, 1, m, q)
    with np.errstate(over="ignore"):
        exact, wrapped = both(big)
    assert exact != wrapped


@pytest.mark.parametrize("at_once", [None, 1, 7, 64])
@pytest.mark.parametrize("counting", ["counters", "one group's counters", "groups in place", "sort"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("grid", [*GRIDS, QuantileGrid(3, 5, "linear", 3), QuantileGrid(-2**62, 2**62, "linear", 100),
                                  QuantileGrid(0, 2**62, "log", 200), QuantileGrid(2**60, 2**60 + 300, "linear", 301)])
def test_value_entries_count_each_group_into_the_histograms_bins(grid, at_once, counting, dtype, monkeypatch):
    """em_bins.value_entries against bins counted here one value at a time, whatever the values
    counted at once (one group in slices, groups counted by bincount — several groups' counters
    at once or one group's, each group's positions found in place — or by sorting), for random
    int64s, every bound and its neighbours, int64's extremes; through the bucket table of
    value_positions, or (the last grid: adjacent integers near 2^60, which no double's leading
    bits separate) its binary search. As int32 arrays too (values_sql's INTEGER lists): the values
    clamped to int32's range, compared with candidates that fit int32 or not."""
    if at_once:
        monkeypatch.setattr(em_bins, "VALUES_AT_ONCE", at_once)
    monkeypatch.setattr(em_bins, "SPARSE", 0 if counting == "sort" else 10**9)
    if counting == "one group's counters":
        monkeypatch.setattr(em_bins, "COUNTERS", 1)
    monkeypatch.setattr(em_bins, "BIG_GROUP", 1 if counting == "groups in place" else 10**9)
    assert (em_bins._table(grid) is None) == (grid.lo == 2**60)
    r = random.Random(2)
    rng = np.random.default_rng(2)
    groups = [_hostile(grid, r, 50), [], [b + d for b in grid.bounds() for d in (-1, 0, 1)],
              rng.integers(-2**63, 2**63 - 1, 500, dtype=np.int64).tolist(), [grid.lo] * 40, _hostile(grid, r, 9)]
    if dtype == np.int32:
        groups = [[min(max(v, -2**31), 2**31 - 1) for v in g] for g in groups]
    cands = grid.candidates()
    key_of = {2 * i: c - 1 for i, c in enumerate(cands)} | {2 * i + 1: c for i, c in enumerate(cands)} | {2 * len(cands): 2**63 - 1}
    group, pos, counts = em_bins.value_entries([np.array(g, dtype=dtype) for g in groups], grid)
    assert np.all(np.diff(group * (2 * len(cands) + 1) + pos) > 0)  # ordered by group, then position
    for g, values in enumerate(groups):
        mine = group == g
        assert {key_of[int(p)]: int(n) for p, n in zip(pos[mine], counts[mine])} == _naive_bins(values, grid), g


@pytest.mark.parametrize("q,eps", [(Fraction(1, 2), Fraction(1)), (Fraction(9, 10), Fraction(1, 4)),
                                   (Fraction(1, 4), Fraction(3))])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_draws_of_many_groups_from_values_follow_the_naive_mechanism(q, eps, dtype, monkeypatch, runs_form):
    """quantile.draw over each group's values (the path a quantile-only query takes), in chunks
    of a few groups (SCORE_ENTRIES made small, so that a chunk's boundary that shifted a group
    would draw it from its neighbour's distribution): the same χ² test per group; the values as
    int64 or as int32 arrays (values_sql's INTEGER lists)."""
    monkeypatch.setattr(quantile, "SCORE_ENTRIES", 40)
    grid = QuantileGrid(0, 1000, "log", 30)
    r = random.Random(5)
    shapes = [[int(r.expovariate(1 / 40)) for _ in range(60)], [7] * 30, [3, 900], [],
              [int(r.gauss(300, 50)) for _ in range(15)]]
    n = 4000
    values = [np.array(v, dtype=dtype) if v else None for v in shapes]
    draws = np.array(quantile.draw(values * n, grid, q, eps, seeded_random(21), values=True)).reshape(n, len(shapes))
    for g, group in enumerate(shapes):
        stat, dof = _chi2(draws[:, g], _naive_em(group, grid, q, eps))
        assert stat < _critical(dof), (g, stat, dof)


@pytest.mark.parametrize("q,eps", [(Fraction(1, 2), Fraction(1)), (Fraction(9, 10), Fraction(1, 4)),
                                   (Fraction(1, 4), Fraction(3))])
def test_draws_of_many_groups_follow_the_naive_mechanism(q, eps):
    """quantile.draw over groups of different sizes and spreads (the path a query takes): each
    group's 6,000 seeded draws pass a χ² test (p = 10⁻⁴) against the naive distribution."""
    grid = QuantileGrid(0, 1000, "log", 30)
    r = random.Random(5)
    shapes = [[int(r.expovariate(1 / 40)) for _ in range(60)], [7] * 30, [3, 900], [],
              [int(r.gauss(300, 50)) for _ in range(15)]]
    n = 6000
    hists = _hists(shapes, grid)
    draws = np.array(quantile.draw(hists * n, grid, q, eps, seeded_random(21))).reshape(n, len(shapes))
    for g, values in enumerate(shapes):
        stat, dof = _chi2(draws[:, g], _naive_em(values, grid, q, eps))
        assert stat < _critical(dof), (g, stat, dof)


def test_draws_decided_exactly_follow_the_naive_mechanism(monkeypatch):
    """With MARGIN = 2 no decision is taken in floats: every proposal is uniform (its weight is
    2^32) and every acceptance is guided.less_exp's exact comparison. Same χ² test."""
    monkeypatch.setattr(guided, "MARGIN", 2.0)
    grid = QuantileGrid(0, 20, "linear", 21)
    values = [1, 2, 2, 3, 5, 8, 8, 9, 13, 20, 20, 20]
    q, eps = Fraction(1, 2), Fraction(2)
    n = 3000
    draws = np.array(quantile.draw(_hists([values], grid) * n, grid, q, eps, seeded_random(8)))
    stat, dof = _chi2(draws, _naive_em(values, grid, q, eps))
    assert stat < _critical(dof), (stat, dof)


class _Scripted:
    """A source replaying one uniform_below draw and one 63-bit word (then zeros for more bits)."""

    def __init__(self, y: int, word: int) -> None:
        self.y, self.words = y, [word]

    def uniform_below(self, bounds: np.ndarray) -> np.ndarray:
        assert self.y < int(bounds[0])
        return np.array([self.y], dtype=np.int64)

    def bits63(self, n: int) -> np.ndarray:
        out, self.words = self.words[:n] + [0] * (n - len(self.words[:n])), self.words[n:]
        return np.array(out, dtype=np.int64)


def _exp_decimal(g: Fraction, digits: int = 60) -> Fraction:
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        return Fraction((decimal.Decimal(-g.numerator) / decimal.Decimal(g.denominator)).exp())


@pytest.mark.parametrize("d,num,den", [(1, 1, 3), (5, 7, 10), (40, 1, 2), (3, 894427, 2000000)])
def test_float_decisions_next_to_the_boundary_are_the_exact_ones(d, num, den):
    """U' placed 2^−62 … 2^−30 on either side of e^−γ (γ = d·num/den): every acceptance equals
    the exact comparison U' < e^−γ (e^−γ to 60 digits; U' is 63 bits then zeros)."""
    gamma = Fraction(d * num, den)
    target = _exp_decimal(gamma)
    runs = em_runs.Runs(np.array([0, 1]), np.array([0]), np.array([1]), np.array([d], dtype=np.int64))
    weight = np.exp(-(runs.d.astype(float) * (num / den)))
    a = int(min(math.floor(float(weight[0]) * 2**32 + 2**-8) + 1, 2**32))
    assert Fraction(a, 2**32) >= target  # the proposal's weight covers the mechanism's
    centre = int(target * 2**63)
    for k in [-1] + [s * (1 << e) for e in range(0, 34, 3) for s in (-1, 1)]:
        w = centre + k
        x, v = w >> 31, w & ((1 << 31) - 1)
        if not 0 <= x < a:
            continue
        got = em_runs._round(runs, weight, num, den, _Scripted(x, v << 32))[0]
        exact = Fraction(w, 2**63) < target  # U' = w / 2^63 exactly (the next bits are zeros)
        assert (got == 0) == exact, (k, got, exact)
