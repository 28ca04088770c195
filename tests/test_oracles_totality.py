"""``x IS <something>`` and the allow-list of total forms (dpsql/sql/totality.py), fed the extremes
of tests/test_totality.py (issue 35). Only ``IS [NOT] NULL`` of a total expression is total:
``s IS TRUE`` of a text column casts every row's text to BOOLEAN (and fails on 'abc'), ``bi IS 1``
or ``s IS 'x'`` compare through a per-row cast. For the class, not one line: every ``IS`` form
over every column type and right-hand side that the allow-list calls total must evaluate on the
extremes, and the forms that do fail there must not be called total. The oracle is DuckDB run on
the extremes, not the allow-list."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from dpsql.sql.totality import condition_total, expression_total
from tests.test_totality import SCHEMA, TYPES, extremes  # noqa: F401 - the fixture

RIGHT = ["NULL", "NOT NULL", "TRUE", "NOT TRUE", "FALSE", "NOT FALSE", "UNKNOWN", "NOT UNKNOWN", "1", "'x'",
         "1.5", "DATE '2020-01-01'"]


def _is_forms() -> list[str]:
    out = []
    for c in TYPES:
        for rhs in RIGHT:
            out.append(f"{c} IS {rhs}")
        out += [f"(LOWER({c}) IS TRUE)" if TYPES[c] == "VARCHAR" else f"(-{c}) IS TRUE", f"COALESCE({c}, {c}) IS FALSE",
                f"CAST({c} AS VARCHAR) IS TRUE", f"NOT ({c} IS TRUE)", f"{c} IS TRUE AND {c} IS NULL"]
    return out


def _parses(sql: str) -> bool:
    try:
        sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return False
    return True


FORMS = [s for s in _is_forms() if _parses(s)]


def _fails_bare(con: duckdb.DuckDBPyConnection, sql: str) -> bool:
    try:
        con.execute(f"SELECT {sql} FROM x").fetchall()
    except duckdb.Error:
        return True
    return False


def test_every_is_form_called_total_evaluates_on_the_extremes(extremes):  # noqa: F811
    failing_bare, called_total = [], 0
    for sql in FORMS:
        node = sqlglot.parse_one(sql, read="duckdb")
        total = condition_total(node, SCHEMA) or expression_total(node, SCHEMA)
        fails = _fails_bare(extremes, sqlglot.parse_one(sql, read="duckdb").sql("duckdb"))
        failing_bare += [sql] if fails else []
        called_total += total
        assert not (total and fails), f"the allow-list calls {sql!r} total, but DuckDB fails on the extremes"
    # the test can fail: some IS forms do fail bare, and some are (rightly) called total
    assert any("s IS TRUE" == s for s in failing_bare), failing_bare
    assert called_total >= len(TYPES), called_total


@pytest.mark.parametrize("sql", ["s IS TRUE", "s IS NOT TRUE", "s IS FALSE", "bi IS 1", "s IS 'x'", "dbl IS TRUE",
                                 "hi IS TRUE", "dt IS TRUE", "CAST(s AS VARCHAR) IS TRUE"])
def test_is_with_a_right_side_other_than_null_is_never_total(sql):
    node = sqlglot.parse_one(sql, read="duckdb")
    assert not condition_total(node, SCHEMA) and not expression_total(node, SCHEMA)


@pytest.mark.parametrize("sql", ["s IS NULL", "NOT bi IS NULL", "dt IS NULL", "COALESCE(s, 'x') IS NULL"])
def test_is_null_of_a_total_expression_is_total(sql):
    assert condition_total(sqlglot.parse_one(sql, read="duckdb"), SCHEMA)
