"""Limits on the size of a query (dpsql/parse.py, docs/sql.md "Limits"), proved from both sides.

A query past a limit is refused with DP121 — never a RecursionError, which 45 nested parentheses
or 3,000 ORs used to raise through the DB-API. A query at a limit is answered end to end through
``dpsql.connect()``, with 250 extra frames on the caller's stack: so the limits, and nothing
later in the pipeline, are what stops such queries.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import dpsql
from dpsql.errors import ProgrammingError, QueryRefused
from dpsql.sql.parse import MAX_CHAIN, MAX_NESTING, MAX_SQL_LENGTH, MAX_TREE_DEPTH, complexity, parse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "grammar_tests"))
from corpus import load_cases  # noqa: E402 - grammar_tests/corpus.py

#: Frames a caller may already use below dpsql (pytest ≈ 35, pandas.read_sql over SQLAlchemy ≈ 45).
CALLER_FRAMES = 250

CA = "state = 'CA'"


def ors(n: int, term: str = CA) -> str:
    return " OR ".join([term] * n)


def deep(frames: int, fn):
    """``fn()`` called ``frames`` frames further down the stack."""
    return fn() if frames == 0 else deep(frames - 1, fn)


def run(con, sql: str) -> list[tuple]:
    cur = con.cursor()
    deep(CALLER_FRAMES, lambda: cur.execute(sql))
    return cur.fetchall()


# Each limit: (query at the limit, the same query one step past it). The query at the limit is
# answered; the one past it is refused with DP121 naming the limit.
NESTED = "SELECT COUNT(*) AS n FROM establishments WHERE {}"
AT_AND_PAST = {
    "OR chain": (
        lambda n: f"SELECT state, COUNT(*) AS n FROM establishments WHERE {ors(n)} GROUP BY state",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "parenthesised OR terms": (
        lambda n: f"SELECT state, COUNT(*) AS n FROM establishments WHERE {ors(n, f'({CA})')} GROUP BY state",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "arithmetic on aggregates": (
        lambda n: "SELECT " + " + ".join(["SUM(payann)"] * (n + 1)) + " AS n FROM establishments",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "|| in a GROUP BY key": (
        lambda n: "SELECT " + " || ".join(["state"] * (n + 1)) + " AS k, COUNT(*) AS n FROM establishments GROUP BY k",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "unary minus": (
        lambda n: "SELECT COUNT(*) AS n FROM establishments WHERE payann > " + "- " * (n - 1) + "1",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "parentheses": (
        lambda n: NESTED.format("(" * n + CA + ")" * n),
        MAX_NESTING, "nest more than the limit of 24 levels"),
    "functions": (
        lambda n: NESTED.format("LOWER(" * n + "state" + ")" * n + " = 'ca'"),
        MAX_NESTING, "nest more than the limit of 24 levels"),
    "CASE": (
        lambda n: "SELECT " + f"CASE WHEN {CA} THEN " * n + "state" + " ELSE 'x' END" * n
                  + " AS k, COUNT(*) AS n FROM establishments GROUP BY k",
        MAX_NESTING, "nest more than the limit of 24 levels"),
    "NOT": (
        lambda n: NESTED.format("NOT " * n + CA),
        MAX_NESTING, "nest more than the limit of 24 levels"),
    "casts": (
        lambda n: NESTED.format("state" + "::VARCHAR" * n + " = 'CA'"),
        MAX_NESTING, "nest more than the limit of 24 levels"),
    "both at once": (
        lambda n: f"SELECT state, COUNT(*) AS n FROM establishments WHERE "
                  + "".join(f"{CA} OR (" for _ in range(MAX_NESTING)) + ors(n - MAX_NESTING) + ")" * MAX_NESTING
                  + " GROUP BY state",
        MAX_CHAIN, "chains more than the limit of 200 operators"),
    "text length": (
        lambda n: (lambda head: head + "x" * (n - len(head) - 1) + "'")(
            "SELECT COUNT(*) AS n FROM establishments WHERE state IN ("
            + ", ".join(f"'S{i:03d}'" for i in range(500)) + f") OR {CA} OR state = '"),
        MAX_SQL_LENGTH, "more than the limit of 100,000"),
}


@pytest.mark.parametrize("name", list(AT_AND_PAST))
def test_a_query_at_the_limit_is_answered(con, name):
    make, limit, _ = AT_AND_PAST[name]
    rows = run(con, make(limit))
    assert rows and all(isinstance(v, (int, float, str)) for row in rows for v in row)


@pytest.mark.parametrize("name", list(AT_AND_PAST))
def test_a_query_past_the_limit_is_refused(con, name):
    make, limit, says = AT_AND_PAST[name]
    with pytest.raises(ProgrammingError) as err:  # a DB-API error, never a RecursionError
        run(con, make(limit + 1))
    assert err.value.code == "DP121" and says in err.value.message and err.value.hint
    assert con.session.ledger.spent == 0


@pytest.mark.parametrize("sql", [
    NESTED.format("(" * 45 + CA + ")" * 45),  # once: RecursionError in sqlglot's parser
    f"SELECT state, COUNT(*) FROM establishments WHERE {ors(3000)} GROUP BY state",  # once: in the rewrite
    NESTED.format("NOT " * 200 + CA),
    NESTED.format("LOWER(" * 1000 + "state" + ")" * 1000 + " = 'ca'"),
    "SELECT " + "[" * 5000 + "]" * 5000,
    "SELECT COUNT(*) FROM establishments WHERE " + "(" * 20000,  # unbalanced as well
], ids=["45 parentheses", "3000 ORs", "200 NOTs", "1000 functions", "5000 brackets", "20000 open parentheses"])
def test_queries_that_raised_recursion_errors_are_refused(con, sql):
    with pytest.raises(QueryRefused) as err:
        con.cursor().execute(sql)
    assert err.value.code == "DP121"


def test_the_refusal_points_at_the_token_past_the_limit():
    sql = "SELECT COUNT(*) FROM establishments\nWHERE " + "(" * 30 + CA + ")" * 30
    with pytest.raises(QueryRefused) as err:
        parse(sql)
    assert (err.value.line, err.value.column) == (2, 7 + MAX_NESTING)  # the 25th "("
    assert "parentheses" in err.value.hint


def test_a_chain_past_the_limit_suggests_in():
    with pytest.raises(QueryRefused) as err:
        parse(f"SELECT COUNT(*) FROM establishments WHERE {ors(MAX_CHAIN + 1)}")
    assert "IN (" in err.value.hint and err.value.line == 1


def test_the_tree_depth_backstop():
    """AT TIME ZONE chains add tree levels that no token count sees: the parsed depth catches them."""
    sql = NESTED.format("payann" + " AT TIME ZONE 'UTC'" * MAX_TREE_DEPTH + " IS NULL")
    assert complexity(sql) == (1, 1)
    with pytest.raises(QueryRefused) as err:
        parse(sql)
    assert err.value.code == "DP121" and f"limit of {MAX_TREE_DEPTH}" in err.value.message


def test_a_recursion_error_while_parsing_is_refused():
    """Whatever still overflows Python's stack in the parser (here: a caller that already used
    most of it) is refused the same way."""
    sql = NESTED.format("(" * MAX_NESTING + CA + ")" * MAX_NESTING)
    with pytest.raises(QueryRefused) as err:
        deep(sys.getrecursionlimit() - 200, lambda: parse(sql))
    assert err.value.code == "DP121" and "too deeply for the parser" in err.value.message


# --------------------------------------------------------------------------- the measure


@pytest.mark.parametrize("sql, nesting, chain", [
    ("SELECT 1", 0, 0),
    ("SELECT a FROM t WHERE a = 1 OR a = 2 OR a = 3", 0, 3),  # ORs are the spine: one level each
    ("SELECT a FROM t WHERE (a = 1 OR a = 2) AND b = 3", 1, 3),
    ("SELECT a FROM t WHERE a IN (1, 2, 3, 4, 5, 6, 7, 8, 9)", 1, 1),  # a list is one operator
    ("SELECT a + b, c + d, e + f FROM t", 0, 1),  # commas start new chains
    ("SELECT a + b FROM t WHERE c + d > 1 GROUP BY e + f", 0, 2),  # so do clauses
    ("SELECT CASE WHEN a = 1 THEN b WHEN a = 2 THEN c ELSE d + e END FROM t", 1, 1),  # and WHEN / THEN
    ("SELECT NOT NOT a FROM t", 2, 2),  # a prefix NOT nests what follows
    ("SELECT a FROM t WHERE NOT a AND NOT b AND NOT c", 1, 3),  # ... until the next AND / OR
    ("SELECT a FROM t WHERE a IS NOT NULL", 0, 2),  # IS NOT is one operator, not a nesting NOT
    ("SELECT a::INT::TEXT FROM t", 2, 2),  # casts nest
    ("SELECT COUNT(*) FROM t", 1, 1),
    ("SELECT LOWER(UPPER(TRIM(a))) FROM t", 3, 0),
    ("SELECT a FROM t WHERE (a = 1 OR a = 2 OR a = 3) OR b = 1", 1, 4),  # inner chain + outer spine
])
def test_complexity(sql, nesting, chain):
    assert complexity(sql) == (nesting, chain)


def test_the_corpus_is_far_from_the_limits():
    """What people write: every corpus query (but those written to pass the limits) uses at most
    a fifth of the nesting and a twentieth of the chain allowed."""
    cases = [c for c in load_cases() if c.meta.get("error") != "DP121"]
    worst = [complexity(c.sql) for c in cases]
    assert max(n for n, _ in worst) <= MAX_NESTING // 5 and max(c for _, c in worst) <= MAX_CHAIN // 20
    assert max(len(c.sql) for c in cases) <= MAX_SQL_LENGTH // 100


def test_a_bi_style_query_is_far_from_the_limits():
    """The shape Tableau sends: quoted, qualified, parenthesised, CASE inside CAST inside SUM."""
    sql = ('SELECT "establishments"."state" AS "state", '
           'SUM(CAST((CASE WHEN (("establishments"."naics2" IN (\'72\', \'44\')) AND '
           '("establishments"."state" = \'CA\')) THEN 1 ELSE 0 END) AS BIGINT)) AS "cnt" '
           'FROM "main"."establishments" "establishments" '
           'WHERE ((("establishments"."state" >= \'A\') AND ("establishments"."state" <= \'Z\')) '
           'OR ("establishments"."state" IS NULL)) GROUP BY 1')
    nesting, chain = complexity(sql)
    assert nesting <= MAX_NESTING // 3 and chain <= MAX_CHAIN // 50
