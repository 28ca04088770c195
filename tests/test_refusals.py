"""Refusals: stable codes, helpful text, never a value from the data, never a charge."""

from __future__ import annotations

import pytest

import dpsql
from dpsql.engine import Engine
from dpsql.errors import DpsqlError

CASES = [
    ("SELECT id, payann FROM establishments", "DP201"),
    ("SELECT * FROM establishments", "DP108"),
    ("SELECT firm_id, COUNT(*) FROM establishments GROUP BY firm_id", "DP206"),
    ("SELECT MAX(payann) FROM establishments", "DP109"),
    ("SELECT MEDIAN(payann) FROM establishments", "DP109"),
    ("SELECT STDDEV(payann) FROM establishments", "DP109"),
    ("SELECT SUM(firm_id) FROM establishments", "DP204"),
    ("SELECT SUM(payann * 2) FROM establishments", "DP204"),
    ("SELECT SUM(DISTINCT payann) FROM establishments", "DP116"),
    ("SELECT COUNT(DISTINCT naics) FROM establishments", "DP116"),
    ("SELECT COUNT(*) FROM nope", "DP202"),
    ("SELECT COUNT(*) FROM _dpsql_demo_meta", "DP202"),
    ("SELECT SUM(nope) FROM establishments", "DP203"),
    ("SELECT COUNT(*) FROM establishments WHERE nope = 1", "DP203"),
    ("SELECT COUNT(*) FROM establishments; SELECT 1", "DP101"),
    ("", "DP101"),
    ("SELEC COUNT(*) FROM establishments", "DP100"),
    ("SELECT COUNT(*) FROM establishments UNION SELECT COUNT(*) FROM devices", "DP103"),
    ("DROP TABLE establishments", "DP102"),
    ("INSERT INTO establishments VALUES (1)", "DP102"),
    ("COPY establishments TO '/tmp/x.csv'", "DP102"),
    ("ATTACH '/tmp/x.db'", "DP102"),
    ("INSTALL httpfs", "DP102"),
    ("PRAGMA version", "DP102"),
    ("SET threads = 1", "DP102"),
    ("SELECT COUNT(*) FROM read_csv('/etc/passwd')", "DP107"),
    ("SELECT COUNT(*) FROM '/etc/passwd'", "DP107"),
    ("SELECT COUNT(*) FROM glob('*')", "DP107"),
    ("SELECT COUNT(*) FROM establishments e JOIN devices d ON e.id = d.user_id", "DP105"),
    ("SELECT COUNT(*) FROM (SELECT state, COUNT(*) FROM establishments GROUP BY state)", "DP104"),
    ("WITH x AS (SELECT payann * 2 AS p FROM establishments) SELECT SUM(p) FROM x", "DP104"),
    ("SELECT COUNT(*) FROM establishments WHERE payann > (SELECT 1)", "DP104"),
    ("SELECT SUM(payann) OVER () FROM establishments", "DP106"),
    ("SELECT COUNT(*) FROM establishments WHERE my_udf(state)", "DP110"),
    ("SELECT COUNT(*) FROM establishments WHERE SUM(payann) > 1", "DP112"),
    ("SELECT state FROM establishments GROUP BY state", "DP201"),
    ("SELECT state, COUNT(*) FROM establishments", "DP201"),
    ("SELECT COUNT(*) FROM establishments GROUP BY 5", "DP114"),
    ("SELECT COUNT(*) FROM establishments WHERE state = ?", "DP118"),
]


@pytest.mark.parametrize("sql, code", CASES)
def test_refused_with_stable_code(con, sql, code):
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code == code, str(err.value)
    assert isinstance(err.value, (dpsql.ProgrammingError, dpsql.NotSupportedError))
    assert con.session.ledger.spent == 0


def test_refusal_points_at_line_and_column(con):
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT naics2,\n       MAX(payann)\nFROM establishments GROUP BY naics2")
    assert (err.value.line, err.value.column) == (2, 8)
    assert err.value.hint


def test_refusals_never_quote_data(con, session):
    """A cast that fails on some row must not fail the query (that would leak the row) nor
    quote it: casts become TRY_CAST and the WHERE runs inside TRY()."""
    cur = con.execute("SELECT COUNT(*) FROM establishments WHERE CAST(state AS INTEGER) = 5")
    assert cur.fetchone() is not None
    cur = con.execute("SELECT COUNT(*) AS n FROM establishments WHERE state = 5")  # compares after a failing cast
    assert cur.fetchone() is not None
    states = {r[0] for r in session.engine.run("SELECT DISTINCT state FROM establishments")}
    for sql in ["SELECT COUNT(*) FROM establishments WHERE state + 1 > 0",
                "SELECT COUNT(*) FROM establishments WHERE naics2 LIKE 5"]:
        try:
            con.execute(sql)
        except DpsqlError as exc:
            assert not any(f"'{s}'" in str(exc) for s in states), str(exc)


def test_engine_lockdown_holds_even_if_validation_were_bypassed(demo):
    """Defence in depth: the engine's connection cannot read files or reconfigure itself."""
    engine = Engine(demo[0])
    try:
        for sql in ["SELECT * FROM read_csv('/etc/passwd')", "COPY establishments TO '/tmp/dpsql_leak.csv'",
                    "ATTACH '/tmp/dpsql_leak.db'", "SET enable_external_access = true", "INSTALL httpfs",
                    "CREATE TABLE x AS SELECT 1"]:
            with pytest.raises(DpsqlError) as err:
                engine.run(sql)
            assert err.value.code == "DP120"
    finally:
        engine.close()


def test_too_many_groups_is_refused_before_any_charge(con, monkeypatch):
    """DP207 depends only on the policy's keysets (and the released private groups), never on
    which public keys occur in the data."""
    import dpsql.session

    monkeypatch.setattr(dpsql.session, "MAX_CELLS", 10)
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state")
    assert err.value.code == "DP207"
    assert con.session.ledger.spent == 0


@pytest.mark.parametrize("sql, code, line, column", [
    ("EXPORT DATABASE 'dump'", "DP102", 1, 1),
    ("  -- a comment\n  LOAD httpfs", "DP102", 2, 3),
    ("SELECT *\nFROM 'file.csv'", "DP107", 2, 6),
    ("SELECT COUNT(*) FROM establishments\nGROUP BY ALL", "DP114", 2, 1),
    ("SELECT COUNT(*)\nFROM establishments WHERE EXISTS (SELECT 1)", "DP104", 2, 27),
    ("SELECT COUNT(*) FROM establishments WHERE state = ?", "DP118", 1, 51),
    ("SELECT COUNT(*) FROM establishments\nWHERE naics2 = '11' AND state = $1", "DP118", 2, 33),
    ("SELECT COUNT(*) FROM establishments WHERE state = :st", "DP118", 1, 51),
    ("SELECT COUNT(*) FROM establishments e\n  RIGHT JOIN states s ON e.state = s.code", "DP105", 2, 3),
    ("SELECT s.name, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code\nGROUP BY s.region",
     "DP201", 1, 8),
    ("SELECT COUNT(*) FROM establishments GROUP BY\n  payann > 10", "DP206", 2, 3),
])
def test_precise_refusals_point_at_the_statement(con, sql, code, line, column):
    # (a numbered parameter is refused even with values: $1 / :name would bind by position, not by name)
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert (err.value.code, err.value.line, err.value.column) == (code, line, column), str(err.value)
    assert err.value.hint


def test_numbered_parameters_are_refused_even_with_values(con):
    """``$2 ... $1`` bound in order of appearance would silently swap the values."""
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT COUNT(*) FROM establishments WHERE state = $2 AND naics2 = $1", ["11", "CA"])
    assert err.value.code == "DP118" and "qmark" in err.value.hint
    assert con.session.ledger.spent == 0
