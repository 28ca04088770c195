"""Tests of dpsql.privacy.accounting: conversions to (epsilon, delta)-DP, and paper 004's Table 2.

Reference values are computed independently in 50-digit decimal arithmetic (``decimal``), so
"conservative" can be checked as "never below the exact value", not against another float.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pytest

from dpsql.privacy.accounting import (
    DEFAULT_CONVERSION_DELTA,
    compose_pure,
    epsilon_analytic,
    epsilon_from_rdp,
    epsilon_from_rdp_at,
    epsilon_pure_rdp,
    epsilon_tight,
    guarantee,
    rdp_pure,
    zcdp_of_pure,
)

# ---------------------------------------------------------------------------------------------
# 50-digit references
# ---------------------------------------------------------------------------------------------

PREC = 50


def _d(x: float | Fraction) -> Decimal:
    x = Fraction(x)
    return Decimal(x.numerator) / Decimal(x.denominator)


def exact_analytic(rho: float, delta: float) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = PREC
        r, big_l = _d(rho), -_d(delta).ln()
        return r + 2 * (r * big_l).sqrt()


def exact_lemma4(tau: Decimal, alpha: Decimal, big_l: Decimal) -> Decimal:
    """eq. 6 in decimal arithmetic."""
    return tau + (big_l + (alpha - 1) * (1 - 1 / alpha).ln() - alpha.ln()) / (alpha - 1)


def exact_tight(rho: float, delta: float) -> Decimal:
    """inf of eq. 7. d/d alpha of the bracket is rho - (L - ln alpha)/(alpha-1)^2, so the
    minimiser is the unique root of h(alpha) = rho (alpha-1)^2 + ln(alpha) - L (h increases
    from -L at alpha = 1): found by bisection, in decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = PREC
        r, big_l = _d(rho), -_d(delta).ln()
        lo, hi = Decimal(1), Decimal(2)
        while r * (hi - 1) ** 2 + hi.ln() - big_l < 0:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if r * (mid - 1) ** 2 + mid.ln() - big_l < 0:
                lo = mid
            else:
                hi = mid
        return exact_lemma4(r * lo, lo, big_l)


def exact_rdp_pure(alpha: float, epsilon: float) -> Decimal:
    """[S24] Theorem 4, second form: eps - ln((1 + e^-eps)/(1 + e^-(2 alpha-1) eps))/(alpha-1),
    at 100 digits (the first form's e^(alpha eps) overflows decimal's exponent range)."""
    with localcontext() as ctx:
        ctx.prec = 100
        a, e = _d(alpha), _d(epsilon)
        return e - ((1 + (-e).exp()) / (1 + (-(2 * a - 1) * e).exp())).ln() / (a - 1)


RHOS = [1e-8, 1e-4, 0.01, 0.1, 0.5, 1.0, 1.41, 10.0, 100.0]
DELTAS = [1e-15, 1e-10, 1e-5, 1e-2, 0.5]


# ---------------------------------------------------------------------------------------------
# zCDP -> (epsilon, delta): Lemma 5 (analytic) and Lemma 4 (tight)
# ---------------------------------------------------------------------------------------------


def test_analytic_known_value():
    expected = 0.5 + 2 * math.sqrt(0.5 * math.log(1e5))  # BS16 Prop 1.3, 5.2985...
    assert epsilon_analytic(0.5, 1e-5) == pytest.approx(expected, rel=1e-13)
    assert epsilon_analytic(0.5, 1e-5) == pytest.approx(5.298525912188, abs=1e-11)
    assert epsilon_analytic(0, 1e-5) == 0.0


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_is_conservative_and_accurate(rho, delta):
    got, exact = epsilon_analytic(rho, delta), exact_analytic(rho, delta)
    assert _d(got) >= exact
    assert got == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_tight_is_conservative_and_accurate(rho, delta):
    """Never below the infimum; within 1e-9 relative of it (in practice ~1e-13)."""
    got, exact = epsilon_tight(rho, delta), max(exact_tight(rho, delta), Decimal(0))
    assert _d(got) >= exact  # a negative infimum is reported as 0 (epsilon_from_rdp_at)
    assert got == pytest.approx(float(exact), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_tight_below_analytic(rho, delta):
    assert epsilon_tight(rho, delta) < epsilon_analytic(rho, delta)


def test_tight_known_values():
    # rho = 0.5, delta = 1e-5: the CKS20 conversion gains ~0.57 over the analytic 5.2985.
    assert epsilon_tight(0.5, 1e-5) == pytest.approx(4.72838698494, abs=1e-10)
    assert epsilon_tight(0, 1e-10) == 0.0


def test_tight_extremes():
    tiny = epsilon_tight(1e-8, 1e-5)  # optimum at alpha ~ 3e4
    assert 0 < tiny < epsilon_analytic(1e-8, 1e-5)
    assert _d(tiny) >= exact_tight(1e-8, 1e-5)
    big = epsilon_tight(100, 1e-15)  # optimum at alpha ~ 1.6
    assert 100 < big < epsilon_analytic(100, 1e-15)
    assert _d(epsilon_tight(1e-20, 1e-15)) >= exact_tight(1e-20, 1e-15)
    assert _d(epsilon_tight(1e6, 0.9)) >= exact_tight(1e6, 0.9)


def test_monotone_in_rho_and_delta():
    rhos = np.geomspace(1e-8, 100, 60).tolist()
    for f in (epsilon_tight, epsilon_analytic):
        for delta in (1e-15, 1e-10, 1e-5):
            values = [f(r, delta) for r in rhos]
            assert all(a < b for a, b in pairwise(values))
        deltas = np.geomspace(1e-15, 0.5, 40).tolist()
        for rho in (1e-6, 0.1, 1.41, 50):
            values = [f(rho, d) for d in deltas]
            # strictly decreasing until the conversion reaches 0 (rho = 1e-6, delta > 1e-3)
            assert all(a > b or a == b == 0 for a, b in pairwise(values))


def test_fraction_rho_accepted():
    assert epsilon_tight(Fraction(1, 10), 1e-6) == epsilon_tight(0.1, 1e-6)
    assert epsilon_analytic(Fraction(1, 10), 1e-6) == epsilon_analytic(0.1, 1e-6)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-5, 2.0, float("nan")])
def test_delta_must_be_in_open_unit_interval(bad):
    for f in (epsilon_tight, epsilon_analytic):
        with pytest.raises(ValueError):
            f(0.1, bad)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_rho_must_be_finite_nonnegative(bad):
    for f in (epsilon_tight, epsilon_analytic):
        with pytest.raises(ValueError):
            f(bad, 1e-6)
    with pytest.raises(TypeError):
        epsilon_tight("0.1", 1e-6)


# ---------------------------------------------------------------------------------------------
# Lemma 4 for a general RDP curve
# ---------------------------------------------------------------------------------------------


def test_lemma4_eq6_inverts_eq5():
    tau, alpha, eps = 0.7, 3.5, 2.0
    delta = math.exp((alpha - 1) * (tau - eps)) / (alpha - 1) * (1 - 1 / alpha) ** alpha  # eq. 5
    assert epsilon_from_rdp_at(tau, alpha, delta) == pytest.approx(eps, rel=1e-12)
    assert epsilon_from_rdp_at(tau, alpha, delta) >= eps - 1e-15


def test_lemma4_negative_is_reported_as_zero():
    # tau = 0 at alpha = 2 with delta = 0.9: eq. 6 gives ln(1/0.9) - 2 ln 2 < 0.
    assert epsilon_from_rdp_at(0.0, 2.0, 0.9) == 0.0


def test_from_rdp_matches_tight_and_grid_is_an_upper_bound():
    rho, delta = 1.41, 1e-10
    assert epsilon_from_rdp(lambda a: rho * a, delta) == epsilon_tight(rho, delta)
    grid = [k / 100 for k in range(101, 1001)]
    on_grid = epsilon_from_rdp(lambda a: rho * a, delta, alphas=grid)
    assert epsilon_tight(rho, delta) <= on_grid <= epsilon_tight(rho, delta) + 1e-6


def test_from_rdp_composition_adds_curves():
    """rho-zCDP composed k times is (k rho)-zCDP: same epsilon either way (Lemma 3)."""
    def curve(a: float) -> float:
        return sum(0.01 * a for _ in range(7))

    assert epsilon_from_rdp(curve, 1e-8) == pytest.approx(epsilon_tight(0.07, 1e-8), rel=1e-12)


def test_from_rdp_refuses_infinite_curve():
    with pytest.raises(ValueError):
        epsilon_from_rdp(lambda a: math.inf, 1e-6)


# ---------------------------------------------------------------------------------------------
# Pure DP and the geometric mechanism
# ---------------------------------------------------------------------------------------------


def test_compose_pure_is_exact():
    assert compose_pure([Fraction(1, 10)] * 10) == 1
    assert compose_pure([0.1] * 10) == 10 * Fraction(0.1)  # the floats' exact binary values
    assert compose_pure([0.1] * 10) > 1  # so never below the decimal intent here
    assert compose_pure([]) == 0
    with pytest.raises(ValueError):
        compose_pure([0.1, -0.1])
    with pytest.raises(TypeError):
        compose_pure([True])


def test_zcdp_of_pure():
    assert zcdp_of_pure(Fraction(1, 2)) == Fraction(1, 8)
    assert zcdp_of_pure(2) == 2
    assert zcdp_of_pure(0.1) == Fraction(0.1) ** 2 / 2
    assert zcdp_of_pure(0) == 0
    with pytest.raises(ValueError):
        zcdp_of_pure(-1)
    with pytest.raises(ValueError):
        zcdp_of_pure(float("inf"))


def _dlap_renyi(alpha: float, b: float) -> float:
    """D_alpha(L_Z(b) || L_Z(b) + 1) by summing p^alpha q^(1-alpha) over the integers."""
    x = np.arange(-4000, 4001, dtype=np.float64)
    log_p = -np.abs(x) / b
    log_q = -np.abs(x - 1) / b
    log_norm = math.log(math.tanh(1 / (2 * b)))  # (e^(1/b) - 1)/(e^(1/b) + 1), eq. 10
    terms = np.exp(alpha * log_p + (1 - alpha) * log_q + log_norm)
    return math.log(math.fsum(terms.tolist())) / (alpha - 1)


def _tau_corollary1(alpha: float, eps: float) -> float:
    """Paper 004 Corollary 1, eq. 17 (= eq. 29), exactly as printed."""
    a = alpha
    inner = (2 * a / (eps * (2 * a - 1)) * math.exp((a - 1) * eps)
             + 2 * (a - 1) / (eps * (2 * a - 1)) * math.exp(-a * eps))
    return math.log((math.exp(eps) - 1) / (math.exp(eps) + 1) * inner) / (a - 1)


ALPHAS = [1.01, 1.5, 2.0, 5.0, 10.0, 50.0]
EPSILONS = [0.01, 0.05, 0.1, 0.47, 1.0, 3.0]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_rdp_pure_is_the_geometric_mechanisms_renyi_divergence(alpha, eps):
    exact = _dlap_renyi(alpha, 1 / eps)
    assert rdp_pure(alpha, eps) == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("alpha", ALPHAS + [1 + 1e-9, 1e6])
@pytest.mark.parametrize("eps", EPSILONS + [1e-12, 1e-6, 40.0, 60.0, 800.0])
def test_rdp_pure_is_conservative_and_bounded(alpha, eps):
    got = rdp_pure(alpha, eps)
    exact = exact_rdp_pure(alpha, eps)
    assert _d(got) >= exact
    assert got == pytest.approx(float(exact), rel=1e-12)
    assert got <= eps
    assert got <= alpha * eps * eps / 2 * (1 + 1e-12)  # BS16 Prop 1.4


def test_rdp_pure_increases_with_alpha():
    for eps in EPSILONS:
        values = [rdp_pure(a, eps) for a in np.geomspace(1.001, 1e4, 80).tolist()]
        assert all(x <= y for x, y in pairwise(values))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_paper_corollary1_understates_the_divergence(alpha, eps):
    """Documents a finding reported to the lead: paper 004's Corollary 1 (eq. 17) lies BELOW
    the Rényi divergence of the mechanism it describes, so it is not an RDP guarantee.

    Its Lemma 8 integrates the discrete pmf of eq. 10 over the reals (eq. 14-16) instead of
    summing it over the integers. The exact sum is rdp_pure (checked above by pmf summation).
    """
    assert _tau_corollary1(alpha, eps) < 0.9999 * _dlap_renyi(alpha, 1 / eps)


@pytest.mark.parametrize("delta", [1e-15, 1e-10, 1e-5, 0.1])
def test_from_rdp_against_a_dense_scan(delta):
    """The search finds the infimum for composed rdp_pure curves (not proven unimodal)."""
    mix = {0.05: 40, 0.3: 9, 1.2: 2}  # epsilon: number of releases

    def curve(a: float) -> float:
        return sum(n * rdp_pure(a, e) for e, n in mix.items())

    got = epsilon_from_rdp(curve, delta)
    scan = epsilon_from_rdp(curve, delta, alphas=(1 + np.geomspace(1e-4, 1e4, 20001)).tolist())
    assert got <= scan * (1 + 1e-12)
    assert got >= scan * (1 - 1e-6)  # the scan's step is 0.07%: within its curvature error


def test_pure_rdp_composition():
    # A single epsilon-DP release: RDP + Lemma 4 gains almost nothing over epsilon itself
    # (a hair, at alpha > 1/delta: an epsilon-DP mechanism is also (epsilon - tiny, delta)-DP).
    assert 1.0 - 1e-9 < epsilon_pure_rdp([1.0], 1e-10) <= 1.0
    assert epsilon_pure_rdp([1.0], 1e-10, alphas=[1.5, 2.0]) == 1.0  # capped by pure DP
    # Many small releases: RDP beats the pure sum 10.
    many = epsilon_pure_rdp([Fraction(1, 100)] * 1000, 1e-10)
    assert many < 10
    # ... and agrees with converting the curve by hand.
    by_hand = epsilon_from_rdp(lambda a: 1000 * rdp_pure(a, 0.01), 1e-10)
    assert many == pytest.approx(by_hand, rel=1e-12)
    assert many >= by_hand
    # ... and is never better than the zCDP route would allow to be wrong by: BS16 1.4 says
    # the same releases are 1000 * 0.01^2 / 2 = 0.05-zCDP, a looser (larger) bound.
    assert many <= epsilon_tight(float(1000 * zcdp_of_pure(Fraction(1, 100))), 1e-10)
    assert epsilon_pure_rdp([], 1e-10) == 0.0


# ---------------------------------------------------------------------------------------------
# Paper 004 Table 2, from Table 4's PRINTED Total columns
# ---------------------------------------------------------------------------------------------

# Table 4, Total columns, as printed (level: (epsilon Total, rho Total)). The printed numbers
# are themselves rounded (docs/noise.md); the paper computed Table 2 from them, and so do we.
TABLE4_TOTALS = {
    "(Nation, Detailed)": ("4.27", "0.534"),
    "(State, Detailed)": ("4.27", "0.534"),
    "(County, Detailed)": ("2.49", "0.159"),
    "(AIANNH, Detailed)": ("2.49", "0.159"),
    "(Nation, Regional)": ("0.59", "0.008"),
    "(State, Regional)": ("0.59", "0.008"),
    "(County, Regional)": ("0.59", "0.008"),
}
DELTA = 1e-10  # F.1
S, GAMMA = 9, 0.1  # F.1: stability Delta(g_i) = 9, gamma = 0.1
PAPER_GRID = [k / 100 for k in range(101, 1001)]  # F.2: alpha in {1.01, 1.02, ..., 10.0}
EPS_I = [Fraction(e) for e, _ in TABLE4_TOTALS.values()]  # rho_1..rho_7 of SafeTab[Geometric]
RHO_TOTAL = sum(Fraction(r) for _, r in TABLE4_TOTALS.values())  # Theorem 3


def _eq39(tau):
    """f(alpha) of eq. 39 for a per-query curve tau(alpha, eps)."""

    def f(alpha: float) -> float:
        return sum(
            S * max(tau(alpha, GAMMA * float(e) / S) + tau(alpha, (1 - GAMMA) * float(e) / S),
                    tau(alpha, float(e) / S))
            for e in EPS_I
        )

    return f


def test_table2_pure_dp():
    # Printed 15.3 (delta = 0). Sum of rho_i (D.1, Theorem 1): exactly 15.29; round(x, 1).
    total = compose_pure(EPS_I)
    assert total == Fraction("15.29")
    assert round(float(total), 1) == 15.3


def test_table2_discrete_gaussian_analytic():
    # Printed 12.8. rho = sum of rho_i = 1.41 (Theorem 3), Lemma 5: 12.80587; round(x, 1).
    assert RHO_TOTAL == Fraction("1.41")
    eps = epsilon_analytic(RHO_TOTAL, DELTA)
    assert eps == pytest.approx(12.805868, abs=1e-6)
    assert round(eps, 1) == 12.8


def test_table2_discrete_gaussian_experimental():
    # Printed 12.2. Lemma 4 / eq. 7: 12.177309 as the infimum (alpha* = 4.8992), 12.177309
    # on the paper's grid (alpha = 4.90; F.2); round(x, 1) == 12.2 both ways.
    inf = epsilon_tight(RHO_TOTAL, DELTA)
    on_grid = epsilon_from_rdp(lambda a: float(RHO_TOTAL) * a, DELTA, alphas=PAPER_GRID)
    assert inf == pytest.approx(12.1773092186, abs=1e-9)
    assert inf <= on_grid <= inf + 1e-6
    assert round(inf, 1) == round(on_grid, 1) == 12.2


def _eq40_on_grid(f, delta: float, grid: list[float]) -> tuple[float, float]:
    """min over the grid of eq. 40, f(alpha) + (ln(1/delta) + (alpha-1) ln(1-1/alpha) -
    ln alpha)/(alpha-1), computed as printed (no validation: Corollary 1 can go negative)."""
    big_l = math.log(1 / delta)
    return min(
        (f(a) + (big_l + (a - 1) * math.log(1 - 1 / a) - math.log(a)) / (a - 1), a) for a in grid
    )


def test_table2_geometric_rdp_does_not_reproduce():
    """Printed 13.2; NOT reproduced (reported to the lead, docs/accounting.md).

    eq. 39-40 with Corollary 1 exactly as printed, on the paper's alpha grid, give 13.546
    (alpha = 7.36): round(x, 1) = 13.5, not 13.2. No reading found gives 13.2 (unrounded
    Table 4 values 13.57, Step 2 columns 12.15, zCDP route 17.98, ...). The exact RDP curve of
    the geometric mechanism (rdp_pure), which is what dpsql uses, gives 14.165 -> 14.2.
    """
    paper, alpha = _eq40_on_grid(_eq39(_tau_corollary1), DELTA, PAPER_GRID)
    assert paper == pytest.approx(13.546347, abs=1e-6)
    assert alpha == 7.36
    assert round(paper, 1) == 13.5  # printed: 13.2
    # Corollary 1 is not even a divergence: its eq. 39 sum is negative at alpha = 1.01.
    assert _eq39(_tau_corollary1)(1.01) < 0

    sound = epsilon_from_rdp(_eq39(rdp_pure), DELTA)
    assert sound == pytest.approx(14.164981, abs=1e-6)
    assert round(sound, 1) == 14.2
    on_grid = epsilon_from_rdp(_eq39(rdp_pure), DELTA, alphas=PAPER_GRID)
    assert sound <= on_grid and round(on_grid, 1) == 14.2  # alpha = 8.76
    # In eq. 39 the max is always the single tau(alpha, rho_i/s) term, so eq. 39 is the
    # composition of 9 releases of rho_i/s per level, which epsilon_pure_rdp computes.
    queries = [e / S for e in EPS_I for _ in range(S)]
    assert epsilon_pure_rdp(queries, DELTA) == pytest.approx(sound, rel=1e-12)
    # The order of Table 2 survives: DG tight < DG analytic < geometric RDP < pure DP.
    assert epsilon_tight(RHO_TOTAL, DELTA) < epsilon_analytic(RHO_TOTAL, DELTA) < paper < sound
    assert sound < float(compose_pure(EPS_I))


# ---------------------------------------------------------------------------------------------
# The (epsilon, delta)-DP of the ledger's total: delta-approximate rho-zCDP
# ---------------------------------------------------------------------------------------------


def test_guarantee_converts_rho_and_adds_the_delta_spent():
    rho, spent = Fraction(57, 200), Fraction(3, 10**6)
    g = guarantee(rho, spent)
    assert g.conversion_delta == DEFAULT_CONVERSION_DELTA == Fraction(1, 10**6)
    assert g.delta == Fraction(4, 10**6)  # exact: delta' + the selections' delta
    assert g.epsilon_tight == epsilon_tight(float(rho), 1e-6)
    assert _d(g.epsilon_analytic) >= exact_analytic(float(rho), 1e-6)
    assert g.epsilon_tight < g.epsilon_analytic
    g9 = guarantee(rho, spent, Fraction(1, 10**9))
    assert g9.delta == Fraction(3001, 10**9) and g9.epsilon_tight > g.epsilon_tight
    assert guarantee(0).epsilon_tight == 0 == guarantee(0).epsilon_analytic
    for bad in (0, 1, Fraction(3, 2)):
        with pytest.raises(ValueError):
            guarantee(rho, spent, bad)
    with pytest.raises(ValueError):
        guarantee(-rho)


def _profile_of_composed_canonical(k: int, eps0: float, delta0: float, eps: float) -> tuple[float, float]:
    """sup_S P(S) - e^eps Q(S) for the k-fold composition of the worst (eps0, delta0)-DP pair:
    P = (delta0, (1-delta0) p, (1-delta0)(1-p), 0), Q = (0, (1-delta0)(1-p), (1-delta0) p, delta0),
    p = e^eps0 / (1 + e^eps0) (randomised response, with a delta0 chance of a revealing output).
    Returned in two parts: the revealing outputs of P, which count whole (1 - (1-delta0)^k),
    and (1-delta0)^k times the profile of k-fold randomised response, summed over the number j
    of '+' outputs in log space."""
    lp, lq = math.log(math.exp(eps0) / (1 + math.exp(eps0))), math.log(1 / (1 + math.exp(eps0)))
    rr = 0.0
    for j in range(k + 1):
        c = math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1)
        rr += max(0.0, math.exp(c + j * lp + (k - j) * lq) - math.exp(eps + c + j * lq + (k - j) * lp))
    return -math.expm1(k * math.log1p(-delta0)), (1 - delta0) ** k * rr


@pytest.mark.parametrize("k, eps0", [(1000, "0.1"), (400, "0.2"), (10000, "0.05")])
@pytest.mark.parametrize("delta_conv", [Fraction(1, 10**3), Fraction(1, 10**6), Fraction(1, 10**10)])
def test_composed_selections_are_within_their_guarantee(k, eps0, delta_conv):
    """The chain docs/privacy.md relies on, checked on the worst case: k (eps0, delta0)-DP
    releases (k partition selections) are charged k eps0^2/2 and k delta0; the ledger then
    claims (epsilon, k delta0 + delta')-DP. The exact privacy profile of k-fold composition of
    the canonical (eps0, delta0) pair must not exceed it (it is well below: the randomised
    response part uses 4-20% of delta')."""
    delta0 = Fraction(1, 10**7)
    g = guarantee(k * Fraction(eps0) ** 2 / 2, k * delta0, delta_conv)
    revealing, rr = _profile_of_composed_canonical(k, float(eps0), float(delta0), g.epsilon_tight)
    assert revealing <= float(k * delta0) and rr <= float(delta_conv)
    assert revealing + rr <= float(g.delta)
    assert rr > float(delta_conv) / 100  # not trivially met: the rho part of the charge matters
