"""The typed plan of one query: frozen dataclasses, data only.

The plan separates what runs on private data (the private table, the WHERE filter, the group
keys and the *primitives*: the per-group noisy quantities) from what runs on noisy values
afterwards (the ``finish`` SELECT over the relation of noisy cells, which carries the SELECT
list, HAVING, ORDER BY and LIMIT of the analyst's query). ``planner.build_plan`` builds it;
which primitives each aggregate becomes is ``aggregates.py`` (paper 000 Table 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from dpsql.policy.model import TablePolicy

if TYPE_CHECKING:  # sqlglot is imported by planning, never by running a recorded plan (plan_record.py)
    from sqlglot import exp

NOISY_RELATION = "__noisy"


@dataclass(frozen=True)
class Primitive:
    """One per-group quantity noise is added to.

    kind "count": distinct privacy units (``column`` None) or units with ``column`` not NULL;
    with ``distinct``, the number of distinct non-NULL values of ``column`` — sensitivity 1 too,
    as each unit is one row: adding or removing a unit adds or removes at most one value (on a
    table with many rows per unit, R: :func:`count_sensitivity`).
    kind "sum": the sum of measure ``column`` over split records.
    kind "sumsq": the sum of the squares of measure ``column``'s split values (each at most T²):
    the second moment of VARIANCE / STDDEV (``sql/spread.py``; docs/privacy.md, "Variance").
    kind "quantile": the ``q`` quantile of measure ``column`` over units, one of the public
    candidates of its grid (``privacy/quantile.py``); not split: each unit is one value (on a
    table with many rows per unit, at most ``quantile_rows`` values per group: sql/units.py).
    """

    kind: str
    column: str | None = None
    #: how the column is shown (a joined public column is ``states.region``, not its internal name)
    shown: str | None = field(default=None, compare=False)
    distinct: bool = False
    q: Fraction | None = None

    @property
    def label(self) -> str:
        if self.kind == "quantile":
            assert self.q is not None
            return f"MEDIAN({self.column})" if self.q == Fraction(1, 2) else f"QUANTILE({self.column}, {float(self.q):g})"
        if self.kind == "count" and self.distinct:
            return f"COUNT(DISTINCT {self.shown or self.column})"
        if self.kind == "count":
            return "COUNT(units)" if self.column is None else f"COUNT({self.shown or self.column})"
        if self.column and self.column.startswith("#rows"):  # rows of a unit in a group (sql/units.py)
            return "COUNT(*) rows" if self.column == "#rows" else f"COUNT{(self.shown or self.column)[5:]} rows"
        if self.kind == "sumsq":
            return f"SUM({self.shown or self.column}^2) over splits"
        return f"SUM({self.column})"


def count_sensitivity(table: TablePolicy, p: Primitive) -> int:
    """Δ of a count primitive per group: 1 (a unit is one row, or one kept (unit, group) record),
    except COUNT(DISTINCT col) on a table with many rows per unit: each kept (unit, group) adds at
    most ``row_threshold`` distinct values (a keyed sample of its own, sql/units.py), so adding
    or removing the unit moves the group's count by at most that (docs/privacy.md)."""
    if p.kind == "count" and p.distinct and table.many_rows:
        assert table.row_threshold is not None, "planning refuses COUNT(DISTINCT col) without a row threshold"
        return table.row_threshold
    return 1


@dataclass(frozen=True)
class Join:
    """A public table joined to the query's private table (or to a public table joined before
    it) on the public table's unique key: a lookup, so every private row still contributes
    to at most one row of the joined relation and its sensitivity is unchanged. Or a second
    private table joined on the privacy units (``key`` its unit; ``scopes.add_unit_join``). Its columns
    appear in the plan under internal names (``alias_column``), so they can never be
    confused with the private table's columns."""

    table: str  # the public table
    alias: str  # internal, "__j1"
    side: str  # "INNER" or "LEFT"
    left: str  # the (internal) column it joins from
    key: str  # the public table's key column
    columns: tuple[str, ...]  # the public table's columns the query reads (key first)

    def internal(self, column: str) -> str:
        return f"{self.alias}_{column}"


@dataclass(frozen=True, eq=False)
class GroupKey:
    """One GROUP BY key: a declared key column, a column of a joined public table, or an
    expression of keys (``SUBSTR(naics, 1, 3)``). Public when every column it reads has a
    public keyset: its keyset is then the expression's image over theirs (computed from
    public values only, ``session.py``); otherwise its groups go through partition selection.

    The trees are what planning reads; everything after it (the public domain, the release)
    reads their text, derived here from the trees. A plan read back from its record
    (:mod:`dpsql.records.plan`) has the text and no trees."""

    name: str  # its column in the exact result and the noisy relation
    expr: exp.Expression | None  # over the (joined) row, columns internal: what GROUP BY runs
    label: str  # as shown in receipts and explain
    sources: tuple[str, ...]  # the internal names of the columns it reads
    public: bool
    column: str | None = None  # the private table's key column, when the key is exactly that column
    #: what the exact query groups by when ``expr`` reads a key with a declared date range: ``expr``
    #: with that column NULL outside the range (``time_keys.py``)
    bounded: exp.Expression | None = None
    #: ``expr`` and ``bounded`` as DuckDB SQL, and whether ``expr`` is a bare column (from the trees)
    text: str = ""
    bounded_text: str | None = None
    plain: bool = False
    #: the query's WHERE conjuncts on this public key's own columns, DuckDB text over ``sources``:
    #: the domain keeps only the keyset values they admit (``narrow.py``); None: the whole keyset
    narrowed: str | None = None

    def __post_init__(self) -> None:
        if self.expr is not None:
            from sqlglot import exp

            object.__setattr__(self, "text", self.expr.sql("duckdb"))
            object.__setattr__(self, "bounded_text", None if self.bounded is None else self.bounded.sql("duckdb"))
            object.__setattr__(self, "plain", isinstance(self.expr, exp.Column))

    @property
    def tried_sql(self) -> str:
        """What the key computes, run inside TRY() unless it is a bare column: the form for a
        query that knows no types (the public domain's images); ``rewrite.key_sql`` runs a key
        that cannot fail bare in the exact query."""
        if self.bounded_text is not None:
            return f"TRY({self.bounded_text})"
        return self.text if self.plain else f"TRY({self.text})"


@dataclass(frozen=True)
class OutputColumn:
    """A column of the result. ``primitive`` is set when the column is exactly one noisy
    primitive; ``ratio`` when it is AVG = SUM / COUNT of two primitives; ``spread`` when it is a
    variance or standard deviation: (sum of squares, sum, count, its function: ``sql/spread.py``);
    ``derived`` when it is other arithmetic over noisy aggregates (``sql/derived.py``), its ± then
    propagated from theirs; ``ranked_by`` for a quantile, the query's noisy count of the values it
    ranks (its rank interval as a share of the group, ``pipeline/propagate.py``)."""

    name: str
    primitive: int | None = None
    ratio: tuple[int, int] | None = None
    spread: tuple[int, int, int, str] | None = None
    derived: tuple | None = None  # type: ignore[type-arg]  # nested tuples: sql/derived.py
    ranked_by: int | None = None


@dataclass(frozen=True)
class Plan:
    """One query planned from its text, the policy and the schema: the private table, filter,
    group keys, aggregate primitives and the finish query over the noisy cells."""

    sql: str
    table: TablePolicy
    where: exp.Expression | None
    keys: tuple[GroupKey, ...]
    primitives: tuple[Primitive, ...]
    finish: exp.Select | None  # None in a plan read back from its record: use the forms below
    outputs: tuple[OutputColumn, ...]
    #: what partition selection counts per group ("units" or "split_rows"); None without private keys
    selection_count: str | None = None
    joins: tuple[Join, ...] = ()
    #: internal name -> DuckDB type of every joined column the plan may read (of a public table, or
    #: of a private table joined on the unit: ``table`` is then ``policy.joined_table`` of the two)
    public_types: dict[str, str] = field(default_factory=dict)
    #: internal name -> (public table, column); never a column of a private table
    public_columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: what the finish stage runs, derived from ``finish`` when the plan is made
    #: (:func:`dpsql.sql.finish_forms.forms`): its SQL with the row column, its output names, and
    #: its shape when it only projects
    finish_sql: str = ""
    finish_names: tuple[str, ...] = ()
    projection: tuple[tuple[str, ...], ...] | None = None
    #: ``finish_sql`` without ORDER BY, LIMIT and OFFSET (the same text when it has none): a
    #: released answer is kept under it, and each ORDER BY / LIMIT / OFFSET variant shows that one
    #: release (pipeline/reuse.py)
    finish_base_sql: str = ""
    #: the private key columns whose public keyset holds NULL (nullable in the schema, not
    #: ``null = false``: sql/null_keys.py); a public table's NULL is read from its rows
    null_columns: tuple[str, ...] = ()

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    @property
    def private_keys(self) -> tuple[GroupKey, ...]:
        """GROUP BY keys without a public keyset: their groups go through partition selection."""
        return tuple(k for k in self.keys if not k.public)

    @property
    def split_measures(self) -> tuple[str, ...]:
        """The measures that decide the split count m(r): only those this query sums
        (query-scoped splitting, DESIGN.md)."""
        return tuple(sorted({p.column for p in self.primitives if p.kind in ("sum", "sumsq") and p.column}))

    @property
    def quantile_values(self) -> bool:
        """Whether the exact query hands each group's values of one measure over (issue 34,
        ``quantiles.values_sql``): every aggregate is a quantile of that measure, one row per
        unit, and a selection (if any) counts rows. The engine then fetches them as numpy
        arrays and ``privacy/em_runs.py`` counts them into the grid's bins."""
        columns = {p.column for p in self.primitives}
        return bool(self.primitives) and all(p.kind == "quantile" for p in self.primitives) and len(columns) == 1 \
            and self.selection_count in (None, "units") and not self.table.many_rows


def primitive_column(i: int) -> str:
    return f"__p{i}"


def sigma_column(i: int) -> str:
    return f"__s{i}"


def moe_column(i: int) -> str:
    return f"__m{i}"


def rank_column(i: int) -> str:
    """A quantile's 95% rank error (public: q, ε, the grid's size) in each cell (release.py)."""
    return f"__r{i}"


#: The one column the finish SELECT carries after the visible ones: each noisy cell's position in
#: the release's arrays, so every row keeps its own noisy values, σ and MOE through HAVING /
#: ORDER BY / LIMIT (they are looked up by it, not carried through the finish query).
ROW_COLUMN = "__row"
