"""The privacy policy: the frozen objects a loaded policy file becomes.

The policy is written by the data owner and is public. It names, per table, the privacy
unit, the measures with their split thresholds (paper 000 Algorithm 1; per-group overrides,
paper 000 Example 5.7), the group-by keys with their public keysets, and the budget.

Reading and validating the TOML file is :mod:`dpsql.policy.loader`. This module knows nothing
of SQL or of the data.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

MECHANISMS = ("discrete_gaussian", "geometric")
#: DuckDB's integer types (a measure of one is counted in whole units)
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


@dataclass(frozen=True)
class ThresholdOverride:
    """Per-group thresholds of one measure (paper 000 Example 5.7, Lemma 4.3)."""

    key: str
    thresholds: dict[Any, int]  # key value -> threshold in granularity units


#: how a quantile grid's candidates are spaced between its ends
GRID_SCALES = ("linear", "log")
#: candidates of a quantile grid by default (a linear range of at most MAX_GRID_POINTS values
#: gets every value instead: ``policy/grid.py`` default_points), and at most (the exact query
#: bins each value into them with a tree of comparisons of depth log2(points): ``sql/quantiles.py``)
GRID_POINTS, MAX_GRID_POINTS = 1000, 10_000


@dataclass(frozen=True)
class QuantileGrid:
    """The public candidates a measure's MEDIAN / QUANTILE_CONT may return
    (``privacy/quantile.py``): ``points`` values from ``lo`` to ``hi`` (granularity units, both
    included), evenly spaced, or evenly in log scale (``log``: from max(lo, 1), with 0 first
    when lo is 0). Rounded to whole units; repeats dropped."""

    lo: int
    hi: int
    scale: str = "linear"
    points: int = GRID_POINTS

    def candidates(self) -> tuple[int, ...]:
        return _candidates(self.lo, self.hi, self.scale, self.points)

    def bounds(self) -> list[int]:
        """The bin bounds the exact query counts a group's values into (``sql/quantiles.py``):
        every candidate c and c − 1, so that #{x ≤ c} and #{x < c} = #{x ≤ c − 1} (values are
        whole granularity units) are both sums of bins."""
        return list(_bounds(self.lo, self.hi, self.scale, self.points))


@functools.lru_cache(maxsize=64)
def _bounds(lo: int, hi: int, scale: str, m: int) -> tuple[int, ...]:
    grid = _candidates(lo, hi, scale, m)
    return tuple(sorted(set(grid) | {c - 1 for c in grid}))


@functools.lru_cache(maxsize=64)
def _candidates(lo: int, hi: int, scale: str, m: int) -> tuple[int, ...]:
    """The grid's values (public: computed from the policy alone), once per grid."""
    if m == 1 or lo == hi:
        return (lo,)
    if scale == "linear":
        values = [lo + ((hi - lo) * i + (m - 1) // 2) // (m - 1) for i in range(m)]  # exact integers
    else:
        start = max(lo, 1)
        n = m - 1 if lo == 0 else m
        ratio = math.log(hi / start) / max(n - 1, 1)
        values = ([0] if lo == 0 else []) + [round(start * math.exp(ratio * i)) for i in range(n)]
        values[-1] = hi
    return tuple(sorted(set(min(max(v, lo), hi) for v in values)))


@dataclass(frozen=True)
class Measure:
    """A column whose values are split across sub-records.

    ``threshold`` and the override thresholds are stored in granularity units: an integer
    number of ``granularity`` steps, so that all noise is added to integers.
    """

    name: str
    threshold: int
    granularity: Fraction = Fraction(1)
    override: ThresholdOverride | None = None
    #: the public candidates of its quantiles; None: MEDIAN / QUANTILE_CONT of it are refused
    grid: QuantileGrid | None = None

    def thresholds(self) -> list[int]:
        """Every threshold a record of this measure can have (default first)."""
        out = [self.threshold]
        if self.override:
            out.extend(self.override.thresholds.values())
        return out

    @property
    def max_threshold(self) -> int:
        return max(self.thresholds())

    def threshold_for(self, key_value: Any) -> int:
        """The threshold of records whose override key equals ``key_value``."""
        if self.override is None:
            return self.threshold
        return self.override.thresholds.get(key_value, self.threshold)

    def display(self, units: int) -> str:
        """A threshold in units, shown in the measure's own scale."""
        value = units * self.granularity
        return str(value.numerator) if value.denominator == 1 else str(float(value))


#: the time grains a DATE / TIMESTAMP key's declared range may be enumerated at
GRAINS = ("day", "hour", "minute")


@dataclass(frozen=True)
class Key:
    """A column analysts may GROUP BY; public when it has a keyset. An integer column may
    declare a public ``range`` of integers instead (``grain`` is then ``"integer"``): its keyset is
    every integer of the range.

    A DATE or TIMESTAMP key may instead declare a public ``range`` of days (both ends
    included) and a ``grain``: its keyset is then every instant of the range at that grain
    (every day of a DATE column), and GROUP BY takes time buckets of it (``DATE_TRUNC``,
    ``EXTRACT``, ``strftime``) whose keysets are their image of that grid (``keys.py``)."""

    name: str
    keyset: tuple[Any, ...] | None = None
    #: the declared first and last day (datetime.date), when the key is a date/time range
    range: tuple[Any, Any] | None = None
    grain: str = "day"
    #: whether NULL is a value of a public keyset when the schema lets the column hold NULL (policy
    #: ``null = false``: rows whose key is NULL fall in no group, docs/policy.md "NULL keys")
    null: bool = True

    @property
    def public(self) -> bool:
        return self.keyset is not None

    @property
    def numeric(self) -> bool:
        """Whether the key is an integer range (``range = [0, 120]``): its keyset is every
        integer of the range, and GROUP BY takes any expression of it (``sql/keys.py``)."""
        return self.range is not None and isinstance(self.range[0], int)


#: the name of the row-count "measure" of a table with many rows per unit: ``#rows`` counts
#: rows (COUNT(*)), ``#rows(col)`` rows where col is not NULL; no column can be named so
ROWS = "#rows"


def rows_of(column: str | None = None) -> str:
    return ROWS if column is None else f"{ROWS}({column})"


@dataclass(frozen=True)
class TablePolicy:
    """One private table of the policy: its privacy unit, measures, keys and split cap."""

    name: str
    privacy_unit: str
    measures: dict[str, Measure] = field(default_factory=dict)
    keys: dict[str, Key] = field(default_factory=dict)
    max_splits: int | None = None
    #: κ: a unit may have many rows, and keeps at most this many groups of a query (issue 31,
    #: docs/privacy.md "Many rows per unit"); None: one row per unit (checked, DP401)
    max_groups: int | None = None
    #: the split threshold of a unit's row count in a group (COUNT(*) with many rows per unit)
    row_threshold: int | None = None
    #: r: the rows of a kept (unit, group) a quantile's histogram samples; its exponential
    #: mechanism runs at ε/r (sql/units.py; docs/policy.md, "Many rows per unit")
    quantile_rows: int = 1
    #: κ_C per declared set C of key columns (``max_groups_by``, sorted names -> κ_C ≤ κ): a
    #: query grouping by keys that read only columns of C keeps at most κ_C groups per unit
    #: (docs/privacy.md, "κ per grouping"); in a plan, ``max_groups`` is the κ the query uses
    max_groups_by: dict[tuple[str, ...], int] = field(default_factory=dict)
    #: in a plan: the declared sets (``"a,b"``) whose κ_C, or product of κ_C, ``max_groups`` is
    #: (empty: the table's κ)
    max_groups_set: tuple[str, ...] = ()
    #: r_C per declared set C of key columns (``quantile_rows_by``, sorted names -> r_C): a query
    #: whose bare keys fix every column of C samples at most r_C rows per (unit, group) for a
    #: quantile, the least such r_C (docs/privacy.md, "r per grouping"); in a plan,
    #: ``quantile_rows`` is the r the query uses and ``quantile_rows_set`` the set it comes from
    quantile_rows_by: dict[tuple[str, ...], int] = field(default_factory=dict)
    quantile_rows_set: tuple[str, ...] = ()

    def grouping_kappa(self, columns: set[str]) -> tuple[int | None, tuple[str, ...]]:
        """The κ of a query whose keys read exactly ``columns`` (private key columns) and the sets
        it comes from: the smallest of the table's κ and Π κ_C over declared sets C whose union
        holds every one of the columns (one set: its κ_C). A unit with at most κ_C distinct
        values of each C has at most Π κ_C distinct values of their union (docs/privacy.md, "κ per
        grouping"). Phase 1: the policy and the query text only."""
        useful = sorted((c, k) for c, k in self.max_groups_by.items() if columns & set(c))
        best: tuple[int | None, tuple[str, ...]] = (self.max_groups, ())
        for size in range(1, min(len(useful), len(columns)) + 1):  # each set of a minimal cover adds a column
            for combo in itertools.combinations(useful, size):
                if columns <= {x for c, _ in combo for x in c}:
                    kappa = math.prod(k for _, k in combo)
                    if best[0] is None or kappa < best[0] or (kappa == best[0] and not best[1]):
                        best = (kappa, tuple(",".join(c) for c, _ in combo))
        return best

    def grouping_rows(self, fixed: set[str]) -> tuple[int, tuple[str, ...]]:
        """The r of a query whose bare key columns are ``fixed`` (each of its groups fixes their
        values) and the set it comes from: the least r_C over declared sets C ⊆ ``fixed``, else the
        table's ``quantile_rows``. A unit's rows in such a query's group are a subset of its rows
        in one C-group, so r_C rows serve them; a set holding a column the query does not fix
        describes groups finer than the query's (a union of them is one query group), so it is not
        used. Any r is private (the sample enforces it, the mechanism runs at ε/r): the choice is
        about accuracy. Phase 1: the policy and the query text only."""
        fits = sorted((r, c) for c, r in self.quantile_rows_by.items() if set(c) <= fixed)
        return (fits[0][0], (",".join(fits[0][1]),)) if fits else (self.quantile_rows, ())

    @property
    def many_rows(self) -> bool:
        """Whether the policy lets a unit have many rows (``max_groups``): the query path of
        ``sql/units.py``. Decided by the policy (public), never by the data."""
        return self.max_groups is not None

    def measure(self, name: str) -> Measure:
        """A measure by name, or the row count a unit contributes to a group (:func:`rows_of`),
        split at ``row_threshold`` as a measure's value is at its threshold."""
        if name.startswith(ROWS):
            assert self.row_threshold is not None, "planning refuses row counts without a row threshold"
            return Measure(name, self.row_threshold)
        return self.measures[name]

    def role(self, column: str) -> str:
        """What the policy lets an analyst do with a column, in words (public: the policy is)."""
        if column == self.privacy_unit and self.many_rows:
            return f"privacy unit, many rows per unit, at most {self.max_groups} groups each (COUNT(DISTINCT) counts units)"
        if column == self.privacy_unit:
            return "privacy unit (COUNT(*) counts units)"
        if column in self.measures:
            m = self.measures[column]
            text = f"measure: SUM/AVG, split threshold T = {m.display(m.threshold)}"
            if m.granularity != 1:
                text += f", granularity {m.display(1)}"
            if m.override:
                items = list(m.override.thresholds.items())
                shown = ", ".join(f"{m.display(t)} if {m.override.key} = {k}" for k, t in items[:3])
                text += f" ({shown}{', …' if len(items) > 3 else ''})"
            # a column in two roles (docs/policy.md, "Two roles"): its key role too
            return text + (f"; and {_key_role(self.keys[column])}" if column in self.keys else "")
        if column in self.keys:
            return _key_role(self.keys[column])
        return "private: WHERE only"


def _key_role(key: Key) -> str:
    if key.numeric:
        lo, hi = key.range  # type: ignore[misc]
        return f"public integer key: GROUP BY it or expressions of it (bins), range {lo} to {hi}"
    if key.range is not None:
        lo, hi = key.range
        return f"public date/time key: GROUP BY time buckets of it, range {lo} to {hi} by {key.grain}"
    if key.public:
        return f"public key: GROUP BY, keyset of {len(key.keyset or ())} values"
    return "private key: GROUP BY through partition selection"


def _least(*values: int | None) -> int | None:
    declared = [v for v in values if v is not None]
    return min(declared) if declared else None


def joined_table(first: TablePolicy, joined: TablePolicy, alias: str) -> TablePolicy:
    """The relation ``first JOIN joined`` on their privacy units (issue 31; docs/privacy.md,
    "Private tables that share the unit") as one table with many rows per unit: its unit is
    ``first``'s, every joined row belongs to the unit both rows hold, and ``joined``'s measures
    and keys appear under the internal names of its columns (``alias_column``, as the plan names
    them). κ, row_threshold and max_splits are the smallest either table declares: each only
    bounds what a query lets a unit contribute, and the query enforces whichever it uses; so is
    ``quantile_rows`` among the tables with many rows per unit."""
    def inner(column: str) -> str:
        return f"{alias}_{column}"

    measures = dict(first.measures)
    for name, m in joined.measures.items():
        override = None if m.override is None else ThresholdOverride(inner(m.override.key), m.override.thresholds)
        measures[inner(name)] = Measure(inner(name), m.threshold, m.granularity, override, m.grid)
    keys = {**first.keys, **{inner(name): Key(inner(name), k.keyset, k.range, k.grain, k.null) for name, k in joined.keys.items()}}
    # r: the least table-wide quantile_rows of the tables that declare many rows (a one-row table's
    # default 1 says nothing about the joined rows); per-grouping sets describe one table's columns
    rows = [t.quantile_rows for t in (first, joined) if t.many_rows] or [1]
    return TablePolicy(first.name, first.privacy_unit, measures, keys, _least(first.max_splits, joined.max_splits),
                       _least(first.max_groups, joined.max_groups), _least(first.row_threshold, joined.row_threshold),
                       min(rows))


@dataclass(frozen=True)
class PublicTable:
    """A table whose rows the data owner declares public (a code list, a geography), joined
    to a private table through its ``key`` column. Every column of it can be grouped by,
    with the column's distinct values as the public keyset (DESIGN.md: a keyset may be "a
    list, or a public table")."""

    name: str
    key: str


DEFAULT_TOTAL_DELTA = Fraction(1, 10**5)


@dataclass(frozen=True)
class Budget:
    """The walls of the ledger, in both currencies of approximate zCDP (ρ, δ).

    ``total_delta`` caps the δ one analyst's partition selections add up to (default 1e-5: ten
    selections at the default ``selection.delta`` of 1e-6). δ is the probability that the
    guarantee fails outright, so it must stay well below 1/n for n records (docs/policy.md).
    """

    default_rho: Fraction
    total_rho: Fraction  # per analyst
    dataset_rho: Fraction | None = None  # all analysts together, when set
    default_epsilon: Fraction = Fraction(1)  # pure-DP ε per query (noise.mechanism = "geometric")
    ledger: Path | None = None  # the ledger file; default: beside the policy file
    total_delta: Fraction = DEFAULT_TOTAL_DELTA  # per analyst
    dataset_delta: Fraction | None = None  # all analysts together, when set
    #: an analyst's own (total_rho, total_delta), where the policy names one (``[budget.analysts]``)
    analysts: dict[str, tuple[Fraction, Fraction]] = field(default_factory=dict)
    #: the most ρ one query may cost, selection included (None: no cap but the walls)
    max_query_rho: Fraction | None = None
    #: the most answers, and bytes of them, the ledger keeps for reuse (ledger/answers.py; 0: none)
    answers_kept: int = 10_000  # per analyst
    answers_bytes: int = 256 << 20

    def walls(self, analyst: str) -> tuple[Fraction, Fraction]:
        """(total ρ, total δ) of one analyst: their own when the policy names them, else the default."""
        return self.analysts.get(analyst, (self.total_rho, self.total_delta))


@dataclass(frozen=True)
class Selection:
    """DP partition selection for GROUP BY on private keys (paper 002).

    ``epsilon``/``delta``: the (ε, δ) of one query's selection, charged as ε²/2 in ρ and δ in
    δ. ``count``: what n counts — distinct privacy units (each costs the same) or split rows
    (paper 000 §5.4: groups of a few huge records are found; a record with k splits pays by
    group privacy). ``method``: the optimal primitive (paper 002 Theorem 1) or the truncated
    geometric (Theorems 5-6), whose noisy count can stand in for the query's COUNT(*).
    ``kappa_rule``: for units in κ > 1 groups, how Gaussian thresholding is calibrated before the
    lower mid-point rule compares it with π_opt at (ε/κ, δ/κ): "charge" at the same charge
    (ε²/2, δ), "paper" at the same (ε, δ) (privacy/selection_gauss.py).
    """

    epsilon: Fraction = Fraction(1, 2)
    delta: Fraction = Fraction(1, 10**6)
    count: str = "units"
    method: str = "optimal"
    kappa_rule: str = "charge"


SELECTION_COUNTS = ("units", "split_rows")
SELECTION_METHODS = ("optimal", "truncated_geometric")
SELECTION_KAPPA_RULES = ("charge", "paper")


@dataclass(frozen=True)
class Policy:
    """The data owner's policy file, loaded and validated (:func:`dpsql.policy.loader.load_policy`)."""

    path: Path | None
    tables: dict[str, TablePolicy]
    budget: Budget
    mechanism: str = "discrete_gaussian"
    selection: Selection = field(default_factory=Selection)
    public_tables: dict[str, PublicTable] = field(default_factory=dict)
    #: table -> where its rows are as Parquet (a local path, resolved; or an ``hdfs://``/``s3a://``
    #: URI), for every table or none (docs/policy.md, "Parquet data")
    parquet: dict[str, str] = field(default_factory=dict)
    #: ``limits.query_memory_mib`` in bytes: the memory one query's answer may take (phase 1's
    #: bound, dpsql/pipeline/memory.py), or None for the machine's default
    query_memory: int | None = None
    #: SHA-256 of the file's bytes when read from a file (:func:`dpsql.policy.loader.load_policy`),
    #: else None: with the path and the resolved Parquet locations it identifies the policy, so
    #: sessions of one process can share plans (:mod:`dpsql.session`)
    digest: str | None = field(default=None, compare=False, repr=False)
    #: a session's ``SET dpsql.max_groups`` (never from the file): each grouping's κ is at most it
    max_groups_cap: int | None = None

    def table(self, name: str) -> TablePolicy | None:
        return self.tables.get(name.lower())

    def public_table(self, name: str) -> PublicTable | None:
        return self.public_tables.get(name.lower())
