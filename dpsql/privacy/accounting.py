"""Conversions between privacy measures: zCDP, Rényi DP and pure DP to (epsilon, delta)-DP.

Pure functions, no I/O. Every function that reports an epsilon rounds it **up**: the value
returned is a valid (epsilon, delta)-DP parameter, never an understatement.

Sources:
    [SafeTab] Haney et al., "Differentially Private Algorithms for 2020 Census Detailed DHC
        Race & Ethnicity" (paper 004): Lemma 4 / eq. 5-7 (RDP and zCDP to approximate DP),
        Lemma 5 / eq. 8 (analytic zCDP conversion), Lemma 1 / D.1 (pure DP composition),
        Lemma 3 (RDP composition), Corollary 1 / eq. 17 and eq. 39-40 (RDP of the geometric
        mechanism and of SafeTab[Geometric]), note after Lemma 7 (pure DP implies zCDP).
    [BS16] M. Bun, T. Steinke, "Concentrated Differential Privacy: Simplifications,
        Extensions, and Lower Bounds", 2016: Proposition 1.3 (analytic conversion),
        Proposition 1.4 (epsilon-DP implies epsilon^2/2-zCDP), approximate zCDP (Section 8;
        composition, Lemma 8.2). The conversion of delta-approximate rho-zCDP, in
        :func:`guarantee`, is argued in docs/privacy.md.
    [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
        Privacy", 2020, Section 2.3: the conversion SafeTab states as its Lemma 4.
    [S24] T. Steinke, "Sharp RDP & zCDP from Pure DP", differentialprivacy.org, 2024,
        Theorem 4: the tight RDP curve of an epsilon-DP mechanism (randomised response).

What SafeTab gets wrong here (docs/accounting.md): its Corollary 1 (eq. 17) is not an upper
bound on the Rényi divergence of the two-sided geometric mechanism; it lies below the exact
value for every alpha and epsilon. dpsql uses the exact curve, :func:`rdp_pure`.

Floating point: the conversions are evaluated in double precision in forms without
catastrophic cancellation, and the result is then raised by 2^-44 (about 6e-14) of the sum of
the magnitudes of the terms, far more than the few ulps of error those forms can make.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational, Real
from typing import Any

__all__ = [
    "epsilon_from_rdp_at",
    "epsilon_from_rdp",
    "epsilon_tight",
    "epsilon_analytic",
    "zcdp_of_pure",
    "compose_pure",
    "rdp_pure",
    "epsilon_pure_rdp",
    "DEFAULT_CONVERSION_DELTA",
    "Guarantee",
    "guarantee",
]

Rdp = Callable[[float], float]

_PAD = 2.0**-44  # relative rounding margin, see the module docstring
_GOLDEN = (math.sqrt(5) - 1) / 2
# The search runs over x = ln(alpha - 1): alpha - 1 from e^-30 ~ 1e-13 to e^36 ~ 4e15, which
# holds the optimum for every rho in [1e-20, 1e9] and delta in [1e-300, 0.999]; alpha stays
# below 2^52, so alpha - 1 is computed exactly from alpha.
_X_MIN, _X_MAX, _X_STEP = -30.0, 36.0, 0.125


def _up(value: float, magnitude: float) -> float:
    """``value`` raised past any rounding error of a computation on terms of ``magnitude``."""
    return math.nextafter(value + _PAD * magnitude, math.inf)


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError("delta must be in (0, 1)")
    return d


def _check_nonnegative(x: object, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"{what} must be a real number, not {type(x).__name__}")
    v = float(x)
    if not (v >= 0.0 and math.isfinite(v)):
        raise ValueError(f"{what} must be finite and non-negative")
    return v


# ---------------------------------------------------------------------------------------------
# RDP / zCDP -> (epsilon, delta): SafeTab Lemma 4 (CKS20 Section 2.3)
# ---------------------------------------------------------------------------------------------


def _lemma4(tau: float, alpha: float, log_inv_delta: float) -> tuple[float, float]:
    """eq. 6 at one alpha, and the magnitude of its terms (for the rounding margin).

    epsilon = tau + (ln(1/delta) + (alpha-1) ln(1 - 1/alpha) - ln(alpha)) / (alpha-1), written
    as tau + ln(1/delta)/t - ln(1 + 1/t) - ln(1+t)/t with t = alpha - 1 (exact for
    1 < alpha < 2^52): each term is computed to a few ulps for every t (ln(1 - 1/alpha) as
    ln t - ln(1+t) would lose ~10 digits at alpha ~ 1e4), and they are summed exactly.
    """
    t = alpha - 1.0
    log1p_t = math.log1p(t)
    terms = (tau, log_inv_delta / t, -math.log1p(1.0 / t), -log1p_t / t)
    return math.fsum(terms), math.fsum(map(abs, terms))


def epsilon_from_rdp_at(tau: float, alpha: float, delta: float) -> float:
    """SafeTab Lemma 4, eq. 6: an (alpha, tau)-RDP mechanism is (epsilon, delta)-DP with

        epsilon = tau + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1).

    Equivalent to eq. 5, delta = exp((alpha-1)(tau-epsilon)) / (alpha-1) * (1 - 1/alpha)^alpha
    (CKS20 Section 2.3). A negative result is reported as 0: eq. 5 is decreasing in epsilon,
    so the mechanism is then (epsilon', delta)-DP for every epsilon' > 0, hence (0, delta)-DP.
    Rounded up.
    """
    a = float(alpha)
    if not 1.0 < a < 2.0**52:
        raise ValueError("alpha must be in (1, 2^52)")
    tau = _check_nonnegative(tau, "tau")
    value, magnitude = _lemma4(tau, a, -math.log(_check_delta(delta)))
    return max(0.0, _up(value, magnitude))


def _objective(rdp: Rdp, log_inv_delta: float) -> Callable[[float], float]:
    """x -> eq. 6 at alpha = 1 + e^x, rounded up; +inf where the curve is not finite."""

    def g(x: float) -> float:
        alpha = 1.0 + math.exp(x)
        try:
            tau = float(rdp(alpha))
        except OverflowError:
            return math.inf
        if not math.isfinite(tau):
            return math.inf
        if tau < 0:
            raise ValueError("an RDP curve must be non-negative")
        value, magnitude = _lemma4(tau, alpha, log_inv_delta)
        return _up(value, magnitude)

    return g


def epsilon_from_rdp(rdp: Rdp, delta: float, *, alphas: Iterable[float] | None = None) -> float:
    """SafeTab Lemma 4 / eq. 7 and eq. 40 for any RDP curve: the infimum over alpha > 1 of

        rdp(alpha) + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1).

    Args:
        rdp: alpha -> tau such that the mechanism is (alpha, tau)-RDP for every alpha > 1;
            it must return an upper bound (a few ulps of float error are covered by the
            rounding here). Compose mechanisms by adding their curves (SafeTab Lemma 3).
        delta: in (0, 1).
        alphas: if given, minimise over these orders only (SafeTab F.2 uses
            {1.01, 1.02, ..., 10.0}); otherwise over all alpha > 1, numerically.

    Returns:
        epsilon >= 0 such that the mechanism is (epsilon, delta)-DP. It is the expression
        evaluated at one particular alpha and rounded up, so it is a valid bound whatever the
        shape of the curve, and never below the true infimum. The numeric search (a grid over
        ln(alpha - 1) with step 1/8, then golden-section search in the best grid cell) finds
        the infimum to ~1e-12 relative when the expression is unimodal in alpha. It is for
        zCDP: the derivative of eq. 7 in alpha has the sign of
        rho (alpha-1)^2 + ln(alpha) - ln(1/delta), which increases from -ln(1/delta). For sums
        of :func:`rdp_pure` curves it is checked against a dense scan in the tests.
    """
    log_inv_delta = -math.log(_check_delta(delta))
    if alphas is not None:
        return min(epsilon_from_rdp_at(float(rdp(float(a))), a, delta) for a in alphas)
    g = _objective(rdp, log_inv_delta)
    n = round((_X_MAX - _X_MIN) / _X_STEP)
    xs = [_X_MIN + i * _X_STEP for i in range(n + 1)]
    values = [g(x) for x in xs]
    k = min(range(len(xs)), key=values.__getitem__)
    if not math.isfinite(values[k]):
        raise ValueError("the RDP curve is not finite for any alpha in the search range")
    best = values[k]
    lo, hi = xs[max(k - 1, 0)], xs[min(k + 1, n)]
    # Golden-section search on [lo, hi]; every value seen is a valid bound, keep the least.
    c, d = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    gc, gd = g(c), g(d)
    best = min(best, gc, gd)
    while hi - lo > 1e-10:
        if gc <= gd:
            hi, d, gd = d, c, gc
            c = hi - _GOLDEN * (hi - lo)
            gc = g(c)
        else:
            lo, c, gc = c, d, gd
            d = lo + _GOLDEN * (hi - lo)
            gd = g(d)
        best = min(best, gc, gd)
    return max(0.0, best)


def epsilon_tight(rho: float, delta: float) -> float:
    """SafeTab Lemma 4 / eq. 7 (CKS20 Section 2.3): rho-zCDP implies (epsilon, delta)-DP with

        epsilon = inf_{alpha > 1} [rho alpha + (ln(1/delta) + (alpha-1) ln(1 - 1/alpha)
                                                - ln(alpha)) / (alpha - 1)],

    rho-zCDP being (alpha, rho alpha)-RDP for every alpha > 1. Minimised numerically by
    :func:`epsilon_from_rdp`; rounded up; never above :func:`epsilon_analytic` (drop the two
    negative terms and take alpha = 1 + sqrt(ln(1/delta)/rho) to get Lemma 5).
    ``rho`` may be a ``Fraction`` (the ledger's currency).
    """
    r = _check_nonnegative(rho, "rho")
    _check_delta(delta)
    if r == 0.0:
        return 0.0
    return epsilon_from_rdp(lambda alpha: r * alpha, delta)


def epsilon_analytic(rho: float, delta: float) -> float:
    """SafeTab Lemma 5 / eq. 8 (BS16 Proposition 1.3): rho-zCDP implies (epsilon, delta)-DP with

        epsilon = rho + 2 sqrt(rho ln(1/delta))   (= rho + sqrt(4 rho ln(1/delta))).

    Looser than :func:`epsilon_tight`. Rounded up.
    """
    r = _check_nonnegative(rho, "rho")
    log_inv_delta = -math.log(_check_delta(delta))
    value = r + 2.0 * math.sqrt(r * log_inv_delta)
    return _up(value, value) if value > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# Pure DP: the geometric mechanism
# ---------------------------------------------------------------------------------------------


def _exact(x: object, what: str) -> Fraction:
    """``x`` as an exact Fraction (a float is taken at its exact binary value)."""
    if isinstance(x, bool) or not isinstance(x, (Rational, float)):
        raise TypeError(f"{what} must be an int, Fraction or float, not {type(x).__name__}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{what} must be finite")
    f = Fraction(x)
    if f < 0:
        raise ValueError(f"{what} must be non-negative")
    return f


def _float_up(f: Fraction) -> float:
    """The least float >= f."""
    x = float(f)
    return x if Fraction(x) >= f else math.nextafter(x, math.inf)


def compose_pure(epsilons: Iterable[object]) -> Fraction:
    """Sequential composition of pure DP (SafeTab Lemma 1; Theorem 1 / D.1): epsilons add up.

    Exact: a ``Fraction`` sum, floats taken at their exact binary value (so the result is
    never below the true sum of the values passed). SafeTab Table 2's "Pure DP" column is
    this sum over its seven levels.
    """
    return sum((_exact(e, "epsilon") for e in epsilons), Fraction(0))


def pure_total(charges: Iterable[Any]) -> Fraction | None:
    """The ε of everything in ``charges`` as pure ε-DP for a record never split, when there is
    one: every charge pure (geometric mode records each release's ε, the exponential mechanism's
    among them; under zCDP it records none), with no partition selection (δ = 0) and no table with
    many rows per unit (there a record is a unit's rows in one group: ``policy_function``'s
    per-unit sentences). Then their ε add up (:func:`compose_pure`), a guarantee with δ = 0 that
    the conversion of the ρ charged (ε²/2 each) cannot state. None otherwise."""
    charges = list(charges)
    if not charges or any(c.epsilon is None or c.delta != 0 or any("max_groups" in t for t in c.policy_terms)
                          for c in charges):
        return None
    return compose_pure(c.epsilon for c in charges)


def zcdp_of_pure(epsilon: object) -> Fraction:
    """rho = epsilon^2 / 2, exactly: epsilon-DP implies (epsilon^2/2)-zCDP (BS16 Proposition 1.4;
    SafeTab, note after Lemma 7). The ledger charges a pure-DP release this much rho.

    A float epsilon (e.g. from ``mechanisms.epsilon_for_moe``) is taken at its exact binary
    value; charge the mechanism that same value.
    """
    e = _exact(epsilon, "epsilon")
    return e * e / 2


def rdp_pure(alpha: float, epsilon: float) -> float:
    """The tight RDP curve of an epsilon-DP mechanism ([S24] Theorem 4):

        tau(alpha) = 1/(alpha-1) ln[(e^(alpha eps) + e^(-(alpha-1) eps)) / (e^eps + 1)],

    attained by randomised response. It is also exactly the Rényi divergence
    D_alpha(L_Z(b) || L_Z(b) + 1) of the two-sided geometric mechanism with b = 1/eps (SafeTab
    Algorithm 4) on a sensitivity-1 count: summing p^alpha q^(1-alpha) over the integers gives
    the same expression (checked by pmf summation in tests/test_accounting.py). Always
    <= min(eps, alpha eps^2/2) (BS16 Proposition 1.4).

    SafeTab's Corollary 1 (eq. 17) states a smaller curve, which is not a valid bound (see
    docs/accounting.md); this function is what dpsql uses instead. Rounded up.

    Evaluated without cancellation: with u = (alpha-1) eps,
    e^((alpha-1) tau) - 1 = (expm1(u) expm1(eps) + 4 sinh(u/2)^2) / (e^eps + 1) (all terms
    positive), and for u > 50 as eps - [ln(1+e^-eps) - ln(1+e^-(2 alpha-1) eps)]/(alpha-1).
    """
    a = float(alpha)
    if not a > 1.0:
        raise ValueError("alpha must be > 1")
    e = _check_nonnegative(epsilon, "epsilon")
    if e == 0.0:
        return 0.0
    t = a - 1.0
    u = t * e
    if u <= 50.0 and e <= 50.0:
        excess = (math.expm1(u) * math.expm1(e) + 4.0 * math.sinh(u / 2) ** 2) / (math.exp(e) + 1)
        value = math.log1p(excess) / t
        value = _up(value, value)
    else:
        loss = (math.log1p(math.exp(-e)) - math.log1p(math.exp(-(2 * a - 1) * e))) / t
        value = _up(e - loss, e)
    return min(value, e, _up(a * e * e / 2, a * e * e / 2))


def epsilon_pure_rdp(epsilons: Iterable[object], delta: float,
                     *, alphas: Iterable[float] | None = None) -> float:
    """(epsilon, delta)-DP of the composition of pure-DP mechanisms through RDP.

    Each epsilon_j-DP release (e.g. one geometric-mechanism count) is (alpha,
    rdp_pure(alpha, epsilon_j))-RDP; RDP composes by addition (SafeTab Lemma 3), and SafeTab
    Lemma 4 converts the sum (eq. 40, with :func:`rdp_pure` in place of Corollary 1):

        epsilon = inf_alpha [sum_j rdp_pure(alpha, epsilon_j)
                             + (ln(1/delta) + (alpha-1) ln(1 - 1/alpha) - ln alpha)/(alpha-1)].

    Never more than needed and never less than valid: the result is also capped by the pure
    composition sum_j epsilon_j (which holds with delta = 0). Rounded up.
    """
    exact = [_exact(e, "epsilon") for e in epsilons]
    total = compose_pure(exact)
    if total == 0:
        return 0.0
    # One curve evaluation per distinct epsilon, each epsilon rounded up to a float.
    counts = Counter(_float_up(e) for e in exact)

    def curve(alpha: float) -> float:
        s = math.fsum(n * rdp_pure(alpha, e) for e, n in counts.items())
        return _up(s, s)

    return min(_float_up(total), epsilon_from_rdp(curve, delta, alphas=alphas))


# ---------------------------------------------------------------------------------------------
# What the ledger's total means: delta-approximate rho-zCDP -> (epsilon, delta)-DP
# ---------------------------------------------------------------------------------------------

# delta' of the conversion when none is asked for: 1e-6, the default delta of one partition
# selection, so converting costs no more delta than one selection does and the total stays of
# the order of budget.total_delta (docs/privacy.md, "The (epsilon, delta)-DP of everything spent").
DEFAULT_CONVERSION_DELTA = Fraction(1, 10**6)


@dataclass(frozen=True)
class Guarantee:
    """(epsilon, delta)-DP of everything spent: delta = delta_spent + conversion_delta, and
    epsilon from rho at conversion_delta, two ways (both rounded up)."""

    rho: Fraction
    delta_spent: Fraction
    conversion_delta: Fraction
    epsilon_tight: float
    epsilon_analytic: float

    @property
    def delta(self) -> Fraction:
        """The total delta, exact."""
        return self.delta_spent + self.conversion_delta


def guarantee(rho: object, delta_spent: object = Fraction(0),
              conversion_delta: object = DEFAULT_CONVERSION_DELTA) -> Guarantee:
    """A delta_spent-approximate rho-zCDP mechanism (the ledger's total) is (epsilon,
    delta_spent + conversion_delta)-DP, for every conversion_delta = delta' in (0, 1), with

        epsilon = epsilon_tight(rho, delta')  <=  rho + 2 sqrt(rho ln(1/delta')) = epsilon_analytic.

    Why (docs/privacy.md): write each neighbouring output pair as (1 - delta_spent) times a
    pair that is rho-zCDP plus delta_spent times anything; the rho-zCDP part is (epsilon,
    delta')-DP (SafeTab Lemma 4 / Lemma 5; BS16 Prop. 1.3), and the rest adds at most
    delta_spent to any event's probability. Inputs are exact (``Fraction``, int, or a float at
    its exact value); epsilon is rounded up, delta is exact.
    """
    r = _exact(rho, "rho")
    d = _exact(delta_spent, "delta_spent")
    c = _exact(conversion_delta, "conversion_delta")
    if not 0 < c < 1:
        raise ValueError("conversion_delta must be in (0, 1)")
    rf, cf = _float_up(r), float(c)
    if Fraction(cf) > c:  # use a delta' not above the one stated: a smaller delta' only raises epsilon
        cf = math.nextafter(cf, 0.0)
    return Guarantee(r, d, c, epsilon_tight(rf, cf), epsilon_analytic(rf, cf))
