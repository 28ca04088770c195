"""Exact, vectorised samplers for the discrete Gaussian and discrete Laplace, and their maths.

Sources:
    [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
        Privacy", NeurIPS 2020. Algorithm 1 (Bernoulli(exp(-gamma))), Algorithm 2 (discrete
        Laplace), Algorithm 3 (discrete Gaussian), Theorem 4 (privacy).
    [SafeTab] Haney et al., "Differentially Private Algorithms for 2020 Census Detailed DHC
        Race & Ethnicity" (paper 004): Algorithms 4-5 (base mechanisms), Lemmas 6-7 (privacy),
        D.3 eq. 36 and E.2 (95% margins of error), eq. 37-38 (budget for a target MOE).

Exactness: every sampling decision is an integer comparison against an exact uniform integer
from a :class:`~dpsql.privacy.randomness.RandomSource`; parameters are ``Fraction``s and no float is
ever formed on the sampling path. Big parameters (the discrete Gaussian's acceptance exponent
outgrows int64 from sigma ~ 10^4) use numpy object arrays of Python ints. See docs/noise.md.

Vectorisation: each rejection loop runs over a numpy array of still-pending cells; the Python
loop count is the number of rounds (logarithmic in the batch size), never the number of cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from numbers import Rational
from typing import Union

import numpy as np

from dpsql.privacy.randomness import RandomSource, default_random

__all__ = [
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_bernoulli_exp",
    "gaussian_sigma2",
    "geometric_scale",
    "moe95_discrete_gaussian",
    "moe95_geometric",
    "rho_for_moe",
    "epsilon_for_moe",
    "discrete_gaussian_variance",
    "discrete_laplace_variance",
]

# A sequence of exact parameters, one per output cell (or one value broadcast with ``size``).
Params = Union[int, Fraction, Sequence[Union[int, Fraction]], np.ndarray]

# Every int64 operand formed on the fast path stays below 2^62: products are checked against it
# before they are formed, and a sum or difference of two such operands cannot overflow.
_LIMIT = 1 << 62
_INT64_MAX = (1 << 63) - 1
_SMALL = 1 << 31  # operands whose product must stay below _LIMIT


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
# Discrete Laplace and discrete Gaussian, vectorised over cells with per-cell parameters
# ---------------------------------------------------------------------------------------------


def _dlap(t: np.ndarray, s: np.ndarray, rng: RandomSource) -> np.ndarray:
    """One draw of the discrete Laplace with scale t_i/s_i per element: CKS20 Algorithm 2.

    U uniform in {0..t-1}, kept w.p. exp(-U/t); V geometric (Bern(exp(-1)) successes);
    X = U + t V has P(X = x) proportional to exp(-x/t); Y = floor(X/s) then has P(Y = y)
    proportional to exp(-y s/t); a fair sign B, rejecting (B=1, Y=0) so 0 is not counted twice.
    ``t`` and ``s`` are int64 arrays with values in [1, 2^62).
    """
    n = t.size
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        tt = t[pending]
        u = rng.uniform_below(tt)
        kept = np.flatnonzero(_bern_exp(np.zeros(u.size, dtype=np.int64), u, tt, rng))
        tt = tt[kept]
        v = _geometric_exp_minus_one(kept.size, rng)
        if np.any(v >= _INT64_MAX // tt):  # X = U + t V <= t (v + 1) - 1 must fit
            raise OverflowError("discrete Laplace noise does not fit in int64")
        y = (u[kept] + tt * v) // s[pending[kept]]
        b = (rng.bits63(kept.size) & 1).astype(bool)
        ok = ~(b & (y == 0))
        out[pending[kept[ok]]] = np.where(b, -y, y)[ok]
        done = np.zeros(pending.size, dtype=bool)
        done[kept[ok]] = True
        pending = pending[~done]
    return out


class _GaussParams:
    """Per-cell constants of CKS20 Algorithm 3 for sigma^2 = p/q, gathered from per-value ones.

    t = floor(sigma) + 1 and the acceptance exponent
    gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2) = (|Y| t q - p)^2 / (2 p q t^2) = m^2 / den,
    m = |Y| tq - p. Values whose p, tq < 2^31 and den < 2^62 are flagged ``fits``: for them m^2
    is int64 arithmetic whenever |Y| tq < 2^31, which is checked per draw.
    """

    def __init__(self, values: list[Fraction], group: np.ndarray) -> None:
        p = [v.numerator for v in values]
        q = [v.denominator for v in values]
        # floor(sqrt(p/q)) == isqrt(floor(p/q)), exactly
        t = [math.isqrt(pi // qi) + 1 for pi, qi in zip(p, q)]
        if max(t) >= _LIMIT:
            raise OverflowError("discrete Gaussian noise with sigma >= 2^62 does not fit in int64")
        tq = [ti * qi for ti, qi in zip(t, q)]
        den = [2 * pi * qi * ti * ti for pi, qi, ti in zip(p, q, t)]
        fits = [pi < _SMALL and x < _SMALL and d < _LIMIT for pi, x, d in zip(p, tq, den)]
        self.group = group
        self.t = np.array(t, dtype=np.int64)[group]
        self.fits = np.array(fits, dtype=bool)[group]

        def per_cell_int64(xs: list[int]) -> np.ndarray:  # 0 where the value does not fit
            return np.array([x if f else 0 for x, f in zip(xs, fits)], dtype=np.int64)[group]

        self.p64, self.tq64, self.den64 = per_cell_int64(p), per_cell_int64(tq), per_cell_int64(den)
        self.p_obj = np.array(p, dtype=object)  # per value, Python ints of any size
        self.tq_obj = np.array(tq, dtype=object)
        self.den_obj = np.array(den, dtype=object)

    def accept(self, cells: np.ndarray, a: np.ndarray, rng: RandomSource) -> np.ndarray:
        """Bernoulli(exp(-gamma)) for the cells ``cells`` holding |Y| = ``a``."""
        out = np.empty(cells.size, dtype=bool)
        ac = np.minimum(a, _SMALL)  # keeps the product below 2^62 for the check
        fast = self.fits[cells] & (ac * self.tq64[cells] < _SMALL)
        f = np.flatnonzero(fast)
        if f.size:
            c = cells[f]
            m = a[f] * self.tq64[c] - self.p64[c]  # |m| < 2^31, so m^2 < 2^62
            num = m * m
            den = self.den64[c]
            k = num // den
            out[f] = _bern_exp(k, num - k * den, den, rng)
        b = np.flatnonzero(~fast)
        if b.size:
            g = self.group[cells[b]]
            m = a[b].astype(object) * self.tq_obj[g] - self.p_obj[g]
            num = m * m
            den = self.den_obj[g]
            k, r = num // den, num % den
            if int(k.max()) < _LIMIT:  # k only outgrows int64 for sigma^2 below ~ 2^-63
                k = k.astype(np.int64)
            out[b] = _bern_exp(k, r, den, rng)
        return out


def _dgauss(params: _GaussParams, rng: RandomSource) -> np.ndarray:
    """One draw of N_Z(sigma_i^2) per cell: CKS20 Algorithm 3, vectorised.

    t = floor(sigma) + 1; loop {Y <- DLap(t); accept w.p. exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))}.
    """
    n = params.t.size
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        t = params.t[pending]
        y = _dlap(t, np.ones_like(t), rng)
        acc = params.accept(pending, np.abs(y), rng)
        out[pending[acc]] = y[acc]
        pending = pending[~acc]
    return out


# ---------------------------------------------------------------------------------------------
# Public samplers
# ---------------------------------------------------------------------------------------------


def _exact_positive(x: object, what: str) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, Rational):
        raise TypeError(f"{what} must be an int or fractions.Fraction, not {type(x).__name__}")
    f = Fraction(x)
    if f <= 0:
        raise ValueError(f"{what} must be positive")
    return f


def _groups(params: Params, size: int | None, what: str) -> tuple[list[Fraction], np.ndarray]:
    """The distinct parameter values and, per cell, the index of its value."""
    if isinstance(params, (Rational, float)):
        n = 1 if size is None else size
        return [_exact_positive(params, what)], np.zeros(n, dtype=np.int64)
    seq = list(params)
    if size is not None and size != len(seq):
        raise ValueError("size disagrees with the number of parameters")
    n = len(seq)
    if n == 0:
        return [], np.zeros(0, dtype=np.int64)
    # Group by object identity first (C speed; callers repeat one object), then merge the
    # distinct objects by value: Python-level work is per distinct object, not per cell.
    ids = np.fromiter(map(id, seq), dtype=np.uint64, count=n)
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    # Keyed by (numerator, denominator), which is canonical for int and Fraction and much
    # cheaper than hashing a Fraction; other types are converted (and checked) first.
    value_index: dict[tuple[int, int], int] = {}
    of_object = np.empty(first.size, dtype=np.int64)
    for g, i in enumerate(first.tolist()):
        x = seq[i]
        if type(x) is not Fraction and type(x) is not int:
            x = _exact_positive(x, what)
        of_object[g] = value_index.setdefault((x.numerator, x.denominator), len(value_index))
    values = [_exact_positive(Fraction(n, d), what) for n, d in value_index]
    return values, of_object[inverse.ravel()]


def sample_discrete_gaussian(
    sigma2: Params, rng: RandomSource | None = None, *, size: int | None = None
) -> np.ndarray:
    """Exact samples of the discrete Gaussian N_Z(sigma^2), one per cell.

    P(Y = y) is proportional to exp(-y^2 / (2 sigma^2)) on the integers (CKS20 Algorithm 3).
    Adding it to an integer query with L2 sensitivity Delta, with sigma^2 = Delta^2/(2 rho)
    (:func:`gaussian_sigma2`), satisfies rho-zCDP (CKS20 Theorem 4; SafeTab Lemma 7).

    Args:
        sigma2: the variance parameter per cell: a 1-D sequence of positive ``int`` /
            ``Fraction`` (cells may differ; all cells are sampled in one vectorised pass), or
            one value broadcast to ``size`` cells.
        rng: the random source; ``None`` means :func:`~dpsql.privacy.randomness.default_random`
            (the OS CSPRNG). Pass a seeded source only in tests.
        size: the number of cells when ``sigma2`` is a single value (default 1).

    Returns:
        An int64 array with one sample per cell.
    """
    rng = default_random() if rng is None else rng
    values, group = _groups(sigma2, size, "sigma2")
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    return _dgauss(_GaussParams(values, group), rng)


def sample_discrete_laplace(
    scale: Params, rng: RandomSource | None = None, *, size: int | None = None
) -> np.ndarray:
    """Exact samples of the discrete Laplace (two-sided geometric) L_Z(b), one per cell.

    P(Y = y) is proportional to exp(-|y| / b) on the integers (CKS20 Algorithm 2). With
    b = Delta/epsilon (:func:`geometric_scale`), adding it to an integer query with L1
    sensitivity Delta satisfies epsilon-DP: the geometric mechanism, SafeTab Algorithm 4 and
    Lemma 6 (b = 1/epsilon for counts).

    Args:
        scale: b per cell, a 1-D sequence of positive ``int`` / ``Fraction`` or one value
            broadcast to ``size`` cells. Numerators and denominators must be below 2^62.
        rng: the random source; ``None`` means the OS CSPRNG. Pass a seeded source only in tests.
        size: the number of cells when ``scale`` is a single value (default 1).

    Returns:
        An int64 array with one sample per cell.
    """
    rng = default_random() if rng is None else rng
    values, group = _groups(scale, size, "scale")
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    if any(v.numerator >= _LIMIT or v.denominator >= _LIMIT for v in values):
        raise ValueError(
            "scale numerator and denominator must be below 2^62; round the scale UP to a "
            "simpler fraction (more noise keeps the guarantee)"
        )
    # scale b = t/s in Algorithm 2's terms
    t = np.array([v.numerator for v in values], dtype=np.int64)[group]
    s = np.array([v.denominator for v in values], dtype=np.int64)[group]
    return _dlap(t, s, rng)


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


# ---------------------------------------------------------------------------------------------
# Mechanism maths
# ---------------------------------------------------------------------------------------------


def _positive_int(x: object, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise ValueError(f"{what} must be a positive int")
    return x


def gaussian_sigma2(sensitivity: int, rho: Fraction) -> Fraction:
    """sigma^2 = Delta^2 / (2 rho), exactly.

    The discrete Gaussian N_Z(sigma^2) added to an integer-valued query whose L2 sensitivity
    is at most Delta satisfies rho-zCDP (CKS20 Theorem 4; SafeTab Lemma 7 / Algorithm 5 for
    counts, Delta = 1, sigma^2 = 1/(2 rho)).
    """
    delta = _positive_int(sensitivity, "sensitivity")
    return Fraction(delta * delta) / (2 * _exact_positive(rho, "rho"))


def geometric_scale(sensitivity: int, epsilon: Fraction) -> Fraction:
    """b = Delta / epsilon, exactly.

    The discrete Laplace L_Z(b) added to an integer-valued query whose L1 sensitivity is at
    most Delta satisfies pure epsilon-DP (the geometric mechanism; SafeTab Algorithm 4 and
    Lemma 6 for counts, Delta = 1, b = 1/epsilon).
    """
    delta = _positive_int(sensitivity, "sensitivity")
    return Fraction(delta) / _exact_positive(epsilon, "epsilon")


def moe95_discrete_gaussian(sigma: float) -> int:
    """The 95% margin of error of N_Z(sigma^2): ceil(1.96 sigma).

    Paper 004 E.2 derives the margin from CKS20 Proposition 25 (its Corollary 3):
    P[X >= m] <= P[X_c >= m - 1] for integer m >= 1, X_c the continuous Gaussian. With
    c = ceil(1.96 sigma): P[X > c] = P[X >= c + 1] <= P[X_c >= c] <= P[X_c >= 1.96 sigma] = 2.5%,
    so [-c, c] holds the noise with probability >= 95%. The paper prints floor(1.96 sigma),
    which that bound does not support: at sigma = 1.02 the exact tail beyond the floor is 12.5%
    (tests/test_mechanisms.py). dpsql reports the ceiling; see docs/noise.md.
    Float arithmetic: this is a reported number, not a sampling decision.
    """
    return math.ceil(1.96 * float(sigma))


def moe95_geometric(b: float) -> int:
    """The 95% margin of error of L_Z(b): ceil(b ln(40 / (1 + e^(1/b)))).

    Paper 004 eq. 33-36: P[Y > y] <= e^(-floor(y)/b) / (1 + e^(1/b)) is an equality at integer
    y, so the 2.5% point is the ceiling of eq. 36's expression, not its floor (the floor leaves
    an exact tail of up to 11.5%). Clamped at 0: for b < 1/ln(39) ~ 0.273 the expression goes
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
    y = np.arange(1, math.ceil(40 * math.sqrt(s2)) + 2, dtype=np.float64)  # e^-800 beyond
    w = np.exp(-(y * y) / (2 * s2))
    return float(2 * np.sum(y * y * w) / (1 + 2 * np.sum(w)))


def discrete_laplace_variance(scale: int | Fraction | float) -> float:
    """The variance 2 e^(-1/b) / (1 - e^(-1/b))^2 of L_Z(b)."""
    a = math.exp(-1 / float(scale))
    return 2 * a / (1 - a) ** 2
