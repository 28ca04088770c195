"""From SQL text to a plan: parse, bind ``?`` parameters, inline, validate, plan.

The front of the pipeline as one call (:func:`plan_query`), used by the session (phase 1, and
EXPLAIN). Public information only: the text, the parameters, the policy and the schema.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.policy.model import Policy
from dpsql.sql.parse import parameter_position, parse
from dpsql.sql.spellings import any_as_in, fetch_as_limit, square_as_power, top_as_limit, width_bucket_as_case
from dpsql.sql.pg_dates import postgres_date_literals
from dpsql.sql.inline import inline_derived_tables
from dpsql.sql.plan import Plan
from dpsql.sql.planner import build_plan
from dpsql.sql.samples_pane import check_samples_count
from dpsql.sql.spread import std_aliases
from dpsql.sql.validate import check_statement


def plan_query(sql: str, parameters: Any, policy: Policy, schema: dict[str, dict[str, str]],
               not_null: dict[str, set[str]]) -> Plan:
    """The plan of one statement, or the refusal (a :class:`QueryRefused` with its code)."""
    sql, top = top_as_limit(sql)
    tree = fetch_as_limit(parse(sql), top, sql)
    placeholders = list(tree.find_all(exp.Placeholder))
    if any(p.this is not None for p in placeholders):
        # $1 / :name would bind in order of appearance, not by number or name: refuse them.
        line, column = parameter_position(sql)
        raise QueryRefused("numbered or named parameters ($1, :name) are not supported", code="DP118",
                           line=line, column=column,
                           hint="dpsql's paramstyle is qmark: write ? for each value and pass the values in order.")
    if parameters is not None:
        tree = bind_parameters(tree, parameters)
    elif placeholders:
        line, column = parameter_position(sql)
        raise QueryRefused("the query has ? parameters but no values were given", code="DP118", line=line, column=column,
                           hint="pass the values with the query (cursor.execute(sql, [value, ...])) or write literals.")
    select = check_statement(inline_derived_tables(std_aliases(postgres_date_literals(width_bucket_as_case(square_as_power(any_as_in(tree))))), sql), sql)
    plan = build_plan(select, sql, policy, schema, not_null)
    check_samples_count(select, sql)  # after the plan: an unknown table or column is refused as such first
    return plan


def bind_parameters(tree: exp.Expression, parameters: Any) -> exp.Expression:
    """Replace ``?`` placeholders (paramstyle ``qmark``) by literals, in order."""
    values = list(parameters)
    # Depth first, in the order of the text (a breadth-first walk, find_all's default, bound
    # `a > ? AND b > ? AND c > ?` as c, a, b: the shallowest marker first).
    placeholders = list(tree.find_all(exp.Placeholder, bfs=False))
    if len(placeholders) != len(values):
        raise QueryRefused(f"the query has {len(placeholders)} parameter(s) but {len(values)} value(s) were given",
                           code="DP118")
    for node, value in zip(placeholders, values):
        node.replace(literal(value))
    return tree


def literal(value: Any) -> exp.Expression:
    """The SQL literal of one parameter value: None, bool, int, float, Decimal, str, and PEP
    249's Date / Time / Timestamp (``datetime``) and Binary (``bytes``) as typed literals; a list
    or tuple of those as an ARRAY (for ``= ANY(?)``: :func:`any_as_in`)."""
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (list, tuple)) for v in value):
            raise QueryRefused("a parameter value may be a list of values, not a list of lists", code="DP118")
        return exp.Array(expressions=[literal(v) for v in value])
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, Decimal)):
        if isinstance(value, (float, Decimal)) and not math.isfinite(value):
            raise QueryRefused(f"the parameter value {value} is not a finite number", code="DP118")
        return exp.Literal.number(str(value) if isinstance(value, Decimal) else value)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime.datetime):  # before date: a datetime is a date
        return _typed(value.isoformat(sep=" "), "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP")
    if isinstance(value, datetime.date):
        return _typed(value.isoformat(), "DATE")
    if isinstance(value, datetime.time):
        return _typed(value.isoformat(), "TIMETZ" if value.tzinfo is not None else "TIME")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _typed("".join(f"\\x{b:02X}" for b in bytes(value)), "BLOB")
    raise QueryRefused("parameter values must be numbers, strings, dates, times, timestamps, bytes, None or a list of those, "
                       f"got {type(value).__name__}", code="DP118")


def _typed(text: str, type_name: str) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(type_name, dialect="duckdb"))
