"""Tests of DP partition selection (paper 002): dpsql.privacy.pi_opt, selection, tsgd and
selection_analysis.

References: "exact" values come from Lemma 1's recurrence run in 80-digit decimal arithmetic
(independent of the closed form and of the module's integer table); its error is below 1e-60
relative, far below the 5.7e-14 the float closed form steps down by.

The statistical tests at the end (marker ``statistical``) compare empirical frequencies of the
samplers with their probabilities over 200 000 draws from a fixed seed; each check allows 5
standard errors (a correct sampler fails one such check with probability < 6e-7).
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from dpsql.privacy import pi_opt, selection, tsgd
from dpsql.privacy.pi_opt import release_probability
from dpsql.privacy.randomness import SecureRandom
from dpsql.privacy.selection import recurrence_probability, select
from dpsql.privacy.selection_analysis import (
    group_privacy,
    laplace_threshold,
    laplace_threshold_probability,
    midpoint,
    per_partition_budget,
)
from dpsql.privacy.tsgd import (
    sample_truncated_geometric,
    thresholded_release,
    tsgd_release_probability,
    tsgd_threshold,
)
from dpsql.testing import ScriptedWords, seeded_random

EPSILONS = [0.01, 0.03, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
DELTAS = [1e-15, 1e-10, 1e-5, 1e-3, 0.1]
GRID = [(e, d) for e in EPSILONS for d in DELTAS]
REL_TOL = 1e-12


def to_decimal(x: float | Fraction) -> Decimal:
    if isinstance(x, Fraction):
        return Decimal(x.numerator) / Decimal(x.denominator)
    return Decimal(x)  # exact value of the float


def exact_pi(epsilon: float | Fraction, delta: float | Fraction, prec: int = 80) -> list[Decimal]:
    """pi(0), pi(1), ... up to the first 1, by Lemma 1's recurrence in ``prec``-digit decimal."""
    with localcontext() as ctx:
        ctx.prec = prec
        e, d = to_decimal(epsilon), to_decimal(delta)
        up, down = e.exp(), (-e).exp()
        p = [Decimal(0)]
        while p[-1] < 1:
            x = p[-1]
            p.append(min(up * x + d, 1 - down * (1 - x - d), Decimal(1)))
    return p


def exact_at(ref: list[Decimal], n: np.ndarray) -> list[Decimal]:
    return [ref[min(int(k), len(ref) - 1)] for k in n]


def check_below_and_close(values: np.ndarray, ref: list[Decimal], what: str) -> None:
    for k, (v, r) in enumerate(zip(values.tolist(), ref)):
        dv = Decimal(v)
        assert dv <= r, f"{what}: n={k} value {v!r} above the exact {r}"
        if r > 0:
            assert (r - dv) / r <= Decimal(REL_TOL), f"{what}: n={k} relative error {(r - dv) / r}"
        else:
            assert v == 0


# ---------------------------------------------------------------------------------------------
# pi(n): closed form (Theorem 1) vs recurrence (Lemma 1) vs 80-digit exact
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_closed_form_and_recurrence_never_above_exact_and_within_1e12(epsilon, delta):
    ref = exact_pi(epsilon, delta)
    n = np.arange(len(ref) + 3)
    exact = exact_at(ref, n)
    check_below_and_close(release_probability(n, epsilon, delta), exact, "closed form")
    check_below_and_close(recurrence_probability(n, epsilon, delta), exact, "recurrence")
    # the two forms agree with each other too (the brief's "closed form vs recurrence")
    a, b = release_probability(n, epsilon, delta), recurrence_probability(n, epsilon, delta)
    np.testing.assert_allclose(a, b, rtol=REL_TOL, atol=0)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_crossover_points_n1_n2_match_the_recurrence(epsilon, delta):
    """Lemma 4 (n1) and Lemma 5 (n2): where the recurrence switches branches and reaches 1."""
    n1, _, n2 = pi_opt._anchors(epsilon, delta)
    ref = exact_pi(epsilon, delta)
    with localcontext() as ctx:
        ctx.prec = 80
        e, d = Decimal(epsilon), Decimal(delta)
        up, down = e.exp(), (-e).exp()
        first = [k + 1 for k in range(len(ref) - 1)
                 if up * ref[k] + d <= 1 - down * (1 - ref[k] - d)]
    # the first branch is active exactly for the steps into 1..n1
    assert max(first) == n1 and first == list(range(1, n1 + 1))
    # pi(n2) <= 1 is the last value below or at 1 from the second branch; pi(n2 + 1) = 1
    assert len(ref) - 1 in (n2, n2 + 1)
    assert ref[n2 + 1 if n2 + 1 < len(ref) else -1] == 1


def test_fraction_parameters_are_rounded_down_before_the_float_formula():
    # 1/10 and 1/3 are not floats; the value must stay below pi for the exact rationals
    for eps, d in [(Fraction(1, 10), Fraction(1, 10**5)), (Fraction(1, 3), Fraction(1, 10**10)),
                   (Fraction(7, 3), Fraction(1, 7))]:
        ref = exact_pi(eps, d)
        n = np.arange(len(ref) + 2)
        check_below_and_close(release_probability(n, eps, d), exact_at(ref, n), "fraction")
        check_below_and_close(recurrence_probability(n, eps, d), exact_at(ref, n), "fraction rec")


@pytest.mark.parametrize(("epsilon", "delta"),
                         [(0.01, 1e-15), (0.1, 1e-10), (1.0, 1e-5), (10.0, 1e-15), (0.01, 0.1)])
def test_exact_table_is_below_exact_and_within_1e18(epsilon, delta):
    """The rationals q(n) that select() samples: below pi(n) and equal to it to ~1e-20."""
    tab = selection._table(Fraction(epsilon), Fraction(delta))
    ref = exact_pi(epsilon, delta)
    for k, t in enumerate(tab.t):
        q = Fraction(t, 1 << 128)
        r = Fraction(ref[min(k, len(ref) - 1)])
        assert q <= r
        if r > 0:
            assert (r - q) / r < Fraction(1, 10**18)
    assert tab.ones in (len(ref) - 1, len(ref))  # q reaches 1 at pi's n2 + 1 (or one later)


def _exp_lower(eps: Fraction) -> Fraction:
    """An independent lower bound of e^eps (90 digits, minus a margin far above the error)."""
    with localcontext() as ctx:
        ctx.prec = 90
        v = (to_decimal(eps)).exp() - Decimal(10) ** (-80)
    return Fraction(v)


@pytest.mark.parametrize(("epsilon", "delta"), [
    (Fraction(1, 100), Fraction(1, 10**15)), (Fraction(1, 10), Fraction(1, 10**10)),
    (Fraction(1), Fraction(1, 10**5)), (Fraction(10), Fraction(1, 10**15)),
    (Fraction(1, 2), Fraction(1, 10)), (Fraction(3, 7), Fraction(2, 3)),
])
def test_exact_table_satisfies_the_four_dp_inequalities_exactly(epsilon, delta):
    """Paper 002 section 2.1: (1)-(4) for every n, with e^eps replaced by a lower bound (which
    only makes the right-hand sides smaller). This is the (epsilon, delta)-DP proof of select()."""
    tab = selection._table(epsilon, delta)
    q = [Fraction(t, 1 << 128) for t in tab.t] + [Fraction(1)] * 2
    lo = _exp_lower(epsilon)
    assert q[0] == 0
    for a, b in itertools.pairwise(q):
        assert b <= lo * a + delta  # (1)
        assert a <= lo * b + delta  # (2)
        assert 1 - b <= lo * (1 - a) + delta  # (3)
        assert 1 - a <= lo * (1 - b) + delta  # (4)


def test_float_pi_that_is_never_above_exact_can_still_break_delta():
    """Why select() does not sample from the float closed form (docs/partition_selection.md):
    rounded down, pi(n2 + 1) < 1 = pi(n2 + 2), so P[drop] falls from ~5e-14 to 0 in one step
    -- inequality (4) then needs delta >= ~5.6e-14, over 50 times the delta = 1e-15 asked for."""
    eps, d = 1.0, 1e-15
    _, _, n2 = pi_opt._anchors(eps, d)
    p = release_probability(np.array([n2 + 1, n2 + 2]), eps, d)
    assert p[1] == 1.0 and 1.0 - p[0] > 50 * d
    # the exact table has no such step: q(n2 + 1) is 1 there, or 1 - q is below delta
    tab = selection._table(Fraction(eps), Fraction(d))
    assert 1 - Fraction(tab.t[min(n2 + 1, tab.ones)], 1 << 128) <= Fraction(d)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_monotone_and_reaches_one(epsilon, delta):
    _, _, n2 = pi_opt._anchors(epsilon, delta)
    n = np.arange(n2 + 10)
    for f in (release_probability, recurrence_probability):
        p = f(n, epsilon, delta)
        assert p[0] == 0.0
        assert np.all(np.diff(p) >= 0)
        assert np.all(p[n2 + 2:] == 1.0)
        assert f(10**9, epsilon, delta) == 1.0
        assert f(1e9, epsilon, delta) == 1.0  # integral float counts are accepted


# ---------------------------------------------------------------------------------------------
# Special cases (Theorem 2) and edge values
# ---------------------------------------------------------------------------------------------


def test_theorem2_delta_zero_releases_nothing():
    n = np.array([0, 1, 5, 10**9])
    assert np.all(release_probability(n, 1.0, 0.0) == 0)
    assert np.all(recurrence_probability(n, 1.0, 0.0) == 0)
    assert not select(n, Fraction(1), 0, seeded_random(1)).any()
    assert not select(n, 0, 0, seeded_random(1)).any()


@pytest.mark.parametrize("delta", [1e-15, 1e-5, 0.25, 0.3, Fraction(1, 3)])
def test_theorem2_epsilon_zero_is_min_1_n_delta(delta):
    n = np.array([0, 1, 2, 3, 4, 5, 1000, 10**9])
    exact = [min(Fraction(1), k * Fraction(delta)) for k in n.tolist()]
    for f in (release_probability, recurrence_probability):
        p = f(n, 0, delta)
        for v, x in zip(p.tolist(), exact):
            assert Fraction(v) <= x and (x == 0 or (x - Fraction(v)) / x < Fraction(1, 10**12))
            if x == 1 and Fraction(float(delta)) == delta:  # 1/3 is rounded down first
                assert v == 1.0
    # and the recurrence itself (Lemma 1 at eps = 0) gives the same numbers
    ref = exact_pi(0.0, Decimal(1) / 4 if delta == 0.25 else 0.25)
    assert [float(r) for r in ref] == [0, 0.25, 0.5, 0.75, 1]


def test_small_epsilon_tends_to_theorem2():
    n = np.array([1, 2, 10, 100])
    np.testing.assert_allclose(release_probability(n, 1e-9, 1e-3), n * 1e-3, rtol=1e-6)


@pytest.mark.parametrize("epsilon", [0.01, 10.0])
@pytest.mark.parametrize("delta", [1e-15, 0.1])
def test_edge_values(epsilon, delta):
    p = release_probability(np.array([0, 1, 10**9]), epsilon, delta)
    assert p[0] == 0.0
    assert p[1] <= delta and (delta - p[1]) / delta < REL_TOL  # pi(1) = delta
    assert p[2] == 1.0
    assert release_probability(1, epsilon, delta).shape == ()
    assert release_probability([[1, 2], [3, 4]], epsilon, delta).shape == (2, 2)


def test_large_epsilon_does_not_overflow():
    p = release_probability(np.arange(6), 800.0, 1e-10)
    assert p[1] <= 1e-10 and p[2] == pytest.approx(1.0) and np.all(np.isfinite(p))


@pytest.mark.parametrize(("bad", "exc"), [
    ({"n": -1}, ValueError), ({"n": 1.5}, ValueError), ({"n": True}, TypeError),
    ({"epsilon": -0.1}, ValueError), ({"delta": 1.5}, ValueError),
    ({"delta": -1e-9}, ValueError), ({"epsilon": float("nan")}, ValueError),
    ({"epsilon": "1"}, TypeError),
])
def test_bad_arguments_are_refused(bad, exc):
    args = {"n": 3, "epsilon": 1.0, "delta": 1e-5} | bad
    with pytest.raises(exc):
        release_probability(**args)


def test_mechanisms_refuse_float_parameters():
    rng = seeded_random(0)
    with pytest.raises(TypeError):
        select([1, 2], 0.5, Fraction(1, 10**6), rng)
    with pytest.raises(TypeError):
        select([1, 2], Fraction(1, 2), 1e-6, rng)
    with pytest.raises(TypeError):
        thresholded_release([1, 2], 0.5, Fraction(1, 10**6), rng)
    with pytest.raises(TypeError):
        group_privacy(0.5, Fraction(1, 10**6), 2)


def test_tiny_epsilon_table_is_refused_not_run_forever():
    # pi reaches 1 only after ~1e6 units here (about min(1/delta, 2 ln(1/delta)/eps))
    with pytest.raises(ValueError, match="too small"):
        select([1], Fraction(1, 10**7), Fraction(1, 10**6), seeded_random(0))


# ---------------------------------------------------------------------------------------------
# select(): the exact Bernoulli draws
# ---------------------------------------------------------------------------------------------




def test_tie_is_finished_on_the_low_bits():
    rem = (5 << 2) | 2  # 65 low bits: 63 bits "5", then the two bits "10"
    assert selection._finish_tie(rem, 65, ScriptedWords([4])) is True
    assert selection._finish_tie(rem, 65, ScriptedWords([6])) is False
    assert selection._finish_tie(rem, 65, ScriptedWords([5, 1 << 61])) is True  # next bits 01 < 10
    assert selection._finish_tie(rem, 65, ScriptedWords([5, 3 << 61])) is False  # 11 > 10
    assert selection._finish_tie(rem, 65, ScriptedWords([5, 2 << 61])) is False  # all equal: V >= q


def test_select_uses_the_table_and_one_word_per_partition():
    eps, d = Fraction(1), Fraction(1, 10**5)
    tab = selection._table(eps, d)
    n = np.array([3, 12, 0, 50])
    hi = [int(tab.hi[3]), int(tab.hi[12])]
    low12 = tab.t[12] & ((1 << 65) - 1)
    # word below q(3)'s top bits -> keep; tie on q(12) -> decided by the next word against its
    # low bits; n = 0 with word 0 (a tie at q = 0) -> drop; n = 50 -> always kept
    next_word = ((low12 >> 2) - 1) if (low12 >> 2) > 0 else (1 << 63) - 1
    rng = ScriptedWords([hi[0] - 1, hi[1], 0, 123, next_word, 0, 0])  # n = 0's tie reads 63 + 2 bits
    out = select(n, eps, d, rng)
    assert out.tolist() == [True, (low12 >> 2) > 0, False, True]


def test_select_shapes_and_extremes():
    rng = seeded_random(3)
    eps, d = Fraction(1, 2), Fraction(1, 10**6)
    assert select(np.zeros((0,), dtype=np.int64), eps, d, rng).shape == (0,)
    out = select(np.array([[0, 10**9], [0, 10**6]]), eps, d, rng)
    assert out.shape == (2, 2) and out.tolist() == [[False, True], [False, True]]
    assert select([1, 1, 1], eps, 1, rng).all()  # delta = 1: pi(n >= 1) = 1
    assert select(7, eps, d, rng).shape == ()


def test_select_runs_on_the_secure_source_by_default():
    assert select([10**6], Fraction(1), Fraction(1, 10**5)).tolist() == [True]
    assert select([10**6], Fraction(1), Fraction(1, 10**5), SecureRandom()).tolist() == [True]


# ---------------------------------------------------------------------------------------------
# The truncated geometric form (Definitions 6-8, Theorems 4-6)
# ---------------------------------------------------------------------------------------------


def p_x_equals_k(epsilon: Decimal, k: int) -> Decimal:
    """P[X = k] of the k-TSGD with p = 1 - e^-eps (Definition 7), in decimal."""
    em = (-epsilon).exp()
    return (-k * epsilon).exp() * (1 - em) / (1 + em - 2 * (-(k + 1) * epsilon).exp())


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_tsgd_threshold_is_the_smallest_k_with_p_k_below_delta(epsilon, delta):
    k = tsgd_threshold(epsilon, delta)
    with localcontext() as ctx:
        ctx.prec = 80
        e, d = Decimal(epsilon), Decimal(delta)
        assert p_x_equals_k(e, k) <= d
        assert k == 1 or p_x_equals_k(e, k - 1) > d
        # Definition 7's formula
        t = ((e.exp() - 1 + 2 * d) / ((e.exp() + 1) * d)).ln() / e
    assert k == max(1, math.ceil(t))


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_tsgd_release_probability_is_pi_opt_of_delta_hat_and_below_pi_opt(epsilon, delta):
    k = tsgd_threshold(epsilon, delta)
    n = np.arange(2 * k + 4)
    p = tsgd_release_probability(n, epsilon, delta)
    assert p[0] == 0 and np.all(np.diff(p) >= 0) and np.all(p[2 * k + 1:] == 1)
    # never better than the optimum (Theorem 1: every DP primitive is below pi_opt)
    assert np.all(p <= release_probability(n, epsilon, delta) * (1 + 1e-9))
    # Theorem 5: it *is* the optimum for delta_hat = P[X = k]
    delta_hat = tsgd._tsgd_delta_hat(epsilon, k)
    assert delta_hat <= delta * (1 + 1e-12)
    np.testing.assert_allclose(p, release_probability(n, epsilon, delta_hat), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize(("epsilon", "k"), [(1.0, 5), (0.1, 40), (0.5, 1)])
def test_theorem5_integer_k_makes_thresholding_optimal(epsilon, k):
    """delta with (1/eps) ln((e^eps + 2 delta - 1)/((e^eps + 1) delta)) = k exactly: then
    n2 = 2k + 1 and pi_opt(n) = P[n + X >= k + 1] for every n."""
    e = math.exp(epsilon)
    delta = (e - 1) / (math.exp(k * epsilon) * (e + 1) - 2) * (1 + 1e-12)  # just on the safe side
    assert tsgd_threshold(epsilon, delta) == k
    n = np.arange(2 * k + 5)
    np.testing.assert_allclose(tsgd_release_probability(n, epsilon, delta),
                               release_probability(n, epsilon, delta), rtol=1e-9, atol=1e-15)
    _, _, n2 = pi_opt._anchors(epsilon, delta)
    assert n2 in (2 * k, 2 * k + 1)  # 2k + 1 at the exact tie (Theorem 5's proof)


def test_thresholded_release_properties():
    eps, d = Fraction(1, 2), Fraction(1, 10**6)
    k = tsgd_threshold(eps, d)
    n = np.array([0] * 1000 + [1] * 1000 + [k] * 1000 + [3 * k] * 1000)
    released, counts = thresholded_release(n, eps, d, seeded_random(11))
    assert released.shape == n.shape and counts.dtype == np.int64
    assert counts.size == released.sum()
    assert not released[:1000].any()  # n = 0 is never released (noise <= k)
    assert released[3000:].all()  # n >= 2k + 1 always is
    assert np.all(counts > k)
    assert np.all(np.abs(counts - n[released]) <= k)


def test_truncated_geometric_sampler_stays_in_range_and_refuses_bad_arguments():
    x = sample_truncated_geometric(Fraction(1, 10), 3, seeded_random(5), size=20000)
    assert x.min() >= -3 and x.max() <= 3 and x.dtype == np.int64
    with pytest.raises(ValueError):
        sample_truncated_geometric(Fraction(1), 0, seeded_random(5))
    with pytest.raises(ValueError):
        thresholded_release([1], Fraction(1), 0, seeded_random(5))


# ---------------------------------------------------------------------------------------------
# Laplace baseline, mid-points, accounting helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_laplace_is_dp_hence_below_the_optimum(epsilon, delta):
    tau = laplace_threshold(epsilon, delta)
    n = np.arange(int(tau) + 3 * int(1 / epsilon) + 30)
    p = laplace_threshold_probability(n, epsilon, delta)
    assert p[0] == 0 and p[1] == pytest.approx(delta, rel=1e-12)  # Definition 9: pi_Lap(1) = delta
    assert np.all(np.diff(p) >= 0)
    assert np.all(p <= release_probability(n, epsilon, delta) * (1 + 1e-12))


def test_midpoints():
    # opt mid-point never above Laplace's; truncated geometric's is k + 1
    for eps, d in GRID:
        m_opt = midpoint(eps, d)
        assert release_probability(m_opt, eps, d) >= 0.5 > release_probability(m_opt - 1, eps, d)
        m_lap = midpoint(eps, d, "laplace")
        assert m_lap == max(1, math.ceil(laplace_threshold(eps, d)))
        assert m_opt <= m_lap
        assert midpoint(eps, d, "truncated_geometric") == tsgd_threshold(eps, d) + 1
    # levels (the dashed 5% / 95% lines of Figures 2-3)
    eps, d = 0.1, 1e-5
    lo, mid, hi = (midpoint(eps, d, level=x) for x in (0.05, 0.5, 0.95))
    assert lo < mid < hi
    assert release_probability(hi, eps, d) >= 0.95 > release_probability(hi - 1, eps, d)
    assert midpoint(eps, d, level=1.0) == pi_opt._anchors(eps, d)[2] + 1
    assert midpoint(0, Fraction(1, 100)) == 50
    tau = laplace_threshold(eps, d)
    assert midpoint(eps, d, "laplace", level=0.95) == math.ceil(tau - math.log(0.1) / eps)
    with pytest.raises(ValueError):
        midpoint(eps, d, "gaussian")


def test_laplace_gap_is_constant_in_delta():
    """Figure 3's observation: for a fixed epsilon the two mid-points are a constant distance
    apart: tau - mid_opt is ~ (1/eps) ln((e^eps + 1)/(2 (e^eps - 1))) + O(1), whatever delta."""
    for eps in (0.1, 1.0):
        deltas = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4)
        gaps = [laplace_threshold(eps, d) - midpoint(eps, d) for d in deltas]
        assert max(gaps) - min(gaps) <= 1.0 + 1e-9  # integer rounding of mid_opt only


def test_group_privacy():
    eps, d = Fraction(1, 2), Fraction(1, 10**6)
    assert group_privacy(eps, d, 1) == (eps, d)
    for k in (2, 3, 10, 50):
        ek, dk = group_privacy(eps, d, k)
        assert ek == k * eps
        exact = float(d) * math.expm1(k * float(eps)) / math.expm1(float(eps))
        if exact >= 1:
            assert dk == 1  # capped: a delta of 1 says nothing
            continue
        assert float(dk) >= exact and float(dk) == pytest.approx(exact, rel=1e-15)
        assert dk <= k * Fraction(math.exp((k - 1) * float(eps))) * d * (1 + Fraction(1, 10**12))
        # tight for the optimal primitive: pi(k) = delta_k while k <= n1 (pi(0) = 0)
        n1 = pi_opt._anchors(float(eps), float(d))[0]
        if k <= n1:
            assert float(release_probability(k, eps, d)) == pytest.approx(float(dk), rel=1e-12)
    assert group_privacy(0, Fraction(1, 10), 3) == (0, Fraction(3, 10))
    assert group_privacy(Fraction(1), 0, 4) == (4, 0)
    assert group_privacy(Fraction(5), Fraction(1, 10), 10)[1] == 1  # capped


def test_per_partition_budget():
    assert per_partition_budget(Fraction(1), Fraction(1, 10**5), 3) == (
        Fraction(1, 3), Fraction(1, 3 * 10**5))
    with pytest.raises(ValueError):
        per_partition_budget(Fraction(1), Fraction(1, 10**5), 0)


# ---------------------------------------------------------------------------------------------
# Statistical tests: 200 000 draws per configuration, fixed seeds, 5 standard errors
# ---------------------------------------------------------------------------------------------

TRIALS = 200_000
Z = 5.0


def assert_frequency(hits: int, p: float, trials: int, what: str) -> None:
    se = math.sqrt(max(p * (1 - p), 1e-300) / trials)
    freq = hits / trials
    if p in (0.0, 1.0):
        assert freq == p, what
    else:
        z = (freq - p) / se
        assert abs(z) <= Z, f"{what}: frequency {freq} vs {p} ({z:.1f} SE)"


@pytest.mark.statistical
@pytest.mark.parametrize(("epsilon", "delta", "ns"), [
    (Fraction(1), Fraction(1, 10**5), [1, 6, 9, 11, 12, 13, 16, 22, 23]),
    (Fraction(1, 10), Fraction(1, 10**10), [120, 190, 201, 215, 260]),
    (Fraction(1, 100), Fraction(1, 10**15), [2800, 2925, 3100]),
    (Fraction(5), Fraction(1, 1000), [1, 2, 3]),
    (Fraction(0), Fraction(1, 3), [1, 2, 3]),
])
def test_select_frequency_matches_pi(epsilon, delta, ns):
    rng = seeded_random(20260611)
    n = np.repeat(np.array(ns), TRIALS)
    kept = select(n, epsilon, delta, rng).reshape(len(ns), TRIALS).sum(axis=1)
    p = release_probability(np.array(ns), epsilon, delta)
    for k, hits, pk in zip(ns, kept.tolist(), p.tolist()):
        assert_frequency(hits, pk, TRIALS, f"n={k}")


@pytest.mark.statistical
def test_thresholded_release_frequency_matches_eq8():
    eps, d = Fraction(1), Fraction(1, 10**5)
    ns = [6, 11, 12, 14, 20, 23]
    n = np.repeat(np.array(ns), TRIALS)
    released, _ = thresholded_release(n, eps, d, seeded_random(7))
    p = tsgd_release_probability(np.array(ns), eps, d)
    hits = released.reshape(len(ns), TRIALS).sum(axis=1).tolist()
    for k, h, pk in zip(ns, hits, p.tolist()):
        assert_frequency(h, pk, TRIALS, f"n={k}")


@pytest.mark.statistical
@pytest.mark.parametrize(("epsilon", "k"),
                         [(Fraction(1, 2), 6), (Fraction(1, 10), 25), (Fraction(2), 1)])
def test_truncated_geometric_pmf(epsilon, k):
    x = sample_truncated_geometric(epsilon, k, seeded_random(99), size=TRIALS)
    support = np.arange(-k, k + 1)
    w = np.exp(-float(epsilon) * np.abs(support))
    pmf = w / w.sum()  # Definition 6: c (1 - p)^|x| with 1 - p = e^-eps
    counts = np.array([(x == v).sum() for v in support])
    assert counts.sum() == TRIALS
    for v, c, pv in zip(support.tolist(), counts.tolist(), pmf.tolist()):
        assert_frequency(c, pv, TRIALS, f"x={v}")
