"""The float-guided exact samplers (dpsql.privacy.guided): the distributions, the exact finish,
and that a decision taken in floats is the decision exact arithmetic takes.

Small batches (at most SMALL_BATCH cells) run one Python loop, larger ones numpy rounds; both are
tested against the exact pmf with fixed seeds. MARGIN forced above 1 sends every comparison to the
exact finish, which is tested the same way. Words chosen next to the boundaries (2^-62 .. 2^-36
away from exp(-g)) check the float decisions against exact ones.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest

from dpsql.privacy import guided
from dpsql.privacy.guided import SMALL_BATCH, _exp_bounds, _Lazy, _trial_exact, less_exp
from dpsql.privacy.mechanisms import discrete_gaussian_variance, discrete_laplace_variance
from dpsql.privacy.randomness import SecureRandom
from dpsql.privacy.samplers import sample_discrete_gaussian, sample_discrete_laplace
from dpsql.testing import seeded_random
from tests.test_noise_distribution import chi2_critical, chi2_fit, dg_pmf, dlap_pmf

pytestmark = pytest.mark.statistical

N = 40_000


def _batches(sample, param, seed: int, batch: int) -> np.ndarray:
    rng = seeded_random(seed)
    return np.concatenate([sample(param, rng, size=batch) for _ in range(N // batch)])


@pytest.mark.parametrize("batch", [1, SMALL_BATCH, 5000])
@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(25), Fraction(10**6, 7)])
def test_batch_discrete_gaussian(sigma2, batch):
    x = _batches(sample_discrete_gaussian, sigma2, 7000 + batch, batch)
    var = float(discrete_gaussian_variance(sigma2))
    assert abs(x.mean()) < 5 * (var / x.size) ** 0.5
    assert abs(x.var() - var) < 5 * var * (3.0 / x.size) ** 0.5  # 4th moment ~ 3 var^2
    support, pmf = dg_pmf(sigma2, int(12 * var**0.5) + 5)
    stat, dof = chi2_fit(x, support, pmf)
    assert stat < chi2_critical(dof)


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(10), Fraction(7, 3)])
@pytest.mark.parametrize("batch", [8, 5000])
def test_batch_discrete_laplace(scale, batch):
    x = _batches(sample_discrete_laplace, scale, 8000 + batch, batch)
    var = float(discrete_laplace_variance(scale))
    assert abs(x.mean()) < 5 * (var / x.size) ** 0.5
    support, pmf = dlap_pmf(scale, int(30 * float(scale)) + 5)
    stat, dof = chi2_fit(x, support, pmf)
    assert stat < chi2_critical(dof)


def test_scalar_path_mixed_parameters_keep_their_order():
    cells = [Fraction(1, 100), Fraction(10**8)] * 16  # tiny and huge sigma alternate
    x = sample_discrete_gaussian(cells, seeded_random(9000))
    assert x.dtype == np.int64 and x.size == 32
    assert np.all(np.abs(x[0::2]) <= 1)  # P(|Y| >= 2) < 1e-80 for sigma^2 = 1/100
    assert np.abs(x[1::2]).max() > 100  # P(all 16 |Y| <= 100) < 1e-30 for sigma = 10^4


def test_randbelow_uniform_and_exact_edges():
    rng = seeded_random(9100)
    assert rng.randbelow(1) == 0
    with pytest.raises(ValueError):
        rng.randbelow(0)
    big = (1 << 200) + 12345  # far beyond int64: Python ints
    assert all(0 <= rng.randbelow(big) < big for _ in range(200))
    bound = 6
    counts = np.bincount([rng.randbelow(bound) for _ in range(60_000)], minlength=bound)
    stat = float(((counts - 10_000) ** 2 / 10_000).sum())
    assert stat < chi2_critical(bound - 1)


def test_forked_child_does_not_reuse_the_parents_pool():
    rng = SecureRandom()
    rng.randbelow(2)  # fills the pool
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw the next 64 bits from its (dropped) pool
        os.close(r)
        os.write(w, rng.randbelow(1 << 64).to_bytes(8, "little"))
        os._exit(0)
    os.close(w)
    child = int.from_bytes(os.read(r, 8), "little")
    os.close(r)
    os.waitpid(pid, 0)
    assert child != rng.randbelow(1 << 64)  # equal w.p. 2^-64 if the pools are independent


def test_parameters_outside_the_float_range_use_the_integer_sampler_in_place():
    tiny, huge, usual = Fraction(1, 1 << 30), Fraction(10**30), Fraction(25)
    assert not guided.in_range(tiny, True) and not guided.in_range(huge, True)
    assert guided.in_range(usual, True)
    for n in (6, 300):  # the small-batch loop and the numpy rounds
        x = sample_discrete_gaussian([tiny, huge, usual] * (n // 3), seeded_random(9200 + n))
        assert np.all(x[0::3] == 0)  # P(|Y| >= 1) < 1e-10^8 for sigma^2 = 2^-30
        assert np.abs(x[1::3]).min() > 10**9  # sigma = 10^15: |Y| <= 10^9 w.p. < 1e-6 each
        assert np.abs(x[2::3]).max() < 60  # 12 sigma


def _counting_exact():
    """_trial_exact, counting its calls: shows that the exact finish ran."""
    calls = {"exact": 0}
    real = guided._trial_exact

    def counting(*a, **k):
        calls["exact"] += 1
        return real(*a, **k)

    return calls, counting


@pytest.mark.parametrize("batch", [4, 400])
def test_exact_finish_alone_has_the_right_distribution(monkeypatch, batch):
    """MARGIN = 2 makes no float decision possible: every trial is decided by _trial_exact."""
    calls, counting = _counting_exact()
    monkeypatch.setattr(guided, "MARGIN", 2.0)
    monkeypatch.setattr(guided, "_trial_exact", counting)
    n = 6000
    rng = seeded_random(9300 + batch)
    s2 = Fraction(25)
    x = np.concatenate([sample_discrete_gaussian(s2, rng, size=batch) for _ in range(n // batch)])
    assert calls["exact"] >= n  # every sample came through the exact finish
    support, pmf = dg_pmf(s2, 70)
    stat, dof = chi2_fit(x, support, pmf)
    assert stat < chi2_critical(dof)
    b = Fraction(7, 3)
    x = np.concatenate([sample_discrete_laplace(b, rng, size=batch) for _ in range(n // batch)])
    support, pmf = dlap_pmf(b, 80)
    stat, dof = chi2_fit(x, support, pmf)
    assert stat < chi2_critical(dof)


def test_exp_bounds_bracket_and_tighten():
    for g in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(355, 113), Fraction(10**6, 7), Fraction(1, 10**12)):
        lo, hi = _exp_bounds(g, 30)
        lo2, hi2 = _exp_bounds(g, 90)
        assert lo <= lo2 <= hi2 <= hi  # both bracket the same number
        assert 0 < hi - lo <= hi * (g + 1) * Fraction(1, 10**28)  # the rounding of g, times g
        assert abs(float(lo2) - math.exp(-float(g))) <= 1e-15 * math.exp(-float(g)) + 1e-300


class Words:
    """A random source replaying given 63/64-bit words, then failing: the test knows every draw."""

    def __init__(self, words64=(), words63=()):
        self.w64, self.w63 = list(words64), list(words63)

    def word64(self):
        return self.w64.pop(0)

    def bits63(self, n):
        out, self.w63 = self.w63[:n], self.w63[n:]
        assert len(out) == n, "the sampler drew more words than the test gave"
        return np.array(out, dtype=np.int64)


def _boundary_word(g: Fraction, offset: int) -> int:
    """The 63-bit word w with w / 2^63 = exp(-g) rounded down, moved by ``offset`` words."""
    lo, _ = _exp_bounds(g, 60)
    return min(max(int(lo * (1 << 63)) + offset, 0), (1 << 63) - 1)


OFFSETS = [-(1 << 44), -(1 << 42), -(1 << 40), -(1 << 26), -(1 << 23) - 7, -(1 << 23) + 7, -(1 << 20), -1,
           1, 1 << 20, (1 << 23) - 7, (1 << 23) + 7, 1 << 26, 1 << 40, 1 << 42, 1 << 44]
# 2^23 words = 2^-40 = MARGIN; 2^40..2^44 words put -t ln U about 2^-19..2^-14 from an integer,
# around the small batches' log margin (2^-16)


def _adversarial_trials(t: int, p: int, q: int, rng: np.random.Generator):
    """Trials (x64, wc) whose U sits next to a geometric boundary exp(-k/t), or whose acceptance
    uniform sits next to exp(-gamma) for the trial's exact geometric."""
    for _ in range(12):
        k = int(rng.integers(0, 4 * t))
        for off in OFFSETS:
            w = _boundary_word(Fraction(k, t), off)
            yield (int(rng.integers(0, 2)) << 63) | w, int(rng.integers(0, 1 << 63))
            mid = _boundary_word(Fraction(2 * k + 1, 2 * t), 0)  # U well inside: G = k surely
            m = k * t * q - p
            yield mid, _boundary_word(Fraction(m * m, 2 * p * q * t * t), off)  # sign +


def _no_more():
    raise AssertionError("63 bits should decide a word this far from the boundary")


_geometric_exact = guided._geometric_exact


@pytest.mark.parametrize("p,q", [(25, 1), (1000, 3), (10**13, 7)])
def test_float_decisions_next_to_the_boundaries_are_the_exact_ones(p, q):
    t = math.isqrt(p // q) + 1
    rng = np.random.default_rng(9400 + p)
    trials = list(_adversarial_trials(t, p, q, rng))
    exact = [_trial_exact(x & ((1 << 63) - 1), bool(x >> 63), wc, (1, t), (p, q, t), _no_more)
             for x, wc in trials]
    assert any(e is None for e in exact) and any(e is not None for e in exact)
    # one small-batch draw per trial: a trial the exact finish rejects is followed by a marker
    # trial that is surely accepted (U = 1/2 - its exact value is computed the same way)
    marker = (1 << 62, 0)
    marker_y = _trial_exact(1 << 62, False, 0, (1, t), (p, q, t), _no_more)
    assert marker_y is not None
    for (x, wc), e in zip(trials, exact):
        got = guided._one_gauss(p, q, t, Words([x, wc, *marker]).word64)
        assert got == (marker_y if e is None else e), (x, wc, e, got)
    # the numpy rounds: one cell takes the first accepted trial of its round's stream (the trial,
    # then markers); one draw a round: U's words, the acceptance words, then the sign words
    r = guided.trials_for(1)
    for (x, wc), e in zip(trials, exact):
        signs = [x >> 63] + [0] * ((r + 62) // 63 - 1)  # bit j of the sign words: trial j's sign
        src = Words(words63=[x & ((1 << 63) - 1)] + [1 << 62] * (r - 1) + [wc] + [0] * (r - 1) + signs)
        got = guided._vector([(1, t)], [(p, q, t)], np.zeros(1, dtype=np.int64), src)[0]
        assert got == (marker_y if e is None else e), (x, wc, e, got)


def test_less_exp_on_a_straddling_prefix_draws_more_bits():
    g = Fraction(1, 3)
    w = _boundary_word(g, 0)  # exp(-1/3) lies inside [w, w + 1) / 2^63: 63 bits cannot decide
    lo, hi = _exp_bounds(g, 80)
    for nxt in (0, (1 << 63) - 1, 12345 << 40):
        u = _Lazy(w, Words(words63=[nxt]).bits63(1).item)
        u.word = lambda nxt=nxt: nxt
        got = less_exp(u, g)
        assert u.bits > 63  # it had to look further
        value = Fraction(u.v, 1 << u.bits)
        assert got == (value + Fraction(1, 1 << u.bits) <= lo) and (got or value >= hi)
