"""Time buckets of DATE and TIMESTAMP keys with a declared range (docs/sql.md, "Dates and times").

A key declared ``range = [first day, last day]`` (and a ``grain``: the day, the hour or the
minute) has a public keyset: every instant of the range at its grain. A GROUP BY expression of
it — ``DATE_TRUNC('month', ts)``, ``EXTRACT(year FROM ts)``, ``strftime(ts, '%Y-%m')``, the
time grains Superset and Metabase write — is then public too, its keyset the expression's image
of that grid (``domain.py``), as for any expression of public keys.

Two rules make that image the right one:

* every row is read through its range: :func:`bounded` replaces the key column with
  ``CASE WHEN col in range THEN col END`` in what the exact query groups by, so a row outside the
  range falls in no released group (as a value outside a keyset does) and no extreme value
  (``'infinity'``, year 294247) reaches a date function. A date key without a range (a private
  key) is read within :data:`REPRESENTABLE` the same way, so no engine or client is handed a
  date it cannot hold (Spark's collect() fails on year 5881580: a failure some row could cause);
* a TIMESTAMP's grid holds only grain-aligned instants, so an expression must depend on the
  timestamp only through a bucket at least as coarse as the grain (:func:`check_buckets`):
  ``DATE_TRUNC('minute', ts)`` of a key declared by the hour would be computed on rows' real
  minutes but released only for whole hours. Such expressions are refused, not silently wrong.
  A DATE column's grid is every day, so any expression of it is exact.

An integer key declared ``range = [lowest, highest]`` (``age``) is read the same way: every integer
of the range is its grid, any expression of it (``FLOOR(age / 10) * 10``, ``WIDTH_BUCKET``, a
``CASE``) is exact over it, and a row outside the range is read as NULL (docs/sql.md, "Integer keys").
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.policy.model import Key

#: how coarse a bucket is: a bucket of rank r is a function of the timestamp truncated to it
_RANK = {"microsecond": 0, "microseconds": 0, "millisecond": 0, "milliseconds": 0, "second": 0, "seconds": 0,
         "epoch": 0, "minute": 1, "minutes": 1, "hour": 2, "hours": 2,
         "day": 3, "days": 3, "dow": 3, "isodow": 3, "doy": 3, "dayofweek": 3, "dayofyear": 3, "weekday": 3,
         "week": 3, "weeks": 3, "isoyear": 3, "yearweek": 3, "month": 3, "months": 3, "quarter": 3, "quarters": 3,
         "year": 3, "years": 3, "decade": 3, "century": 3, "millennium": 3, "era": 3}
_GRAIN_RANK = {"minute": 1, "hour": 2, "day": 3}
_FUNCTION_RANK: dict[type[exp.Expression], int] = {
    exp.Minute: 1, exp.Hour: 2, exp.Day: 3, exp.DayOfWeek: 3, exp.DayOfWeekIso: 3, exp.DayOfYear: 3,
    exp.Week: 3, exp.WeekOfYear: 3, exp.Month: 3, exp.Quarter: 3, exp.Year: 3,
}
#: strftime codes by rank; an unknown code counts as finer than any grain
_FORMAT_RANK = {**{c: 3 for c in "aAwdbBmyYjUWGVuCDFxe"}, "H": 2, "I": 2, "p": 2, "k": 2, "l": 2, "M": 1}

#: what a TIMESTAMP key may be grouped by, in the refusal's hint
BUCKET_HINT = ("group by a time bucket at least as coarse as the key's declared grain: DATE_TRUNC('month', {c}), "
               "EXTRACT(year FROM {c}), strftime({c}, '%Y-%m-%d'), CAST({c} AS DATE)")


def _text(node: exp.Expression | None) -> str:
    return (node.name if isinstance(node, (exp.Var, exp.Literal, exp.Column)) else "").lower() if node is not None else ""


def _format_rank(fmt: str) -> int:
    rank, i = 3, 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            code = fmt[i + 1]
            if code != "%":
                rank = min(rank, _FORMAT_RANK.get(code, 0))
            i += 2
        else:
            i += 1
    return rank


def _bucket_rank(node: exp.Expression, child: exp.Expression) -> int | None:
    """The rank of ``node`` as a bucket of its argument ``child``, or None when it passes the
    timestamp on unbucketed (a cast to TIMESTAMP, a shift by a whole interval, parentheses)."""
    if isinstance(node, exp.Paren):
        return None
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.to.this
        if to == exp.DataType.Type.DATE:
            return 3
        if to in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATETIME):
            return None
        return -1
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)) and node.this is child:
        return _RANK.get(_text(node.args.get("unit")), -1)
    if isinstance(node, exp.Extract) and node.expression is child:
        return _RANK.get(_text(node.this), -1)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("date_part", "datepart") \
            and len(node.expressions) == 2 and node.expressions[1] is child:
        return _RANK.get(_text(node.expressions[0]), -1)
    if isinstance(node, exp.TimeToStr) and node.this is child and isinstance(node.args.get("format"), exp.Literal):
        return _format_rank(node.args["format"].name)
    if type(node) in _FUNCTION_RANK and node.this is child:
        return _FUNCTION_RANK[type(node)]
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval) and node.this is child:
        iv = node.expression
        amount = iv.this.name if isinstance(iv.this, exp.Literal) else ""
        unit = _text(iv.args.get("unit"))
        if not unit and " " in amount:  # INTERVAL '1 day'
            amount, unit = amount.split(" ", 1)
        whole = amount.lstrip("+-").isdigit()
        return None if whole and _RANK.get(unit.strip().lower(), -1) >= 1 else -1
    return -1


def check_buckets(expr: exp.Expression, columns: dict[str, Key],
                  refuse: Callable[[str, exp.Expression], QueryRefused]) -> None:
    """Refuse a GROUP BY expression that reads a TIMESTAMP key (``columns``: internal name ->
    its range key) other than through a bucket at least as coarse as the key's grain.
    ``refuse(message, node)`` builds the refusal (``{fn}`` in the message: the function of
    ``node`` as the analyst wrote it)."""
    for col in expr.find_all(exp.Column):
        key = columns.get(col.name)
        if key is None:
            continue
        need, node, child = _GRAIN_RANK[key.grain], col.parent, col
        shifts_ok = True
        grain = "an hour" if key.grain == "hour" else f"a {key.grain}"
        while node is not None:
            rank = _bucket_rank(node, child)
            if rank is None:
                if isinstance(node, (exp.Add, exp.Sub)):
                    interval = node.expression
                    unit = _text(interval.args.get("unit")) or (interval.this.name.split(" ", 1) + [""])[1].lower()
                    shifts_ok = shifts_ok and _RANK.get(unit.strip(), -1) >= need
                node, child = node.parent, node
                continue
            if rank >= need and shifts_ok:
                break
            what = f"{{fn}} of {key.name!r} shifted by an interval" if rank >= need else f"{{fn}} of {key.name!r}"
            raise refuse(f"{what} is finer than {grain}: {key.name!r} is a TIMESTAMP whose public "
                         f"range is declared by the {key.grain}, so it can be grouped by buckets of {grain} or "
                         "coarser only", node)
        else:
            raise refuse(f"{key.name!r} is a TIMESTAMP: its raw values are not a public keyset (its range is "
                         f"declared by the {key.grain})", col)


#: the days a value of a DATE / TIMESTAMP key without a declared range is read within: those a
#: client can represent (Python's datetime, Spark's collect()); beyond them (DuckDB's year
#: 5881580, 'infinity') a value would fail on some engines, so it is read as NULL on all
REPRESENTABLE = (datetime.date(1, 1, 1), datetime.date(9999, 12, 31))

DATE_TYPES = ("DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "DATETIME")


def key_days(column: str, key: Key | None, sql_type: str) -> tuple[Any, Any] | None:
    """The days a DATE / TIMESTAMP key column is read within: its declared range, else
    :data:`REPRESENTABLE`; the integers of an integer key's declared range (``policy/check.py``
    holds it to an integer column); None for other columns."""
    if key is not None and key.numeric:
        return key.range
    if sql_type.upper() not in DATE_TYPES:
        return None
    return key.range if key is not None and key.range is not None else REPRESENTABLE


def range_condition(column: str, days: tuple[Any, Any], sql_type: str) -> exp.Expression:
    """``column`` within ``days`` (both included): days, or the integers of an integer key."""
    lo, hi = days
    col = exp.column(column, quoted=True)
    if isinstance(lo, int):  # comparing an integer column with integer literals cannot fail
        return exp.Between(this=col, low=exp.Literal.number(lo), high=exp.Literal.number(hi))
    if sql_type.upper() == "DATE":
        return exp.Between(this=col, low=exp.cast(exp.Literal.string(lo.isoformat()), "DATE"),
                           high=exp.cast(exp.Literal.string(hi.isoformat()), "DATE"))
    ge = exp.GTE(this=col, expression=exp.cast(exp.Literal.string(f"{lo.isoformat()} 00:00:00"), "TIMESTAMP"))
    if hi >= REPRESENTABLE[1]:
        end = exp.LTE(this=col.copy(), expression=exp.cast(exp.Literal.string("9999-12-31 23:59:59.999999"), "TIMESTAMP"))
    else:
        nxt = (hi + datetime.timedelta(days=1)).isoformat()
        end = exp.LT(this=col.copy(), expression=exp.cast(exp.Literal.string(f"{nxt} 00:00:00"), "TIMESTAMP"))
    return exp.and_(ge, end)


def bounded(expr: exp.Expression, days: dict[str, tuple[Any, Any]],
            types: dict[str, str]) -> exp.Expression:
    """``expr`` with every date key column in ``days`` read as NULL outside its days: what the
    exact query groups by (a row outside the range joins no released group, and no extreme date
    reaches a date function or a client)."""

    def read(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name in days:
            cond = range_condition(node.name, days[node.name], types[node.name])
            return exp.Case(ifs=[exp.If(this=cond, true=node.copy())])
        return node

    return expr.copy().transform(read)
