"""Units in up to kappa groups (issue 31): paper 002 section 5 / Figure 4, and P(u) over groups.

Oracles are written here, independently of dpsql.privacy.selection_kappa and of P(u) in
dpsql.privacy.policy_function: Theorem 1's closed
form of pi_opt, [BW18] Theorem 8 and the Gaussian tail through math.erf, and the Renyi
divergence of two Gaussian cells by numerical integration.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpsql.privacy.policy_function import group_splits, unit_policy_bound, unit_policy_loss
from dpsql.privacy.selection import select
from dpsql.privacy.selection_kappa import (
    analytic_gaussian_sigma,
    choose,
    gaussian_thresholding,
    kappa_midpoints,
    optimal_kappa_budget,
    select_kappa,
)
from dpsql.testing import seeded_random

D5 = Fraction(1, 10**5)


def phi(x: float) -> float:
    """Standard normal CDF, the textbook way (erf, not erfc)."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def bw18_delta(sigma: float, eps: float, l2: float) -> float:
    """[BW18] Theorem 8: the exact delta of N(0, sigma^2) at L2 sensitivity l2 and epsilon."""
    return phi(l2 / (2 * sigma) - eps * sigma / l2) - math.exp(eps) * phi(-l2 / (2 * sigma) - eps * sigma / l2)


def pi_theorem1(n: int, eps: float, delta: float) -> float:
    """Paper 002 Theorem 1, written from the paper."""
    e = math.exp(eps)
    n1 = 1 + math.floor(math.log((e + 2 * delta - 1) / ((e + 1) * delta)) / eps)
    p1 = delta * (math.exp(n1 * eps) - 1) / (e - 1)
    n2 = n1 + math.floor(math.log(1 + (e - 1) / delta * (1 - p1)) / eps)
    if n <= 0:
        return 0.0
    if n <= n1:
        return delta * (math.exp(n * eps) - 1) / (e - 1)
    if n <= n2:
        m = n - n1
        return (1 - math.exp(-m * eps)) * (1 + delta / (e - 1)) + math.exp(-m * eps) * p1
    return 1.0


# ---------------------------------------------------------------------------------------------
# Figure 4 and the paper's rule
# ---------------------------------------------------------------------------------------------

# Computed at eps = 1, delta = 1e-5 (docs/partition_selection.md, "kappa > 1"); the paper prints no
# numbers, only the axes (kappa 1..7, n up to 80) and that the curves cross at kappa = 3.
FIG4 = {1: (12, 12, 19), 2: (23, 25, 27), 3: (33, 37, 33), 4: (44, 50, 38),
        5: (55, 64, 43), 6: (66, 77, 47), 7: (77, 91, 51)}


@pytest.mark.parametrize("kappa", sorted(FIG4))
def test_figure4_midpoints(kappa):
    m = kappa_midpoints(1.0, 1e-5, kappa)
    assert (m["optimal"], m["laplace"], m["gaussian"]) == FIG4[kappa]
    assert m["gaussian"] == math.ceil(m["gaussian_threshold"])


def test_figure4_crossing_is_at_kappa_3_as_the_paper_states():
    """Section 6: pi_opt for kappa <= 3, Gaussian thresholding for kappa >= 4 (eps 1, delta 1e-5).
    At kappa = 3 the integer mid-points tie (33) while the Gaussian's real threshold is just below:
    the curves cross there."""
    methods = [choose(1, D5, k).method for k in range(1, 8)]
    assert methods == ["optimal"] * 3 + ["gaussian"] * 4
    assert 32 < kappa_midpoints(1.0, 1e-5, 3)["gaussian_threshold"] < 33


def test_the_rule_is_computed_not_fixed_at_kappa_3():
    """At eps = 1/2, delta = 1e-5 Gaussian thresholding is lower already at kappa = 3 (61 vs 62)."""
    c = choose(Fraction(1, 2), D5, 3)
    assert (c.method, c.optimal_midpoint, c.gaussian_midpoint) == ("gaussian", 62, 61)
    assert choose(Fraction(1, 2), D5, 2).method == "optimal"


def test_optimal_midpoint_matches_theorem1_with_the_budget_divided():
    for k in (1, 2, 5):
        eps, d = 1.0 / k, 1e-5 / k
        naive = next(n for n in range(1, 10_000) if pi_theorem1(n, eps, d) >= 0.5)
        assert kappa_midpoints(1.0, 1e-5, k)["optimal"] == naive


@pytest.mark.parametrize("eps,delta", [(Fraction(1, 10), D5), (Fraction(1, 2), Fraction(1, 10**8)),
                                       (1, Fraction(1, 10**10)), (2, D5)])
def test_kappa_1_is_todays_selection(eps, delta):
    assert optimal_kappa_budget(eps, delta, 1) == (Fraction(eps), Fraction(delta))
    c = choose(eps, delta, 1)
    assert c.method == "optimal" and c.optimal_midpoint < c.gaussian_midpoint  # Theorem 3
    n = np.arange(0, 200)
    assert np.array_equal(select_kappa(n, eps, delta, 1, seeded_random(5)),
                          select(n, eps, delta, seeded_random(5)))


def test_budget_is_divided_by_kappa():
    assert optimal_kappa_budget(1, D5, 4) == (Fraction(1, 4), Fraction(1, 4 * 10**5))
    assert choose(1, D5, 4).optimal_budget == (Fraction(1, 4), Fraction(1, 4 * 10**5))


def test_unit_loss_of_the_chosen_method():
    opt = choose(1, D5, 2)  # pi_opt at (1/2, 1e-5/2)
    assert opt.method == "optimal"
    assert opt.unit_loss(1) == (Fraction(1, 8), D5 / 2)  # (eps/kappa)^2/2, delta/kappa
    assert opt.unit_loss(2) == (Fraction(1, 4), D5)
    with pytest.raises(ValueError):
        opt.unit_loss(3)
    gau = choose(1, D5, 5)
    assert gau.method == "gaussian"
    rho, delta = gau.unit_loss(2)
    assert rho == Fraction(2) / (2 * Fraction(gau.gaussian.sigma) ** 2)
    p = 1 - phi((gau.gaussian.threshold - 1) / gau.gaussian.sigma)
    assert math.isclose(float(delta), 1 - (1 - p) ** 2, rel_tol=1e-6)


def test_select_kappa_keeps_with_pi_at_the_divided_budget():
    """The keep rate of select_kappa at kappa = 3 is Theorem 1's pi at (eps/3, delta/3), not at
    (eps, delta): at n = 33 they are 0.51 and 1.0."""
    kappa, n_val, trials = 3, 33, 20_000
    expected = pi_theorem1(n_val, 1 / kappa, 1e-5 / kappa)
    assert 0.4 < expected < 0.6 and pi_theorem1(n_val, 1.0, 1e-5) == 1.0
    kept = select_kappa(np.full(trials, n_val), 1, D5, kappa, seeded_random(17)).mean()
    assert abs(kept - expected) < 5 * math.sqrt(expected * (1 - expected) / trials)


def test_midpoints_grow_with_kappa_and_gaussian_grows_slower():
    rows = [kappa_midpoints(Fraction(1, 2), Fraction(1, 10**8), k) for k in range(1, 9)]
    for key in ("optimal", "laplace", "gaussian"):
        assert all(a[key] < b[key] for a, b in zip(rows, rows[1:]))
    # pi_opt's mid-point grows about linearly in kappa, the Gaussian's about as sqrt(kappa)
    assert rows[7]["optimal"] > 7 * rows[0]["optimal"]
    assert rows[7]["gaussian"] < 4 * rows[0]["gaussian"]
    assert choose(Fraction(1, 2), Fraction(1, 10**8), 8).method == "gaussian"


# ---------------------------------------------------------------------------------------------
# Gaussian thresholding, against [BW18] Theorem 8 and the Gaussian tail written here
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,delta,l2", [(1.0, 1e-5, 1.0), (0.1, 1e-8, 2.0), (2.0, 1e-3, math.sqrt(7))])
def test_analytic_sigma_is_the_smallest_private_sigma(eps, delta, l2):
    s = analytic_gaussian_sigma(eps, delta, l2)
    assert bw18_delta(s, eps, l2) <= delta
    assert bw18_delta(s * (1 - 1e-6), eps, l2) > delta  # and not much more than needed
    if eps < 1:  # the classical calibration (Dwork & Roth 2014, Theorem 3.22) is never better
        assert s <= l2 * math.sqrt(2 * math.log(1.25 / delta)) / eps


@pytest.mark.parametrize("kappa", [1, 3, 7])
def test_gaussian_thresholding_parameters(kappa):
    g = gaussian_thresholding(1, D5, kappa)
    assert Fraction(g.noise_delta) + Fraction(g.threshold_delta) <= D5
    assert bw18_delta(g.sigma, 1.0, math.sqrt(kappa)) <= g.noise_delta
    # a partition only the added unit is in: kept with p; some of its kappa such kept <= threshold_delta
    p = 1 - phi((g.threshold - 1) / g.sigma)
    some = 1 - (1 - p) ** kappa
    assert some <= g.threshold_delta * (1 + 1e-9) and some > 0.999 * g.threshold_delta
    rho, delta = g.charge
    assert rho == Fraction(kappa) / (2 * Fraction(g.sigma) ** 2) and delta == Fraction(g.threshold_delta)


def _normals(rng, n: int) -> np.ndarray:
    """Box-Muller on the seeded source's 63-bit words (test-only; dpsql samples no float Gaussian)."""
    u = (rng.bits63(2 * n).astype(np.float64) + 0.5) / 2.0**63
    return np.sqrt(-2 * np.log(u[:n])) * np.cos(2 * np.pi * u[n:])


def test_gaussian_thresholding_simulated_on_neighbours():
    """Sampled, at a delta large enough to measure: a unit added alone to kappa = 3 new groups
    makes some of them appear with frequency ~ threshold_delta, never more; and a group of n units
    is kept with the frequency keep_probability states."""
    g = gaussian_thresholding(1, Fraction(1, 5), 3)
    rng, trials = seeded_random(23), 40_000
    noise = _normals(rng, 3 * trials).reshape(trials, 3) * g.sigma
    some_new_kept = ((1 + noise) >= g.threshold).any(axis=1).mean()
    sd = math.sqrt(g.threshold_delta * (1 - g.threshold_delta) / trials)
    assert abs(some_new_kept - g.threshold_delta) < 5 * sd
    n = g.midpoint()
    kept = ((n + _normals(rng, trials) * g.sigma) >= g.threshold).mean()
    p = float(g.keep_probability(n))
    assert abs(kept - p) < 5 * math.sqrt(p * (1 - p) / trials)


def test_gaussian_keep_probability_is_the_gaussian_tail():
    g = gaussian_thresholding(1.0, 1e-5, 4)
    n = np.arange(0, 80)
    naive = np.array([0.0] + [1 - phi((g.threshold - x) / g.sigma) for x in range(1, 80)])
    assert np.allclose(g.keep_probability(n), naive, rtol=1e-9, atol=1e-15)
    p = g.keep_probability(n)
    assert np.all(np.diff(p[1:]) > 0) and p[0] == 0.0
    assert g.midpoint() == next(x for x in range(1, 80) if naive[x] >= 0.5)
    assert g.midpoint(0.95) == next(x for x in range(1, 80) if naive[x] >= 0.95)


def test_split_of_delta_minimises_the_threshold():
    best = gaussian_thresholding(1.0, 1e-5, 4)
    for share in (0.1, 0.3, 0.5, 0.7, 0.9):
        assert gaussian_thresholding(1.0, 1e-5, 4, noise_share=share).threshold >= best.threshold - 1e-9


def test_gaussian_unit_loss_per_groups():
    g = gaussian_thresholding(1.0, 1e-5, 5)
    rho1, d1 = g.unit_loss(1)
    rho5, d5 = g.unit_loss(5)
    assert rho5 == 5 * rho1 == g.charge[0]
    assert d1 < d5 <= g.threshold_delta * (1 + 1e-9)
    with pytest.raises(ValueError):
        g.unit_loss(6)


# ---------------------------------------------------------------------------------------------
# On the query path: discrete Gaussian thresholding and the rule (dpsql/privacy/selection_gauss.py)
# ---------------------------------------------------------------------------------------------


def dgauss_tail(sigma2: Fraction, a: int) -> float:
    """P[Z >= a], Z ~ N_Z(sigma^2), from its mass summed naively over +-(|a| + 50 sigma)."""
    s2 = float(sigma2)
    reach = abs(a) + int(50 * math.sqrt(s2)) + 5
    w = [math.exp(-x * x / (2 * s2)) for x in range(-reach, reach + 1)]
    return sum(w[a + reach:]) / sum(w)


@pytest.mark.parametrize("eps, delta, kappa", [(1, Fraction(1, 10**6), 8), (Fraction(1, 10), D5, 4),
                                               (Fraction(1, 2), Fraction(1, 10**8), 16)])
def test_discrete_thresholding_parameters_and_charge(eps, delta, kappa):
    """sigma^2 >= the continuous sigma's square (rounded up, so [BW18] at sqrt(kappa) still holds);
    t is the smallest integer with P[Z >= t - 1] <= 1 - (1 - delta_thr)^(1/kappa), the tail summed
    here; the charge is kappa/(2 sigma^2) and delta_thr; the rule compares the mid-points."""
    from dpsql.privacy.selection_analysis import midpoint
    from dpsql.privacy.selection_gauss import plan

    how = plan(Fraction(eps), Fraction(delta), kappa, "paper")
    g = how.gaussian
    sigma = math.sqrt(g.sigma2)
    assert g.sigma2 >= Fraction(gaussian_thresholding(eps, delta, kappa).sigma) ** 2
    assert bw18_delta(sigma, float(eps), math.sqrt(kappa)) <= g.noise_delta * (1 + 1e-9)
    assert Fraction(g.noise_delta) + Fraction(g.threshold_delta) <= delta
    p_max = 1 - (1 - g.threshold_delta) ** (1 / kappa)
    assert dgauss_tail(g.sigma2, g.threshold - 1) <= p_max < dgauss_tail(g.sigma2, g.threshold - 2)
    assert g.charge == (Fraction(kappa) / (2 * g.sigma2), Fraction(g.threshold_delta))
    opt = midpoint(Fraction(eps) / kappa, Fraction(delta) / kappa)
    assert (how.method, how.optimal_midpoint, how.gaussian_midpoint) == (
        "optimal" if opt <= g.threshold else "gaussian", opt, g.threshold)
    assert (how.rho, how.delta) == (g.charge if how.method == "gaussian" else (Fraction(eps) ** 2 / 2, delta))


def test_the_rule_on_the_query_path_picks_pi_opt_for_small_kappa_and_gaussian_beyond():
    from dpsql.privacy.selection_gauss import plan

    methods = [plan(Fraction(1), Fraction(1, 10**6), k, "paper").method for k in range(2, 9)]
    assert methods == ["optimal", "optimal"] + ["gaussian"] * 5


def test_discrete_thresholding_keeps_with_the_closed_form_probability():
    """Seeded: 40,000 groups of each n around t; the frequency kept is P[Z >= t - n] (the
    discrete Gaussian's tail, summed here) within 5 standard errors; and a unit new to kappa
    groups (n = 1 in each) makes some of them appear with frequency <= delta_thr, measured at a
    delta large enough to see it (delta = 0.2)."""
    from dpsql.privacy.selection_gauss import plan

    g = plan(Fraction(1), Fraction(1, 10**6), 8, "paper").gaussian
    rng, trials = seeded_random(31), 40_000
    for n in (g.threshold - 10, g.threshold - 1, g.threshold, g.threshold + 6):
        kept = g.keep(np.full(trials, n, dtype=np.int64), rng).mean()
        p = dgauss_tail(g.sigma2, g.threshold - n)
        assert abs(kept - p) <= 5 * math.sqrt(p * (1 - p) / trials), (n, kept, p)
    big = plan(Fraction(1), Fraction(1, 5), 3, "paper").gaussian
    some = big.keep(np.ones(3 * trials, dtype=np.int64), rng).reshape(trials, 3).any(axis=1).mean()
    assert some <= big.threshold_delta + 5 * math.sqrt(big.threshold_delta / trials)


# ---------------------------------------------------------------------------------------------
# P(u) = sum_g rho |A_g(u)|^2
# ---------------------------------------------------------------------------------------------


def test_group_splits_are_algorithm_1_per_group():
    assert group_splits([250, -10, 0, 100, 101], 100) == [3, 1, 1, 1, 2]
    assert group_splits([250, 10**9], 100, max_splits=2) == [2, 2]
    assert group_splits([Fraction(1, 3)], Fraction(1, 10)) == [4]


def test_unit_policy_loss_sums_squares_over_groups():
    rho = Fraction(1, 10)
    assert unit_policy_loss(rho, [3, 1, 2], kappa=3) == rho * (9 + 1 + 4)
    assert unit_policy_loss(rho, [2], kappa=3) == 4 * rho
    assert unit_policy_loss(rho, [], kappa=3) == 0
    with pytest.raises(ValueError):
        unit_policy_loss(rho, [1, 1, 1, 1], kappa=3)  # the bounding kept at most kappa
    with pytest.raises(ValueError):
        unit_policy_loss(rho, [5], kappa=3, max_splits=4)


def test_unit_policy_bound_is_reached_and_never_exceeded():
    rho, kappa, k = Fraction(1, 8), 3, 4
    assert unit_policy_bound(rho, kappa, k) == kappa * k * k * rho
    assert unit_policy_loss(rho, [k] * kappa, kappa, k) == unit_policy_bound(rho, kappa, k)
    for splits in ([1], [4, 4], [1, 2, 3], [4, 1, 4]):
        assert unit_policy_loss(rho, splits, kappa, k) <= unit_policy_bound(rho, kappa, k)


def test_unit_policy_loss_is_the_renyi_divergence_of_the_gaussian_cells():
    """The proof, checked numerically: two cells with independent N(0, sigma^2) noise, sigma^2 =
    T^2/(2 rho); a unit with |A_1| = 3 and |A_2| = 2 splits of size T shifts them by 3T and 2T.
    D_2 (Renyi, order 2) by integration on a grid is alpha P(u) = 2 rho (9 + 4), not 2 rho 25."""
    rho, t = 0.05, 1.0
    sigma = t / math.sqrt(2 * rho)
    x = np.linspace(-14 * sigma, 17 * sigma, 1501)
    dx = x[1] - x[0]
    xx, yy = np.meshgrid(x, x, indexing="ij")

    def density(mx, my):
        return np.exp(-((xx - mx) ** 2 + (yy - my) ** 2) / (2 * sigma**2)) / (2 * math.pi * sigma**2)

    p, q = density(3 * t, 2 * t), density(0.0, 0.0)
    d2 = math.log(float(np.sum(p * p / q) * dx * dx))  # D_2(P || Q) = log E_Q[(P/Q)^2]
    loss = float(unit_policy_loss(Fraction(rho), [3, 2], kappa=2))
    assert abs(d2 - 2 * loss) < 1e-3 * d2


def test_docs_figure4_table_is_what_the_code_computes():
    """docs/partition_selection.md's "κ > 1" table stays true to the code."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "partition_selection.md").read_text()
    table = doc.split("Figure 4, ε = 1, δ = 10⁻⁵ (the paper's):", 1)[1].split("![", 1)[0]
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    assert [int(r[0]) for r in rows] == list(range(1, 8))
    for r in rows:
        k = int(r[0])
        m, c = kappa_midpoints(1, D5, k), choose(1, D5, k)
        assert [int(r[1]), int(r[2]), int(r[3])] == [m["optimal"], m["laplace"], m["gaussian"]]
        assert float(r[4]) == round(c.gaussian.threshold, 2) and r[7].strip() == c.method
