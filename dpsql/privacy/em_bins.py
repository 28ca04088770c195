"""A quantile's values counted into its grid's bins, exactly, for many groups at once (issue 34).

The exact query of a quantile-only plan hands each group's values over as an int32 or int64
array (``sql/quantiles.py`` values_sql, ``backends/duckdb_arrays.py``); :func:`value_positions` finds
each value's position among the grid's candidates with two integer comparisons after a table
look-up (no search, no logarithm), :func:`value_chunks` counts a few groups at a time, and
:func:`value_runs` hands each chunk to ``em_runs.py``'s scoring. The counts equal the exact
``HISTOGRAM`` form's (tests/test_quantile_binned.py, tests/test_quantile_runs.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsql.privacy.em_runs import Runs, dense_runs, fits_dense, runs_from_entries

if TYPE_CHECKING:
    from dpsql.policy.model import QuantileGrid


def runs_from_values(values: list[Any], grid: QuantileGrid, q: Fraction) -> Runs:
    """The runs of every group of ``values`` (each group's values: :func:`value_entries`)."""
    group, pos, counts = value_entries(values, grid)
    return runs_from_entries(group, pos, counts, len(values), len(grid.candidates()), q)


def value_entries(values: list[Any], grid: QuantileGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, position, count) of every bin that holds a value of ``values`` (each group's values,
    ``sql/quantiles.py`` values_sql: an int32 or int64 array, or a list; None for a group without one),
    ordered by group then position (``em_runs.positions``' half steps): the groups' sparse histograms,
    the same counts as the exact query's ``HISTOGRAM`` form (tests/test_quantile_binned.py):
    :func:`value_chunks`' counts, all groups at once."""
    width = 2 * len(grid.candidates()) + 1
    parts = []
    for start, _, count in value_chunks(values, grid):
        n = count()
        if isinstance(n, np.ndarray):
            key = np.flatnonzero(n)
            n = (key // width + start, key % width, n[key])
        parts.append(n)
    if not parts:
        return _EMPTY, _EMPTY, _EMPTY
    return tuple(np.concatenate([p[k] for p in parts]).astype(np.int64) for k in range(3))  # type: ignore[return-value]


def value_chunks(values: list[Any], grid: QuantileGrid) -> Iterator[tuple[int, int, Callable[[], Any]]]:
    """The groups of ``values`` (as :func:`value_entries`) in consecutive chunks [start, stop),
    each with the job that counts it: a (stop − start) × (2m + 1) array of counters (group,
    position), or the (group, position, count) entries of the bins that hold a value, ordered.

    Exact: each value's position is :func:`value_positions`' (integer comparisons), counted by
    ``bincount`` into the counters of a few groups at once (at most :data:`COUNTERS`, so that
    they stay in the processor's cache), or by a sort where the groups × positions are more than
    :data:`SPARSE` times the values (reading mostly empty counters would cost more).
    At most :data:`VALUES_AT_ONCE` values are counted at once (a bigger group alone, in slices),
    so the arrays a job adds to the values themselves stay bounded whatever the rows."""
    arrays = [_NONE if v is None else v if isinstance(v, np.ndarray) and v.dtype in _INTS else np.asarray(v, dtype=np.int64)
              for v in values]
    sizes = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
    ends, width = np.cumsum(sizes), 2 * len(grid.candidates()) + 1
    start = 0
    while start < len(arrays):
        stop = max(start + 1, int(np.searchsorted(ends, ends[start] - sizes[start] + VALUES_AT_ONCE, side="right")))
        if stop == start + 1 and sizes[start] > VALUES_AT_ONCE:  # one group, in slices
            yield start, stop, partial(_count_slices, arrays[start], grid, width)
        elif (stop - start) * width <= SPARSE * (ends[stop - 1] - ends[start] + sizes[start]):
            per = max(1, COUNTERS // width)  # counting: a few groups at once, their counters in cache
            for a in range(start, stop, per):
                b = min(a + per, stop)
                yield a, b, partial(_count_groups, arrays[a:b], sizes[a:b], grid, width)
        else:  # sparse groups: a sort costs less than reading their mostly empty counters
            yield start, stop, partial(_sort_groups, arrays[start:stop], sizes[start:stop], start, grid, width)
        start = stop


def _count_slices(a: np.ndarray, grid: QuantileGrid, width: int) -> np.ndarray:
    return sum(np.bincount(value_positions(a[k:k + VALUES_AT_ONCE], grid), minlength=width)
               for k in range(0, a.size, VALUES_AT_ONCE))


def _count_groups(arrays: list[np.ndarray], sizes: np.ndarray, grid: QuantileGrid, width: int) -> np.ndarray:
    # big groups: each in place, no copy nor repeat. A choice by sizes that changes nothing
    # released: the same positions, so the same counters, either way
    if int(sizes.sum()) >= BIG_GROUP * len(arrays):
        key = np.empty(int(sizes.sum()), dtype=np.int64)
        ends = np.cumsum(sizes).tolist()
        for r, a in enumerate(arrays):
            value_positions(a, grid, key[ends[r] - a.size:ends[r]], r * width)
    else:
        key = value_positions(np.concatenate(arrays), grid)
        key += np.repeat(np.arange(len(arrays), dtype=np.int64) * width, sizes)
    return np.bincount(key, minlength=len(arrays) * width)


def _sort_groups(arrays: list[np.ndarray], sizes: np.ndarray, start: int, grid: QuantileGrid,
                 width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key = value_positions(np.concatenate(arrays), grid)
    key += np.repeat(np.arange(start, start + len(arrays), dtype=np.int64) * width, sizes)
    n = key
    if key.size:
        key.sort()
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        key, n = key[first], np.diff(np.append(first, key.size))
    return key // width, key % width, n


def value_runs(values: list[Any], grid: QuantileGrid, q: Fraction) -> Iterator[tuple[int, int, Any]]:
    """:func:`value_chunks`' chunks in order, each counted and, when :func:`fits_dense`, scored
    (its :class:`Runs`; else its counts, as :func:`value_chunks` gives them). One chunk at a time:
    counting and scoring chunks on a second thread (numpy releases the GIL) was slower on the
    loaded 2-core machine of docs/performance.md, so it is not done."""
    m = len(grid.candidates())
    for a, b, count in value_chunks(values, grid):
        n = count()
        yield a, b, dense_runs(n, b - a, m, q, own=True) if isinstance(n, np.ndarray) and fits_dense(n, b - a, m, q) else n


def value_positions(v: np.ndarray, grid: QuantileGrid, out: np.ndarray | None = None, offset: int = 0) -> np.ndarray:
    """The position of each value among the candidates, as ``em_runs.positions`` gives its bin's:
    2i + 1 for a value equal to c_i, else 2i for i = #{c < v} (2m above c_{m−1}).

    Exact, through a bucket β(v) that is a non-decreasing function of v (:func:`_table`'s: the
    double's leading bits) and a table built by the same function over the candidates, with at
    most one candidate a bucket (checked when the table is built). For v in bucket b, every c
    with β(c) < b is below v and every c with β(c) > b above it, so with i_b = #{c : β(c) < b}
    and c' = c_{i_b} (the bucket's candidate, if it has one, else one above v):
    #{c < v} = i_b + [v > c'] and [v is a candidate] = [v = c'], so the position is
    2·i_b + [v >= c'] + [v > c'], two integer comparisons whatever the floats. A bucket past the
    last candidate (i_b = m) holds only values above c_{m−1}: it is given i_b = m − 1 and
    c' = c_{m−1} (both comparisons true). A grid whose candidates the buckets cannot separate
    takes a binary search (``searchsorted``, 3x slower). In slices of :data:`SLICE` values, so
    that the steps' arrays stay in the processor's cache; int32 values are compared with the
    candidates as int32 (when they all fit one: the same comparisons, 4x faster than int32
    against int64). Into ``out`` (int64) if given, each plus ``offset``."""
    table = _table(grid)
    out = np.empty(v.shape, dtype=np.int64) if out is None else out
    if table is None:
        c = np.array(grid.candidates(), dtype=np.int64)
        i = np.searchsorted(c, v, side="left")
        np.multiply(i, 2, out=out)
        out += c[np.minimum(i, c.size - 1)] == v
        out += offset
        return out
    base, cand, cand32, bucket = table
    cand = cand32 if v.dtype == np.int32 and cand32 is not None else cand
    ge, gt = np.empty(min(SLICE, v.size), dtype=bool), np.empty(min(SLICE, v.size), dtype=bool)
    for k in range(0, v.size, SLICE):
        x = v[k:k + SLICE]
        b = bucket(x)
        c = np.take(cand, b)
        at, above = np.greater_equal(x, c, out=ge[:x.size]).view(np.uint8), np.greater(x, c, out=gt[:x.size]).view(np.uint8)
        at += above  # [v >= c'] + [v > c'], in bytes (one cast to int64 below, not two)
        p = np.take(base, b, out=out[k:k + SLICE])
        p += at
        if offset:
            p += offset
    return out


_TABLES: dict[Any, Any] = {}
_MISSING = object()
_EMPTY = np.empty(0, dtype=np.int64)
_NONE = np.empty(0, dtype=np.int32)  # a group without a value (int32: joins int32 lists unwidened)
#: the arrays counted as they come (values_sql's INTEGER or BIGINT lists); anything else as int64
_INTS = (np.dtype(np.int32), np.dtype(np.int64))
#: values counted into bins at once (:func:`value_entries`): its arrays hold ~5 int64 a value
VALUES_AT_ONCE = 1 << 22
#: the most (group, position) counters :func:`value_entries` counts a chunk of groups into
COUNTERS = 1 << 18
#: :func:`value_entries` sorts rather than counts past this many counters a value
SPARSE = 32
#: :func:`_count_groups` finds each group's positions in place from this many values a group on
BIG_GROUP = 1 << 12
#: values :func:`value_positions` computes at once (each step's array fits in the cache)
SLICE = 1 << 15
#: the most leading bits of the float's fraction a bucket may use (a table of 64 · 2^k entries)
_MAX_BITS = 12


def _table(grid: QuantileGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, Any] | None:
    """(2·i_b per bucket, c' per bucket, c' as int32 if every candidate fits one, β) for :func:`value_positions`, or None when no β of at
    most :data:`_MAX_BITS` leading bits gives each candidate its own bucket. β(v): v as a double
    minus c_0 − 1 (rounding to a double and subtracting a constant are non-decreasing), clamped to
    [1, c_{m−1} − c_0 + 2], read as its bits shifted to keep the exponent and k bits of the
    fraction (the bits of doubles >= 1 increase with the value), minus those of 1. Public:
    computed from the grid alone, once (a table is set whole, so a thread reads one or none)."""
    table = _TABLES.get(grid, _MISSING)
    if table is not _MISSING:
        return table  # type: ignore[no-any-return]
    cands = np.array(grid.candidates(), dtype=np.int64)
    m, lo, hi = cands.size, float(int(cands[0]) - 1), float(int(cands[-1]) + 1)
    top = hi - lo
    table = None
    for k in range(0, _MAX_BITS + 1):
        def bucket(x: np.ndarray, k: int = k) -> np.ndarray:
            f = x.astype(np.float64)
            f -= lo
            np.clip(f, 1.0, top, out=f)
            b = f.view(np.int64)
            b >>= 52 - k
            b -= 1023 << k
            return b
        cb = bucket(cands)
        if np.all(cb[1:] > cb[:-1]):  # each candidate its own bucket (β is non-decreasing)
            i = np.searchsorted(cb, np.arange(int(bucket(np.array([2**63 - 1]))[0]) + 1), side="left")
            last = i == m
            i[last] = m - 1
            c32 = cands[i].astype(np.int32) if -2**31 <= cands[0] and cands[-1] < 2**31 else None
            table = ((2 * i).astype(np.int64), cands[i], c32, bucket)
            break
    if len(_TABLES) >= 64:
        _TABLES.clear()
    _TABLES[grid] = table
    return table
