"""Many rows per privacy unit (issue 31): the aggregates it answers and its exact SQL.

A private table whose policy declares ``max_groups = κ`` may hold many rows per unit. Whether a
query takes this path is decided by the policy (public), never by the data: the single-row
path (``rewrite.py``) runs unchanged for every other table. docs/privacy.md, "Many rows per
unit", states the model and its proofs; in short, one query runs in DuckDB as:

1. the rows, filtered by the WHERE clause (rows whose unit is NULL belong to no unit and are
   dropped), each with its group keys, its unit and its measures in granularity units;
2. one record per (unit, group): the sum of each measure, the count of rows (``#rows``) and of
   rows where a column is not NULL (``#rows(col)``);
3. the bounding transformation: a unit in more than κ groups keeps the κ whose keyed hash
   HASH(unit, keys, salt) is smallest. The salt is drawn per query from the session's random
   source when the query runs (:func:`salted`); the SQL planned, cached, checked on the empty
   twin and shown by EXPLAIN holds the placeholder :data:`SALT` instead;
4. per group: the SUM of each record's total, top-coded at max_splits·T (paper 000 Algorithm 1:
   a record's splits sum to its value, so the sum over splits is the sum of the capped totals),
   the same for row counts at ``row_threshold``, and COUNT(*) of the kept records (distinct units).
5. for a quantile or COUNT(DISTINCT col): the rows of the kept records (DENSE_RANK of the row's
   group in the bounding's own order), a keyed sample per (unit, group) of at most
   ``quantile_rows`` values or ``row_threshold`` distinct values, per group the histogram or
   COUNT(DISTINCT), joined to step 4's groups on the keys (:func:`_sampled_sql`).

The analyst's aggregates map onto primitives here (:func:`aggregate`): ``COUNT(*)`` is the row
count (a "sum" of ``#rows``, split at ``row_threshold``), ``COUNT(DISTINCT unit)`` the count of
units, ``SUM(m)`` the sum of per-(unit, group) totals, ``AVG(m)`` their noisy ratio with the
rows where m is not NULL, a quantile the exponential mechanism over the sampled values at ε/r
(``decide.quantile_rows``), ``COUNT(DISTINCT col)`` the sampled distinct values with noise at Δ = R
(``plan.count_sensitivity``). What is not answered yet is refused in phase 1 (DP211).

No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from dpsql.policy.model import ROWS, Measure, Policy, TablePolicy, rows_of
from dpsql.sql.plan import GroupKey, Plan, Primitive, primitive_column
from dpsql.sql.quantiles import histogram_sql
from dpsql.sql.salt import SALT

#: a capped value is at most this (``rewrite.VALUE_CAP``: sums of them stay within HUGEINT)
_CAP = 2**62
#: what a refusal of a form this path does not answer yet says to do
_HINT = ("on a table with many rows per unit (max_groups) dpsql answers COUNT(*), COUNT(DISTINCT unit), "
         "COUNT(DISTINCT column), SUM(measure), AVG(measure) and quantiles (MEDIAN, QUANTILE_CONT) by public keys, "
         "or by private keys alone (docs/sql.md, \"Many rows per unit\").")


def _q(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def count(scopes: Any, table: TablePolicy, node: exp.Expression, not_null: set[str]) -> Primitive:
    """The primitive of a COUNT on a many-row table (``aggregates.FinishRewriter``; SUM, AVG and
    quantiles go through its own checks, AVG's count through :func:`rows`, a quantile's rows are
    sampled by :func:`_sampled_sql`)."""
    arg = node.this
    distinct = isinstance(arg, exp.Distinct)
    if distinct:
        if len(arg.expressions) != 1:
            raise scopes.refuse(node, "DP116", "DISTINCT over several columns is not supported")
        arg = arg.expressions[0]
    name = scopes.column_name(arg) if isinstance(arg, exp.Column) else None
    if distinct:
        if name is None:
            raise scopes.refuse(node, "DP117", "COUNT(DISTINCT ...) accepts a column", "write COUNT(DISTINCT column).")
        if name == table.privacy_unit:
            return Primitive("count")  # one per kept (unit, group) record: the count of units
        if table.row_threshold is None:
            raise scopes.refuse(node, "DP211", "COUNT(DISTINCT column) of a column other than the unit needs the policy's "
                                "row_threshold on a table with many rows per unit (a unit adds at most that many values "
                                "to a group)", f"write COUNT(DISTINCT {table.privacy_unit}) to count units, or the data "
                                f"owner adds row_threshold = R to [tables.{table.name}] (docs/policy.md).")
        # a keyed sample of at most row_threshold distinct values per kept (unit, group) (:func:`_sampled_sql`)
        return Primitive("count", name, shown=scopes.shown(name), distinct=True)
    if isinstance(arg, (exp.Star, exp.Literal)) or arg is None:
        return rows(scopes, table, node, None)
    if name is None:
        raise scopes.refuse(node, "DP117", "COUNT accepts *, a column or DISTINCT of the privacy unit",
                            "write COUNT(*) or COUNT(column).")
    # rows whose unit is NULL are dropped, so COUNT(unit) counts every row, as a NOT NULL column does
    return rows(scopes, table, node, None if name == table.privacy_unit or name in not_null else name,
                scopes.shown(name))


def rows(scopes: Any, table: TablePolicy, node: exp.Expression, column: str | None,
         shown: str | None = None) -> Primitive:
    """The count of a unit's rows in a group (where ``column`` is not NULL), split at the policy's
    ``row_threshold`` as a measure's value is at its threshold: a "sum" of :data:`ROWS`."""
    if table.row_threshold is None:
        raise scopes.refuse(node, "DP211", "counting rows needs the policy's row_threshold on a table with many rows per unit",
                            f"write COUNT(DISTINCT {table.privacy_unit}) to count units, or the data owner adds "
                            f"row_threshold = R to [tables.{table.name}] (docs/policy.md).")
    return Primitive("sum", rows_of(column), shown=rows_of(shown) if shown else None)


def check_plan(scopes: Any, select: exp.Select, table: TablePolicy, policy: Policy, keys: list[GroupKey]) -> None:
    """Refuse (DP211) a GROUP BY on a private key that partition selection cannot cover yet on a
    many-row table. Selection counts the kept units per private group. With κ = 1 a unit is in
    one cell: the single-row selection holds. With κ > 1 each group is kept by π_opt at (ε/κ,
    δ/κ) or by Gaussian thresholding (``release.select_groups``, ``privacy/selection_gauss.py``),
    which needs ``selection.method = "optimal"`` (the default; the truncated geometric's noisy
    count is a count of units in one group only). With public keys too, the count is of DISTINCT
    units per private group (:func:`_first_sql`), so a unit still moves ≤ κ counts by 1 each."""
    private = [k for k in keys if not k.public]
    if not private:
        return
    sel = policy.selection
    ok = sel.count == "units" and (table.max_groups == 1 or sel.method == "optimal")
    if not ok:
        raise scopes.refuse(select, "DP211", f"GROUP BY the private key {private[0].label} is not answered yet on a "
                            "table with many rows per unit with this policy: it needs selection.count = \"units\", and "
                            "when max_groups > 1 selection.method = \"optimal\"", _HINT)


def grouping_table(table: TablePolicy, policy: Policy, keys: list[GroupKey], joins: list[Any]) -> TablePolicy:
    """The table as this query bounds it: ``max_groups`` the κ of its grouping (the smallest κ_C of
    a declared set C holding every column its keys read, else the table's κ). A key read through a
    public lookup join is a function of the column it joins from (the public key is unique), so it
    reads that column; a column of a second private table is in no set. The projection argument
    (docs/privacy.md, "κ per grouping"): the query's group is a function of the row's C-columns,
    so a unit with at most κ_C distinct C-values has at most κ_C groups; the bounding keeps κ_C
    of them whatever the data, which is what the privacy argument rests on. ``quantile_rows`` the r
    of its grouping (``TablePolicy.grouping_rows``: the least r_C of a declared set its bare keys fix)."""
    if not keys or not (table.max_groups_by or table.quantile_rows_by):
        return table
    r, r_of = table.grouping_rows({k.column for k in keys if k.plain and k.column})  # docs/privacy.md, "r per grouping"
    table = replace(table, quantile_rows=r, quantile_rows_set=r_of)
    if not table.max_groups_by:
        return table
    cols: set[str] = set()
    for c in (c for k in keys for c in k.sources):
        while (j := next((j for j in joins if c.startswith(j.alias + "_")), None)) is not None:
            if policy.table(j.table) is not None:
                return table  # a private table's column: no declared set of this table holds it
            c = j.left
        if c not in table.keys:
            return table
        cols.add(c)
    kappa, of = table.grouping_kappa(cols)
    return replace(table, max_groups=kappa, max_groups_set=of)


def _mixed(plan: Plan) -> bool:
    """Whether the selection of a κ > 1 query counts units per private group across public cells."""
    return (plan.table.max_groups or 1) > 1 and plan.selection_count == "units" and any(k.public for k in plan.keys) \
        and any(not k.public for k in plan.keys)


def _first_sql(plan: Plan, names: list[str]) -> str:
    """With public and private keys and κ > 1, a unit's kept cells can share a private group: the
    selection must count the group's DISTINCT units, not sum the cells' counts (a unit in κ cells
    of one private group would move it by κ). Each kept record gets its rank among the unit's
    records of the same private group (``__r``, by the public keys); the cell's ``__n`` counts the
    records ranked first, so the counts summed over the public cells of a private group
    (``release.selection_counts``) are its distinct units, and a unit moves ≤ κ of them by 1."""
    pub = [n for n, k in zip(names, plan.keys) if k.public]
    priv = [n for n, k in zip(names, plan.keys) if not k.public]
    return (f",\n__first AS (\n  SELECT *, ROW_NUMBER() OVER (PARTITION BY __unit, {', '.join(priv)} "
            f"ORDER BY {', '.join(pub)}) AS __r\n  FROM __kept\n)")


@dataclass(frozen=True)
class RowParts:
    """What the single-row rewrite (``rewrite.py``) knows how to write, handed over: each key's
    SQL (in the plan's order), the FROM clause with its joins, the WHERE clause, and a measure's
    value in granularity units (BIGINT-wide or NULL, uncapped)."""

    keys: list[str]
    source: str
    where: str
    value: Callable[[str], str]


def _cell_threshold(plan: Plan, m: Measure, times: int) -> str:
    """times · T of a (unit, group) record, in granularity units: per group when the query groups
    by the key of the measure's per-group thresholds (as ``release.sensitivities`` calibrates
    the noise), else the largest threshold a record can have."""
    by = [k for k in plan.keys if m.override is not None and k.column == m.override.key]
    if not by:
        return str(max(min(m.max_threshold * times, _CAP), -_CAP))
    assert m.override is not None
    lit = (lambda v: exp.Literal.string(v).sql("duckdb") if isinstance(v, str) else str(v))
    whens = " ".join(f"WHEN {lit(v)} THEN {max(min(t * times, _CAP), -_CAP)}" for v, t in m.override.thresholds.items())
    return f"(CASE {_q(by[0].name)} {whens} ELSE {max(min(m.threshold * times, _CAP), -_CAP)} END)"


def _records_sql(plan: Plan, parts: RowParts) -> tuple[str, list[str], list[str]]:
    """Steps 1-3: the kept (unit, group) records. Returns the WITH clauses, the key columns and
    the record columns (``__x_<measure>``) the primitives read."""
    t = plan.table
    names = [_q(k.name) for k in plan.keys]
    row_cols = [f"{sql} AS {n}" for sql, n in zip(parts.keys, names)] + [f"{_q(t.privacy_unit)} AS __unit"]
    cell_cols: list[str] = []
    measures = sorted({p.column for p in plan.primitives if p.kind == "sum" and p.column})
    valued = sorted({m for m in measures if not m.startswith(ROWS)}
                    | {m[len(ROWS) + 1:-1] for m in measures if m.startswith(ROWS + "(")})
    for p in plan.primitives:  # what a quantile samples, what COUNT(DISTINCT col) counts (:func:`_sampled_sql`)
        if p.kind == "quantile" and f"{_sampled(p)} AS" not in " ".join(row_cols):
            row_cols.append(f"{parts.value(p.column or '')} AS {_sampled(p)}")
        elif p.kind == "count" and p.distinct and f"{_sampled(p)} AS" not in " ".join(row_cols):
            row_cols.append(f"{_q(p.column or '')} AS {_sampled(p)}")
    for name in valued:
        if name in t.measures:
            row_cols.append(f"{parts.value(name)} AS {_q('__v_' + name)}")
        else:  # COUNT(col) of a column that is not a measure: counted where not NULL
            row_cols.append(f"{_q(name)} AS {_q('__v_' + name)}")
    for name in measures:
        if name == ROWS:
            agg = "COUNT(*)"
        elif name.startswith(ROWS):
            agg = f"COUNT({_q('__v_' + name[len(ROWS) + 1:-1])})"
        else:
            agg = f"SUM({_q('__v_' + name)})"  # HUGEINT: a sum of BIGINT-wide values cannot overflow it
        cell_cols.append(f"{agg} AS {_q('__x_' + name)}")
    unit_ok = f"{_q(t.privacy_unit)} IS NOT NULL"
    where = f"{parts.where}\n  AND {unit_ok}" if parts.where else f"\nWHERE {unit_ok}"
    group = ", ".join([*names, "__unit"])
    sql = (f"WITH __rows AS (\n  SELECT {', '.join(row_cols)}\n  FROM {parts.source}{where}\n),\n"
           f"__records AS (\n  SELECT {', '.join([*names, '__unit', *cell_cols])}\n  FROM __rows GROUP BY {group}\n)")
    if plan.keys:
        # The bounding transformation: a unit keeps the κ groups of smallest keyed hash (ties by the keys),
        # among the groups that can be released (:func:`_releasable`).
        hashed = f"HASH(__unit, {', '.join(names)}, {SALT})"
        only = _releasable(plan)
        sql += (f",\n__kept AS (\n  SELECT * FROM __records{' WHERE ' + only if only else ''}\n  QUALIFY ROW_NUMBER() "
                f"OVER (PARTITION BY __unit ORDER BY {hashed}, {', '.join(names)}) <= {t.max_groups}\n)")
    else:
        sql += ",\n__kept AS (SELECT * FROM __records)"  # one group: nothing to bound
    return sql, names, measures


def _releasable(plan: Plan) -> str:
    """A condition on a record's keys, from the policy alone, true for every group the public
    domain can release: a private table's bare public key column is in its keyset (up to 1,000
    values), or NULL when its NULL is a value (sql/null_keys.py), and not NULL otherwise (keysets
    and a date range's grid hold no NULL). A public table's column is not filtered: its NULL is a
    group when its rows hold one or a LEFT JOIN leaves a row unmatched. A record that fails it is in
    no released cell; dropping it before bounding keeps a unit's κ choices for cells that are
    released. A deterministic filter of a unit's own rows, as WHERE is: the transformation stays stable."""
    out = []
    for k in plan.keys:
        key = plan.table.keys.get(k.column or "")
        if not (k.public and k.plain) or key is None:
            continue  # an expression of keys can map a value to NULL inside its image (NULLIF)
        null = k.column in plan.null_columns
        if key.keyset is not None and len(key.keyset) <= 1000:
            lit = (lambda v: exp.Literal.string(v).sql("duckdb") if isinstance(v, str) else str(v))
            within = f"{_q(k.name)} IN ({', '.join(lit(v) for v in key.keyset)})"
            out.append(f"({_q(k.name)} IS NULL OR {within})" if null else f"{_q(k.name)} IS NOT NULL AND {within}")
        elif not null:
            out.append(f"{_q(k.name)} IS NOT NULL")
    return " AND ".join(out)


def _capped(plan: Plan, name: str) -> str:
    """A record's total of ``name``, top-coded at max_splits · T when the policy caps splits."""
    x = _q("__x_" + name)
    k = plan.table.max_splits
    if k is None:
        return x
    cap = _cell_threshold(plan, plan.table.measure(name), k)
    # COALESCE: DuckDB's GREATEST skips a NULL argument, so a record whose values are all NULL
    # would count as −cap; as 0 it adds nothing, as SQL's SUM ignores NULL. The low cap is its own
    # literal (or CASE of literals), never -(…): the final check allows no negated expression.
    low = _cell_threshold(plan, plan.table.measure(name), -k)
    return f"LEAST({x}, {cap})" if name.startswith(ROWS) else f"LEAST(GREATEST(COALESCE({x}, 0), {low}), {cap})"


def _sampled(p: Primitive) -> str:
    """The row column a quantile samples (the measure's value) or COUNT(DISTINCT col) counts."""
    return _q(("__q_" if p.kind == "quantile" else "__d_") + (p.column or ""))


def _sampled_sql(plan: Plan, names: list[str]) -> tuple[str, dict[int, str]]:
    """Step 5, for quantiles and COUNT(DISTINCT col) (docs/privacy.md, "Many rows per unit"): the
    rows of the kept (unit, group) records — a row is in one iff DENSE_RANK of its group among
    its unit's groups, in the bounding's own order, is at most κ (the same κ groups, row by row) —
    then per (unit, group) a keyed sample: at most ``quantile_rows`` non-NULL values of the
    measure, the smallest by HASH(unit, keys, value, k, salt) where k numbers the unit's rows of
    that value in the group (1, 2, ...: without it equal values hashed alike and were taken or
    left as one block, a sample of the distinct values rather than of the rows), or at most
    ``row_threshold`` distinct non-NULL values of the column by HASH(unit, keys, value, salt);
    ties by the value (rows of one value are equal in every column read, so which gets which k
    does not matter: the sample is a function of the salt and the unit's own rows). Then per group the histogram
    (``quantiles.histogram_sql``) or COUNT(DISTINCT). Returns the WITH clauses (after ``__kept``)
    and per such primitive the name of the step that holds its column ``__p<i>``."""
    t, by = plan.table, ", ".join(names)
    if names:
        only = _releasable(plan)
        sql = (f",\n__in_kept AS (\n  SELECT * FROM __rows{' WHERE ' + only if only else ''}\n  QUALIFY DENSE_RANK() "
               f"OVER (PARTITION BY __unit ORDER BY HASH(__unit, {by}, {SALT}), {by}) <= {t.max_groups}\n)")
    else:
        sql = ",\n__in_kept AS (SELECT * FROM __rows)"
    steps: dict[int, str] = {}
    part = ", ".join(["__unit", *names])
    for i, p in enumerate(plan.primitives):
        if not (p.kind == "quantile" or (p.kind == "count" and p.distinct)):
            continue
        v, step = _sampled(p), f"__s{i}"
        if p.kind == "quantile":
            m = t.measures[p.column or ""]
            assert m.grid is not None
            limit, grouped, agg = t.quantile_rows, "", histogram_sql(v, m.grid.bounds())
        else:
            assert t.row_threshold is not None, "planning refuses COUNT(DISTINCT col) without a row threshold"
            limit, grouped, agg = t.row_threshold, f" GROUP BY {', '.join([*names, '__unit', v])}", f"COUNT(DISTINCT {v})"
        cols, source, tie = ', '.join([*names, '__unit', v]), "__in_kept", ""
        if p.kind == "quantile":  # each row its own hash: __k numbers the unit's rows of one value in the group
            sql += (f",\n{step}k AS (\n  SELECT {cols}, ROW_NUMBER() OVER (PARTITION BY {part}, {v}) AS __k "
                    f"FROM __in_kept WHERE {v} IS NOT NULL\n)")
            source, tie = f"{step}k", ", __k"
        sql += (f",\n{step} AS (\n  SELECT {cols} FROM {source} WHERE {v} IS NOT NULL{grouped}\n"
                f"  QUALIFY ROW_NUMBER() OVER (PARTITION BY {part} ORDER BY HASH({part}, {v}{tie}, {SALT}), {v}) <= {limit}\n),\n"
                f"__h{i} AS (SELECT {', '.join([*names, f'{agg} AS {_q(primitive_column(i))}'])} FROM {step}"
                f"{' GROUP BY ' + by if names else ''})")
        steps[i] = f"__h{i}"
    return sql, steps


def _with_sampled(plan: Plan, sql: str, names: list[str], cols: list[str], source: str) -> str:
    """The final SELECT of ``cols`` per group over ``source`` (every primitive's but the sampled
    ones'); with quantiles or COUNT(DISTINCT col), that SELECT becomes the step ``__agg`` and each sampled primitive's step is LEFT JOINed to it
    on the keys (NULL matches NULL): every sampled row is in a kept record, so every group of a
    sampled step is a group of ``__agg``; a group without a sampled value reads NULL (0 values)."""
    group = f"\nGROUP BY {', '.join(names)}" if names else ""
    extra, steps = _sampled_sql(plan, names)
    if not steps:
        return f"{sql}\nSELECT {', '.join(cols)}\nFROM {source}{group}"
    sql += f"{extra},\n__agg AS (\n  SELECT {', '.join([*cols, 'COUNT(*) AS __kept_records'])}\n  FROM {source}{group}\n)"
    out = [f"__agg.{n}" for n in names]
    for i in range(len(plan.primitives)):
        out.append(f"{steps.get(i, '__agg')}.{_q(primitive_column(i))}")
    if plan.selection_count == "units":
        out.append('__agg."__n"')
    joins = ""
    for step in steps.values():
        on = " AND ".join(f"(__agg.{n} = {step}.{n} OR (__agg.{n} IS NULL AND {step}.{n} IS NULL))" for n in names)
        joins += f"\nLEFT JOIN {step} ON {on or 'TRUE'}"
    return f"{sql}\nSELECT {', '.join(out)}\nFROM __agg{joins}"


def exact_sql(plan: Plan, parts: RowParts) -> str:
    """The exact per-group primitives of a many-row table (steps 1-5 of the module's docstring)."""
    sql, names, _ = _records_sql(plan, parts)
    cols = list(names)
    for i, p in enumerate(plan.primitives):
        if p.kind == "quantile" or p.distinct:
            continue  # step 5 (:func:`_sampled_sql`), joined by :func:`_with_sampled`
        agg = "COUNT(*)" if p.kind == "count" else f"SUM({_capped(plan, p.column or '')})"
        cols.append(f"{agg} AS {_q(primitive_column(i))}")
    source = "__kept"
    if _mixed(plan):
        sql += _first_sql(plan, names)
        source = "__first"
        cols.append('SUM(CASE WHEN __r = 1 THEN 1 ELSE 0 END) AS "__n"')
    elif plan.selection_count == "units":
        cols.append('COUNT(*) AS "__n"')
    return _with_sampled(plan, sql, names, cols, source)


def reference_sql(plan: Plan, parts: RowParts) -> str:
    """The same values over materialised split records: each kept (unit, group) record split as
    paper 000 Algorithm 1 splits a record (m = max(1, ⌈|x|/T⌉ over the query's measures),
    split i carrying sign(x)·clamp(|x| − (i−1)·T, 0, T)), then SUM over splits and COUNT(DISTINCT
    unit). Shown by EXPLAIN; tests run it against :func:`exact_sql`."""
    sql, names, measures = _records_sql(plan, parts)
    vals = [f"{_capped(plan, m)} AS {_q('__c_' + m)}" for m in measures]
    vals += [f"{_cell_threshold(plan, plan.table.measure(m), 1)} AS {_q('__t_' + m)}" for m in measures]
    # |x| read as a DOUBLE and capped at 2^53 (as rewrite.splits_sql): an uncapped HUGEINT total cannot overflow the cast
    counts = ", ".join(f"CAST(CEIL(LEAST(ABS(CAST({_q('__c_' + m)} AS DOUBLE)), {2**53}) / {_q('__t_' + m)}) AS BIGINT)"
                       for m in measures)
    splits = f"GREATEST(1, {counts})" if measures else "1"
    first = _mixed(plan)
    if first:
        sql += _first_sql(plan, names)
    sql += (f",\n__capped AS (SELECT {', '.join([*names, '__unit', *vals, *(['__r'] if first else [])])} "
            f"FROM {'__first' if first else '__kept'}),\n"
            f"__splits AS (SELECT *, UNNEST(RANGE(1, {splits} + 1)) AS __i FROM __capped)")
    cols = list(names)
    for i, p in enumerate(plan.primitives):
        if p.kind == "quantile" or p.distinct:
            continue  # step 5 (:func:`_sampled_sql`), joined by :func:`_with_sampled`
        if p.kind == "count":
            agg = "COUNT(DISTINCT __unit)"
        else:
            c, th = _q("__c_" + (p.column or "")), _q("__t_" + (p.column or ""))
            agg = f"SUM(SIGN({c}) * LEAST(GREATEST(ABS({c}) - (__i - 1) * {th}, 0), {th}))"
        cols.append(f"{agg} AS {_q(primitive_column(i))}")
    if first:
        cols.append('COUNT(DISTINCT CASE WHEN __r = 1 THEN __unit END) AS "__n"')
    elif plan.selection_count == "units":
        cols.append('COUNT(DISTINCT __unit) AS "__n"')
    return _with_sampled(plan, sql, names, cols, "__splits")
