"""The noise mechanisms' parameters and accuracy: sigma^2 and b, margins of error, variances.

Sources:
    [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
        Privacy", NeurIPS 2020. Theorem 4 (privacy of the discrete Gaussian), Proposition 25
        (its tails).
    [SafeTab] Haney et al., "Differentially Private Algorithms for 2020 Census Detailed DHC
        Race & Ethnicity" (paper 004): Algorithms 4-5 (base mechanisms), Lemmas 6-7 (privacy),
        D.3 eq. 36 and E.2 (95% margins of error), eq. 37-38 (budget for a target MOE).

The noise itself is drawn by the exact samplers of :mod:`dpsql.privacy.samplers` (discrete
Gaussian, discrete Laplace) from the parameters computed here: :func:`gaussian_sigma2` and
:func:`geometric_scale` are exact ``Fraction``s (floats are refused: 0.1 is not 1/10); the
margins of error and variances are reported numbers, in float arithmetic. See docs/noise.md.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from numbers import Rational

__all__ = [
    "gaussian_sigma2",
    "geometric_scale",
    "moe95_discrete_gaussian",
    "moe95_geometric",
    "rho_for_moe",
    "epsilon_for_moe",
    "discrete_gaussian_variance",
    "discrete_laplace_variance",
]


def exact_positive(x: object, what: str) -> Fraction:
    """``x`` as an exact positive Fraction (an int or a Fraction), else TypeError / ValueError."""
    if type(x) is Fraction:  # the usual case, without the ABC checks
        f = x
    else:
        if isinstance(x, bool) or not isinstance(x, Rational):
            raise TypeError(f"{what} must be an int or fractions.Fraction, not {type(x).__name__}")
        f = Fraction(x)
    if f.numerator <= 0:
        raise ValueError(f"{what} must be positive")
    return f


def _positive_int(x: object, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise ValueError(f"{what} must be a positive int")
    return x


@functools.lru_cache(maxsize=1024, typed=True)  # pure; typed: 0.5 and True are not Fraction(1, 2) and 1
def gaussian_sigma2(sensitivity: int, rho: Fraction) -> Fraction:
    """sigma^2 = Delta^2 / (2 rho), exactly.

    The discrete Gaussian N_Z(sigma^2) added to an integer-valued query whose L2 sensitivity
    is at most Delta satisfies rho-zCDP (CKS20 Theorem 4; SafeTab Lemma 7 / Algorithm 5 for
    counts, Delta = 1, sigma^2 = 1/(2 rho)).
    """
    delta = _positive_int(sensitivity, "sensitivity")
    return Fraction(delta * delta) / (2 * exact_positive(rho, "rho"))


def geometric_scale(sensitivity: int, epsilon: Fraction) -> Fraction:
    """b = Delta / epsilon, exactly.

    The discrete Laplace L_Z(b) added to an integer-valued query whose L1 sensitivity is at
    most Delta satisfies pure epsilon-DP (the geometric mechanism; SafeTab Algorithm 4 and
    Lemma 6 for counts, Delta = 1, b = 1/epsilon).
    """
    delta = _positive_int(sensitivity, "sensitivity")
    return Fraction(delta) / exact_positive(epsilon, "epsilon")


def moe95_discrete_gaussian(sigma: float) -> int:
    """The 95% margin of error of N_Z(sigma^2): ceil(1.96 sigma).

    Paper 004 E.2 derives the margin from CKS20 Proposition 25 (its Corollary 3):
    P[X >= m] <= P[X_c >= m - 1] for integer m >= 1, X_c the continuous Gaussian. With
    c = ceil(1.96 sigma): P[X > c] = P[X >= c + 1] <= P[X_c >= c] <= P[X_c >= 1.96 sigma] = 2.5%,
    so [-c, c] holds the noise with probability >= 95%. The paper prints floor(1.96 sigma),
    which that bound does not support: the exact tail beyond the floor is 22.7% just below
    sigma = 1/1.96 (floor 0; 21.2% at sigma = 0.499) and 12.5% at sigma = 1.02 (tests/test_mechanisms.py). dpsql reports the ceiling; see docs/noise.md.
    Float arithmetic: this is a reported number, not a sampling decision.
    """
    return math.ceil(1.96 * float(sigma))


def moe95_geometric(b: float) -> int:
    """The 95% margin of error of L_Z(b): ceil(b ln(40 / (1 + e^(1/b)))).

    Paper 004 eq. 33-36: P[Y > y] <= e^(-floor(y)/b) / (1 + e^(1/b)) is an equality at integer
    y, so the 2.5% point is the ceiling of eq. 36's expression, not its floor (the floor leaves
    an exact tail of up to 29.2%, just below b = 0.566 where the floor is 0). Clamped at 0: for b < 1/ln(39) ~ 0.273 the expression goes
    negative, and there P(Y != 0) = 2e^(-1/b)/(1+e^(-1/b)) <= 5% already.
    """
    b = float(b)
    if b < 1 / math.log(39):  # also avoids overflow of e^(1/b) for tiny b
        return 0
    return max(0, math.ceil(b * math.log(40 / (1 + math.exp(1 / b)))))


def rho_for_moe(moe: float) -> Fraction:
    """rho = 1.92 / floor(MOE)^2 (SafeTab eq. 37, Corollary 4), as an exact Fraction.

    With sigma^2 = 1/(2 rho) (sensitivity 1) the paper's margin floor(1.96 sigma) is at most MOE:
    1.96 sigma = floor(MOE) * 1.96/sqrt(3.84) = 1.000208 * floor(MOE). Note 1.92 is 1.96^2/2
    = 1.9208 rounded down, so for floor(MOE) >= 4808 the margin comes out one above MOE.
    """
    m = math.floor(moe)
    if m < 1:
        raise ValueError("MOE must be at least 1")
    return Fraction(48, 25) / (m * m)


def epsilon_for_moe(moe: float) -> float:
    """epsilon = ln(20) / (floor(MOE) + 1) (SafeTab eq. 38, Corollary 2), a float.

    A float because ln 20 is irrational; convert with ``Fraction(eps)`` (exact) before
    :func:`geometric_scale`, and charge the budget that same value.
    """
    m = math.floor(moe)
    if m < 0:
        raise ValueError("MOE must be non-negative")
    return math.log(20) / (m + 1)


def discrete_gaussian_variance(sigma2: int | Fraction | float) -> float:
    """The exact variance of N_Z(sigma^2), by summing its pmf (below sigma^2 for small sigma).

    For sigma^2 > 10^6 it returns sigma^2: by Poisson summation the relative deficit is about
    8 pi^2 sigma^2 exp(-2 pi^2 sigma^2), far below double precision once sigma^2 >= 2.
    """
    s2 = float(sigma2)
    if s2 <= 0:
        raise ValueError("sigma2 must be positive")
    if s2 > 1e6:
        return s2
    import numpy as np  # on first use: a small answer is released without numpy (dpsql/pipeline/release.py)

    y = np.arange(1, math.ceil(40 * math.sqrt(s2)) + 2, dtype=np.float64)  # e^-800 beyond
    w = np.exp(-(y * y) / (2 * s2))
    return float(2 * np.sum(y * y * w) / (1 + 2 * np.sum(w)))


def discrete_laplace_variance(scale: int | Fraction | float) -> float:
    """The variance 2 e^(-1/b) / (1 - e^(-1/b))^2 of L_Z(b)."""
    a = math.exp(-1 / float(scale))
    return 2 * a / (1 - a) ** 2
