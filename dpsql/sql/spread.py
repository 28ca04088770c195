"""Variance and standard deviation (issue 32) from three noisy primitives.

``VARIANCE`` / ``VAR_SAMP``, ``VAR_POP``, ``STDDEV`` / ``STDDEV_SAMP`` / ``STD``, ``STDDEV_POP`` of
a measure m are post-processing of

* Q = the sum of the squares of m's **split values** (kind ``"sumsq"``): a record r of value x
  (in granularity units, top-coded at max_splits·T as for SUM) is split at its threshold T into
  ⌈|x|/T⌉ splits of at most T (paper 000 Algorithm 1), and contributes Σ s² = k·T² + e² where
  k = ⌊|x|/T⌋ and e = |x| − k·T (computed as |x|·T − e·(T − e)). Each split adds at most T², so
  Q's sensitivity is T² per split and a record pays ρ_Q·|A(r)|² — the shape of SUM's term, with
  the same split count. For |x| ≤ T (most records: T is a high percentile) that is exactly x²;
  above T it is less than x² (the bias accepted, as splitting accepts top-coding for sums):
  the variance of records beyond their threshold is under-stated;
* S = SUM(m) over split records (the sum's own primitive, shared with a SUM(m) of the query);
* N = the count of units where m is not NULL (AVG's count, shared with it).

VAR_SAMP = max(0, (Q − S²/N)/(N − 1)) when N ≥ 2, VAR_POP = max(0, (Q − S²/N)/N) when N ≥ 1,
else NULL; STDDEV = √VAR. The 95% margin of error is the delta method on the three independent
noises, evaluated at the noisy values (:func:`sigma`), marked approximate in the receipt.
No I/O here.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dpsql.sql.plan import primitive_column

#: the analyst's aggregates answered here, and what each computes
SPREAD_AGGREGATES: tuple[type[exp.Expression], ...] = (exp.Variance, exp.VariancePop, exp.Stddev, exp.StddevSamp,
                                                      exp.StddevPop)
_KINDS = {exp.Variance: "var_samp", exp.VariancePop: "var_pop", exp.Stddev: "stddev_samp",
          exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop"}

#: |x| (granularity units) is capped here before it is squared: Σ s² ≤ |x|² ≤ 2^62 fits a BIGINT,
#: so SUM over fewer than 2^64 rows cannot overflow HUGEINT (rewrite.VALUE_CAP's argument)
SQUARE_CAP = 2**31


def spread_kind(node: exp.Expression) -> str:
    return _KINDS[type(node)]


def std_aliases(tree: exp.Expression) -> exp.Expression:
    """``STD(x)`` and ``VAR(x)`` (the spellings SmartNoise's suite and T-SQL use, which sqlglot does
    not model) as ``STDDEV(x)`` and ``VARIANCE(x)``: the sample forms, as T-SQL's STDEV and VAR."""
    def fix(node: exp.Expression) -> exp.Expression:
        name = str(node.this).upper() if isinstance(node, exp.Anonymous) else ""
        if name in ("STD", "VAR") and len(node.expressions) == 1:
            out = (exp.Stddev if name == "STD" else exp.Variance)(this=node.expressions[0].copy())
            out.meta.update(node.meta)
            return out
        return node

    return tree.transform(fix) if any(isinstance(n, exp.Anonymous) for n in tree.walk()) else tree


def square_sql(value: str, threshold: str) -> str:
    """A record's Σ s² over its splits at ``threshold`` T (SQL of its value v, BIGINT-wide, and of
    T): with a = min(|v|, 2^31) and r = a mod T, a·T − r·(T − r) = ⌊a/T⌋·T² + r², at most a²
    ≤ 2^62. In HUGEINT, inside TRY (the final check knows types, not the ranges that make it total),
    then a BIGINT for SUM."""
    h = f"ABS(CAST({value} AS HUGEINT))"
    # not LEAST(h, cap): DuckDB's LEAST skips NULL, so a NULL value became the cap
    a = f"CASE WHEN {h} > {SQUARE_CAP} THEN {SQUARE_CAP} ELSE {h} END"
    return f"TRY_CAST(TRY({a} * {threshold} - ({a} % {threshold}) * ({threshold} - {a} % {threshold})) AS BIGINT)"


def finish_expr(kind: str, q: int, s: int, c: int) -> exp.Expression:
    """The finish expression of a spread over the noisy relation (DOUBLE arithmetic: it cannot
    overflow; negative estimates, from noise, are clamped at 0)."""
    qq, ss, nn = (f'CAST("{primitive_column(i)}" AS DOUBLE)' for i in (q, s, c))
    n_col = f'"{primitive_column(c)}"'
    if kind.endswith("samp"):
        var = f"CASE WHEN {n_col} >= 2 THEN GREATEST(({qq} - {ss} * {ss} / {nn}) / ({nn} - 1), 0) END"
    else:
        var = f"CASE WHEN {n_col} >= 1 THEN GREATEST(({qq} - {ss} * {ss} / {nn}) / {nn}, 0) END"
    text = f"SQRT({var})" if kind.startswith("stddev") else var
    return exp.Paren(this=sqlglot.parse_one(text, read="duckdb"))
