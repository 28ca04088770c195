"""Quantile aggregates: which calls are quantiles, of which measure and which q, and the exact
SQL that counts a group's values into the measure's public grid.

Accepted, all as the same DP quantile (``privacy/quantile.py``: the exponential mechanism over the
grid the policy declares for the measure, so the answer is a grid value whichever form is written):
``MEDIAN(m)``, ``QUANTILE_CONT(m, q)``, ``QUANTILE_DISC(m, q)``, ``QUANTILE(m, q)``,
``APPROX_QUANTILE(m, q)``, ``PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY m)`` and its ``_DISC``
twin (``ORDER BY m DESC`` asks for 1 − q). ``MIN`` / ``MAX`` are refused with a hint: the
exponential mechanism at q = 0 or 1 has no rank to aim at (every candidate below the minimum
scores as well as the minimum), so it would return a value anywhere below it.
"""

from __future__ import annotations

import re
from fractions import Fraction

from sqlglot import exp

from dpsql.errors import NotSupportedYet
from dpsql.sql.parse import position, written_name

QUANTILE_AGGREGATES = (exp.Median, exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.ApproxQuantile)
#: q is written with at most this many decimals (its denominator bounds the scores' scale)
MAX_Q_DENOMINATOR = 10_000


def is_quantile(node: exp.Expression) -> bool:
    return isinstance(node, exp.WithinGroup) or isinstance(node, QUANTILE_AGGREGATES)


def quantile_call(node: exp.Expression, sql: str) -> tuple[exp.Expression, Fraction]:
    """(the argument, q) of a quantile call; refuses what dpsql cannot answer as one DP quantile."""
    name = quantile_name(node, sql)
    if isinstance(node, exp.Median) and isinstance(node.this, exp.Distinct):
        raise _refuse(node, sql, "DP116", f"{name}(DISTINCT ...) is not supported", f"write {name}(measure).")
    if isinstance(node, exp.WithinGroup):
        order = node.expression
        ordered = order.expressions if isinstance(order, exp.Order) else []
        if not isinstance(node.this, (exp.PercentileCont, exp.PercentileDisc)) or len(ordered) != 1:
            raise _refuse(node, sql, "DP109", f"{name} ... WITHIN GROUP needs one ORDER BY column",
                          "write PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY measure).")
        q = _q(node.this.this, node, sql, name)
        if ordered[0].args.get("desc"):
            q = 1 - q
        return ordered[0].this, q
    if isinstance(node, exp.Median):
        return node.this, Fraction(1, 2)
    q_node = node.args.get("quantile") if isinstance(node, (exp.Quantile, exp.ApproxQuantile)) else node.expression
    return node.this, _q(q_node, node, sql, name)


def quantile_name(node: exp.Expression, sql: str) -> str:
    """The function's name as written: sqlglot keeps no position for QUANTILE_CONT (it becomes
    PERCENTILE_CONT), so it is the word before the parenthesis that opens the first argument."""
    call = node.this if isinstance(node, exp.WithinGroup) else node
    starts = [n.meta["start"] for n in call.walk() if isinstance(n, exp.Expression) and n.meta.get("start") is not None]
    if starts:
        found = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*$", sql[:min(starts)])
        if found:
            return found.group(1).upper()
    return written_name(call, sql).upper()


def _q(q_node: exp.Expression | None, node: exp.Expression, sql: str, name: str) -> Fraction:
    if isinstance(q_node, exp.Array):
        raise _refuse(node, sql, "DP109", f"{name} of a list of quantiles is not supported",
                      f"ask one quantile per aggregate: {name}(m, 0.25), {name}(m, 0.75).")
    if not (isinstance(q_node, exp.Literal) and not q_node.is_string):
        raise _refuse(node, sql, "DP109", f"{name} needs its quantile as a number between 0 and 1",
                      f"write e.g. {name}(m, 0.9).")
    try:
        q = Fraction(q_node.this)
    except (ValueError, ZeroDivisionError):
        raise _refuse(node, sql, "DP109", f"{name} needs its quantile as a number between 0 and 1") from None
    if not 0 < q < 1:
        raise _refuse(node, sql, "DP109", f"{name} at {q_node.this}: dpsql answers quantiles strictly between 0 and 1",
                      "the extremes have no rank a DP mechanism can aim at; ask for 0.01 or 0.99 instead.")
    if q.denominator > MAX_Q_DENOMINATOR:
        raise _refuse(node, sql, "DP109", f"{name} at {q_node.this}: write the quantile with at most 4 decimals")
    return q


def refuse_extreme(node: exp.Expression, sql: str) -> NotSupportedYet:
    """MIN / MAX: refused, with the quantile to write instead."""
    name = written_name(node, sql).upper()
    q = "0.01" if isinstance(node, exp.Min) else "0.99"
    line, column = position(node, sql)
    return NotSupportedYet(
        f"the aggregate {name} is not supported: the exact extreme of private values is one unit's value, and no DP "
        "mechanism can aim at it", code="DP109", line=line, column=column,
        hint=f"ask for a quantile near it, QUANTILE_CONT(measure, {q}), of a measure whose policy declares a range.")


#: the key DuckDB's HISTOGRAM gives values above every bound; the sparse form uses it too
OTHER_BIN = 2**63 - 1


def histogram_sql(value: str, bounds: list[int]) -> str:
    """The exact per-group count of values in each bin of ``bounds`` — bins (b_{j−1}, b_j],
    values above the last under :data:`OTHER_BIN` — for the bins that hold a value, as two
    lists: [bins, counts] ([NULL, NULL] for a group without a value). Two lists of integers
    took a third of the memory of a list of {key, value} structs in Python (185 against 358 MB
    for 20,000 groups of 50 rows). ``value`` is a BIGINT-or-NULL expression (``rewrite.value_sql``); NULLs
    are not counted.

    Sparse, so that memory is bounded whatever the data (issue 29): each row's bin is found
    first (a binary search over the literal list of bounds: ``list_reduce`` over the steps
    2^k … 1, adding a step while the bound past it is still below the value), then
    ``HISTOGRAM`` counts the bins that occur. A group's state holds one entry per bin its rows
    fall in, so the query holds at most one entry per row. DuckDB's ``HISTOGRAM(v, bounds)``
    kept a counter for every bound in every group (~80 KB a group on the demo's 1,674 bounds:
    20,000 groups of a private key took 1.6 GB, now 0.25 GB), in about 1.3x its time per row
    (docs/performance.md, "Quantiles"). Total: comparisons and sums of small integers, and
    ``array_extract`` past the end is NULL (then the bin is :data:`OTHER_BIN`)."""
    histogram = f"HISTOGRAM({bin_sql(f'TRY_CAST({value} AS BIGINT)', bounds)})"
    return f"[MAP_KEYS({histogram}), MAP_VALUES({histogram})]"  # DuckDB computes the one aggregate once


def bin_sql(v: str, bounds: list[int]) -> str:
    """The bin of the BIGINT-or-NULL ``v`` among ``bounds`` (see :func:`histogram_sql`); NULL
    for NULL. The bounds are one text cast to an ARRAY (1.7x faster to index than a LIST): a
    constant DuckDB binds once and the final check (totality.py) reads without parsing every
    literal. totality.py accepts exactly this text, rebuilt from its ``v`` and bounds."""
    listed = f"'[{', '.join(map(str, bounds))}]'::BIGINT[{len(bounds)}]"
    steps = ", ".join(str(1 << j) for j in range(max(1, len(bounds).bit_length()) - 1, -1, -1))
    below = f"list_reduce([0, {steps}], LAMBDA acc, s: acc + CASE WHEN array_extract({listed}, acc + s) < {v} THEN s ELSE 0 END)"
    return f"CASE WHEN {v} IS NOT NULL THEN COALESCE(array_extract({listed}, {below} + 1), {OTHER_BIN}) END"


def _refuse(node: exp.Expression, sql: str, code: str, message: str, hint: str | None = None) -> NotSupportedYet:
    line, column = position(node, sql)
    return NotSupportedYet(message, code=code, line=line, column=column, hint=hint)


def values_sql(keys: list[tuple[str, str]], value: str, source: str, candidates: tuple[int, ...], outputs: list[str],
               selection: str | None) -> str:
    """The exact query of a plan whose aggregates are quantiles of one measure (issue 34,
    ``Plan.quantile_values``): per group, its values as one LIST of INTEGER or BIGINT
    (:func:`clamped_sql`; NULLs left out;
    NULL for a group without a value) and, if ``selection`` names it, its rows' count. The
    engine hands the lists over as numpy arrays and ``privacy/em_runs.py`` counts them into the
    grid's bins, exactly (the same counts as :func:`histogram_sql`: tests/test_quantile_binned.py).
    DuckDB only groups and collects, as its own MEDIAN does (which keeps every value of a group
    too): counting by ``GROUP BY group, bin`` (a form since removed) took 4-10x MEDIAN's time, most
    of it in a hash table of one entry per (group, bin) (docs/performance.md, "Quantiles").

    Each value is clamped to [c_0 − 1, c_{m−1} + 1] (the same bin: every value below c_0 is in
    c_0 − 1's, every value above c_{m−1} in :data:`OTHER_BIN`) and cast to INTEGER or BIGINT. Total:
    comparisons with integer literals, a cast of a value within them, COUNT and LIST
    (``sql/totality_bins.py``). ``outputs`` are the names of the quantile columns (all the
    same list)."""
    names = [name for _, name in keys]
    rows = f"SELECT {''.join(f'{e} AS {n}, ' for e, n in keys)}{clamped_sql(value, candidates)} AS __qw FROM {source}"
    cols = names + [f"LIST(__qw) FILTER (WHERE __qw IS NOT NULL) AS {o}" for o in outputs]
    sql = f"WITH __q1 AS ({rows})\nSELECT {', '.join(cols + ([f'COUNT(*) AS {selection}'] if selection else []))}\nFROM __q1"
    return sql + (f"\nGROUP BY {', '.join(names)}" if names else "")


def clamped_sql(value: str, candidates: tuple[int, ...]) -> str:
    """``value`` (BIGINT or NULL) clamped to [c_0 − 1, c_{m−1} + 1]: in the same bin. As INTEGER
    when both ends fit one (:func:`fits_int32`: the grid's, public; DuckDB hands INTEGER lists
    over 1.2-1.5x faster than BIGINT ones, docs/performance.md "Quantiles"), through TRY_CAST,
    which the final check accepts and which never fails here: every clamped value lies between
    the ends. Else as BIGINT (a cast that only widens)."""
    lo, hi = candidates[0] - 1, candidates[-1] + 1
    clamped = f"CASE WHEN {value} < {lo} THEN {lo} WHEN {value} > {hi} THEN {hi} ELSE {value} END"
    return f"TRY_CAST({clamped} AS INTEGER)" if fits_int32(candidates) else f"CAST({clamped} AS BIGINT)"


def fits_int32(candidates: tuple[int, ...]) -> bool:
    """Whether c_0 − 1 and c_{m−1} + 1, and so every clamped value, fit a 32-bit INTEGER."""
    return -2**31 <= candidates[0] - 1 and candidates[-1] + 1 <= 2**31 - 1
