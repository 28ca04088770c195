"""Distribution tests of the exact samplers: many samples, fixed seeds.

Tolerances: moments within 5 standard errors (a correct sampler fails such a check with
probability < 6e-7 per check); chi-square goodness of fit at significance 1e-4 with the
Wilson-Hilferty critical value (scipy is not a dependency). The seeds are fixed, so a pass is
reproducible; the tolerances say how unlucky a correct sampler would have to be to fail.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpsql.privacy.bernoulli import sample_bernoulli_exp
from dpsql.privacy.mechanisms import discrete_gaussian_variance, discrete_laplace_variance
from dpsql.privacy.samplers import sample_discrete_gaussian, sample_discrete_laplace
from dpsql.privacy.randomness import SecureRandom
from dpsql.testing import seeded_random

pytestmark = pytest.mark.statistical


def short_id(value: object) -> str:
    text = str(value)
    return text if len(text) <= 20 else f"~{float(value):.4g}"

Z_SE = 5.0  # tolerance for moments, in standard errors
Z_CHI2 = 3.7190  # upper 1e-4 quantile of the standard normal, for Wilson-Hilferty


def chi2_critical(dof: int, z: float = Z_CHI2) -> float:
    """Wilson-Hilferty: chi2_dof quantile ~ dof (1 - 2/(9 dof) + z sqrt(2/(9 dof)))^3.

    Accurate to ~1% from dof = 3 on; e.g. dof = 10 gives 35.6 against the exact 35.56.
    """
    if dof == 2:
        return -2 * math.log(1e-4)  # exact: chi2_2 is exponential with mean 2
    h = 2 / (9 * dof)
    return dof * (1 - h + z * math.sqrt(h)) ** 3


def chi2_fit(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of ``samples`` against ``pmf``.

    Bins are the support values with expected count >= 5; everything beyond is folded into
    the two end bins (samples clipped, the tail mass added to the end bins' expectations).
    """
    n = samples.size
    pmf = pmf / pmf.sum()
    keep = np.flatnonzero(n * pmf >= 5)
    lo, hi = keep[0], keep[-1]
    expected = n * pmf[lo : hi + 1].copy()
    expected[0] += n * pmf[:lo].sum()
    expected[-1] += n * pmf[hi + 1 :].sum()
    clipped = np.clip(samples, support[lo], support[hi]) - support[lo]
    observed = np.bincount(clipped, minlength=expected.size)
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stat, expected.size - 1


def dg_pmf(sigma2: Fraction, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(-half_width, half_width + 1)
    w = np.exp(-(y.astype(np.float64) ** 2) / (2 * float(sigma2)))
    return y, w / w.sum()


def dlap_pmf(b: Fraction, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(-half_width, half_width + 1)
    a = math.exp(-1 / float(b))
    return y, (1 - a) / (1 + a) * a ** np.abs(y).astype(np.float64)


def check_moments(x: np.ndarray, var: float, fourth: float) -> None:
    """Mean within Z_SE * sqrt(var/n) of 0; variance within Z_SE * sqrt((mu4 - var^2)/n)."""
    n = x.size
    xf = x.astype(np.float64)
    mean = xf.mean()
    assert abs(mean) <= Z_SE * math.sqrt(var / n), (mean, var)
    m2 = float(np.mean(xf * xf))  # the mean is known to be 0
    se = math.sqrt((fourth - var * var) / n)
    assert abs(m2 - var) <= Z_SE * se, (m2, var, (m2 - var) / se)


def dg_fourth_moment(sigma2: Fraction) -> float:
    s2 = float(sigma2)
    if s2 > 1e6:
        return 3 * s2 * s2  # the Gaussian's, exact to double precision at this scale
    y, p = dg_pmf(sigma2, int(40 * math.sqrt(s2)) + 2)
    return float(np.sum(p * y.astype(np.float64) ** 4))


# --- discrete Gaussian ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma2",
    [Fraction(1, 8), Fraction(1, 2), Fraction(5, 2), 10, 10**4, 5 * 10**8],
    ids=short_id,
)
def test_discrete_gaussian_mean_and_variance(sigma2):
    x = sample_discrete_gaussian(sigma2, seeded_random(1000 + hash(sigma2) % 1000), size=1_000_000)
    assert x.dtype == np.int64
    check_moments(x, discrete_gaussian_variance(sigma2), dg_fourth_moment(sigma2))


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(5, 2), 10, Fraction(0.7) ** 2], ids=short_id)
def test_discrete_gaussian_pmf_chi_square(sigma2):
    # Fraction(0.7)**2 has denominator 2^104: the big-integer acceptance path at small sigma.
    x = sample_discrete_gaussian(sigma2, seeded_random(2000 + hash(sigma2) % 1000), size=1_000_000)
    y, p = dg_pmf(sigma2, 60)
    stat, dof = chi2_fit(x, y, p)
    assert stat < chi2_critical(dof), (stat, dof)


@pytest.mark.parametrize("sigma2", [5 * 10**8, 10**14, Fraction(10**14, 3)], ids=short_id)
def test_big_integer_path_spread(sigma2):
    x = sample_discrete_gaussian(sigma2, seeded_random(3000 + hash(sigma2) % 1000), size=200_000)
    assert x.dtype == np.int64
    check_moments(x, float(sigma2), 3 * float(sigma2) ** 2)
    # The central 95% of N(0, sigma^2) is +-1.96 sigma: the fraction inside is binomial.
    inside = np.mean(np.abs(x) <= 1.96 * math.sqrt(float(sigma2)))
    assert abs(inside - 0.95) <= Z_SE * math.sqrt(0.95 * 0.05 / x.size)


def test_mixed_sigma_vector():
    values = [Fraction(1, 2), Fraction(10**4), Fraction(5 * 10**8), Fraction(5, 2)]
    cells = values * 100_000
    x = sample_discrete_gaussian(cells, seeded_random(4000))
    for i, s2 in enumerate(values):
        check_moments(x[i :: len(values)], discrete_gaussian_variance(s2), dg_fourth_moment(s2))
    y, p = dg_pmf(Fraction(5, 2), 60)
    stat, dof = chi2_fit(x[3::4], y, p)
    assert stat < chi2_critical(dof)


def test_secure_source_samples_have_the_right_distribution():
    # The production source through the same sampler: a pmf fit, no seed possible.
    x = sample_discrete_gaussian(Fraction(5, 2), SecureRandom(), size=200_000)
    y, p = dg_pmf(Fraction(5, 2), 60)
    stat, dof = chi2_fit(x, y, p)
    assert stat < chi2_critical(dof)


# --- discrete Laplace -------------------------------------------------------------------------


@pytest.mark.parametrize("b", [Fraction(1, 3), Fraction(2), Fraction(7, 3), Fraction(10)], ids=short_id)
def test_discrete_laplace_moments_and_pmf(b):
    x = sample_discrete_laplace(b, seeded_random(5000 + hash(b) % 1000), size=1_000_000)
    assert x.dtype == np.int64
    a = math.exp(-1 / float(b))
    var = discrete_laplace_variance(b)  # 2a / (1-a)^2
    # E[Y^4] of L_Z(b) = 2 (1-a)/(1+a) * sum_{y>=1} y^4 a^y = 2a(1+11a+11a^2+a^3) / ((1+a)(1-a)^4).
    # (Without the 1/(1+a) the standard error of the variance was overstated up to 1.4x and the
    # check let a variance error of ~1.4x more through.)
    fourth = 2 * a * (1 + 11 * a + 11 * a * a + a**3) / ((1 + a) * (1 - a) ** 4)
    check_moments(x, var, fourth)
    y, p = dlap_pmf(b, 400)
    stat, dof = chi2_fit(x, y, p)
    assert stat < chi2_critical(dof), (stat, dof)


# --- Bernoulli(exp(-gamma)) ------------------------------------------------------------------


@pytest.mark.parametrize(
    "gamma",
    [0, Fraction(1, 3), 1, Fraction(5, 2), 7, Fraction(10**12 + 1, 10**30)],
    ids=short_id,
)
def test_bernoulli_exp_frequency(gamma):
    n = 2_000_000
    x = sample_bernoulli_exp(gamma, n, seeded_random(6000 + hash(gamma) % 1000))
    p = math.exp(-float(gamma))
    if p == 1.0 or p > 1 - 1e-15:
        assert x.all()
        return
    assert abs(x.mean() - p) <= Z_SE * math.sqrt(p * (1 - p) / n), (x.mean(), p)


# --- the random sources -----------------------------------------------------------------------


@pytest.mark.parametrize("bound", [10, 1_000_003, 3 << 29, 3 << 60], ids=short_id)
def test_secure_uniform_below_chi_square(bound):
    # 3 * 2^29 uses the 32-bit words, 3 * 2^60 the 63-bit ones. For both, reducing modulo the
    # bound without rejection would put 3/8, 3/8, 2/8 of the mass in the three thirds of the
    # range, which the 3-bin test catches with overwhelming power.
    n = 300_000
    x = SecureRandom().uniform_below(np.full(n, bound, dtype=np.int64))
    assert x.min() >= 0 and x.max() < bound
    bins = min(bound, 100) if bound % 3 else 3
    idx = (x.astype(object) * bins // bound).astype(np.int64)  # floor(x * bins / bound), exact
    observed = np.bincount(idx, minlength=bins)
    # bin i holds [ceil(i * bound / bins), ceil((i+1) * bound / bins))
    edges = np.array([-(-i * bound // bins) for i in range(bins + 1)], dtype=object)
    expected = n * np.diff(edges).astype(np.float64) / bound
    stat = float(((observed - expected) ** 2 / expected).sum())
    assert stat < chi2_critical(bins - 1), stat


def test_two_secure_sources_are_uncorrelated():
    n = 200_000
    a = SecureRandom().bits63(n).astype(np.float64)
    b = SecureRandom().bits63(n).astype(np.float64)
    r = np.corrcoef(a, b)[0, 1]
    assert abs(r) <= Z_SE / math.sqrt(n)  # for independent draws the correlation has SE 1/sqrt(n)
    assert not np.array_equal(a, b)
