"""The release stage (DESIGN.md "protect"): partition selection, the answer's cells, noise.

Takes what phase 1 decided (:class:`Decision`, public information only) and the exact per-group
rows of the exact query, and returns noisy cells with their σ and margins, and the noise terms
of the receipt. Exact values live only in :func:`release`'s frame. No I/O: the engine runs the
exact query before, the ledger charges after (``Session.execute``).

A small answer — public keys only, counts and sums, at most :data:`LIST_DRAWS` noise draws, a
finish that only projects — is released in Python lists, its noise drawn one sample at a time
(:func:`dpsql.privacy.guided.scalar_draws`): the same exact samplers, the same values a numpy
array would hold, and no numpy import, which is most of what such a query costs in a new process
(issue 15). Anything else is released in numpy arrays, imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from itertools import compress, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from dpsql.backends import Columns
from dpsql.pipeline.columnar import COUNT_CAP, cell_rows, fetch, keep_mask, select_rows, supported, values_at  # noqa: F401 - COUNT_CAP, fetch re-exported
from dpsql.pipeline.decide import TSGD, Decision
from dpsql.pipeline.domain import Blocks, sorted_groups
from dpsql.policy.model import Measure, Selection
from dpsql.privacy import quantile
from dpsql.privacy.allocate import EXPONENTIAL, GAUSSIAN, Allocation
from dpsql.privacy.guided import in_range, scalar_draws
from dpsql.privacy.mechanisms import discrete_laplace_variance, exact_positive
from dpsql.pipeline.result import NoiseTerm
from dpsql.sql.plan import ROW_COLUMN, Plan, Primitive, count_sensitivity, moe_column, primitive_column, rank_column, sigma_column

if TYPE_CHECKING:
    import numpy as np

    from dpsql.privacy.randomness import RandomSource

#: most noise draws a query's answer may hold to be released in lists (a draw costs ~3 µs in
#: Python, about what a vectorised round costs at this size once numpy is imported)
LIST_DRAWS = 256

def release(d: Decision, exact_rows: list[tuple[Any, ...]] | Columns, rng: RandomSource
            ) -> tuple[dict[str, Any], list[NoiseTerm], list[tuple[Any, ...]] | None]:
    """Selection and noise over the exact rows (or columns: pipeline/columnar.py): (noisy columns
    for the finish stage, the noise terms of the receipt, the released private-key groups or None).
    Not timed: how long it takes depends on the exact rows (:data:`dpsql.pipeline.result.PUBLIC_STAGES`)."""
    plan, sel = d.plan, d.selection
    nk, n_prim = len(plan.keys), len(plan.primitives)
    # C-speed maps (itemgetter) over the rows: this stage's cost is per cell
    keys_of, values_of = itemgetter(slice(0, nk)), itemgetter(slice(nk, nk + n_prim))
    released, selected_counts, key_lists = None, None, None
    if isinstance(exact_rows, Columns) and not supported(d, exact_rows):
        exact_rows = exact_rows.rows()  # a shape columnar.py does not take: the rows a row fetch gives
    if isinstance(exact_rows, Columns):  # no Python object per exact value (issue 34)
        released, at = select_rows(d, exact_rows, rng) if sel is not None else (None, None)
        cells = domain(plan, d.blocks, released)
        key_lists = [list(map(itemgetter(i), cells)) for i in range(nk)]  # the keys' columns, made once
        exact_of = values_at(exact_rows, nk, cell_rows(exact_rows, nk, cells, key_lists) if at is None else at)
    else:
        if sel is not None:
            kept_of, counts, group_of_row = selection_counts(plan, exact_rows)
            released, selected_counts, keep = _select(kept_of, counts, sel, rng, plan.table.max_groups or 1)
            del kept_of, counts  # below: only the kept groups' rows are looked up (a mask, in C)
            exact_rows = list(compress(exact_rows, (keep if group_of_row is None else keep[group_of_row]).tolist()))
            # Post-processing of the selection's output: never more cells than the limit.
            released = released[:d.max_released]
        key_of = itemgetter(0) if nk == 1 else keys_of  # one key: its value hashes faster than a tuple
        exact_by_cell = dict(zip(map(key_of, exact_rows), map(values_of, exact_rows)))
        cells = domain(plan, d.blocks, released)
        # one lookup per cell, not per primitive
        exact_of_cell = list(map(exact_by_cell.get, map(key_of, cells), repeat((None,) * n_prim)))
        del exact_by_cell
        exact_of = lambda i: list(map(itemgetter(i), exact_of_cell))  # noqa: E731
    del exact_rows

    sens_of = {i: sensitivities(plan, cells, a.primitive) for i, a in enumerate(d.allocs)
               if a.mechanism not in (TSGD, EXPONENTIAL)}
    noises: dict[int, Any] | None = sample_noise_lists(d, len(cells), sens_of, rng)
    lists = noises is not None
    if noises is None:
        import numpy as np

        noises = sample_noise(d.allocs, sens_of, rng)
    if key_lists is None:
        key_lists = [list(map(itemgetter(i), cells)) for i in range(nk)]
    columns: dict[str, Any] = {k.name: key_lists[i] for i, k in enumerate(plan.keys)}
    # the finish query carries each cell's position (finish.py)
    columns[ROW_COLUMN] = list(range(len(cells))) if lists else np.arange(len(cells), dtype=np.int64)
    noise_terms: list[NoiseTerm] = []
    for i, a in enumerate(d.allocs):
        p = a.primitive
        if a.mechanism == TSGD:
            assert selected_counts is not None and sel is not None
            from dpsql.privacy.tsgd import tsgd_threshold

            noisy_counts = [selected_counts[cell] for cell in cells]  # keys are all private here
            k = tsgd_threshold(sel.epsilon, sel.delta)
            sd = math.sqrt(discrete_laplace_variance(1 / sel.epsilon))
            columns[primitive_column(i)] = np.array(noisy_counts, dtype=np.int64)
            columns[sigma_column(i)] = np.full(len(cells), sd)
            columns[moe_column(i)] = np.full(len(cells), float(k))  # |noise| <= k always
            noise_terms.append(NoiseTerm(aggregate=p.label, rho=Fraction(0), mechanism=TSGD, sensitivity=(1.0,),
                                         sigma=(sd,), moe95=(float(k),)))
            continue
        if a.mechanism == EXPONENTIAL:
            columns.update(release_quantile(i, a, plan, exact_of(i), rng))
            noise_terms.append(quantile_term(a, plan))
            continue
        m = plan.table.measure(p.column) if p.kind in ("sum", "sumsq") and p.column else None
        g = (m.granularity ** (2 if p.kind == "sumsq" else 1)) if m else Fraction(1)  # squares: in units of g²
        sens, noise = sens_of[i], noises[i]
        distinct = sorted(set(sens))  # a handful of distinct values
        sigma_by_sens = {s: a.sigma(s) for s in distinct}
        moe_by_sens = {s: a.moe(s) for s in distinct}
        if lists:
            columns[primitive_column(i)] = noisy_list(exact_of(i), noise, g)
            fg = float(g)  # once, not per cell (a Fraction's float costs ~1 µs); the same values
            sigma_of = {s: float(sigma_by_sens[s]) * fg for s in distinct}
            moe_of = {s: float(moe_by_sens[s]) * fg for s in distinct}
            columns[sigma_column(i)] = list(map(sigma_of.__getitem__, sens))
            columns[moe_column(i)] = list(map(moe_of.__getitem__, sens))
        else:
            exact, noise = exact_and_noise(exact_of(i), noise)
            noisy = exact + noise
            del exact
            columns[primitive_column(i)] = as_array(noisy, g)
            columns[sigma_column(i)] = per_cell(sigma_by_sens, sens) * float(g)
            columns[moe_column(i)] = per_cell(moe_by_sens, sens) * float(g)
        noise_terms.append(NoiseTerm(
            aggregate=p.label, rho=a.rho, mechanism=a.mechanism, epsilon=a.epsilon,
            sensitivity=tuple(float(s * g) for s in distinct),
            sigma=tuple(sigma_by_sens[s] * float(g) for s in distinct),
            moe95=tuple(moe_by_sens[s] * float(g) for s in distinct)))
    del exact_of
    return columns, noise_terms, released


def release_quantile(i: int, a: Allocation, plan: Plan, hists: list[Any], rng: RandomSource) -> dict[str, Any]:
    """Primitive ``i``'s columns for a quantile: one candidate of the measure's grid per cell,
    drawn by the exponential mechanism from the cell's exact histogram (``privacy/quantile.py``).
    Its error is stated in ranks (the receipt), so the cells' σ and margin columns are NaN; the rank
    error is public (q, ε, the grid's size): each row's rank interval is post-processing (pipeline/propagate.py)."""
    import numpy as np

    p = a.primitive
    m = plan.table.measures[p.column]
    assert m.grid is not None and p.q is not None and a.em_epsilon is not None
    grid = m.grid.candidates()
    picked, n = quantile.draw(hists, m.grid, p.q, a.em_epsilon, rng, plan.quantile_values), len(hists)
    values = np.array([grid[j] for j in picked] + [0], dtype=object)[:-1]  # Python ints, any size
    return {primitive_column(i): as_array(values, m.granularity),
            sigma_column(i): np.full(n, np.nan), moe_column(i): np.full(n, np.nan),
            rank_column(i): np.full(n, quantile.rank_error95(p.q, a.em_epsilon, len(grid)))}


def quantile_term(a: Allocation, plan: Plan) -> NoiseTerm:
    """The receipt's line for a quantile: its charge, ε, and its 95% rank error."""
    p = a.primitive
    m = plan.table.measures[p.column]
    assert m.grid is not None and p.q is not None and a.em_epsilon is not None
    points = len(m.grid.candidates())
    rows = plan.table.quantile_rows if plan.table.many_rows else 1  # values a unit adds to a group (sql/units.py)
    return NoiseTerm(aggregate=p.label, rho=a.rho, mechanism=EXPONENTIAL, epsilon=a.epsilon,
                     sensitivity=(rows * max(float(p.q), 1 - float(p.q)),), sigma=(), moe95=(),
                     rank_error95=quantile.rank_error95(p.q, a.em_epsilon, points), grid=quantile_grid_text(m))


def quantile_grid_text(m: Measure) -> str:
    """How a receipt names a measure's public grid: '837 log-spaced values from 0 to 100000000'."""
    assert m.grid is not None
    return (f"{len(m.grid.candidates())} {'log-spaced' if m.grid.scale == 'log' else 'evenly spaced'} values "
            f"from {m.display(m.grid.lo)} to {m.display(m.grid.hi)}")


def _noise_groups(allocs: tuple[Allocation, ...], sens_of: dict[int, list[int]]
                  ) -> list[tuple[str, list[int], list[Fraction], list[list[int] | tuple[int, int]]]]:
    """Per mechanism, in order: its primitives, the distinct scales (σ² or b) of its one sampler
    call, and per primitive each cell's index into them (:func:`sample_noise`): a list, or
    (index, cells) when every cell has the same."""
    out = []
    for mechanism in dict.fromkeys(allocs[i].mechanism for i in sens_of):
        ids = [i for i in sens_of if allocs[i].mechanism == mechanism]
        index: dict[Fraction, int] = {}  # the distinct scales of the call, in order
        groups = []
        for i in ids:
            sens, a = sens_of[i], allocs[i]
            by_sens = {s: a.scale(s) for s in set(sens)}  # a handful of distinct values
            slot = {s: index.setdefault(v, len(index)) for s, v in by_sens.items()}
            if len(slot) == 1:
                groups.append((slot[sens[0]], len(sens)))
            else:
                groups.append([slot[s] for s in sens])
        out.append((mechanism, ids, list(index), groups))
    return out


def sample_noise_lists(d: Decision, n_cells: int, sens_of: dict[int, list[int]], rng: RandomSource
                       ) -> dict[int, list[int]] | None:
    """The noise of a small answer as lists (the module docstring), or None when the answer is
    not one: private keys (partition selection), a quantile, a finish that is more than a
    projection, no cell, more than :data:`LIST_DRAWS` draws, a scale outside the float-guided
    samplers' range, or a source without ``words64``. Decided from the plan and the cells'
    count (public) before any draw; each mechanism's cells are drawn in one stream, in the order
    :func:`sample_noise` gives its one call, so up to :data:`~dpsql.privacy.guided.SMALL_BATCH`
    draws the values are the very ones it draws from the same source."""
    if (d.selection is not None or d.plan.projection is None or n_cells == 0 or len(sens_of) != len(d.allocs)
            or n_cells * len(sens_of) > LIST_DRAWS or not hasattr(rng, "words64")):
        return None
    calls = _noise_groups(d.allocs, sens_of)
    values = {m: [exact_positive(v, "sigma2" if m == GAUSSIAN else "scale") for v in scales] for m, _, scales, _ in calls}
    if not all(in_range(v, m == GAUSSIAN) for m, vs in values.items() for v in vs):
        return None
    out: dict[int, list[int]] = {}
    for mechanism, ids, _, groups in calls:
        cells = [[grp[0]] * grp[1] if isinstance(grp, tuple) else grp for grp in groups]
        draws = scalar_draws(mechanism == GAUSSIAN, values[mechanism], [g for c in cells for g in c], rng)
        assert draws is not None  # the source has words64
        start = 0
        for i, c in zip(ids, cells):
            out[i] = draws[start:start + len(c)]
            start += len(c)
    return out


def noisy_list(exact: list[Any], noise: list[int], g: Fraction) -> list[Any]:
    """A primitive's noisy values in the measure's units, as Python values: exactly the values
    and types :func:`exact_and_noise` and :func:`as_array` give in an array (ints while every
    noisy value is below 2^62 in magnitude, else floats; g × the integers, correctly rounded
    once, when g is not 1)."""
    noisy = [(0 if x is None else int(x)) + y for x, y in zip(exact, noise)]
    if g != 1:
        a, b = g.numerator, g.denominator
        return [(v * a) / b for v in noisy]
    return noisy if _shown_as_ints(noisy) else [float(v) for v in noisy]


def _shown_as_ints(noisy: list[int]) -> bool:
    """Whether a column of noisy integers is shown as integers: every value below 2^62 in
    magnitude. Read from the noisy values only: the column's type is shown."""
    return not noisy or (-_SAFE < min(noisy) and max(noisy) < _SAFE)


def sample_noise(allocs: tuple[Allocation, ...], sens_of: dict[int, list[int]], rng: RandomSource
                 ) -> dict[int, np.ndarray]:
    """One noise draw per cell of each primitive ``i`` of ``sens_of`` (per-cell sensitivities),
    with one sampler call per mechanism for the whole query: the exact samplers work in
    vectorised rejection rounds whose cost is mostly per round, so three primitives of 24 cells
    drawn together cost about one call of 72, not three of 24. Each cell still gets its own
    independent draw at its own scale (σ² or b), exactly as drawn one primitive at a time."""
    import numpy as np

    out: dict[int, np.ndarray] = {}
    for _, ids, scales, groups in _noise_groups(allocs, sens_of):
        arrays = [np.full(g[1], g[0], dtype=np.int64) if isinstance(g, tuple) else np.array(g, dtype=np.int64)
                  for g in groups]
        draws = allocs[ids[0]].sample(scales, np.concatenate(arrays), rng)
        start = 0
        for i, g in zip(ids, arrays):
            out[i] = draws[start:start + g.size]
            start += g.size
    return out


def select_groups(counts: dict[tuple[Any, ...], int], sel: Selection, rng: RandomSource, kappa: int = 1
                  ) -> tuple[list[tuple[Any, ...]], dict[tuple[Any, ...], int] | None]:
    """The private-key groups released by DP partition selection, in a stable order, and —
    for the truncated geometric (paper 002 Theorems 5-6) — their noisy counts. ``counts``
    are exact and stay here. ``kappa``: the groups a unit may be in (a many-row table's
    ``max_groups``, sql/units.py): each group is then kept by π_opt at (ε/κ, δ/κ) or by discrete
    Gaussian thresholding, as :func:`dpsql.privacy.selection_gauss.plan` decides from (ε, δ, κ)."""
    released, noisy, _ = _select(lambda mask: list(compress(counts, mask)), list(counts.values()), sel, rng, kappa)
    return released, noisy


def _select(kept_of: Callable[[list[bool]], list[tuple[Any, ...]]], counts: list[Any], sel: Selection,
            rng: RandomSource, kappa: int) -> tuple[list[tuple[Any, ...]], dict[tuple[Any, ...], int] | None, np.ndarray]:
    """:func:`select_groups` over the exact counts of groups 0, 1, ... (``kept_of``: the groups a
    mask keeps), plus that mask (:func:`~dpsql.pipeline.columnar.keep_mask`: the draws are
    vectorised), only the kept groups are made."""
    keep, noisy = keep_mask(counts, sel, rng, kappa, lambda: kept_of([True] * len(counts)))
    kept = kept_of(keep.tolist())
    return sorted_groups(kept), None if noisy is None else dict(zip(kept, noisy.tolist())), keep


def per_cell(by_sens: dict[int, float], sens: list[int]) -> np.ndarray:
    """Each cell's value of ``by_sens`` (σ or MOE by sensitivity) as a float array."""
    import numpy as np

    if len(by_sens) == 1:
        return np.full(len(sens), next(iter(by_sens.values())), dtype=float)
    return np.array([by_sens[s] for s in sens], dtype=float)


def domain(plan: Plan, blocks: Blocks,
            released: list[tuple[Any, ...]] | None) -> list[tuple[Any, ...]]:
    """The cells of the answer: every combination of the public keys' values (empty groups
    get noise on zero), times the released private-key groups. Its size was bounded in the
    decide phase (``decide.decision``), so nothing here can refuse."""
    private = [i for i, k in enumerate(plan.keys) if not k.public]
    # Cells are built as (public block 0's values, block 1's, ..., the private key's values),
    # in itertools.product's order, by tuple concatenation one block at a time (C-speed list
    # comprehensions, not a generator per cell), then put in the plan's key order if it differs.
    layout = [i for idx, _ in blocks for i in idx] + private
    out: list[tuple[Any, ...]] = [()]
    for _, rows in blocks:
        out = list(rows) if out == [()] else [c + r for c in out for r in rows]
    if released is not None:
        out = list(released) if not blocks else [c + priv for c in out for priv in released]
    if layout != list(range(len(layout))) and len(layout) > 1:
        where = itemgetter(*[layout.index(i) for i in range(len(layout))])
        out = [where(c) for c in out]
    return out


def sensitivities(plan: Plan, domain: list[tuple[Any, ...]], p: Primitive) -> list[int]:
    """Per-cell L2 sensitivity in granularity units: 1 for counts; T for sums, per group when
    the query groups by the key that sets per-group thresholds (paper 000 Example 5.7),
    else the largest threshold any record of the cell can have."""
    if p.kind == "count":
        return [count_sensitivity(plan.table, p)] * len(domain)
    m = plan.table.measure(p.column or "")
    power = 2 if p.kind == "sumsq" else 1  # a split adds at most T² to a sum of squares (sql/spread.py)
    by_key = [i for i, k in enumerate(plan.keys) if m.override is not None and k.column == m.override.key]
    if by_key:
        return [m.threshold_for(cell[by_key[0]]) ** power for cell in domain]
    return [m.max_threshold ** power] * len(domain)


def selection_counts(plan: Plan, exact_rows: list[tuple[Any, ...]]
                     ) -> tuple[Callable[[list[bool]], list[tuple[Any, ...]]], list[int], np.ndarray | None]:
    """(the private-key groups a mask keeps, n per group: the last column of the exact rows, summed
    over public keys, each row's group index: None when a row is a group, its keys the first)."""
    idx = [i for i, k in enumerate(plan.keys) if not k.public]
    if len(idx) == len(plan.keys):
        keys = itemgetter(slice(0, len(idx)))
        return lambda mask: list(map(keys, compress(exact_rows, mask))), list(map(itemgetter(-1), exact_rows)), None
    import numpy as np

    get = itemgetter(*idx)
    groups = map(get, exact_rows) if len(idx) > 1 else zip(map(get, exact_rows))  # as tuples
    counts: dict[tuple[Any, ...], int] = {}
    index: dict[tuple[Any, ...], int] = {}
    of_row = []
    for g, n in zip(groups, map(itemgetter(-1), exact_rows)):
        counts[g] = counts.get(g, 0) + int(n)
        of_row.append(index.setdefault(g, len(index)))
    return lambda mask: list(compress(counts, mask)), list(counts.values()), np.array(of_row, dtype=np.int64)


_SAFE = 2**62  # |exact| and |noise| below this: their int64 sum cannot overflow


def exact_and_noise(exact: list[Any] | np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact values of a primitive per cell (None, an empty group, is 0) and its noise, as
    two arrays whose sum is exact: int64 when every value is below 2^62 in magnitude, else
    object arrays of Python ints (any size)."""
    import numpy as np

    if isinstance(exact, np.ndarray):  # int64, an empty group 0 (pipeline/columnar.py)
        if exact.size and max(int(exact.max()), -int(exact.min()), int(noise.max()), -int(noise.min())) < _SAFE:
            return exact, noise
        exact = exact.tolist()
    if None in exact:
        exact = [0 if v is None else v for v in exact]
    try:
        e = np.array(exact, dtype=np.int64)
        if e.size and max(int(e.max()), -int(e.min()), int(noise.max()), -int(noise.min())) < _SAFE:
            return e, noise
    except (OverflowError, TypeError, ValueError):  # beyond int64, or not integers
        pass
    return np.array([int(v) for v in exact] + [0], dtype=object)[:-1], noise.astype(object)


def as_array(noisy: np.ndarray, g: Fraction) -> np.ndarray:
    """Noisy values in the measure's units: granularity g times the integers (exactly rounded
    once: (v * a) / b of Python ints is correctly rounded). With g = 1, int64 when every noisy
    value is below 2^62 in magnitude (the finish's arithmetic on them then has room), else floats:
    decided from the noisy values alone (post-processing), never from the exact ones, which only
    chose how the sum was computed (:func:`exact_and_noise`)."""
    import numpy as np

    if g == 1 and noisy.dtype == np.int64:  # min and max in numpy, not over a list
        return noisy if not noisy.size or (-_SAFE < noisy.min() and noisy.max() < _SAFE) else noisy.astype(float)
    if g == 1:
        values = noisy.tolist()
        if not _shown_as_ints(values):
            return np.array([float(v) for v in values])
        return noisy if noisy.dtype == np.int64 else np.array(values, dtype=np.int64)
    a, b = g.numerator, g.denominator
    return np.array([(v * a) / b for v in noisy.tolist()])


