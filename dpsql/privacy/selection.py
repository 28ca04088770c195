"""DP partition selection: which GROUP BY keys found in private data may be released.

Source: paper 002 = Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection" (PoPETs 2022). Setting: every privacy unit is in at most one partition (group), n is
the number of distinct units in a partition, neighbouring data sets differ by adding or removing
one unit (paper 002 Definition 1). A partition's n then changes by at most 1 between neighbours,
and the partitions of one data set are decided independently.

What this module offers:

* :func:`release_probability` -- pi(n) of the optimal primitive, Theorem 1's closed form in
  float64, rounded down: never above the exact value, relative error below 1e-12.
* :func:`recurrence_probability` -- the same pi(n) from Lemma 1's recurrence, run in exact
  integer arithmetic with every step rounded down (see "Exact table" below).
* :func:`select` -- the mechanism: keep each partition independently with probability q(n), the
  exact-table value (q <= pi, q = pi to ~1e-20 relative). (epsilon, delta)-DP exactly.
* :func:`thresholded_release` -- the k-TSGD thresholded release (Definitions 6-8, Theorems 4-6):
  releases the partitions *and* their noisy counts for one (epsilon, delta).
* :func:`laplace_threshold_probability`, :func:`midpoint` -- the Laplace baseline (Definition 9)
  and the comparison of Figures 2-3 (``benchmarks/partition_selection_figures.py``).
* :func:`group_privacy`, :func:`per_partition_budget` -- the cost when one record moves a count by
  k (selection on split rows, paper 000 section 5.4), and budget splitting for units that are in
  kappa partitions (paper 002 section 5).

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

Numbers: epsilon and delta of the mechanisms (:func:`select`, :func:`thresholded_release`,
:func:`group_privacy`, :func:`per_partition_budget`) are ``int`` or ``fractions.Fraction``;
floats are refused, as in :mod:`dpsql.privacy.mechanisms` (0.1 is not 1/10). The analysis functions
(probabilities, mid-points) also take floats and use their exact binary values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from numbers import Rational

import numpy as np

from dpsql.privacy.randomness import RandomSource, default_random
from dpsql.privacy.samplers import sample_discrete_laplace

__all__ = [
    "release_probability",
    "recurrence_probability",
    "select",
    "tsgd_threshold",
    "sample_truncated_geometric",
    "thresholded_release",
    "tsgd_release_probability",
    "laplace_threshold",
    "laplace_threshold_probability",
    "midpoint",
    "group_privacy",
    "per_partition_budget",
]

Real = int | float | Fraction
Counts = int | np.integer | np.ndarray | list

_P = 128  # q(n) of the exact table is a multiple of 2^-128
_Q = 192  # the bounds L >= ... and U of e^(+-eps) are multiples of 2^-192
_LOW_BITS = _P - 63  # bits of q below the 63 compared with the first uniform word
_ONE = 1 << _P
_DEC_PREC = 70  # decimal digits for the bounds on e^eps (2^-232 relative, below 2^-_Q)
# Recurrence steps (~2 us each); pi(n) reaches 1 after about min(1/delta, 2 ln(1/delta)/eps)
# units: 69 000 at eps = 0.001, delta = 1e-15.
_MAX_TABLE = 250_000
# Relative step-down of the float closed form: its rounding error is below ~64 ulp (docstring
# of _pi_float); 2^-44 = 512 ulp leaves a factor 8 and costs 5.7e-14 relative.
_STEP_DOWN = 1.0 - 2.0**-44
_MAX_COUNT = 1 << 62


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------


def _exact(x: object, what: str, *, allow_float: bool) -> Fraction:
    """``x`` as an exact Fraction; floats only when ``allow_float`` (their exact binary value)."""
    if isinstance(x, bool):
        raise TypeError(f"{what} must be a number, not bool")
    if isinstance(x, Rational):
        return Fraction(x)
    if isinstance(x, (float, np.floating)):
        if not allow_float:
            raise TypeError(
                f"{what} must be an int or fractions.Fraction, not float "
                "(a float such as 0.1 is not 1/10; pass Fraction(1, 10))"
            )
        if not math.isfinite(x):
            raise ValueError(f"{what} must be finite")
        return Fraction(float(x))
    raise TypeError(f"{what} must be an int or fractions.Fraction, not {type(x).__name__}")


def _privacy_params(
    epsilon: object, delta: object, *, allow_float: bool
) -> tuple[Fraction, Fraction]:
    eps = _exact(epsilon, "epsilon", allow_float=allow_float)
    d = _exact(delta, "delta", allow_float=allow_float)
    if eps < 0:
        raise ValueError("epsilon must be >= 0")
    if not 0 <= d <= 1:
        raise ValueError("delta must be in [0, 1]")
    return eps, d


def _counts(n: Counts) -> np.ndarray:
    """Non-negative integer counts as int64 (integral floats such as 1e9 are accepted)."""
    arr = np.asarray(n)
    if arr.dtype.kind in "iu":
        c = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise ValueError("counts must be whole numbers")
        c = arr.astype(np.int64)
    elif arr.dtype.kind == "O":
        try:
            c = arr.astype(np.int64)
        except (TypeError, OverflowError) as exc:
            raise TypeError("counts must be integers below 2^62") from exc
    else:
        raise TypeError(f"counts must be integers, not {arr.dtype}")
    if c.size and int(c.min()) < 0:
        raise ValueError("counts must be >= 0")
    if c.size and int(c.max()) >= _MAX_COUNT:
        raise ValueError("counts must be below 2^62")
    return c


def _float_down(x: Fraction) -> float:
    """The largest float <= x."""
    f = float(x)  # correctly rounded
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def _step_down(v: np.ndarray) -> np.ndarray:
    """v (1 - 2^-44), rounded down: removes any float error below 512 ulp, relative."""
    return np.nextafter(v * _STEP_DOWN, 0.0)


# ---------------------------------------------------------------------------------------------
# pi(n): Theorem 1's closed form in float64, rounded down
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _anchors(eps: float, delta: float) -> tuple[int, float, int]:
    """(n1, pi(n1) rounded down to a float, n2) of Theorem 1, for 0 < eps, 0 < delta < 1.

    Evaluated in 60-digit decimal arithmetic on the exact values of the floats, so the floors
    defining n1 and n2 are decided correctly except within ~1e-55 of an integer. There a wrong
    side is harmless: at the first crossover both branches of Lemma 1 give the same value (that
    is what defines it), and near n2 the caller clips at 1 only from n2 + 2 on.
    """
    e, d = Decimal(eps), Decimal(delta)
    with localcontext() as ctx:
        ctx.prec = 60 + max(0, -e.adjusted())  # E - 1 below cancels -log10(eps) digits
        big_e = e.exp()
        a = big_e - 1
        # Theorem 1 / Lemma 4 (eq. 6):
        # n1 = 1 + floor((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta)))
        t1 = ((a + 2 * d) / ((big_e + 1) * d)).ln() / e
        n1 = 1 + int(t1.to_integral_value(rounding=ROUND_FLOOR))
        p1 = d * ((n1 * e).exp() - 1) / a  # pi(n1), first branch of Theorem 1
        # Theorem 1 / Lemma 5: n2 = n1 + floor((1/eps) ln(1 + (e^eps - 1)/delta (1 - pi(n1))))
        t2 = (1 + a / d * (1 - p1)).ln() / e
        n2 = n1 + int(t2.to_integral_value(rounding=ROUND_FLOOR))
    p1f = float(p1)
    if Decimal(p1f) > p1:
        p1f = math.nextafter(p1f, 0.0)
    return n1, p1f, n2


def _pi_float(counts: np.ndarray, eps: float, delta: float) -> np.ndarray:
    """pi(n) for a 1-D array of counts and the exact values of the floats eps and delta, rounded
    down (see below).

    Branches (Theorem 1; Theorem 2 for eps = 0 or delta = 0), written without overflow:

    * 1 <= n <= n1:   delta (e^(n eps) - 1)/(e^eps - 1)
                    = delta e^((n-1) eps) (1 - e^(-n eps)) / (1 - e^(-eps))      (expm1)
    * n1 < n <= n2:   (1 - e^(-m eps)) (1 + delta/(e^eps - 1)) + e^(-m eps) pi(n1), m = n - n1:
                      a sum of two positive terms, no cancellation.
    * n > n2: 1.

    Error: the only amplified rounding is that of the exponent (n-1) eps (or m eps), whose
    relative error u (2^-53) becomes an absolute error u (n-1) eps in the exponent, i.e. a
    relative error u (n-1) eps of that exponential. On these branches (n-1) eps stays below
    ln(1/delta) and m eps below ln(1 + (e^eps - 1)/delta) + eps, < 55 for delta >= 1e-15 and
    eps <= 10 (for larger eps, m eps > 55 only where the term e^(-m eps) pi(n1) is below 1e-23
    of the sum), so with the few ulps of the other operations the result is within ~64 u of
    the exact value. The step-down by a relative 2^-44 = 512 u then puts it at or below the
    exact value; relative error < 6e-14.
    At n = n2 + 1 the second branch is still evaluated (and clipped at 1), so a floor of n2
    decided on the wrong side of an integer cannot produce a 1 where pi(n) < 1.
    """
    out = np.zeros(counts.shape, dtype=np.float64)
    pos = counts >= 1
    if delta == 0:
        return out  # Theorem 2.1: no partition can be released under (eps, 0)-DP
    if delta >= 1:
        out[pos] = 1.0
        return out
    if eps == 0:
        # Theorem 2.2: pi(n) = min(1, n delta); 1 exactly from the smallest n with n delta >= 1.
        q = 1 / Fraction(delta)
        n_one = q.numerator // q.denominator + (q.denominator != 1)
        low = pos & (counts < n_one)
        out[low] = _step_down(counts[low].astype(np.float64) * delta)
        out[counts >= n_one] = 1.0
        return out
    n1, p1, n2 = _anchors(eps, delta)
    with np.errstate(over="ignore"):
        a = np.expm1(eps)  # inf for eps > ~709; delta / a = 0 then, which rounds down
    r1 = pos & (counts <= n1)
    x = counts[r1].astype(np.float64)
    out[r1] = delta * np.exp((x - 1.0) * eps) * (np.expm1(-x * eps) / np.expm1(-eps))
    r2 = (counts > n1) & (counts <= n2 + 1)
    m = (counts[r2] - n1).astype(np.float64)
    out[r2] = -np.expm1(-m * eps) * (1.0 + delta / a) + np.exp(-m * eps) * p1
    out = _step_down(out)
    np.minimum(out, 1.0, out=out)
    out[counts > n2 + 1] = 1.0
    return out


def release_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """pi_opt(n): the largest probability with which any (epsilon, delta)-DP partition selection
    can keep a partition of n units (paper 002 Theorem 1; Theorem 2 for epsilon = 0 or delta = 0).

    Formula (Theorem 1), for epsilon > 0 and 0 < delta < 1, with
    n1 = 1 + floor((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta))),
    n2 = n1 + floor((1/eps) ln(1 + (e^eps - 1)/delta (1 - pi(n1)))) and m = n - n1::

        pi(n) = delta (e^(n eps) - 1) / (e^eps - 1)                               n <= n1
        pi(n) = (1 - e^(-m eps)) (1 + delta/(e^eps - 1)) + e^(-m eps) pi(n1)     n1 < n <= n2
        pi(n) = 1                                                                 n > n2

    pi(0) = 0; delta = 0 gives 0 everywhere (Theorem 2.1); epsilon = 0 gives min(1, n delta)
    (Theorem 2.2).

    Privacy: keeping each partition independently with probability pi(n) is (epsilon, delta)-DP
    when each unit is in at most one partition (Definition 3, Theorem 1), and optimal among all
    such mechanisms (Theorem 3). This function only *evaluates* pi; :func:`select` samples.

    Numerics: float64, vectorised, no overflow for n up to 2^62. The value returned is never
    above the exact pi(n) of the given epsilon and delta (floats are taken at their exact binary
    value; Fractions are first rounded down to floats, which can only lower pi) and is within a
    relative 1e-13 of it (tested against 80-digit arithmetic for eps in [0.01, 10], delta in
    [1e-15, 0.1], n up to 1e9).

    Args:
        n: a count or an array of counts (non-negative integers).
        epsilon: >= 0 (int, float or Fraction).
        delta: in [0, 1] (int, float or Fraction).

    Returns:
        float64 array of n's shape (0-d for a scalar n).
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    return _pi_float(counts.ravel(), _float_down(eps), _float_down(d)).reshape(counts.shape)


# ---------------------------------------------------------------------------------------------
# The exact table: Lemma 1's recurrence on rationals, rounded down at every step
# ---------------------------------------------------------------------------------------------


def _exp_bounds(x: Fraction) -> tuple[Fraction, Fraction]:
    """(lo, hi) with lo <= e^x <= hi, rigorously.

    x is rounded outwards to 70 digits; ``Decimal.exp`` is correctly rounded (half-even) at the
    context precision, so one ulp further out is a strict bound.
    """
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        ctx.rounding = ROUND_FLOOR
        x_lo = Decimal(x.numerator) / x.denominator
        ctx.rounding = ROUND_CEILING
        x_hi = Decimal(x.numerator) / x.denominator
        lo = x_lo.exp(ctx).next_minus(ctx)
        hi = x_hi.exp(ctx).next_plus(ctx)
    return Fraction(lo), Fraction(hi)


def _dyadic_floor(x: Fraction, bits: int) -> int:
    return (x.numerator << bits) // x.denominator


def _dyadic_ceil(x: Fraction, bits: int) -> int:
    return -((-x.numerator << bits) // x.denominator)


@dataclass(frozen=True)
class _Table:
    """q(n) = t[n] / 2^128 for n < ``ones`` = len(t) - 1, and q(n) = 1 for n >= ``ones``."""

    t: tuple[int, ...]
    hi: np.ndarray  # t[n] >> 65, the first 63 bits of q(n); 0 at ``ones`` (not used there)
    ones: int


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
    pi(n) and agrees with :func:`release_probability` (an independent derivation: Theorem 1 is
    the solution of this recurrence) to ~1e-13 relative. This q is what :func:`select` samples.
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
    partitions use :func:`per_partition_budget`; for counts a record can move by k (split rows)
    the cost is :func:`group_privacy`.

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


# ---------------------------------------------------------------------------------------------
# Truncated geometric thresholding (Definitions 6-8, Theorems 4-6)
# ---------------------------------------------------------------------------------------------


def _pow_floor(num: int, bits: int, k: int) -> int:
    """A lower bound r / 2^bits of (num / 2^bits)^k: square and multiply, truncating products."""
    result = 1 << bits
    base = num
    while k:
        if k & 1:
            result = (result * base) >> bits
        k >>= 1
        if k:
            base = (base * base) >> bits
    return result


@functools.lru_cache(maxsize=256)
def _tsgd_threshold(eps: Fraction, delta: Fraction) -> int:
    # Start from a 70-digit estimate of t = (1/eps) ln((e^eps + 2 delta - 1)/((e^eps + 1) delta))
    # and take the smallest k that a rigorous test accepts (a near-tie only moves k up by one).
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        e = Decimal(eps.numerator) / eps.denominator
        d = Decimal(delta.numerator) / delta.denominator
        big_e = e.exp()
        t = ((big_e - 1 + 2 * d) / ((big_e + 1) * d)).ln() / e
        k = max(1, int(t.to_integral_value(rounding=ROUND_CEILING)) - 1)
    lo, hi = _exp_bounds(eps)
    lo_num = _dyadic_floor(lo, _Q)
    lo_q = Fraction(lo_num, 1 << _Q)

    def accepted(k: int) -> bool:
        # P[X = k] <= delta  <=>  delta (x^k (x + 1) - 2) - (x - 1) >= 0 with x = e^eps (proof of
        # Theorem 4). The left side grows with x in its first term and falls in its second, so
        # x^k >= lo^k, x + 1 >= lo + 1 and x - 1 <= hi - 1 give a lower bound of it.
        xk = Fraction(_pow_floor(lo_num, _Q, k), 1 << _Q)
        return delta * (xk * (lo_q + 1) - 2) - (hi - 1) >= 0

    while not accepted(k):
        k += 1
    return k


def tsgd_threshold(epsilon: Real, delta: Real) -> int:
    """k of the truncated geometric mechanism (paper 002 Definition 7).

    k = ceil((1/eps) ln((e^eps + 2 delta - 1) / ((e^eps + 1) delta))), the smallest k >= 1 with
    P[X = k] = e^(-k eps) (1 - e^-eps) / (1 + e^-eps - 2 e^(-(k+1) eps)) <= delta for the k-TSGD
    X of parameter p = 1 - e^-eps. Decided rigorously (exact rational bounds on e^eps), so the
    inequality that Theorem 4's proof needs always holds; only within ~1e-60 of a tie (which
    rational inputs never reach exactly, e^eps being transcendental) would k come out one larger.

    Note k = n1 - 1 of Theorem 1 when the logarithm is an integer, else k = n1.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("the truncated geometric mechanism needs epsilon > 0 and 0 < delta < 1")
    return _tsgd_threshold(eps, d)


def sample_truncated_geometric(epsilon: int | Fraction, k: int, rng: RandomSource | None = None,
                               *, size: int | None = None) -> np.ndarray:
    """Exact samples of the k-TSGD of parameter p = 1 - e^-eps (paper 002 Definition 6).

    P[X = x] = c e^(-eps |x|) for |x| <= k, 0 otherwise,
    c = (1 - e^-eps)/(1 + e^-eps - 2 e^(-(k+1) eps)).
    Drawn by rejection from the exact two-sided geometric L_Z(1/eps)
    (:func:`dpsql.privacy.samplers.sample_discrete_laplace`, P ~ e^(-|x|/b) with b = 1/eps): draws
    with |x| > k are redrawn, which conditions on |X| <= k exactly -- the construction the paper
    gives after Definition 6. Rejection rate 2 e^(-(k+1) eps)/(1 + e^-eps) per round.

    Args:
        epsilon: > 0, ``int`` or ``Fraction`` (numerator and denominator below 2^62).
        k: the truncation, >= 1.
        rng: the random source; ``None`` means the OS CSPRNG.
        size: number of samples (default 1).
    """
    eps = _exact(epsilon, "epsilon", allow_float=False)
    if eps <= 0:
        raise ValueError("epsilon must be > 0")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError("k must be an int >= 1")
    rng = default_random() if rng is None else rng
    size = 1 if size is None else int(size)
    scale = 1 / eps
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        x = sample_discrete_laplace(scale, rng, size=pending.size)
        ok = np.abs(x) <= k
        out[pending[ok]] = x[ok]
        pending = pending[~ok]
    return out


def thresholded_release(n: Counts, epsilon: int | Fraction, delta: int | Fraction,
                        rng: RandomSource | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Partition selection that also releases a noisy count: the k-TSGD thresholded release.

    Mechanism (paper 002 Definition 8): c_hat = n + X with X from the k-TSGD of parameter
    p = 1 - e^-eps (Definition 6, :func:`sample_truncated_geometric`), k = :func:`tsgd_threshold`
    (Definition 7); release the partition, with c_hat as its count, iff c_hat > k.

    Privacy: the pair (set of released partitions, their noisy counts) is (epsilon, delta)-DP,
    under add/remove one unit, when every unit is in at most one partition and n counts distinct
    units (Theorem 6, from Theorem 4: the truncated geometric mechanism on a sensitivity-1 count
    is (epsilon, delta)-DP because P[X = k] <= delta). So the released count needs no budget of its
    own. The actual delta spent is delta_hat = P[X = k] <= delta, and the release probability is
    exactly pi_opt for (epsilon, delta_hat) (Theorem 5: for delta_hat the logarithm defining k is
    the integer k) -- slightly below pi_opt for (epsilon, delta).

    Accuracy of the counts: |c_hat - n| <= k always, but the released counts are biased upwards
    near the threshold (only draws with n + X > k survive).

    Args:
        n: distinct units per partition (int array); partitions with n = 0 are never released.
        epsilon: > 0, ``int`` or ``Fraction``.
        delta: in (0, 1), ``int`` or ``Fraction``.
        rng: the random source; ``None`` means the OS CSPRNG.

    Returns:
        (released, counts): a bool array of n's shape, and the int64 noisy counts of the released
        partitions in the order of ``n[released]``.
    """
    counts = _counts(n)
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if eps == 0 or not 0 < d < 1:
        raise ValueError("the truncated geometric mechanism needs epsilon > 0 and 0 < delta < 1")
    k = _tsgd_threshold(eps, d)
    flat = counts.ravel()
    noisy = flat + sample_truncated_geometric(eps, k, rng, size=flat.size)
    released = noisy > k
    return released.reshape(counts.shape), noisy[released]


def _tsgd_delta_hat(eps: float, k: int) -> float:
    """P[X = k] for the k-TSGD with p = 1 - e^-eps (Definition 7), float."""
    em = math.exp(-eps)
    return math.exp(-k * eps) * (-math.expm1(-eps)) / (1 + em - 2 * math.exp(-(k + 1) * eps))


def tsgd_release_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """P[n + X > k]: the release probability of :func:`thresholded_release` (float64).

    Eq. (8) of paper 002 with y = k + 1 and delta_hat = P[X = k]::

        (e^(n eps) - 1)/(e^eps - 1) delta_hat                  1 <= n <= k + 1
        1 - (e^((2k+1-n) eps) - 1)/(e^eps - 1) delta_hat        k + 1 < n <= 2k + 1
        1                                                       n > 2k + 1

    i.e. pi_opt for (epsilon, delta_hat) (Theorem 5). An analysis value (plain float rounding).
    """
    counts = _counts(n)
    eps_f = float(_exact(epsilon, "epsilon", allow_float=True))
    k = tsgd_threshold(epsilon, delta)
    dh = _tsgd_delta_hat(eps_f, k)
    out = np.zeros(counts.shape, dtype=np.float64)

    def ratio(j: np.ndarray) -> np.ndarray:  # (e^(j eps) - 1)/(e^eps - 1), without overflow
        return np.exp((j - 1) * eps_f) * np.expm1(-j * eps_f) / np.expm1(-eps_f)

    low = (counts >= 1) & (counts <= k + 1)
    out[low] = dh * ratio(counts[low].astype(np.float64))
    high = (counts > k + 1) & (counts <= 2 * k + 1)
    out[high] = 1.0 - dh * ratio((2 * k + 1 - counts[high]).astype(np.float64))
    out[counts > 2 * k + 1] = 1.0
    return out


# ---------------------------------------------------------------------------------------------
# The Laplace baseline (Definition 9) and the comparison (Figures 2-3)
# ---------------------------------------------------------------------------------------------


def laplace_threshold(epsilon: Real, delta: Real) -> float:
    """tau = 1 - ln(2 delta)/eps: the threshold of Laplace partition selection (Definition 9)."""
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if eps == 0 or d == 0:
        raise ValueError("Laplace thresholding needs epsilon > 0 and delta > 0")
    return 1.0 - math.log(2 * float(d)) / float(eps)


def laplace_threshold_probability(n: Counts, epsilon: Real, delta: Real) -> np.ndarray:
    """pi_Lap(n) = P[n + Lap(1/eps) >= tau], tau = 1 - ln(2 delta)/eps (paper 002 Definition 9).

    The baseline of paper 002 section 4 ([KKMN09]): keep a partition iff its count plus Laplace
    noise of scale 1/eps reaches tau. (epsilon, delta)-DP: counts n and n + 1 (n >= 1) are
    eps-indistinguishable by the Laplace mechanism, and a partition of one unit, which is absent
    from the neighbour, is kept with probability exactly pi_Lap(1) = delta. Closed form::

        pi_Lap(n) = delta e^((n-1) eps)               1 <= n <= tau
        pi_Lap(n) = 1 - e^(-(n-1) eps) / (4 delta)    n >= tau

    Only evaluated here, for the comparison: dpsql does not sample the continuous Laplace.
    """
    counts = _counts(n)
    tau = laplace_threshold(epsilon, delta)
    eps_f, d_f = float(Fraction(epsilon)), float(Fraction(delta))
    out = np.zeros(counts.shape, dtype=np.float64)
    low = (counts >= 1) & (counts <= tau)
    out[low] = d_f * np.exp((counts[low] - 1).astype(np.float64) * eps_f)
    high = (counts >= 1) & (counts > tau)
    out[high] = 1.0 - np.exp(-(counts[high] - 1).astype(np.float64) * eps_f) / (4 * d_f)
    return out


METHODS = ("optimal", "laplace", "truncated_geometric")


def midpoint(epsilon: Real, delta: Real, method: str = "optimal", *, level: float = 0.5) -> int:
    """The smallest n whose release probability is >= ``level`` (0.5: the mid-point of Figs. 2-3).

    Methods: ``"optimal"`` (pi_opt, Theorem 1, evaluated by :func:`release_probability`, which
    rounds down, so a value within 1e-13 of ``level`` counts as below it), ``"laplace"``
    (Definition 9: n >= tau + ln(2 level)/eps for level <= 1/2, tau - ln(2 (1 - level))/eps above;
    the mid-point is ceil(tau)), ``"truncated_geometric"`` (Definition 8; the mid-point is k + 1).
    The paper's figures also draw level = 0.05 and 0.95.
    """
    if not 0 < level <= 1:
        raise ValueError("level must be in (0, 1]")
    eps, d = _privacy_params(epsilon, delta, allow_float=True)
    if d == 0:
        raise ValueError("no partition is ever released with delta = 0 (Theorem 2.1)")
    if method == "optimal":
        if eps == 0:  # min(1, n delta) >= level
            q = Fraction(level) / d
            return max(1, q.numerator // q.denominator + (q.denominator != 1))
        if d >= 1:
            return 1
        eps_f, d_f = _float_down(eps), _float_down(d)
        _, _, n2 = _anchors(eps_f, d_f)
        ns = np.arange(0, n2 + 3, dtype=np.int64)
        p = _pi_float(ns, eps_f, d_f)
        return int(np.argmax(p >= level))
    if method == "laplace":
        if level >= 1:
            raise ValueError("Laplace thresholding never reaches probability 1")
        tau = laplace_threshold(eps, d)
        eps_f = float(eps)
        if level <= 0.5:
            x = tau + math.log(2 * level) / eps_f
        else:
            x = tau - math.log(2 * (1 - level)) / eps_f
        return max(1, math.ceil(x))
    if method == "truncated_geometric":
        k = tsgd_threshold(eps, d)
        ns = np.arange(0, 2 * k + 3, dtype=np.int64)
        return int(np.argmax(tsgd_release_probability(ns, eps, d) >= level))
    raise ValueError(f"method must be one of {METHODS}")


# ---------------------------------------------------------------------------------------------
# Accounting helpers
# ---------------------------------------------------------------------------------------------


def group_privacy(
    epsilon: int | Fraction, delta: int | Fraction, k: int
) -> tuple[Fraction, Fraction]:
    """(epsilon_k, delta_k) for neighbours that differ by k units' worth of count.

    Used when selection counts split rows (paper 000 section 5.4): a record split into k rows
    moves its partition's count by up to k, so an (epsilon, delta)-DP selection protects it as a
    group of k. Chaining Definition 1 of paper 002 along D_0, D_1, ..., D_k gives
    P[M(D_0) in S] <= e^(k eps) P[M(D_k) in S] + delta (1 + e^eps + ... + e^((k-1) eps)), so::

        epsilon_k = k eps,   delta_k = delta (e^(k eps) - 1)/(e^eps - 1)  (= k delta at eps = 0)

    This is at most the commonly quoted group-privacy bound k e^((k-1) eps) delta (each of the k
    terms is <= e^((k-1) eps)), equal to it for k = 1 and 2 up to the e^eps term. For the optimal
    primitive the chain is tight: pi(k) = delta (e^(k eps) - 1)/(e^eps - 1) for k <= n1.

    epsilon_k is exact; delta_k is rounded *up* to a Fraction of 20 significant digits (e^eps is
    irrational), and capped at 1.
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError("k must be an int >= 1")
    k = int(k)
    if d == 0:
        return k * eps, Fraction(0)
    if eps == 0:
        return Fraction(0), min(Fraction(1), k * d)
    _, x_hi = _exp_bounds(eps)
    with localcontext() as ctx:
        ctx.prec = _DEC_PREC
        ctx.rounding = ROUND_CEILING
        x = Decimal(x_hi.numerator) / x_hi.denominator  # >= e^eps
        total, term = Decimal(0), Decimal(1)
        for _ in range(k):  # sum of e^(i eps), i < k, each term and sum rounded up
            total += term
            term *= x
        upper = Decimal(d.numerator) * total / d.denominator
        ctx.prec = 20
        upper = +upper  # rounds up to 20 digits
    return k * eps, min(Fraction(1), Fraction(upper))


def per_partition_budget(epsilon: int | Fraction, delta: int | Fraction,
                         kappa: int) -> tuple[Fraction, Fraction]:
    """(epsilon/kappa, delta/kappa): the budget of each partition's decision when a unit may be
    in up to kappa partitions (paper 002 section 5, "divide the total privacy budget in kappa").

    Privacy: changing one unit changes at most kappa partition counts by 1 each; each decision
    is (epsilon/kappa, delta/kappa)-DP in its own count and the decisions are independent, so by
    basic composition the whole selection is (epsilon, delta)-DP. The paper recommends this for
    kappa <= 3 (weighted Gaussian thresholding [GGK+20] beyond; not implemented in dpsql).
    """
    eps, d = _privacy_params(epsilon, delta, allow_float=False)
    if isinstance(kappa, bool) or not isinstance(kappa, (int, np.integer)) or kappa < 1:
        raise ValueError("kappa must be an int >= 1")
    return eps / int(kappa), d / int(kappa)
