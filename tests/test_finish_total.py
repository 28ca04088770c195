"""A charged query always returns its rows, and what fails whatever the rows fails for free.

Issue 29, finding 12: ``COUNT(*) * 9223372036854775807``, ``// 0`` and ``% 0`` failed in the
finish stage after the charge, as DP900 quoting the noisy value. The finish SQL now runs every
operation that may raise inside TRY() (dpsql/sql/finish_forms.py) and the finisher's message is
fixed text. Finding 13: ``GROUP BY strftime(opened, '%s')`` failed in the finisher's image of the
public keyset as DP900; an unknown specifier is refused at planning (DP123) and an expression
that fails over public values is a free DP120."""

from __future__ import annotations

import string

import duckdb
import pytest

from dpsql.backends.duckdb_local import DuckDBFinisher
from dpsql.errors import DpsqlError, DpsqlInternalError
from dpsql.sql.validate import bad_time_format

STATES = 51  # the demo's public keyset of state


def charges(con) -> int:
    return len(con.session.ledger.charges)


def test_overflow_after_the_charge_is_null(con):
    rows = con.cursor().execute("SELECT COUNT(*) * 9223372036854775807 AS x, COUNT(*) AS n FROM establishments").fetchall()
    assert len(rows) == 1 and rows[0][0] is None and rows[0][1] > 0
    assert charges(con) == 1


def test_division_and_modulo_by_zero_are_null(con):
    rows = con.cursor().execute("SELECT state, COUNT(*) // 0 AS a, SUM(payann) % 0 AS b, COUNT(*) AS n "
                                "FROM establishments GROUP BY state ORDER BY a, state").fetchall()
    assert len(rows) == STATES
    assert all(a is None and b is None for _, a, b, _ in rows)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)  # NULLs tie: ordered by state
    assert charges(con) == 1


def test_an_error_is_null_where_it_happens(con):
    """``NULL OR TRUE`` is TRUE: a failed operation inside HAVING does not drop the whole condition."""
    rows = con.cursor().execute("SELECT state, COUNT(*) AS n FROM establishments GROUP BY state "
                                "HAVING COUNT(*) % 0 > 1 OR COUNT(*) > -1000000").fetchall()
    assert len(rows) == STATES


def test_the_finishers_message_quotes_no_value():
    finisher = DuckDBFinisher()
    try:
        with pytest.raises(DpsqlInternalError) as err:
            finisher.run({"__p0": [123457], "__row": [0]}, 'SELECT "__p0" * 9223372036854775807 FROM __noisy')
    finally:
        finisher.close()
    assert "123457" not in str(err.value) and "9223372036854775807" not in str(err.value)


@pytest.mark.parametrize("fmt", ["%s", "%Q", "%Y-%", "%-Y"])
def test_an_unknown_strftime_specifier_is_refused_for_free(con, fmt):
    with pytest.raises(DpsqlError) as err:
        con.cursor().execute(f"SELECT strftime(opened, '{fmt}') AS s, COUNT(*) FROM establishments GROUP BY 1")
    assert err.value.code == "DP123"
    assert charges(con) == 0


def test_a_key_expression_failing_over_public_values_is_a_free_refusal(con):
    with pytest.raises(DpsqlError) as err:
        con.cursor().execute("SELECT strftime(opened, naics2) AS s, COUNT(*) FROM establishments GROUP BY 1")
    assert err.value.code == "DP120"
    assert charges(con) == 0


def test_the_specifier_check_agrees_with_duckdb():
    """The oracle is DuckDB itself: a format is refused exactly when DuckDB's strftime and
    strptime fail to bind it."""
    raw = duckdb.connect()
    formats = [f"%{p}{c}" for c in string.ascii_letters + "%" for p in ("", "-")] + ["%", "x%", "%Y%m%d", "%%%"]
    for fmt in formats:
        try:
            raw.execute(f"SELECT strftime(TIMESTAMP '2020-03-04 05:06:07', '{fmt}'), try_strptime('2020', '{fmt}')")
            duckdb_ok = True
        except duckdb.Error:
            duckdb_ok = False
        assert (bad_time_format(fmt) is None) == duckdb_ok, fmt


@pytest.mark.parametrize("sql, code", [
    ("SELECT state, COUNT(*) AS n FROM establishments GROUP BY state HAVING COUNT(*) > 'abc'", "DP120"),
    ("SELECT state, COUNT(*) > 'abc' FROM establishments GROUP BY state HAVING AVG(payann) > 3", "DP120"),
    ("SELECT state, LOWER(COUNT(*)) FROM establishments GROUP BY state ORDER BY 2", "DP120"),
])
def test_a_finish_that_fails_whatever_the_values_is_refused_before_the_charge(con, sql, code):
    """``HAVING COUNT(*) > 'abc'`` failed in the finish after the charge (DP900, no rows); it fails
    for every noisy value, so it is a phase-1 refusal, free — even when a filter would have kept
    the row that fails from being read in the check (the filter is evaluated as a column)."""
    with pytest.raises(DpsqlError) as err:
        con.cursor().execute(sql)
    assert err.value.code == code
    assert charges(con) == 0


def test_every_accepted_corpus_query_passes_the_finish_check(corpus_cases, con):
    """No false refusal: the check runs the finish as it will run (TRY'd) on one row."""
    for case in corpus_cases:
        con.session.decide(case.sql)  # raises on a refusal


@pytest.fixture(scope="module")
def corpus_cases():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grammar_tests"))
    from corpus import load_cases

    return [c for c in load_cases() if c.expected is not None and c.meta.get("public") != "true"]
