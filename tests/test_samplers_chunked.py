"""The vectorised sampler's float-guided decisions, a slice of trials at a time
(dpsql/privacy/guided_round.py), are exactly those of the whole round at once.

Oracle: the round's expressions over whole arrays, written out here (as ``guided._vector``
evaluated them before slicing), on the same words; rounds of several slices and a ragged last one,
one and two parameter sets, the discrete Gaussian and the discrete Laplace, and words next to the
decision boundaries (so that ``sure`` is False somewhere)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsql.privacy import guided
from dpsql.privacy.guided_round import CHUNK, decide


def _whole(w, neg, wc, lamf_g, s2_g, b_g, gi):
    M, inv = guided.MARGIN, 2.0**-63
    uf = w.astype(np.float64) * inv
    lamf = lamf_g[0] if gi is None else lamf_g[gi]
    with np.errstate(divide="ignore"):
        x = -np.log(uf) / lamf
    bad = ~(x < 2.0**62)
    k = np.where(bad, 0.0, np.floor(x))
    sure = ~bad & (uf < np.exp(-k * lamf) - M) & (uf > np.exp(-(k + 1.0) * lamf) + M)
    neg_zero = neg & (k == 0.0)
    keep = sure & ~neg_zero
    if wc is not None:
        s2 = s2_g[0] if gi is None else s2_g[gi]
        d = k - (b_g[0] if gi is None else b_g[gi])
        pa = np.exp(-(d * d) / (2.0 * s2))
        ucf = wc.astype(np.float64) * inv
        no = ucf > pa + M
        sure &= neg_zero | no | (ucf < pa - M)
        keep &= ~no
    keep &= sure
    return keep, sure, np.where(neg, -k, k).astype(np.int64)


@pytest.mark.parametrize("gaussian", [True, False])
@pytest.mark.parametrize("sets", [1, 2])
def test_slices_decide_as_the_whole_round(gaussian, sets):
    rng = np.random.default_rng(5 + sets + 2 * gaussian)
    n = 3 * CHUNK + 17
    w = rng.integers(0, 2**63, size=n, dtype=np.int64)
    t = np.array([4.0, 64.0][:sets])
    lamf_g = 1.0 / t
    # a few words on the boundaries exp(-k lam) themselves (not decided in floats), and a zero word
    k = rng.integers(1, 6, size=50)  # exp(0) * 2^63 is past a 63-bit word
    w[:50] = (np.exp(-k * lamf_g[0]) * 2.0**63).astype(np.int64)
    w[60] = 0
    neg = rng.integers(0, 2, size=n).astype(bool)
    wc = rng.integers(0, 2**63, size=n, dtype=np.int64) if gaussian else None
    s2_g = np.array([10.0, 4000.0][:sets]) if gaussian else None
    b_g = s2_g / t if gaussian else None
    gi = None if sets == 1 else rng.integers(0, 2, size=n).astype(np.int64)
    got = decide(w, neg, wc, lamf_g, s2_g, b_g, gi, guided.MARGIN)
    want = _whole(w, neg, wc, lamf_g, s2_g, b_g, gi)
    assert not want[1].all()  # some trials are left to the exact finish
    for g, x in zip(got, want):
        assert g.dtype == x.dtype and np.array_equal(g, x)
