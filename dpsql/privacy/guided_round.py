"""The float-guided decisions of a vectorised round (:func:`dpsql.privacy.guided._vector`), a
slice of trials at a time.

Each trial is decided on its own (its words, its parameters): whether the floats decide it
(``sure``), whether it is accepted (``keep``) and its value (``val``), exactly the expressions
``_vector`` evaluated over the whole round before. Evaluated over slices of :data:`CHUNK`
trials, the ~10 temporary arrays of a slice stay in the CPU's cache instead of streaming ~2.6 MB
each through memory (200,000 cells: ~330,000 trials): the same IEEE operations on the same
values, so the same decisions bit for bit, in about two thirds of the time on a loaded machine
(issue 34; ``tests/test_samplers_chunked.py`` compares them with the whole-round evaluation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: trials decided at a time: ~10 float64 temporaries of this many values fit in a core's L2
CHUNK = 8192
_INV_W = 2.0**-63  # a 63-bit word w as the real w / 2^63 (as in guided.py)


def decide(w: np.ndarray, neg: np.ndarray, wc: np.ndarray | None, lamf_g: np.ndarray, s2_g: np.ndarray | None,
           b_g: np.ndarray | None, gi: np.ndarray | None, MARGIN: float  # noqa: N803 - guided.py's constant
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keep, sure, val) of a round's trials: U's first 63 bits ``w``, the signs ``neg``, the
    acceptance uniform's ``wc`` (None: the discrete Laplace), each parameter set's rate
    ``lamf_g``, σ² ``s2_g`` and σ²/t ``b_g``, each trial's set ``gi`` (None: set 0), and the
    margin a float decision needs (``guided.MARGIN``)."""
    import numpy as np

    n = w.size
    keep, sure, val = np.empty(n, dtype=bool), np.empty(n, dtype=bool), np.empty(n, dtype=np.int64)
    for a in range(0, n, CHUNK):
        z = slice(a, a + CHUNK)
        _decide(w[z], neg[z], None if wc is None else wc[z], lamf_g, s2_g, b_g, None if gi is None else gi[z],
                keep[z], sure[z], val[z], MARGIN)
    return keep, sure, val


def _decide(w: np.ndarray, neg: np.ndarray, wc: np.ndarray | None, lamf_g: np.ndarray, s2_g: np.ndarray | None,
            b_g: np.ndarray | None, gi: np.ndarray | None, keep: np.ndarray, sure: np.ndarray, val: np.ndarray,
            MARGIN: float) -> None:  # noqa: N803 - the name of guided.py's constant, as its proof uses it
    import numpy as np

    uf = w.astype(np.float64) * _INV_W
    lamf = lamf_g[0] if gi is None else lamf_g[gi]
    with np.errstate(divide="ignore"):
        x = -np.log(uf) / lamf
    bad = ~(x < 2.0**62)  # U's first 63 bits all zero: infinite
    k = np.where(bad, 0.0, np.floor(x))
    sure[:] = ~bad & (uf < np.exp(-k * lamf) - MARGIN) & (uf > np.exp(-(k + 1.0) * lamf) + MARGIN)
    neg_zero = neg & (k == 0.0)  # -0: rejected, so that 0 is not counted twice
    keep[:] = sure & ~neg_zero
    if wc is not None:
        assert s2_g is not None and b_g is not None
        s2 = s2_g[0] if gi is None else s2_g[gi]
        d = k - (b_g[0] if gi is None else b_g[gi])
        pa = np.exp(-(d * d) / (2.0 * s2))
        ucf = wc.astype(np.float64) * _INV_W
        no = ucf > pa + MARGIN
        sure &= neg_zero | no | (ucf < pa - MARGIN)
        keep &= ~no
    keep &= sure
    val[:] = np.where(neg, -k, k)
