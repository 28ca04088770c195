"""A large answer's exact rows as columns, through selection to the noise (issue 34).

The exact query of a large answer is fetched as numpy columns where the engine can
(``run_columns``, :mod:`dpsql.backends.columns`: the very values a row fetch gives), and
release.py takes from them, without a Python object per exact value, what the rows gave it: the
partition selection's mask over the groups' counts (the same draws in the same order), the
released groups in :func:`~dpsql.pipeline.domain.sorted_groups`' order, and each cell's exact
values (0 for an empty group or NULL, as before). Which fetch is used is decided from public
information (the plan, the size of the public domain, the result's types); shapes this module does
not take (public and private keys together, the truncated geometric, quantiles) have their
columns turned back into the rows a row fetch gives. Exact values stay in release's frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import repeat
from typing import TYPE_CHECKING, Any

from dpsql.backends import Columns, Engine
from dpsql.pipeline.decide import TSGD, Decision
from dpsql.pipeline.domain import sorted_groups
from dpsql.policy.model import Selection
from dpsql.privacy.allocate import EXPONENTIAL

if TYPE_CHECKING:
    import numpy as np

    from dpsql.privacy.randomness import RandomSource

#: public cells from which an answer without partition selection is fetched as columns (below, a
#: row fetch costs less than numpy's fixed costs, and a small answer stays without numpy)
COLUMNS_FROM = 1000

#: exact selection counts are capped here before numpy (see :func:`keep_mask`)
COUNT_CAP = 2**62 - 1  # selection.select takes counts below 2^62


def wants_columns(d: Decision) -> bool:
    """Whether ``d``'s exact rows are fetched as columns: from the plan and the public domain's
    size only. Partition selection (numpy runs it anyway) or at least :data:`COLUMNS_FROM`
    public cells, and no quantile or truncated geometric (they read the rows)."""
    if any(a.mechanism in (TSGD, EXPONENTIAL) for a in d.allocs):
        return False
    if d.selection is not None:
        return d.selection.method != "truncated_geometric"
    return math.prod(len(rows) for _, rows in d.blocks) >= COLUMNS_FROM


def fetch(engine: Engine, d: Decision, sql: str) -> Columns | list[tuple[Any, ...]]:
    """The exact rows of ``sql``: as columns when :func:`wants_columns` and the engine can."""
    if d.plan.quantile_values:  # a quantile's values as numpy arrays (backends/duckdb_arrays.py)
        return engine.run_arrays(sql)
    run_columns = getattr(engine, "run_columns", None)
    return run_columns(sql) if run_columns is not None and wants_columns(d) else engine.run(sql)


def supported(d: Decision, cols: Columns) -> bool:
    """Whether release takes ``cols`` as columns: private keys only under selection (no
    truncated geometric; counts without NULL), or public keys only; no quantile."""
    import numpy as np

    if any(a.mechanism in (TSGD, EXPONENTIAL) for a in d.allocs):
        return False
    if d.selection is None:
        return all(k.public for k in d.plan.keys)
    return (d.selection.method != "truncated_geometric" and not any(k.public for k in d.plan.keys)
            and not np.ma.is_masked(cols.arrays[-1]))


def keep_mask(counts: Any, sel: Selection, rng: RandomSource, kappa: int,
              groups: Callable[[], list[tuple[Any, ...]]] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Partition selection over the exact counts of groups 0, 1, ... (a list or an array): which
    groups are kept, and — for the truncated geometric (paper 002 Theorems 5-6) — their noisy
    counts. ``kappa``: the groups a unit may be in (a many-row table's ``max_groups``,
    sql/units.py): each group is then kept by π_opt at (ε/κ, δ/κ) or by discrete Gaussian
    thresholding, as :func:`dpsql.privacy.selection_gauss.plan` decides from (ε, δ, κ).
    ``groups``: the groups' keys, read only for a seeded source (:func:`seeded_order`)."""
    import numpy as np

    from dpsql.privacy.selection import select
    from dpsql.privacy.tsgd import thresholded_release

    # A split-row count can pass int64 (many records of 2^53 units); pi(n) is 1 long before
    # 2^62, so the cap changes no decision and no row can make numpy overflow.
    try:
        n = np.minimum(np.array(counts, dtype=np.int64), COUNT_CAP)
    except (OverflowError, TypeError, ValueError):  # past int64, or not Python ints
        n = np.array([min(int(c), COUNT_CAP) for c in counts], dtype=np.int64)
    order = seeded_order(rng, groups)
    if order is not None:
        n = n[order]
    noisy = None
    if sel.method == "truncated_geometric":
        keep, noisy = thresholded_release(n, sel.epsilon, sel.delta, rng)
    elif kappa > 1:  # units in up to κ groups: the method phase 1 chose (privacy/selection_gauss.py)
        from dpsql.privacy.selection_gauss import plan
        from dpsql.privacy.selection_kappa import select_kappa

        how = plan(sel.epsilon, sel.delta, kappa, sel.kappa_rule)
        keep = how.gaussian.keep(n, rng) if how.method == "gaussian" else select_kappa(n, sel.epsilon, sel.delta, kappa, rng)
    else:
        keep = select(n, sel.epsilon, sel.delta, rng)  # the optimal primitive, Theorem 1
    keep = np.asarray(keep, dtype=bool)
    if order is None:
        return keep, noisy
    back = np.empty_like(keep)
    back[order] = keep  # each group's decision at its own place again
    if noisy is not None:  # the kept groups' noisy counts, in the order of the groups given
        at = np.zeros(keep.size, dtype=np.int64)
        at[order[keep]] = noisy
        noisy = at[back]
    return back, noisy


def seeded_order(rng: RandomSource, groups: Callable[[], list[tuple[Any, ...]]] | None) -> np.ndarray | None:
    """For a seeded source (tests, the studies' reproducible runs): the groups' permutation into
    :func:`~dpsql.pipeline.domain.sort_key`'s order, so that each group's selection draw does not
    depend on the order DuckDB returned the groups in (which varies between runs with its
    threads). None for every other source: its draws are independent, so which group takes which
    draw changes no distribution, and the production path sorts nothing it does not release."""
    from dpsql.privacy.randomness import SeededRandom

    if groups is None or not isinstance(rng, SeededRandom):
        return None
    import numpy as np

    from dpsql.pipeline.domain import sort_key

    keys = groups()
    return np.array(sorted(range(len(keys)), key=lambda i: sort_key(keys[i])), dtype=np.int64)


def select_rows(d: Decision, cols: Columns, rng: RandomSource) -> tuple[list[tuple[Any, ...]], np.ndarray]:
    """Partition selection over the groups of ``cols`` (one per row, private keys first, the
    count last): the released groups in :func:`sorted_groups`' order, at most ``d.max_released``
    of them (post-processing), and the row of each."""
    import numpy as np

    assert d.selection is not None
    nk = len(d.plan.keys)
    keep, _ = keep_mask(cols.arrays[-1], d.selection, rng, d.plan.table.max_groups or 1,
                        lambda: list(zip(*[a.tolist() for a in cols.arrays[:nk]])))
    rows = np.flatnonzero(keep)
    keys = [a[rows] for a in cols.arrays[:nk]]
    if nk == 1 and keys[0].dtype.kind in "iu" and not np.ma.is_masked(keys[0]):
        # one integer key, no NULL: sorted_groups' order is the values' (they are distinct)
        values = np.asarray(keys[0])
        order = _sorted_order(values)
        released = list(zip(values[order].tolist()))
    else:
        kept = list(zip(*[k.tolist() for k in keys]))
        released = sorted_groups(kept)
        where = dict(zip(kept, range(len(kept))))
        order = np.fromiter(map(where.__getitem__, released), dtype=np.int64, count=len(released))
    return released[:d.max_released], rows[order][:d.max_released]


def _sorted_order(values: np.ndarray) -> np.ndarray:
    """The permutation that sorts distinct integers: through a table indexed by the value when
    they are dense (a count of steps per value, no comparison sort), else numpy's stable argsort."""
    import numpy as np

    if values.dtype.kind == "i" and len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * len(values):
            row_of = np.full(hi - lo + 1, -1, dtype=np.int64)
            row_of[values.astype(np.int64) - lo] = np.arange(len(values))
            return row_of[row_of >= 0]
    return np.argsort(values, kind="stable")


def cell_rows(cols: Columns, nk: int, cells: list[tuple[Any, ...]], key_lists: list[list[Any]]) -> np.ndarray:
    """The row of ``cols`` holding each cell's group (its first ``nk`` columns are the keys), -1
    for an empty group: by the values of one integer key in numpy, else by a dict of the keys
    (the lookup the row path makes). ``key_lists``: the cells' keys, one list per key."""
    import numpy as np

    if nk == 1 and cols.arrays[0].dtype.kind == "i" and not np.ma.is_masked(cols.arrays[0]):
        have = np.asarray(cols.arrays[0]).astype(np.int64, copy=False)
        if not len(have):
            return np.full(len(cells), -1, dtype=np.int64)
        # numpy's int64 when every value is an int (or a bool, equal to 0 or 1 as in a dict) within
        # int64; anything else (floats, None, text, past int64) makes another dtype: the dict below
        want = np.array(key_lists[0])
        if want.dtype == np.int64 and len(want):
            lo, hi = min(int(have.min()), int(want.min())), max(int(have.max()), int(want.max()))
            if hi - lo < 4 * (len(have) + len(want)):  # dense keys (a keyset of ranges): a table of rows
                row_of = np.full(hi - lo + 1, -1, dtype=np.int64)
                row_of[have - lo] = np.arange(len(have))
                return row_of[want - lo]
            order = np.argsort(have, kind="stable")
            sorted_have = have[order]
            pos = np.minimum(np.searchsorted(sorted_have, want), len(have) - 1)
            return np.where(sorted_have[pos] == want, order[pos], -1)
    keys = list(zip(*[a.tolist() for a in cols.arrays[:nk]])) if nk else [()] * len(cols)
    where = dict(zip(keys, range(len(keys))))
    return np.fromiter(map(where.get, cells, repeat(-1)), dtype=np.int64, count=len(cells))


def values_at(cols: Columns, nk: int, at: np.ndarray) -> Callable[[int], Any]:
    """Primitive ``i``'s exact value per cell, read at rows ``at`` (-1: an empty group): an int64
    array, 0 for an empty group or NULL, when the column is integers within int64; else the list
    of Python values (None for an empty group or NULL) the row path gives."""
    import numpy as np

    found = at >= 0
    every = bool(found.all())

    def exact_of(i: int) -> Any:
        col = cols.arrays[nk + i]
        if col.dtype.kind == "i" or (col.dtype.kind == "u" and col.dtype.itemsize < 8):
            filled = np.ma.filled(col, 0).astype(np.int64, copy=False)
            if every:
                return filled[at]
            values = np.zeros(len(at), dtype=np.int64)
            values[found] = filled[at[found]]
            return values
        values_list = col.tolist()
        return [values_list[j] if j >= 0 else None for j in at.tolist()]

    return exact_of
