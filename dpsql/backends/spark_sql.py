"""dpsql's exact SQL (DuckDB dialect) as Spark SQL that is total and gives DuckDB's values.

sqlglot transpiles the syntax; this module makes the semantics agree where they differ, for the
forms the exact query uses (docs/scale.md, "Totality on Spark"). Spark runs with
``spark.sql.ansi.enabled = false``, so no cast, overflow or division raises on any row (the
exact query stays total: DESIGN.md, "Phases of a query"); where non-ANSI Spark would instead
wrap around or truncate silently, the rewrite below gives DuckDB's answer:

* ``SUM(x)`` of an integer is exact: DuckDB sums BIGINT in HUGEINT; Spark's BIGINT sum wraps
  around (non-ANSI), which would break the sensitivity bound. x is summed in three 21-bit
  parts, each a BIGINT sum that cannot overflow, combined per group in DECIMAL(38,0)
  (:func:`_split_sum`; a per-row DECIMAL(38,0) sum was 4.5× slower than raw Spark). Any other
  non-float sum is ``SUM(CAST(x AS DECIMAL(38,0)))``.
* ``+ - *`` and unary minus become ``try_add`` / ``try_subtract`` / ``try_multiply``, ``%``
  ``try_mod``: NULL on overflow, as DuckDB's ``TRY()`` around an overflow (outside ``TRY()``
  the allow-list already proves no overflow). ``ABS(x)`` is ``try_subtract(0, x)`` below 0.
* ``a / b`` is DuckDB's DOUBLE division: both sides as DOUBLE, x/0 = ±inf (0/0 NaN) as IEEE.
* ``CAST`` is ``TRY_CAST`` (only reached where DuckDB's cast cannot fail, or inside ``TRY()``),
  and a DOUBLE cast to an integer is rounded half to even (``bround``), a DECIMAL half away
  from zero (``round``), as DuckDB does; Spark truncates.
* ``TRY(x)`` is ``x``: with the above, nothing inside it raises or wraps on Spark.
* date functions (``EXTRACT``, ``dayofweek``, ``strftime``, ``DATE_TRUNC``): DuckDB's values, or
  refused before any row is read (:mod:`dpsql.backends.spark_dates`).
* ``SUBSTRING`` offsets and lengths past Spark's INT: beyond DuckDB's ±(2^32 − 1) it is NULL
  (DuckDB raises, ``TRY()`` gives NULL); in between, clamped to ±(2^31 − 1), which selects the
  same characters of any string shorter than 2^31.

Nothing here reads a row; no I/O.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from dpsql.backends.spark_dates import UnsupportedOnSpark, rewrite_date

_INTEGER = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT,
            exp.DataType.Type.INT128, exp.DataType.Type.UTINYINT, exp.DataType.Type.USMALLINT,
            exp.DataType.Type.UINT, exp.DataType.Type.UBIGINT}
_FLOAT = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}
_DECIMAL = {exp.DataType.Type.DECIMAL}
#: DuckDB refuses SUBSTRING offsets beyond this; Spark's INT ends at INT_MAX
SUBSTR_BOUND, INT_MAX = 2**32 - 1, 2**31 - 1


class _Spark(Spark):
    """Spark with TRY_CAST written as TRY_CAST: sqlglot writes CAST, which non-ANSI Spark makes
    lenient but not DuckDB's TRY_CAST (NaN to BIGINT is 0, not NULL)."""

    class Generator(Spark.Generator):
        TRANSFORMS = {**Spark.Generator.TRANSFORMS,
                      exp.TryCast: lambda self, e: f"TRY_CAST({self.sql(e, 'this')} AS {self.sql(e, 'to')})"}


def _kind(node: exp.Expression) -> exp.DataType.Type | None:
    return node.type.this if isinstance(node.type, exp.DataType) else None


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=[a.copy() for a in args])


def _double(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))


_INT_DIGITS = {exp.DataType.Type.TINYINT: 3, exp.DataType.Type.SMALLINT: 5, exp.DataType.Type.INT: 10,
               exp.DataType.Type.BIGINT: 19, exp.DataType.Type.INT128: 39}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _decimal(t: exp.DataType) -> tuple[int, int]:
    params = [int(p.name) for p in t.expressions] or [18, 3]
    return params[0], params[1] if len(params) > 1 else 0


def _duckdb_common_decimal(node: exp.Binary) -> exp.Expression:
    """An integer compared with a DECIMAL: DuckDB casts the integer to DECIMAL(min(38, digits +
    scale), scale) and fails (inside TRY(): NULL) where it does not fit; Spark widens further.
    Both sides are TRY_CAST to DuckDB's type, so the rows that compare are the same."""
    left, right = _kind(node.left), _kind(node.right)
    integer, decimal = (node.left, node.right) if left in _INT_DIGITS else (node.right, node.left)
    width, scale = _decimal(decimal.type)
    digits = max(_INT_DIGITS[_kind(integer)], width - scale)
    target = exp.DataType.build(f"DECIMAL({min(38, digits + scale)},{scale})")
    node.set("this", exp.TryCast(this=node.left.copy(), to=target.copy()))
    node.set("expression", exp.TryCast(this=node.right.copy(), to=target))
    return node


def _split_sum(x: exp.Expression) -> exp.Expression:
    """The exact sum of a BIGINT (or narrower) ``x`` without a BIGINT overflow or a slow
    DECIMAL(38) sum per row: x = a·2^42 + b·2^21 + c with a = x >> 42 (arithmetic shift, in
    [-2^21, 2^21)), b and c in [0, 2^21); three BIGINT sums cannot overflow for fewer than 2^42
    rows in a group, and are combined once per group in DECIMAL(38,0) (|sum| < 2^63 · rows <
    10^38). NULL rows are NULL in all three parts: the sum of no value stays NULL."""
    def part(shift: int, mask: bool) -> exp.Expression:
        value = exp.cast(x.copy(), "BIGINT")
        if shift:
            value = exp.Anonymous(this="shiftright", expressions=[value, exp.Literal.number(shift)])
        if mask:
            value = exp.BitwiseAnd(this=value, expression=exp.Literal.number(2**21 - 1))
        return exp.Cast(this=exp.Sum(this=value), to=exp.DataType.build("DECIMAL(38,0)"))

    a, b, c = part(42, False), part(21, True), part(0, True)
    return exp.Paren(this=exp.Add(this=exp.Add(this=exp.Mul(this=a, expression=exp.Literal.number(2**42)),
                                                expression=exp.Mul(this=b, expression=exp.Literal.number(2**21))),
                                  expression=c))


def _rewrite(node: exp.Expression) -> exp.Expression:
    """One node, its children already rewritten (types were annotated before any rewrite)."""
    if isinstance(node, _COMPARISONS) and {_kind(node.left), _kind(node.right)} & set(_INT_DIGITS) \
            and {_kind(node.left), _kind(node.right)} & _DECIMAL:
        return _duckdb_common_decimal(node)
    if isinstance(node, exp.Try):
        return node.this
    if isinstance(node, exp.Anonymous) and node.name.upper() in ("HISTOGRAM", "LIST_REDUCE") \
            or isinstance(node, exp.ArrayAgg):  # quantiles (sql/quantiles.py: a histogram, or each group's values)
        raise UnsupportedOnSpark("MEDIAN (and every quantile)")
    numbers = _INTEGER | _FLOAT | _DECIMAL
    if isinstance(node, (exp.And, exp.Or)) and (_kind(node.left) in numbers or _kind(node.right) in numbers) \
            or isinstance(node, (exp.Not, exp.Where)) and _kind(node.this) in numbers:  # DuckDB casts it to BOOLEAN
        raise UnsupportedOnSpark("a number as a condition (WHERE x: write WHERE x <> 0)")
    if isinstance(node, exp.Abs) and isinstance(node.this, exp.Cast) and node.this.to.is_type(exp.DataType.Type.INT128):
        raise UnsupportedOnSpark("VARIANCE / STDDEV (a HUGEINT sum of split squares: sql/spread.py)")
    if (date := rewrite_date(node)) is not None:
        return date
    if isinstance(node, exp.Sum) and not isinstance(node.this, exp.Distinct):
        if _kind(node.this) in _INT_DIGITS and _kind(node.this) != exp.DataType.Type.INT128:
            return _split_sum(node.this)
        if _kind(node.this) not in _FLOAT | _DECIMAL:
            node.set("this", exp.Cast(this=node.this, to=exp.DataType.build("DECIMAL(38,0)")))
        return node
    for cls, name in ((exp.Add, "try_add"), (exp.Sub, "try_subtract"), (exp.Mul, "try_multiply"), (exp.Mod, "try_mod")):
        if type(node) is cls:
            return _fn(name, node.left, node.right)
    if isinstance(node, exp.Neg) and not isinstance(node.this, exp.Literal):
        return _fn("try_subtract", exp.Literal.number(0), node.this)
    if isinstance(node, exp.Abs):
        x = node.this
        return exp.Case(ifs=[exp.If(this=exp.LT(this=x.copy(), expression=exp.Literal.number(0)),
                                    true=_fn("try_subtract", exp.Literal.number(0), x))], default=x.copy())
    if isinstance(node, exp.Div):
        num, den = _double(node.left), _double(node.right)
        inf = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE"))
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=den.copy(), expression=exp.Literal.number(0)),
                                    true=exp.Mul(this=num.copy(), expression=inf))],
                        default=exp.Div(this=num, expression=den))
    if isinstance(node, exp.Cast):  # TryCast is a Cast
        source, target = _kind(node.this), node.to.this
        value = node.this
        if target in _INTEGER and source in _FLOAT:
            value = _fn("bround", value)
        elif target in _INTEGER and source in _DECIMAL:
            value = exp.Round(this=value.copy())
        if source is not None and source == target and source in _INTEGER:
            return value  # a no-op cast
        return exp.TryCast(this=value, to=node.to)
    if isinstance(node, exp.Substring):
        for arg in ("start", "length"):
            v = node.args.get(arg)
            if isinstance(v, exp.Literal) and v.is_int or isinstance(v, exp.Neg) and isinstance(v.this, exp.Literal):
                n = int(v.sql())
                if abs(n) > SUBSTR_BOUND:
                    return exp.Null()
                if abs(n) > INT_MAX:
                    node.set(arg, exp.Literal.number(INT_MAX if n > 0 else -INT_MAX))
        return node
    return node


def to_spark(sql: str, schema: dict[str, dict[str, str]], check: bool = False) -> str:
    """Spark SQL for dpsql's DuckDB ``sql`` over tables of ``schema`` (table -> column -> DuckDB type).
    With ``check`` (the exact query, in phase 1) every form of the result must be one of
    :data:`SPARK_FORMS`, else :class:`UnsupportedOnSpark`."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    for table in tree.find_all(exp.Table):  # DuckDB's default schema: the views have none on Spark
        if table.db.lower() == "main" and not table.catalog:
            table.set("db", None)
    try:
        tree = qualify(tree, schema=schema, dialect="duckdb", quote_identifiers=True, validate_qualify_columns=False)
    except sqlglot.errors.OptimizeError:
        tree = sqlglot.parse_one(sql, read="duckdb")  # types stay unknown: the rewrite is then conservative
    tree = annotate_types(tree, schema=schema, dialect="duckdb")
    for literal in tree.find_all(exp.Literal):  # sqlglot says DOUBLE; DuckDB reads 1.50 as DECIMAL(3,2)
        m = re.fullmatch(r"(\d*)\.(\d*)", literal.this) if not literal.is_string else None
        if m:
            width = max(len(m.group(1).lstrip("0")) + len(m.group(2)), 1)
            if width <= 38:
                literal.type = exp.DataType.build(f"DECIMAL({width},{len(m.group(2))})")
    tree = _walk(tree)
    if check:
        check_total(tree)
    return tree.sql(dialect=_Spark)


#: The forms the Spark form of the exact query may hold: those of the checked DuckDB query
#: (:mod:`dpsql.sql.final_check`) as rewritten here. With ANSI off and the CORRECTED date parser
#: (``backends/spark.py`` reads both back) none of them raises for any row: a cast, an overflow,
#: a division by zero, a logarithm of 0 or a date text that does not parse is NULL (or ±inf,
#: NaN); arithmetic is ``try_*``. A form outside this set — a DuckDB function sqlglot passes
#: through untranslated — is refused before any row is read rather than trusted. Known gap: a
#: ``||`` result past Spark's 2 GiB string limit raises (DuckDB's TRY() around it is gone).
SPARK_FORMS = frozenset({
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Subquery, exp.Table, exp.TableAlias, exp.Alias,
    exp.Identifier, exp.Column, exp.Star, exp.Literal, exp.Boolean, exp.Null, exp.DataType, exp.DataTypeParam,
    exp.Var, exp.Interval, exp.Paren, exp.Tuple, exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE,
    exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Case, exp.If, exp.Coalesce, exp.Nullif,
    exp.Greatest, exp.Least, exp.Lower, exp.Upper, exp.Length, exp.Substring, exp.DPipe, exp.Trim, exp.TryCast,
    exp.Cast, exp.Round, exp.Floor, exp.Ceil, exp.Abs, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow, exp.Add,
    exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Neg, exp.BitwiseAnd, exp.Sum, exp.Count, exp.Distinct,
    exp.Extract, exp.Year, exp.Quarter, exp.Month, exp.Week, exp.WeekOfYear, exp.Day, exp.DayOfWeek,
    exp.DayOfWeekIso, exp.DayOfYear, exp.Hour, exp.Minute, exp.StrToDate, exp.StrToTime, exp.TimeToStr,
    exp.TimestampTrunc, exp.DateTrunc, exp.Anonymous,
})
#: the functions the rewrite writes by name (the only names an Anonymous node may carry)
SPARK_FUNCTIONS = frozenset({"try_add", "try_subtract", "try_multiply", "try_mod", "bround", "shiftright"})


def check_total(tree: exp.Expression) -> None:
    """Raise :class:`UnsupportedOnSpark` naming the first form of ``tree`` outside :data:`SPARK_FORMS`."""
    for node in tree.walk():
        if type(node) not in SPARK_FORMS or isinstance(node, exp.Anonymous) and node.name.lower() not in SPARK_FUNCTIONS:
            raise UnsupportedOnSpark(node.sql(dialect=_Spark)[:80] if isinstance(node, exp.Func) else type(node).__name__)


def _walk(node: exp.Expression) -> exp.Expression:
    """Rewrite children first (post-order); a replacement keeps the type of what it replaces."""
    for child in list(node.iter_expressions()):
        new = _walk(child)
        if new is not child:
            if new.type is None or _kind(new) == exp.DataType.Type.UNKNOWN:
                new.type = child.type
            child.replace(new)
    return _rewrite(node)
