"""Exact, vectorised samplers for the discrete Gaussian and the discrete Laplace (geometric).

Sources:
    [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
        Privacy", NeurIPS 2020. Algorithm 2 (discrete Laplace), Algorithm 3 (discrete Gaussian),
        Theorem 4 (privacy); their Bernoulli(exp(-gamma)) steps (Algorithm 1) are
        :mod:`dpsql.privacy.bernoulli`.
    [SafeTab] Haney et al., "Differentially Private Algorithms for 2020 Census Detailed DHC
        Race & Ethnicity" (paper 004): Algorithms 4-5 (base mechanisms), Lemmas 6-7 (privacy).

The mechanisms' parameters and accuracy (sigma^2 from rho, b from epsilon, margins of error)
are :mod:`dpsql.privacy.mechanisms`.

Two exact paths. Parameters in the usual range (sigma and the Laplace scale in [2^-20, 2^40))
go to :mod:`dpsql.privacy.guided`, which decides in floats only when that provably agrees with
exact arithmetic and finishes every other comparison exactly. The rest take the integer-only
algorithms here: every sampling decision is an integer comparison against an exact uniform
integer from a :class:`~dpsql.privacy.randomness.RandomSource`; parameters are ``Fraction``s and
no float is ever formed on that path. Big parameters (the discrete Gaussian's acceptance exponent
outgrows int64 from sigma ~ 10^4) use numpy object arrays of Python ints. See docs/noise.md.

Vectorisation: each rejection loop runs over a numpy array of still-pending cells; the Python
loop count is the number of rounds (logarithmic in the batch size), never the number of cells.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from numbers import Rational
from typing import Union

import numpy as np

from dpsql.privacy.bernoulli import _LIMIT, _bern_exp, _geometric_exp_minus_one
from dpsql.privacy.guided import SMALL_BATCH, gauss_guided, gauss_small, in_range, lap_guided
from dpsql.privacy.mechanisms import exact_positive as _exact_positive
from dpsql.privacy.randomness import RandomSource, default_random

__all__ = [
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_grouped",
]

# A sequence of exact parameters, one per output cell (or one value broadcast with ``size``).
Params = Union[int, Fraction, Sequence[Union[int, Fraction]], np.ndarray]
Sampler = Callable[[list[Fraction], np.ndarray], np.ndarray]  # (values, group) -> one draw per cell

_INT64_MAX = (1 << 63) - 1
_SMALL = 1 << 31  # operands whose product must stay below _LIMIT (2^62)


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


def _groups(params: Params, size: int | None, what: str) -> tuple[list[Fraction], np.ndarray]:
    """The distinct parameter values and, per cell, the index of its value."""
    if type(params) is Fraction or isinstance(params, (Rational, float)):
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


def _by_path(values: list[Fraction], group: np.ndarray, gaussian: bool, guided: Sampler,
             exact: Sampler) -> np.ndarray:
    """Cells whose parameter is in the float-guided range (:func:`~dpsql.privacy.guided.in_range`)
    go to the guided sampler, the others to the integer-only one; both are exact."""
    if all(in_range(v, gaussian) for v in values):  # the usual case
        return guided(values, group)
    ok = np.array([in_range(v, gaussian) for v in values], dtype=bool)
    out = np.empty(group.size, dtype=np.int64)
    on_guided = ok[group]
    for cells, sampler in ((on_guided, guided), (~on_guided, exact)):
        if cells.any():
            used, local = np.unique(group[cells], return_inverse=True)
            out[cells] = sampler([values[i] for i in used.tolist()], local.ravel())
    return out


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
    n = 1 if size is None else size
    if type(sigma2) is Fraction and 0 < n <= SMALL_BATCH and sigma2.numerator > 0 and in_range(sigma2, True):
        return gauss_small(sigma2.numerator, sigma2.denominator, n, rng)  # the usual query
    return sample_grouped(True, *_groups(sigma2, size, "sigma2"), rng)


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
    return sample_grouped(False, *_groups(scale, size, "scale"), rng)


def sample_grouped(gaussian: bool, values: list[Fraction], group: np.ndarray,
                   rng: RandomSource | None = None) -> np.ndarray:
    """One sample per cell, cell i's parameter being ``values[group[i]]``: the discrete
    Gaussian's sigma^2 (``gaussian``) or the discrete Laplace's scale b. The two samplers above,
    for a caller that has its cells' parameters grouped already (the release: a few distinct
    values over thousands of cells)."""
    rng = default_random() if rng is None else rng
    values = [_exact_positive(v, "sigma2" if gaussian else "scale") for v in values]
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    if gaussian:
        return _by_path(values, group, True, lambda v, g: gauss_guided(v, g, rng),
                        lambda v, g: _dgauss(_GaussParams(v, g), rng))
    if any(v.numerator >= _LIMIT or v.denominator >= _LIMIT for v in values):
        raise ValueError(
            "scale numerator and denominator must be below 2^62; round the scale UP to a "
            "simpler fraction (more noise keeps the guarantee)"
        )

    def exact(vals: list[Fraction], grp: np.ndarray) -> np.ndarray:  # scale b = t/s (Algorithm 2)
        t = np.array([v.numerator for v in vals], dtype=np.int64)[grp]
        s = np.array([v.denominator for v in vals], dtype=np.int64)[grp]
        return _dlap(t, s, rng)

    return _by_path(values, group, False, lambda v, g: lap_guided(v, g, rng), exact)
