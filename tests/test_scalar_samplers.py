"""The scalar fast path for small batches (dpsql.privacy.scalar): same distributions, fixed seeds.

Batches of at most SCALAR_MAX_CELLS cells take the scalar path; these tests draw many such
batches (and single cells) from a seeded source and check moments within 5 standard errors and
a chi-square fit at significance 1e-4, the tolerances of tests/test_noise_distribution.py.
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest

from dpsql.privacy.mechanisms import discrete_gaussian_variance, discrete_laplace_variance
from dpsql.privacy.randomness import SecureRandom
from dpsql.privacy.samplers import sample_discrete_gaussian, sample_discrete_laplace
from dpsql.privacy.scalar import SCALAR_MAX_CELLS
from dpsql.testing import seeded_random
from tests.test_noise_distribution import chi2_critical, chi2_fit, dg_pmf, dlap_pmf

pytestmark = pytest.mark.statistical

N = 40_000


def _batches(sample, param, seed: int, batch: int) -> np.ndarray:
    rng = seeded_random(seed)
    return np.concatenate([sample(param, rng, size=batch) for _ in range(N // batch)])


@pytest.mark.parametrize("batch", [1, SCALAR_MAX_CELLS])
@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(25), Fraction(10**6, 7)])
def test_small_batch_discrete_gaussian(sigma2, batch):
    x = _batches(sample_discrete_gaussian, sigma2, 7000 + batch, batch)
    var = float(discrete_gaussian_variance(sigma2))
    assert abs(x.mean()) < 5 * (var / x.size) ** 0.5
    assert abs(x.var() - var) < 5 * var * (3.0 / x.size) ** 0.5  # 4th moment ~ 3 var^2
    support, pmf = dg_pmf(sigma2, int(12 * var**0.5) + 5)
    stat, dof = chi2_fit(x, support, pmf)
    assert stat < chi2_critical(dof)


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(10), Fraction(7, 3)])
def test_small_batch_discrete_laplace(scale):
    x = _batches(sample_discrete_laplace, scale, 8000, 8)
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
