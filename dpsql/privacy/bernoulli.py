"""Exact, vectorised Bernoulli draws: Bernoulli(p) for rational p, and Bernoulli(exp(-gamma)).

Source: [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020, Algorithm 1 (Bernoulli(exp(-gamma)) for a rational gamma >= 0). These
are the building blocks of the discrete Laplace and discrete Gaussian samplers of
:mod:`dpsql.privacy.samplers` (CKS20 Algorithms 2-3); :func:`sample_bernoulli_exp` exposes
Algorithm 1 itself.

Exactness: every sampling decision is an integer comparison against an exact uniform integer
from a :class:`~dpsql.privacy.randomness.RandomSource`; parameters are exact rationals and no
float is ever formed on the sampling path. Big parameters use numpy object arrays of Python
ints. See docs/noise.md.

Vectorisation: each rejection loop runs over a numpy array of still-pending cells; the Python
loop count is the number of rounds (logarithmic in the batch size), never the number of cells.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Rational

import numpy as np

from dpsql.privacy.randomness import RandomSource, default_random

__all__ = ["sample_bernoulli_exp"]

# Every int64 operand formed on the fast path stays below 2^62: products are checked against it
# before they are formed, and a sum or difference of two such operands cannot overflow.
# Shared with the samplers of dpsql.privacy.samplers.
_LIMIT = 1 << 62


# ---------------------------------------------------------------------------------------------
# Bernoulli building blocks
# ---------------------------------------------------------------------------------------------


def _uniform(rng: RandomSource, bound: int, n: int) -> np.ndarray:
    """``n`` draws uniform in [0, bound) for one shared bound."""
    return rng.uniform_below(np.full(n, bound, dtype=np.int64))


def _bern_exact_scalar(num: int, den: int, rng: RandomSource) -> bool:
    """One exact Bernoulli(num/den) for arbitrary Python ints 0 <= num <= den.

    Compares a uniform real V in [0, 1) with p = num/den, 63 bits of V at a time: with
    T = floor(p * 2^63) and U the next 63 bits, U < T means V < p, U > T means V > p, and on a
    tie the comparison continues on the remainder p * 2^63 - T (exact, terminates w.p. 1).
    """
    while True:
        threshold = (num << 63) // den
        u = int(rng.bits63(1)[0])
        if u != threshold:
            return u < threshold
        num = (num << 63) - threshold * den


class _Fractions:
    """Per-element exact fractions f_i = num_i / den_i in [0, 1).

    Draws Bernoulli(f_i / K), the step of CKS20 Algorithm 1. Two representations:

    * every ``den_i < 2^62``: Bernoulli(num/den) is ``uniform_below(den) < num``, all in int64.
    * otherwise: precompute T_i = floor(f_i * 2^63) once (object-array arithmetic), then each
      draw is one 63-bit word U: U < T_i -> 1, U > T_i -> 0, and the tie (probability 2^-63)
      is finished exactly by :func:`_bern_exact_scalar`.
    """

    def __init__(self, num: np.ndarray, den: np.ndarray) -> None:
        self.den_max = int(den.max()) if den.size else 0
        self.small = self.den_max < _LIMIT
        if self.small:
            self.num = num.astype(np.int64)
            self.den = den.astype(np.int64)
        else:
            self.num = num.astype(object)
            self.den = den.astype(object)
            self.threshold = ((self.num * (1 << 63)) // self.den).astype(np.int64)  # < 2^63

    def bernoulli(self, idx: np.ndarray, k: int, rng: RandomSource) -> np.ndarray:
        """Fresh Bernoulli(f_i / k) for the positions ``idx``."""
        if self.small and self.den_max * k < _LIMIT:
            return rng.uniform_below(self.den[idx] * k) < self.num[idx]
        # Bernoulli(f/k) = Bernoulli(1/k) AND Bernoulli(f), independently: P = (1/k) * f.
        # Drawing the cheap factor first also skips most of the second draws.
        n = idx.size
        out = np.zeros(n, dtype=bool)
        sel = _uniform(rng, k, n) == 0 if k > 1 else np.ones(n, dtype=bool)
        out[sel] = self._bernoulli_f(idx[sel], rng)
        return out

    def _bernoulli_f(self, idx: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Fresh Bernoulli(f_i) for the positions ``idx``."""
        if self.small:
            return rng.uniform_below(self.den[idx]) < self.num[idx]
        u = rng.bits63(idx.size)
        t = self.threshold[idx]
        out = u < t
        for j in np.flatnonzero(u == t):  # a tie: probability 2^-63 per draw
            i = idx[j]
            rem = (int(self.num[i]) << 63) - int(t[j]) * int(self.den[i])
            out[j] = _bern_exact_scalar(rem, int(self.den[i]), rng)
        return out


def _bern_exp_minus_one(n: int, rng: RandomSource) -> np.ndarray:
    """``n`` draws of Bernoulli(exp(-1)): CKS20 Algorithm 1 with gamma = 1.

    K <- 1; loop {A <- Bern(1/K); if A = 0 break; K <- K+1}; return K odd. Bern(1/1) = 1 always,
    so the loop starts at K = 2; P(K odd) = 1 - 1 + 1/2! - 1/3! + ... = exp(-1).
    """
    out = np.empty(n, dtype=bool)
    idx = np.arange(n)
    k = 2
    while idx.size:
        a = _uniform(rng, k, idx.size) == 0
        out[idx[~a]] = k % 2 == 1
        idx = idx[a]
        k += 1
    return out


def _geometric_exp_minus_one(n: int, rng: RandomSource) -> np.ndarray:
    """``n`` draws of V, P(V = v) = (1 - 1/e) e^-v: Bernoulli(exp(-1)) successes before a failure."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        idx = idx[_bern_exp_minus_one(idx.size, rng)]
        v[idx] += 1
    return v


def _bern_exp(k: np.ndarray, r: np.ndarray, den: np.ndarray, rng: RandomSource) -> np.ndarray:
    """Bernoulli(exp(-(k_i + r_i/den_i))) per element: CKS20 Algorithm 1.

    Args:
        k: integer parts, >= 0 (int64, or an object array if they outgrow int64).
        r: numerators of the fractional parts, 0 <= r_i < den_i (int64 or object array).
        den: denominators, >= 1 (int64 or object array of Python ints of any size).
        rng: the random source.

    exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)): floor(gamma) Bernoulli(exp(-1))
    draws must all succeed, then one Bernoulli(exp(-frac)) by the K-loop of Algorithm 1.
    """
    n = len(k)
    out = np.ones(n, dtype=bool)
    # Integer part first: it is int64-cheap and removes most cells before the fractional part
    # builds its (possibly big-integer) thresholds.
    idx = np.flatnonzero(np.greater(k, 0).astype(bool))
    j = 0
    while idx.size:
        ok = _bern_exp_minus_one(idx.size, rng)
        out[idx[~ok]] = False
        j += 1
        idx = idx[ok]
        idx = idx[np.greater(k[idx], j).astype(bool)]
    # Fractional part, gamma = f in [0, 1): K <- 1; loop {A <- Bern(f/K); if A = 0 break;
    # K <- K+1}; return K odd. P(K odd) = sum over odd K of f^(K-1)/(K-1)! - f^K/K! = exp(-f).
    surv = np.flatnonzero(out)
    frac = _Fractions(r[surv], den[surv])
    res = np.empty(surv.size, dtype=bool)
    idx = np.arange(surv.size)
    kk = 1
    while idx.size:
        a = frac.bernoulli(idx, kk, rng)
        res[idx[~a]] = kk % 2 == 1
        idx = idx[a]
        kk += 1
    out[surv] = res
    return out


# ---------------------------------------------------------------------------------------------
# The public sampler
# ---------------------------------------------------------------------------------------------


def sample_bernoulli_exp(
    gamma: int | Fraction, n: int, rng: RandomSource | None = None
) -> np.ndarray:
    """``n`` exact draws of Bernoulli(exp(-gamma)) for a rational gamma >= 0 (CKS20 Algorithm 1)."""
    rng = default_random() if rng is None else rng
    if isinstance(gamma, bool) or not isinstance(gamma, Rational) or gamma < 0:
        raise ValueError("gamma must be a non-negative int or Fraction")
    g = Fraction(gamma)
    k, r = divmod(g.numerator, g.denominator)
    den = g.denominator
    dtype = np.int64 if max(k, den) < _LIMIT else object
    k_, r_, den_ = (np.full(n, x, dtype=dtype) for x in (k, r, den))
    return _bern_exp(k_, r_, den_, rng)
