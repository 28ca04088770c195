"""Plan -> DuckDB SQL returning the exact per-group values noise is added to.

Two forms, equal on every supported query (paper 000 Lemma 5.2), tested against each other:

* ``exact_sql`` (what runs): the algebraic form. A record's splits sum to its value, so the
  SUM over split records is the SUM of the (capped) original values; the count of distinct
  privacy units needs no split at all (one row per unit is checked when the session opens).
* ``reference_sql``: unit splitting materialised exactly as paper 000 Algorithm 1 / Table 2:
  split count m(r) = max over the query's measures of ceil(|r(a)| / T(a)), at least 1;
  split i (1..m) carries sign(r(a)) · clamp(|r(a)| − (i−1)·T(a), 0, T(a)); conditional
  attributes (keys, the unit) copied to every split; COUNT becomes COUNT(DISTINCT unit).

Every value a measure contributes is first expressed in granularity units (an integer), so
noise is always added to integers (DESIGN.md, Mironov 2012). The WHERE filter is wrapped in
TRY(): a row that makes it fail is filtered out instead of failing the query, because whether
a query fails must not depend on private rows.

No I/O here.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.sql.plan import GroupKey, Plan, primitive_column
from dpsql.policy.model import INTEGER_TYPES, Measure, TablePolicy
from dpsql.sql.quantiles import clamped_sql, histogram_sql, values_sql
from dpsql.sql.spread import square_sql
from dpsql.sql.final_check import check_final
from dpsql.sql.sql_types import MAX_DECIMAL_WIDTH, common_type, sql_type
from dpsql.sql.totality import condition_total, expression_total
from dpsql.sql import units


def _q(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def _literal(value: object) -> str:
    if isinstance(value, str):
        return exp.Literal.string(value).sql("duckdb")
    return str(value)


#: A record's measure enters a sum as an integer of at most BIGINT's width: SUM accumulates
#: them in HUGEINT, so a sum over fewer than 2^64 rows cannot overflow whatever the data
#: (docs/privacy.md, "The exact query is total"). Caps computed here stay within it.
VALUE_CAP = 2**62
#: A record's split count in the split-row selection count is computed from |v| ≤ 2^53, where
#: DOUBLE is exact, so it is never above ceil(|v|/T) (a lower count is safe: it moves less).
_SPLIT_EXACT = 2**53
_NARROW_INTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")


def threshold_sql(measure: Measure, times: int = 1) -> str:
    """``times`` · T(r) of a record, in granularity units, per group when the policy overrides
    it (``times`` negative: its opposite). Products are computed here, not by DuckDB, so no row
    can make them overflow; a negative threshold is a literal, never ``-(CASE ...)``, whose
    negation DuckDB would compute per row."""
    def lit(t: int) -> int:
        capped = min(t * abs(times), VALUE_CAP)
        return -capped if times < 0 else capped

    if measure.override is None:
        return str(lit(measure.threshold))
    whens = " ".join(f"WHEN {_literal(v)} THEN {lit(t)}" for v, t in measure.override.thresholds.items())
    return f"(CASE {_q(measure.override.key)} {whens} ELSE {lit(measure.threshold)} END)"


def value_sql(measure: Measure, column_type: str, max_splits: int | None) -> str:
    """The measure of a record in granularity units: an integer of at most BIGINT's width, or
    NULL, that no value of the column can make fail. Integer columns up to BIGINT run bare
    (their SUM cannot overflow HUGEINT). Any other value becomes a BIGINT through TRY_CAST:
    NaN, ±inf and values beyond BIGINT's range in granularity units are NULL, ignored like
    SQL's NULL. A DECIMAL at granularity 1 is rounded exactly; at another granularity every
    column is scaled in DOUBLE (exact below 2^52 units; an INTEGER or DECIMAL product could
    overflow on some row). With ``max_splits`` the value is top-coded at max_splits · T(r)
    (paper 000, the cap on |A(r)|)."""
    col = _q(measure.name)
    g = measure.granularity
    ctype = column_type.upper()
    if g == 1 and ctype in _NARROW_INTS:
        value = col
    elif g == 1:
        value = f"TRY_CAST(ROUND({col}) AS BIGINT)" if not ctype.startswith(INTEGER_TYPES) else f"TRY_CAST({col} AS BIGINT)"
    else:
        # Scaled in DOUBLE whatever the column's type: `"m" * 100` of an INTEGER overflows INTEGER
        # from 21,474,837 on, a failure one row decides (issue 29); DOUBLE gives ±inf at worst,
        # which TRY_CAST makes NULL.
        scaled = col if ctype in ("DOUBLE", "FLOAT", "REAL") else f"CAST({col} AS DOUBLE)"
        value = f"TRY_CAST(ROUND({scaled} * {g.denominator} / {g.numerator}) AS BIGINT)"
    if max_splits is not None:
        low, cap = threshold_sql(measure, -max_splits), threshold_sql(measure, max_splits)
        # not LEAST(GREATEST(v, low), cap): DuckDB's GREATEST skips NULL, so a NULL v became low;
        # the low cap is a literal (or a CASE of literals), never -(…): the final check allows no negated expression
        value = f"CASE WHEN {value} < {low} THEN {low} WHEN {value} > {cap} THEN {cap} ELSE {value} END"
    return value


def splits_sql(value: str, threshold: str) -> str:
    """ceil(|v| / T), never above it: |v| is read as a DOUBLE (ABS of a DOUBLE cannot overflow)
    and capped at 2^53, below which the division and CEIL cannot round past the true value."""
    # TRY_CAST although the DOUBLE is within [0, 2^53]: the final check (final_check.py) knows
    # types, not ranges, and TRY_CAST costs what CAST costs.
    return f"COALESCE(TRY_CAST(CEIL(LEAST(ABS(CAST({value} AS DOUBLE)), {_SPLIT_EXACT}) / {threshold}) AS BIGINT), 0)"


def _where_sql(plan: Plan, schema: dict[str, str]) -> str:
    """The WHERE clause. Each top-level conjunct that could fail on some row runs inside
    TRY(), so that row is filtered out instead of failing the query (whether a query fails
    must not depend on private rows); the others run bare and keep DuckDB's filter pushdown
    and zone maps (TRY() made a selective filter 2x slower, docs/performance.md)."""
    if plan.where is None:
        return ""
    parts = list(plan.where.flatten()) if isinstance(plan.where, exp.And) else [plan.where]
    sql = " AND ".join(
        (f"({p.sql('duckdb')})" if isinstance(p, (exp.Or,)) else p.sql("duckdb")) if condition_total(p, schema)
        else f"TRY({p.sql('duckdb')})" for p in parts)
    return f"\nWHERE {sql}"


SELECTION_COLUMN = '"__n"'


def split_count_sql(measures: list[Measure], schema: dict[str, str], max_splits: int | None) -> str:
    """|A(r)| of a record: max(1, max over ``measures`` of ceil(|r(a)| / T(a))) — the number of
    split rows it becomes (paper 000 Algorithm 1)."""
    if not measures:
        return "1"
    parts = ", ".join(splits_sql(value_sql(m, schema[m.name], max_splits), threshold_sql(m)) for m in measures)
    return f"GREATEST(1, {parts})"


def join_on_sql(left: str, left_type: str, key: str, key_type: str) -> str:
    """``left = key``, total. When DuckDB's common type of the two holds every value of both
    (:func:`~dpsql.sql.sql_types.common_type`) the equality runs bare. Otherwise (BIGINT with
    DECIMAL(38,31): DuckDB casts the BIGINT to DECIMAL(38,31) and fails from 10^7 on, per row,
    issue 29) both sides are TRY_CAST to DECIMAL(38, s), s the larger scale: a DECIMAL side of
    scale s fits it exactly (its integer digits are at most 38 − s); a value of the other side
    that does not fit is beyond that side's range, so it equals none of its values and is NULL,
    which matches nothing. The equality is the same, and no row can make it fail. Two integers
    without a common type (UHUGEINT and a signed one) meet in HUGEINT the same way: every signed
    value fits it, and an unsigned one past it equals none of them."""
    a, b = sql_type(left_type), sql_type(key_type)
    bare = f"{_q(left)} = {_q(key)}"
    if common_type(a, b) is not None or not {a.kind, b.kind} <= {"int", "decimal"}:
        return bare  # other kinds: scopes.add_join refused what does not compare
    to = "HUGEINT" if a.kind == b.kind == "int" else f"DECIMAL({MAX_DECIMAL_WIDTH},{max(a.scale, b.scale)})"
    return f"TRY_CAST({_q(left)} AS {to}) = TRY_CAST({_q(key)} AS {to})"


def from_sql(plan: Plan, types: dict[str, str]) -> str:
    """The private table and the public tables joined to it. A public table enters as a
    projection of the columns the query reads under internal names (``__j1_region``), so no
    column of it can shadow or be confused with a private column. ``types``: the private
    table's and the joined columns' types (internal names)."""
    sql = _q(plan.table.name)
    for j in plan.joins:
        cols = ", ".join(f"{_q(c)} AS {_q(j.internal(c))}" for c in j.columns)
        key = j.internal(j.key)
        sql += (f"\n{j.side} JOIN (SELECT {cols} FROM {_q(j.table)}) AS {_q(j.alias)}"
                f" ON {join_on_sql(j.left, types[j.left], key, types[key])}")
    return sql


def key_sql(key: GroupKey, schema: dict[str, str]) -> str:
    """What a GROUP BY key computes. An expression that some row could make fail (a logarithm
    of zero, an overflow) runs inside TRY(): that row falls in the NULL group instead of failing
    the query, because whether a query fails must not depend on private rows. One that cannot
    fail (``SUBSTR(naics, 1, 3)``) runs bare: TRY() made that GROUP BY 3x slower
    (docs/performance.md). Without the types, :attr:`GroupKey.tried_sql` wraps every expression."""
    assert key.expr is not None, "a recorded plan has its exact SQL already"
    if key.bounded is not None:  # a date key, read within its days (sql/time_keys.py)
        return key.bounded_text if expression_total(key.bounded, schema) else key.tried_sql  # type: ignore[return-value]
    return key.text if key.plain or expression_total(key.expr, schema) else key.tried_sql


def exact_sql(plan: Plan, schema: dict[str, str]) -> str:
    """The query that runs: one scan, one group-by, exact per-group primitives."""
    if plan.table.many_rows:  # many rows per unit: a two-level aggregate (sql/units.py), checked as any other
        sql = units.exact_sql(plan, _row_parts(plan, schema))
        check_final(sql, {**schema, **plan.public_types})
        return sql
    t = plan.table
    schema = {**schema, **plan.public_types}
    if plan.quantile_values:  # each group's values, counted into bins in numpy (issue 34)
        m = t.measures[plan.primitives[0].column]
        assert m.grid is not None
        sql = values_sql([(key_sql(k, schema), _q(k.name)) for k in plan.keys], value_sql(m, schema[m.name], None),
                         f"{from_sql(plan, schema)}{_where_sql(plan, schema)}".replace("\n", " "),
                         m.grid.candidates(), [_q(primitive_column(i)) for i in range(len(plan.primitives))],
                         SELECTION_COLUMN if plan.selection_count == "units" else None)
        check_final(sql, schema)
        return sql
    cols = [f"{key_sql(k, schema)} AS {_q(k.name)}" for k in plan.keys]
    for i, p in enumerate(plan.primitives):
        if p.kind == "count":
            # One row per privacy unit (checked at connect): COUNT(*) = COUNT(DISTINCT unit).
            agg = "COUNT(*)" if p.column is None else f"COUNT({'DISTINCT ' if p.distinct else ''}{_q(p.column)})"
        elif p.kind == "quantile":
            m = t.measures[p.column]
            assert m.grid is not None
            agg = histogram_sql(value_sql(m, schema[m.name], None), m.grid.bounds())
        elif p.kind == "sumsq":  # Σ of the squares of the record's split values (sql/spread.py)
            m = t.measures[p.column]
            agg = f"SUM({square_sql(value_sql(m, schema[m.name], t.max_splits), threshold_sql(m))})"
        else:
            m = t.measures[p.column]
            agg = f"SUM({value_sql(m, schema[m.name], t.max_splits)})"
        cols.append(f"{agg} AS {_q(primitive_column(i))}")
    if plan.selection_count == "units":
        cols.append(f"COUNT(*) AS {SELECTION_COLUMN}")
    elif plan.selection_count == "split_rows":
        cols.append(f"SUM({split_count_sql([t.measures[m] for m in plan.split_measures], schema, t.max_splits)}) AS {SELECTION_COLUMN}")
    sql = f"SELECT {', '.join(cols)}\nFROM {from_sql(plan, schema)}{_where_sql(plan, schema)}"
    if plan.keys:
        sql += f"\nGROUP BY {', '.join(key_sql(k, schema) for k in plan.keys)}"
    check_final(sql, schema)  # the one check of the text that runs, whoever wrote each part of it
    return sql


def split_relation_sql(table: TablePolicy, measures: list[Measure], schema: dict[str, str],
                       carry: list[str | tuple[str, str]], where: str = "", source: str | None = None) -> str:
    """Unit splitting of paper 000 Algorithm 1 as one DuckDB query, no Python loop over rows.

    One output row per split: the ``carry`` columns (conditional attributes, copied to every
    split; a column name, or a pair (SQL expression, name)), ``__unit``, the split index
    ``__i`` (1..m(r)) and each measure's split value under the measure's own name. m(r) = max(1, max over ``measures`` of ceil(|r(a)| / T(a))) —
    query-scoped: only the given measures decide it. Split i carries
    sign(r(a)) · clamp(|r(a)| − (i−1)·T(a), 0, T(a)), so the splits of a record sum to it.
    ``source`` is the FROM clause (the table with its joins); default the table alone.
    """
    pairs = [(c, c) if isinstance(c, str) else c for c in carry]
    base = [f"{expr if isinstance(c, tuple) else _q(expr)} AS {_q(name)}" for c, (expr, name) in zip(carry, pairs)]
    base.append(f"{_q(table.privacy_unit)} AS __unit")
    for m in measures:
        base.append(f"{value_sql(m, schema[m.name], table.max_splits)} AS {_q('__v_' + m.name)}")
        base.append(f"{threshold_sql(m)} AS {_q('__t_' + m.name)}")
    splits = ", ".join(splits_sql(_q('__v_' + m.name), _q('__t_' + m.name)) for m in measures)
    m_expr = f"GREATEST(1, {splits})" if measures else "1"
    out = [_q(name) for _, name in pairs] + ["__unit", "__i"]
    for m in measures:
        v, th = _q("__v_" + m.name), _q("__t_" + m.name)
        out.append(f"SIGN({v}) * LEAST(GREATEST(ABS({v}) - (__i - 1) * {th}, 0), {th}) AS {_q(m.name)}")
    return (f"SELECT {', '.join(out)}\nFROM (\n  SELECT *, UNNEST(RANGE(1, {m_expr} + 1)) AS __i\n"
            f"  FROM (SELECT {', '.join(base)} FROM {source or _q(table.name)}{where}) AS __base\n) AS __split")


def reference_sql(plan: Plan, schema: dict[str, str]) -> str:
    """The same values as :func:`exact_sql`, computed over materialised split records:
    SUM over split values, COUNT(DISTINCT unit) for counts (paper 000 Table 3)."""
    if plan.table.many_rows:
        return units.reference_sql(plan, _row_parts(plan, schema))
    t = plan.table
    measures = [t.measures[m] for m in plan.split_measures]
    counted = sorted({p.column for p in plan.primitives if p.kind == "count" and p.column})
    names = plan.key_names
    types = {**schema, **plan.public_types}
    # A key that is also a split measure (GROUP BY age with SUM(age)) rides under a name of its
    # own: the measure's name holds its split values.
    split_names = {m.name for m in measures}
    carried = [f"__key_{k}" if k in split_names else k for k in names]
    carry: list[str | tuple[str, str]] = [(key_sql(k, types), c) for k, c in zip(plan.keys, carried)]
    # Counted columns ride as themselves under names of their own: a split measure's name holds
    # its split values, and COUNT(DISTINCT measure) counts the record's value, not its splits.
    carry += [(_q(c), f"__c_{c}") for c in counted]
    # A quantile reads each unit's own value (not split): carried to every split, counted on the first.
    quantiled = sorted({p.column for p in plan.primitives if p.kind == "quantile"})
    carry += [(value_sql(t.measures[c], schema[c], None), f"__qv_{c}") for c in quantiled]
    where = _where_sql(plan, {**schema, **plan.public_types}).replace("\n", " ")
    split = split_relation_sql(t, measures, schema, carry, where, source=from_sql(plan, types).replace("\n", " "))
    out = [f"{_q(c)} AS {_q(k)}" for k, c in zip(names, carried)]
    for i, p in enumerate(plan.primitives):
        if p.kind == "count":
            counted_as = _q(f"__c_{p.column}")
            agg = "COUNT(DISTINCT __unit)" if p.column is None else f"COUNT(DISTINCT {counted_as})" if p.distinct \
                else f"COUNT(DISTINCT CASE WHEN {counted_as} IS NOT NULL THEN __unit END)"
        elif p.kind == "quantile":
            grid = t.measures[p.column].grid
            assert grid is not None
            v = f"CASE WHEN __i = 1 THEN {_q('__qv_' + p.column)} END"  # each group's values, as exact_sql's
            agg = (f"LIST({clamped_sql(v, grid.candidates())}) FILTER (WHERE {v} IS NOT NULL)" if plan.quantile_values
                   else histogram_sql(v, grid.bounds()))
        elif p.kind == "sumsq":  # each split value squared, summed: no closed form here
            agg = f"SUM(CAST({_q(p.column)} AS HUGEINT) * CAST({_q(p.column)} AS HUGEINT))"
        else:
            agg = f"SUM({_q(p.column)})"
        out.append(f"{agg} AS {_q(primitive_column(i))}")
    if plan.selection_count == "units":
        out.append(f"COUNT(DISTINCT __unit) AS {SELECTION_COLUMN}")
    elif plan.selection_count == "split_rows":
        out.append(f"COUNT(*) AS {SELECTION_COLUMN}")
    sql = f"WITH __split_rows AS (\n{split}\n)\nSELECT {', '.join(out)}\nFROM __split_rows"
    if plan.keys:
        sql += f"\nGROUP BY {', '.join(_q(c) for c in carried)}"
    return sql


def _row_parts(plan: Plan, schema: dict[str, str]) -> units.RowParts:
    """What sql/units.py reuses of this module for a table with many rows per unit."""
    types = {**schema, **plan.public_types}
    return units.RowParts(keys=[key_sql(k, types) for k in plan.keys], source=from_sql(plan, types),
                          where=_where_sql(plan, types),
                          value=lambda name: value_sql(plan.table.measures[name], types[name], None))
