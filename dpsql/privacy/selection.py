"""DP partition selection: which GROUP BY keys found in private data may be released.

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022). Setting: every privacy unit is in at most one partition (group), n is
the number of distinct units in a partition, neighbouring data sets differ by adding or removing
one unit (paper 002 Definition 1). A partition's n then changes by at most 1 between neighbours,
and the partitions of one data set are decided independently.

What this module offers:

* :func:`recurrence_probability` -- pi(n) from Lemma 1's recurrence, run in exact integer
  arithmetic with every step rounded down (see "Exact table" below).
* :func:`select` -- the mechanism: keep each partition independently with probability q(n), the
  exact-table value (q <= pi, q = pi to ~1e-20 relative). (epsilon, delta)-DP exactly.

The rest of paper 002 lives beside it: Theorem 1's closed form pi(n) in
:mod:`dpsql.privacy.pi_opt` (:func:`~dpsql.privacy.pi_opt.release_probability`), the k-TSGD
thresholded release that also releases noisy counts (Definitions 6-8, Theorems 4-6) in
:mod:`dpsql.privacy.tsgd`, the Laplace baseline (Definition 9), the mid-points of Figures 2-3
and the accounting helpers (group privacy, paper 000 section 5.4; budget splitting for units in
kappa partitions, paper 002 section 5) in :mod:`dpsql.privacy.selection_analysis`.

Exact table. A float pi that is never above the exact pi is *not* enough for (epsilon, delta)-DP:
in Theorem 1's first regime inequality (1), pi(n+1) <= e^eps pi(n) + delta, holds with equality,
and near pi = 1 inequality (4) does, so rounding pi(n) down by a relative 1e-14 more than
pi(n+1) breaks them by ~1e-14 in absolute terms. Measured on the closed form rounded down: the
delta needed is 55 times the nominal delta = 1e-15 (docs/partition_selection.md). :func:`select`
therefore does not sample from the float. It runs Lemma 1's recurrence on exact rationals
q(n) = T(n) / 2^128, with a rational lower bound L <= e^eps, an upper bound U >= e^-eps, and
every step rounded down:

    T(n+1) = min(floor(2^128 (L q(n) + delta)), floor(2^128 (1 - U (1 - q(n) - delta))), 2^128).

Then q satisfies inequalities (1) and (4) of paper 002 section 2.1 by construction, is
non-decreasing (each argument of the min is >= q(n), and rounding down to a grid that contains
q(n) keeps it so), hence satisfies (2) and (3): q is an (epsilon, delta)-DP primitive, exactly,
for the rational epsilon and delta given. By induction q(n) <= pi(n) (the recurrence map is
non-decreasing); the rounding loss is below 2^-128 per step, amplified at most by pi(n1)/delta
in the first regime: below 1e-20 relative for delta >= 1e-15. The Bernoulli(q) draw compares a
uniform 63-bit word with the top 63 bits of q and finishes a tie (probability 2^-63) on the
remaining bits, so it is exact too.

Numbers: epsilon and delta of :func:`select` are ``int`` or ``fractions.Fraction``; floats are
refused (0.1 is not 1/10); :func:`recurrence_probability`, an analysis function, also takes
floats at their exact binary values (:mod:`dpsql.privacy.selection_numbers`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpsql.privacy.pi_opt import _anchors, _pi_float
from dpsql.privacy.randomness import RandomSource, default_random
from dpsql.privacy.selection_numbers import (
    _Q,
    Counts,
    Real,
    _counts,
    _dyadic_ceil,
    _dyadic_floor,
    _exp_bounds,
    _float_down,
    _privacy_params,
)

__all__ = ["recurrence_probability", "select", "table_fits"]

_P = 128  # q(n) of the exact table is a multiple of 2^-128
_LOW_BITS = _P - 63  # bits of q below the 63 compared with the first uniform word
_ONE = 1 << _P
# Recurrence steps (~2 us each); pi(n) reaches 1 after about min(1/delta, 2 ln(1/delta)/eps)
# units: 69 000 at eps = 0.001, delta = 1e-15.
_MAX_TABLE = 250_000
#: the largest ε whose exact table phase 1 lets the release build (:func:`table_fits`)
_MAX_EPS = 2**16


# ---------------------------------------------------------------------------------------------
# The exact table: Lemma 1's recurrence on rationals, rounded down at every step
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """q(n) = t[n] / 2^128 for n < ``ones`` = len(t) - 1, and q(n) = 1 for n >= ``ones``."""

    t: tuple[int, ...]
    hi: np.ndarray  # t[n] >> 65, the first 63 bits of q(n); 0 at ``ones`` (not used there)
    ones: int


def table_fits(eps: Fraction, delta: Fraction) -> bool:
    """Whether π_opt's exact table at (ε, δ) fits :data:`_MAX_TABLE` steps and ε ≤ :data:`_MAX_EPS`:
    public, decided in phase 1 (``decide.selection_cost``, DP213) from n2 of Theorem 1, so a tiny ε is refused free
    instead of failing in the release after the rows are read (DP901, charged)."""
    if eps > _MAX_EPS:  # e^ε of the recurrence's bounds: 10^28,000 digits at the cap, an overflow past ~2.3·10⁶
        return False
    if delta >= 1:
        return True
    return _anchors(_float_down(eps), _float_down(delta))[2] + 3 <= _MAX_TABLE


@functools.lru_cache(maxsize=64)
def _table(eps: Fraction, delta: Fraction) -> _Table:
    """Lemma 1's recurrence with directed rounding (module docstring), for eps > 0, delta > 0."""
    if delta < 1:
        _, _, n2 = _anchors(_float_down(eps), _float_down(delta))
        if n2 + 3 > _MAX_TABLE:
            raise ValueError(
                f"epsilon = {float(eps):.3g} is too small for the exact selection table "
                f"(pi reaches 1 only after ~{n2} units); use a larger epsilon"
            )
    lo, _ = _exp_bounds(eps)
    _, hi_neg = _exp_bounds(-eps)
    l_num = max(_dyadic_floor(lo, _Q), 1 << _Q)  # 1 <= L <= e^eps
    u_num = min(_dyadic_ceil(hi_neg, _Q), 1 << _Q)  # e^-eps <= U <= 1
    dn, dd = delta.numerator, delta.denominator
    den1 = dd << _Q
    add1 = dn << (_P + _Q)
    dn_p = dn << _P
    t = 0
    ts = [0]
    while t < _ONE:
        # floor(2^P (L q + delta)), q = t / 2^P, L = l_num / 2^Q
        a1 = (l_num * t * dd + add1) // den1
        # floor(2^P (1 - U (1 - q - delta))) = 2^P - ceil(U w / dd), w = 2^P dd (1 - q - delta)
        w = (_ONE - t) * dd - dn_p
        a2 = _ONE - (-((-u_num * w) // den1)) if w > 0 else _ONE
        t = min(a1, a2, _ONE)
        ts.append(t)
        if len(ts) > _MAX_TABLE:
            raise ValueError("epsilon is too small for the exact selection table")
    hi = np.array([x >> _LOW_BITS for x in ts[:-1]] + [0], dtype=np.int64)
    hi.flags.writeable = False
    return _Table(tuple(ts), hi, len(ts) - 1)


@functools.lru_cache(maxsize=64)
def _table_floats(eps: Fraction, delta: Fraction) -> np.ndarray:
    """q(n) of the table as floats rounded down."""
    tab = _table(eps, delta)
    vals = [_float_down(Fraction(x, _ONE)) for x in tab.t]
    arr = np.array(vals, dtype=np.float64)
    arr.flags.writeable = False
    return arr


def recurrence_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """pi_opt(n) from Lemma 1's recurrence (paper 002 eq. 5), in exact arithmetic.

    Recurrence: pi(0) = 0, pi(n+1) = min(e^eps pi(n) + delta, 1 - e^-eps (1 - pi(n) - delta), 1).
    The first argument is inequality (1) of section 2.1 (P[keep] may grow by at most a factor
    e^eps plus delta), the second inequality (4) (the same for P[drop]).

    Computed as the exact table of the module docstring: rationals q(n) <= pi(n), every step
    rounded down, then converted to the largest float not above q(n). So the result is never above
    pi(n) and agrees with :func:`~dpsql.privacy.pi_opt.release_probability` (an independent
    derivation: Theorem 1 is the solution of this recurrence) to ~1e-13 relative. This q is what
    :func:`select` samples.
    epsilon = 0 (Theorem 2.2) is min(1, n delta), the recurrence summed in closed form.

    Privacy: q is an (epsilon, delta)-DP primitive, exactly (module docstring).

    Args:
        n: a count or an array of counts.
        epsilon: >= 0; small epsilon makes the table long (about min(1/delta,
            2 ln(1/delta)/epsilon) entries; refused beyond 250 000).
        delta: in [0, 1].
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if d == 0 or eps == 0:
        p = _pi_float(counts.ravel(), 0.0 if eps == 0 else 1.0, _float_down(d))
        return p.reshape(counts.shape)
    tab = _table(eps, d)
    vals = _table_floats(eps, d)
    return np.asarray(vals[np.minimum(counts, tab.ones)])


# ---------------------------------------------------------------------------------------------
# Sampling the selection
# ---------------------------------------------------------------------------------------------


def _finish_tie(rem: int, bits: int, rng: RandomSource) -> bool:
    """The rest of the comparison V < q after V's first 63 bits equalled q's.

    ``rem`` holds q's remaining ``bits`` bits; V's next bits are fresh uniform words. If all of
    q's bits are matched, V >= q, and the answer is False.
    """
    while bits > 0:
        take = min(63, bits)
        bits -= take
        thr = rem >> bits
        rem &= (1 << bits) - 1
        u = int(rng.bits63(1)[0]) >> (63 - take)
        if u != thr:
            return u < thr
    return False


def _bernoulli_dyadic(hi: np.ndarray, always: np.ndarray, low_bits_of: Callable[[int], int],
                      rng: RandomSource) -> np.ndarray:
    """Exact Bernoulli(q_i) per element, q_i = (hi_i 2^65 + low_i) / 2^128 (or 1 where ``always``).

    U (63 uniform bits) < hi_i decides 1, U > hi_i decides 0; U = hi_i (probability 2^-63) is
    finished on q_i's low 65 bits by :func:`_finish_tie`. One word per element, whatever q_i.
    """
    u = rng.bits63(hi.size)
    out = (u < hi) | always
    for j in np.flatnonzero((u == hi) & ~always).tolist():
        out[j] = _finish_tie(low_bits_of(j), _LOW_BITS, rng)
    return out


def select(n: Counts, epsilon: int | Fraction, delta: int | Fraction,
           rng: RandomSource | None = None) -> np.ndarray:
    """Which partitions to release: each one independently, with probability q(n_i) ~ pi_opt(n_i).

    Mechanism: the optimal partition selection of paper 002 (Definition 3 with the primitive of
    Theorem 1; the mechanism M_opt of Theorem 3). q is Lemma 1's recurrence in exact arithmetic
    rounded down at every step (module docstring): q(n) <= pi(n), q(n) >= pi(n) (1 - 1e-20) for
    delta >= 1e-15.

    Privacy: (epsilon, delta)-DP for the exact rational epsilon and delta given, under add/remove
    one unit, when every unit is in at most one of the partitions and n_i counts *distinct* units
    (sensitivity 1 per partition). q satisfies inequalities (1)-(4) of section 2.1 exactly, and
    the partitions' draws are independent, so only the unit's own partition changes distribution.
    Partitions absent from the data (n = 0) are never released. For units in up to kappa
    partitions use :func:`~dpsql.privacy.selection_analysis.per_partition_budget`; for counts a
    record can move by k (split rows) the cost is
    :func:`~dpsql.privacy.selection_analysis.group_privacy`.

    Randomness: one uniform 63-bit word per partition, compared with q's first 63 bits; a tie
    (probability 2^-63) is finished exactly on q's remaining bits. No float is involved.

    Args:
        n: the number of distinct units in each partition (int array, any shape).
        epsilon: >= 0, ``int`` or ``Fraction``. Small epsilon makes the table long: refused when
            pi reaches 1 only after more than 250 000 units (about min(1/delta,
            2 ln(1/delta)/epsilon); e.g. epsilon < 3e-4 at delta = 1e-15).
        delta: in [0, 1], ``int`` or ``Fraction``.
        rng: the random source; ``None`` means the OS CSPRNG
            (:func:`~dpsql.privacy.randomness.default_random`).

    Returns:
        A bool array of n's shape: True = release the partition.
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    rng = default_random() if rng is None else rng
    flat = counts.ravel()
    if flat.size == 0 or d == 0:
        return np.zeros(counts.shape, dtype=bool)  # Theorem 2.1 for delta = 0
    if eps > 0:
        tab = _table(eps, d)
        idx = np.minimum(flat, tab.ones)
        hi = tab.hi[idx]
        always = idx == tab.ones
        low_mask = (1 << _LOW_BITS) - 1
        out = _bernoulli_dyadic(hi, always, lambda j: tab.t[int(idx[j])] & low_mask, rng)
        return out.reshape(counts.shape)
    # epsilon = 0 (Theorem 2.2): q(n) = min(1, n delta) exactly, floor'ed to the 2^-128 grid.
    uniq, inv = np.unique(flat, return_inverse=True)
    ts = [min(_ONE, (int(v) * d.numerator << _P) // d.denominator) for v in uniq.tolist()]
    hi_u = np.array([t >> _LOW_BITS if t < _ONE else 0 for t in ts], dtype=np.int64)
    always_u = np.array([t == _ONE for t in ts], dtype=bool)
    inv = inv.ravel()
    low_mask = (1 << _LOW_BITS) - 1
    out = _bernoulli_dyadic(hi_u[inv], always_u[inv], lambda j: ts[int(inv[j])] & low_mask,
                            rng)
    return out.reshape(counts.shape)
