"""Exact discrete Gaussian and discrete Laplace samples, decided in floating point when it is safe.

Sources:
    [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
        Privacy", NeurIPS 2020: Algorithm 3 (discrete Gaussian by rejection from a discrete
        Laplace), Algorithm 2 (discrete Laplace as a signed geometric).
    The lazy comparison of a uniform real with an irrational number, bit by bit, is the classic
    technique of exact random variate generation (Devroye, "Non-Uniform Random Variate
    Generation", 1986, ch. 3 and 15; Karney, "Sampling exactly from the normal distribution",
    ACM TOMS 2016).

Every decision of a trial is a comparison "U < exp(-g)" of a uniform real U in [0, 1) with the
exponential of an exact rational g >= 0:

* the geometric G = max{k >= 0 : U < exp(-k lam)} (P(G >= k) = exp(-k lam));
* a fair sign, rejecting (negative, 0) so that 0 is not counted twice: Y = +-G then has
  P(Y = y) proportional to exp(-|y| lam), the discrete Laplace of scale 1/lam;
* for the Gaussian, lam = 1/t with t = floor(sigma) + 1, and Y is accepted when
  U' < exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) (CKS20 Algorithm 3).

**Fast path.** The first 63 bits of U are drawn as one word w, so U lies in [w/2^63, (w+1)/2^63).
exp(-g) is computed in float64 from float64 parameters; its absolute error is below 2^-49
(docs/noise.md, "Float-guided exact sampling", derives it: the parameters are rounded once, and
x exp(-x) <= 1/e bounds how far a relative error in g moves exp(-g)). A decision is taken only
when the float value of U and the float value of exp(-g) differ by more than MARGIN = 2^-40 —
2^9 times the error bound — and is then the decision exact arithmetic would take.

**Exact finish.** Otherwise (probability about 2^-39 per comparison) the comparison goes on
with more bits of the *same* U against decimal bounds of exp(-g) (``decimal``'s exp is correctly
rounded) at doubling precision, until U is on one side: :func:`less_exp`. It terminates with
probability 1 because exp(-g) is irrational for every rational g > 0 (Lindemann).

For small batches and t < 2^16 the geometric is first read off the log: G = floor(X) with
X = -t ln U. When U's first 63 bits are at least 2^53, every U of their interval has X within
t/2^53 of the others, the float value of -t ln(w/2^63) is within 2^-28 of them (log is accurate
to a few ulps of |ln U| <= 44), so a float value at least 2^-16 from an integer has the same floor
as every X of the interval. Otherwise the exponential comparisons above decide.

So every sample has exactly the distribution of CKS20's algorithms; the floats only choose which
comparisons need more than 63 bits. Parameters outside the range where the error bound is
proved (sigma or the Laplace scale beyond 2^40 or below 2^-20) go to the integer-only samplers
of :mod:`dpsql.privacy.samplers`.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the vectorised path only (scalar_draws needs none)
    import numpy as np

    from dpsql.privacy.randomness import RandomSource

__all__ = ["MARGIN", "SMALL_BATCH", "gauss_guided", "gauss_small", "in_range", "lap_guided", "less_exp"]

MARGIN = 2.0**-40  # decide in floats only when U and exp(-g) are further apart than this
_INV_W = 2.0**-63  # a 63-bit word w as the real w / 2^63
_MASK63 = (1 << 63) - 1
_PARAM_MAX = 1 << 40  # t (Gaussian) and the Laplace scale below 2^40 (so k < 2^46 is exact in a
#                      float), sigma^2 and the scale at least 2^-20 (far from float underflow)
_W53 = 1 << 53  # U's first 63 bits at least this: its interval is relatively narrower than 2^-53
_LOG_T_MAX = 1 << 16  # t below this: -t ln U has absolute float error below 2^-28
_LOG_MARGIN = 2.0**-16  # decide G from -t ln U only this far from an integer
SMALL_BATCH = 32  # up to this many cells one Python loop beats a numpy round's set-up (measured:
#                  1.36 us a sample against 1.46 at 32 cells, 1.32 against 1.18 at 40)

Word = Callable[[], int]  # a fresh 63-bit uniform Python int


def in_range(value: Fraction, gaussian: bool) -> bool:
    """Whether the float error bound of the fast path is proved for this sigma^2 or scale."""
    num, den = value.numerator, value.denominator
    if num << 20 < den:  # below 2^-20
        return False
    if gaussian:
        return math.isqrt(num // den) + 1 < _PARAM_MAX
    return num < den << 40


# ---------------------------------------------------------------------------------------------
# The exact finish: a uniform real known bit by bit against bounds of exp(-g)
# ---------------------------------------------------------------------------------------------


class _Lazy:
    """A uniform real U in [0, 1) of which the first ``bits`` bits, ``v``, are known."""

    __slots__ = ("v", "bits", "word")

    def __init__(self, first63: int, word: Word) -> None:
        self.v, self.bits, self.word = first63, 63, word

    def more(self) -> None:
        """Draw the next 63 bits of U."""
        self.v = (self.v << 63) | self.word()
        self.bits += 63


def _exp_bounds(g: Fraction, prec: int) -> tuple[Fraction, Fraction]:
    """Rationals lo <= exp(-g) <= hi, about 10^-prec apart relative to exp(-g)."""
    big = {"prec": prec, "Emin": decimal.MIN_EMIN, "Emax": decimal.MAX_EMAX}
    down = decimal.Context(rounding=decimal.ROUND_FLOOR, **big)
    up = decimal.Context(rounding=decimal.ROUND_CEILING, **big)
    near = decimal.Context(rounding=decimal.ROUND_HALF_EVEN, **big)
    num, den = decimal.Decimal(-g.numerator), decimal.Decimal(g.denominator)
    # exp is increasing: exp(-g) lies between exp of a lower and an upper bound of -g; decimal's
    # exp is correctly rounded (error <= 1/2 unit in the last place), so one step further out on
    # each side is already a bound; two steps leave room to spare.
    hi = near.exp(up.divide(num, den))
    lo = near.exp(down.divide(num, den))
    for _ in range(2):
        hi, lo = near.next_plus(hi), near.next_minus(lo)
    return max(Fraction(lo), Fraction(0)), Fraction(hi)


def less_exp(u: _Lazy, g: Fraction) -> bool:
    """Exactly whether U < exp(-g), drawing more bits of U only as needed."""
    if g == 0:
        return True  # U < 1
    prec = 40
    lo, hi = _exp_bounds(g, prec)
    while True:
        scale = 1 << u.bits
        if (u.v + 1) * lo.denominator <= lo.numerator * scale:  # U < (v+1)/2^bits <= lo
            return True
        if u.v * hi.denominator >= hi.numerator * scale:  # U >= v/2^bits >= hi
            return False
        if (hi - lo) * scale < 1:  # U's interval is wider than the bounds': refine U
            u.more()
        else:  # the bounds are the coarser: refine them
            prec *= 2
            lo, hi = _exp_bounds(g, prec)


def _geometric_exact(u: _Lazy, lam: Fraction) -> int:
    """G = max{k >= 0 : U < exp(-k lam)}, exactly."""
    while u.v < (1 << 52):  # enough leading bits for a guess off by at most a step or two
        u.more()
    guess = (u.bits * math.log(2) - math.log(u.v)) / float(lam)  # -ln(v / 2^bits) / lam
    k = max(0, int(guess))
    while k > 0 and not less_exp(u, k * lam):
        k -= 1
    while less_exp(u, (k + 1) * lam):
        k += 1
    if k > _MASK63:
        raise OverflowError("discrete Laplace noise does not fit in int64")
    return k


def _trial_exact(w: int, neg: bool, wc: int, lam: tuple[int, int],
                 accept: tuple[int, int, int] | None, word: Word) -> int | None:
    """One trial decided exactly from its first words (U's first 63 bits ``w``, the sign, the
    acceptance uniform's first 63 bits ``wc``): the signed geometric of rate lam = num/den, then
    (Gaussian, ``accept`` = (p, q, t) with sigma^2 = p/q) CKS20 Algorithm 3's acceptance.
    None = rejected."""
    g = _geometric_exact(_Lazy(w, word), Fraction(*lam))
    if neg and g == 0:
        return None
    if accept is not None:
        p, q, t = accept
        m = g * t * q - p  # gamma = (g - sigma^2/t)^2 / (2 sigma^2) = m^2 / (2 p q t^2)
        if not less_exp(_Lazy(wc, word), Fraction(m * m, 2 * p * q * t * t)):
            return None
    return -g if neg else g


# ---------------------------------------------------------------------------------------------
# The fast path, one cell at a time (small batches)
# ---------------------------------------------------------------------------------------------


def _one_gauss(p: int, q: int, t: int, word64: Callable[[], int]) -> int:
    """One N_Z(p/q) sample (:func:`_gauss_run`)."""
    return _gauss_run(p, q, t, 1, word64)[0]


def _gauss_run(p: int, q: int, t: int, n: int, word64: Callable[[], int]) -> list[int]:
    """``n`` N_Z(p/q) samples by trials decided in Python floats, finished exactly when too close
    to call. ``word64`` gives fresh 64-bit uniform ints; a trial takes two: the first is the
    sign (top bit) and U's first 63 bits, the second the acceptance uniform's."""
    lamf, s2 = 1.0 / t, p / q  # both correctly rounded
    b, two_s2 = s2 / t, 2.0 * s2
    exp, log = math.exp, math.log
    by_log = t < _LOG_T_MAX
    out: list[int] = []
    while len(out) < n:
        x, wc = word64(), word64() & _MASK63
        neg, w = x >> 63, x & _MASK63
        uf = w * _INV_W
        if w >= _W53 and by_log:  # G = floor(-t ln U) straight from the log (module docstring)
            xg = -log(uf) * t
            k = int(xg)
            sure = _LOG_MARGIN < xg - k < 1.0 - _LOG_MARGIN
        else:
            k = int(-log(uf) * t) if uf > 0.0 else -1
            sure = False
        if sure or (k >= 0 and uf < exp(-k * lamf) - MARGIN and uf > exp(-(k + 1) * lamf) + MARGIN):
            if neg and k == 0:
                continue
            ucf, d = wc * _INV_W, k - b
            pa = exp(-(d * d) / two_s2)
            if ucf < pa - MARGIN:
                out.append(-k if neg else k)
                continue
            if ucf > pa + MARGIN:
                continue
        y = _trial_exact(w, bool(neg), wc, (1, t), (p, q, t), _word63(word64))
        if y is not None:
            out.append(y)
    return out


def _one_lap(t: int, s: int, word64: Callable[[], int]) -> int:
    """One discrete Laplace sample of scale t/s, as :func:`_one_gauss` (no acceptance step: one
    word a trial)."""
    lamf = s / t
    exp, log = math.exp, math.log
    while True:
        x = word64()
        neg, w = x >> 63, x & _MASK63
        uf = w * _INV_W
        k = int(-log(uf) / lamf) if uf > 0.0 else -1
        if k < 0 or not (uf < exp(-k * lamf) - MARGIN and uf > exp(-(k + 1) * lamf) + MARGIN):
            y = _trial_exact(w, bool(neg), 0, (s, t), None, _word63(word64))
            if y is not None:
                return y
        elif not (neg and k == 0):
            return -k if neg else k


def _word63(word64: Callable[[], int]) -> Word:
    return lambda: word64() & _MASK63


# ---------------------------------------------------------------------------------------------
# The fast path, vectorised
# ---------------------------------------------------------------------------------------------


def trials_for(cells: int) -> int:
    """Trials a numpy round draws for ``cells`` pending cells of one parameter set: a trial is
    accepted with probability ~0.74 (sigma = 18; ~1/2 at least for small sigma and the Laplace's
    sign), so 1.6 a cell plus a few serve every cell almost always (the rest: the next round)."""
    return (8 * cells + 4) // 5 + 8


def _draw(rng: RandomSource, n: int, acceptance: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A round's uniforms for ``n`` trials in one call to the source (one system call): U's first
    63 bits, the fair signs (63 from each word), and the acceptance uniform's first 63 bits."""
    import numpy as np

    n_sign = (n + 62) // 63
    words = rng.bits63((2 if acceptance else 1) * n + n_sign)
    signs = ((words[-n_sign:, None] >> np.arange(63, dtype=np.int64)) & 1).ravel()[:n].astype(bool)
    return words[:n], signs, words[n:2 * n] if acceptance else None


def _vector(lam: list[tuple[int, int]], accept: list[tuple[int, int, int]] | None,
            group: np.ndarray, rng: RandomSource) -> np.ndarray:
    """One sample per cell (``group[i]`` indexes the cell's parameters) by the sequential
    rejection loop, in rounds: each parameter set present draws a stream of i.i.d. trials
    (:func:`trials_for`), and its pending cells, in order, take its accepted trials in order —
    the k-th cell the k-th accepted trial, exactly as if each cell drew trials until one is
    accepted. Cells left without one go to the next round. The rate of the geometric is
    lam = num/den; ``accept`` as in :func:`_trial_exact`."""
    import numpy as np

    from dpsql.privacy.guided_round import decide

    lamf_g = np.array([num / den for num, den in lam])  # correctly rounded
    s2_g = b_g = None
    if accept is not None:
        s2_g = np.array([p / q for p, q, _ in accept])
        b_g = s2_g / np.array([float(t) for _, _, t in accept])
    shared = len(lam) == 1  # every cell with the same parameters (the usual query): scalars, no gathers
    word: Word = lambda: int(rng.bits63(1)[0])  # noqa: E731
    n = group.size
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        m = pending.size
        if m <= SMALL_BATCH and (word64 := _word_stream(rng, 3 * m + 8)) is not None:
            # the few cells a round left pending: one Python loop, not another numpy round
            if accept is not None:
                params, one = accept, _one_gauss
            else:
                params, one = [(den, num) for num, den in lam], _one_lap  # scale t/s = den/num
            out[pending] = [one(*params[g], word64) for g in group[pending].tolist()]
            break
        if shared:
            sets, cells_of = [0], [pending]
        else:
            g_pending = group[pending]
            # the sets present, ascending (np.unique would import numpy.ma on first use: ~17 ms
            # in a fresh process)
            sets = np.flatnonzero(np.bincount(g_pending)).tolist()
            cells_of = [pending[g_pending == g] for g in sets]  # each set's cells, in order
        sizes = [trials_for(c.size) for c in cells_of]
        n_trials = sum(sizes)
        gi = None if shared else np.repeat(np.array(sets, dtype=np.int64), sizes)
        w, neg, wc = _draw(rng, n_trials, accept is not None)
        keep, sure, val = decide(w, neg, wc, lamf_g, s2_g, b_g, gi, MARGIN)  # the fast path's decisions (guided_round.py)
        for j in np.flatnonzero(~sure).tolist():  # too close to call in floats: finish exactly
            g = 0 if gi is None else int(gi[j])
            y = _trial_exact(int(w[j]), bool(neg[j]), int(wc[j]) if wc is not None else 0, lam[g],
                             accept[g] if accept is not None else None, word)
            keep[j] = y is not None
            val[j] = 0 if y is None else y
        left = []
        start = 0
        for cells, size in zip(cells_of, sizes):
            taken = np.flatnonzero(keep[start:start + size])[:cells.size] + start  # accepted trials, in order
            out[cells[:taken.size]] = val[taken]
            left.append(cells[taken.size:])
            start += size
        pending = left[0] if len(left) == 1 else np.concatenate(left)
    return out


def _word_stream(rng: RandomSource, n: int) -> Callable[[], int] | None:
    """Fresh 64-bit words, ``n`` drawn at once (more when they run out); None: no ``words64``."""
    words64 = getattr(rng, "words64", None)
    if words64 is None:
        return None
    buf = words64(n)

    def word64() -> int:
        nonlocal buf
        if not buf:
            buf = words64(64)
        return buf.pop()

    return word64


def scalar_draws(gaussian: bool, values: list[Fraction], cells: list[int], rng: RandomSource) -> list[int] | None:
    """One sample per cell, cell i's parameter ``values[cells[i]]`` (σ² of the discrete Gaussian or
    the discrete Laplace's b, each :func:`in_range`), drawn one at a time in Python, as a list (no
    numpy): for up to :data:`SMALL_BATCH` cells what :func:`gauss_guided` and :func:`lap_guided`
    draw from the same words; any number (each draw is exact). None: the source has no words64."""
    if gaussian:
        params: list[tuple[int, ...]] = [(v.numerator, v.denominator, math.isqrt(v.numerator // v.denominator) + 1)
                                         for v in values]
        one, words = _one_gauss, 3 * len(cells) + 8  # 2.7 words a sample at sigma = 18
    else:
        params, one, words = [(v.numerator, v.denominator) for v in values], _one_lap, 2 * len(cells) + 8
    word64 = _word_stream(rng, words)
    if word64 is None:
        return None
    return [one(*params[g], word64) for g in cells]


def _int64(values: list[int]) -> np.ndarray:
    import numpy as np

    return np.array(values, dtype=np.int64)


def gauss_small(p: int, q: int, n: int, rng: RandomSource) -> np.ndarray:
    """``n`` <= SMALL_BATCH samples of N_Z(p/q) (in range): the shortest path, for one cell."""
    word64 = _word_stream(rng, 3 * n + 8)
    if word64 is None:
        return gauss_guided([Fraction(p, q)], _int64([0] * n), rng)
    return _int64(_gauss_run(p, q, math.isqrt(p // q) + 1, n, word64))


def gauss_guided(values: list[Fraction], group: np.ndarray, rng: RandomSource) -> np.ndarray:
    """N_Z(sigma^2) per cell, sigma^2 = ``values[group[i]]`` (each :func:`in_range`)."""
    if group.size <= SMALL_BATCH and (drawn := scalar_draws(True, values, group.tolist(), rng)) is not None:
        return _int64(drawn)
    accept = [(v.numerator, v.denominator, math.isqrt(v.numerator // v.denominator) + 1)
              for v in values]  # t = floor(sqrt(p/q)) + 1, exactly
    return _vector([(1, t) for _, _, t in accept], accept, group, rng)


def lap_guided(values: list[Fraction], group: np.ndarray, rng: RandomSource) -> np.ndarray:
    """The discrete Laplace of scale b = t/s = ``values[group[i]]`` per cell (each
    :func:`in_range`): the geometric's rate is s/t."""
    if group.size <= SMALL_BATCH and (drawn := scalar_draws(False, values, group.tolist(), rng)) is not None:
        return _int64(drawn)
    return _vector([(v.denominator, v.numerator) for v in values], None, group, rng)
