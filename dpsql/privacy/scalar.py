"""Exact one-cell samplers in plain Python ints: the fast path for small batches.

Same algorithms as the vectorised :mod:`dpsql.privacy.samplers` and :mod:`dpsql.privacy.bernoulli`
([CKS20] Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS
2020: Algorithm 1 Bernoulli(exp(-gamma)), Algorithm 2 discrete Laplace, Algorithm 3 discrete
Gaussian), run one cell at a time. For a handful of cells numpy's per-call set-up costs far more
than the arithmetic (each vectorised rejection round is several array operations on arrays of
length 1), so the samplers route batches of at most :data:`SCALAR_MAX_CELLS` cells here.

Exactness: every decision compares an exact uniform integer from
:meth:`~dpsql.privacy.randomness._ByteSource.randbelow` (rejection sampling on whole bits, no
modulo bias) with an exact rational; Python ints never overflow, so no int64 limit applies
inside. This module imports only :mod:`dpsql.privacy.randomness`.
"""

from __future__ import annotations

import math
from typing import Callable

__all__ = ["SCALAR_MAX_CELLS", "dgauss_one", "dlap_one"]

# Batches up to this many cells take the scalar path (measured crossover on a loaded 2-core VM: ~13 us a sample either way near 1,000 cells; see
# docs/performance.md).
SCALAR_MAX_CELLS = 512
_INT64_MAX = (1 << 63) - 1

RandBelow = Callable[[int], int]


def _bern_exp_minus_one(randbelow: RandBelow) -> bool:
    """Bernoulli(exp(-1)): CKS20 Algorithm 1 with gamma = 1 (the K-loop from K = 2)."""
    k = 2
    while randbelow(k) == 0:  # A <- Bern(1/K)
        k += 1
    return k % 2 == 1


def _bern_exp_frac(num: int, den: int, randbelow: RandBelow) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num/den <= 1: the K-loop of CKS20 Algorithm 1."""
    k = 1
    while randbelow(den * k) < num:  # A <- Bern(gamma / K), gamma = num/den
        k += 1
    return k % 2 == 1


def _bern_exp(num: int, den: int, randbelow: RandBelow) -> bool:
    """Bernoulli(exp(-num/den)) for num/den >= 0: CKS20 Algorithm 1.

    exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)).
    """
    whole, rem = divmod(num, den)
    for _ in range(whole):
        if not _bern_exp_minus_one(randbelow):
            return False
    return _bern_exp_frac(rem, den, randbelow)


def dlap_one(t: int, s: int, randbelow: RandBelow) -> int:
    """One discrete Laplace draw with scale t/s (t, s >= 1): CKS20 Algorithm 2."""
    while True:
        u = randbelow(t)
        if not _bern_exp_frac(u, t, randbelow):  # D <- Bern(exp(-U/t))
            continue
        v = 0
        while _bern_exp_minus_one(randbelow):  # V: Bern(exp(-1)) successes before a failure
            v += 1
        y = (u + t * v) // s
        if randbelow(2) == 1:  # B: the sign; reject (B = 1, Y = 0)
            if y == 0:
                continue
            y = -y
        if abs(y) > _INT64_MAX:
            raise OverflowError("discrete Laplace noise does not fit in int64")
        return y


def dgauss_one(p: int, q: int, randbelow: RandBelow) -> int:
    """One discrete Gaussian draw N_Z(sigma^2), sigma^2 = p/q: CKS20 Algorithm 3.

    t = floor(sigma) + 1; loop {Y <- DLap(t); accept w.p. exp(-gamma)} with
    gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2) = (|Y| t q - p)^2 / (2 p q t^2).
    """
    t = math.isqrt(p // q) + 1  # floor(sqrt(p/q)) == isqrt(floor(p/q)), exactly
    den = 2 * p * q * t * t
    while True:
        y = dlap_one(t, 1, randbelow)
        m = abs(y) * t * q - p
        if _bern_exp(m * m, den, randbelow):
            return y
