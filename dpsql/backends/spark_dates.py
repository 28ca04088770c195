"""Date functions of dpsql's exact SQL on Spark, with DuckDB's values (docs/scale.md).

sqlglot transpiles DuckDB's date functions to Spark's names, not to their meaning: Spark's
``dayofweek`` counts Sunday as 1 where DuckDB's counts it 0, ``isodow`` becomes arithmetic that is
off by one, ``strftime`` codes such as ``%j``, ``%w`` or ``%U`` have no Spark pattern, and
``EXTRACT(second ...)`` has a fraction on Spark. :func:`rewrite_date` gives each form DuckDB's
value on Spark or raises :class:`UnsupportedOnSpark`; ``to_spark`` runs in the Spark engine's
phase-1 check, so such a query is refused before any row is read, whatever the data. The
corpus-agreement tests (tests/test_spark.py) run every accepted date case on both engines.
"""

from __future__ import annotations

from sqlglot import exp


class UnsupportedOnSpark(ValueError):
    """A DuckDB form (a date function, a quantile) dpsql does not (yet) give DuckDB's value for on Spark."""


#: EXTRACT / date_part fields whose Spark value is DuckDB's, and the Spark name of each
_SAME_FIELDS = {"year": "YEAR", "years": "YEAR", "quarter": "QUARTER", "month": "MONTH", "months": "MONTH",
                "day": "DAY", "days": "DAY", "hour": "HOUR", "hours": "HOUR", "minute": "MINUTE", "minutes": "MINUTE",
                "doy": "DOY", "dayofyear": "DOY", "week": "WEEK", "weeks": "WEEK",
                "isodow": "DAYOFWEEK_ISO", "dayofweek_iso": "DAYOFWEEK_ISO"}
#: fields Spark counts from Sunday = 1, DuckDB from Sunday = 0
_SUNDAY_ONE = {"dow", "dayofweek", "weekday"}
#: DATE_TRUNC units Spark's date_trunc knows, with DuckDB's meaning
_TRUNC_UNITS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second"}
#: strftime codes sqlglot writes as Spark patterns of the same text
_FORMAT_CODES = set("YmdHMSyIpbBaA%")


def _field(node: exp.Expression | None) -> str:
    return node.name.lower() if isinstance(node, (exp.Var, exp.Literal, exp.Column)) else ""


def _extract(field: str, value: exp.Expression) -> exp.Expression:
    if field in _SUNDAY_ONE:
        return exp.Paren(this=exp.Sub(this=exp.Extract(this=exp.var("DAYOFWEEK"), expression=value),
                                      expression=exp.Literal.number(1)))
    if field not in _SAME_FIELDS:
        raise UnsupportedOnSpark(f"EXTRACT({field})")
    return exp.Extract(this=exp.var(_SAME_FIELDS[field]), expression=value)


def rewrite_date(node: exp.Expression) -> exp.Expression | None:
    """The Spark form of one date node (its children already rewritten), None when ``node`` is
    no date function; raises :class:`UnsupportedOnSpark`."""
    if isinstance(node, exp.Extract):
        return _extract(_field(node.this), node.expression)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("date_part", "datepart") and len(node.expressions) == 2:
        return _extract(_field(node.expressions[0]), node.expressions[1])
    if isinstance(node, exp.DayOfWeek):
        return _extract("dow", node.this)
    if isinstance(node, exp.DayOfWeekIso):
        return _extract("isodow", node.this)
    if isinstance(node, (exp.Week, exp.WeekOfYear)):
        return _extract("week", node.this)
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        if _field(node.args.get("unit")) not in _TRUNC_UNITS:
            raise UnsupportedOnSpark(f"DATE_TRUNC({_field(node.args.get('unit'))})")
        return None
    if isinstance(node, exp.TimeToStr):
        fmt = node.args.get("format")
        text = fmt.name if isinstance(fmt, exp.Literal) else None
        codes = set(text[i + 1] for i in range(len(text) - 1) if text[i] == "%") if text is not None else {"?"}
        if text is None or not codes <= _FORMAT_CODES or "'" in text or any(ch.isalpha() for ch in _literal_text(text)):
            raise UnsupportedOnSpark("strftime")  # a code Spark has no pattern for, or a letter Spark would read as one
        return None
    return None


def _literal_text(fmt: str) -> str:
    """The characters of a strftime format that are not part of a % code."""
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            i += 2
            continue
        out.append(fmt[i])
        i += 1
    return "".join(out)
