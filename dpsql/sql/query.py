"""From SQL text to a plan: parse, bind ``?`` parameters, inline, validate, plan.

The front of the pipeline as one call (:func:`plan_query`), used by the session (phase 1, and
EXPLAIN). Public information only: the text, the parameters, the policy and the schema.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.policy import Policy
from dpsql.sql.parse import parameter_position, parse
from dpsql.sql.inline import inline_derived_tables
from dpsql.sql.plan import Plan
from dpsql.sql.planner import build_plan
from dpsql.sql.validate import check_statement


def plan_query(sql: str, parameters: Any, policy: Policy, schema: dict[str, dict[str, str]],
               not_null: dict[str, set[str]]) -> Plan:
    """The plan of one statement, or the refusal (a :class:`QueryRefused` with its code)."""
    tree = parse(sql)
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
    select = check_statement(inline_derived_tables(tree, sql), sql)
    return build_plan(select, sql, policy, schema, not_null)


def bind_parameters(tree: exp.Expression, parameters: Any) -> exp.Expression:
    """Replace ``?`` placeholders (paramstyle ``qmark``) by literals, in order."""
    values = list(parameters)
    placeholders = list(tree.find_all(exp.Placeholder))
    if len(placeholders) != len(values):
        raise QueryRefused(f"the query has {len(placeholders)} parameter(s) but {len(values)} value(s) were given",
                           code="DP118")
    for node, value in zip(placeholders, values):
        if value is None:
            lit: exp.Expression = exp.Null()
        elif isinstance(value, bool):
            lit = exp.Boolean(this=value)
        elif isinstance(value, (int, float)):
            lit = exp.Literal.number(value)
        elif isinstance(value, str):
            lit = exp.Literal.string(value)
        else:
            raise QueryRefused(f"parameter values must be numbers, strings or None, got {type(value).__name__}", code="DP118")
        node.replace(lit)
    return tree
