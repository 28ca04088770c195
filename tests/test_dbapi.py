"""The PEP 249 surface."""

from __future__ import annotations

import pytest

import dpsql


def test_module_globals_and_exception_tree():
    assert dpsql.apilevel == "2.0" and dpsql.threadsafety == 1 and dpsql.paramstyle == "qmark"
    for name in ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
                 "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"]:
        assert issubclass(getattr(dpsql, name), Exception)
    assert issubclass(dpsql.BudgetExceededError, dpsql.OperationalError)
    assert issubclass(dpsql.QueryRefused, dpsql.ProgrammingError)
    assert issubclass(dpsql.ProgrammingError, dpsql.DatabaseError) and issubclass(dpsql.DatabaseError, dpsql.Error)


def test_connect_without_arguments_opens_the_demo(demo):
    with dpsql.connect() as con:
        assert con.session.database == demo[0]
        rows = con.cursor().execute("SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2").fetchall()
        assert len(rows) == 24


def test_cursor_protocol(con):
    cur = con.cursor()
    assert cur.description is None and cur.rowcount == -1 and cur.receipt is None
    cur.execute("SELECT state, COUNT(*) AS n, AVG(payann) AS avg_pay FROM establishments GROUP BY state")
    assert [d[0] for d in cur.description] == ["state", "n", "avg_pay"]
    assert cur.description[0][1] == dpsql.STRING and cur.description[1][1] == dpsql.NUMBER
    assert all(len(d) == 7 for d in cur.description)
    assert cur.rowcount == 51
    first = cur.fetchone()
    assert first[0] == "AK"
    assert len(cur.fetchmany(10)) == 10
    assert len(cur.fetchmany()) == 1
    assert len(cur.fetchall()) == 39
    assert cur.fetchone() is None and cur.fetchall() == []
    assert cur.receipt.rho == con.session.rho
    cur.close()
    with pytest.raises(dpsql.InterfaceError):
        cur.fetchall()


def test_iteration_and_parameters(con):
    cur = con.cursor()
    cur.execute("SELECT naics2, SUM(payann) FROM establishments WHERE state = ? AND employees > ? GROUP BY naics2", ["CA", 5])
    assert len(list(cur)) == 24
    with pytest.raises(dpsql.ProgrammingError):
        cur.execute("SELECT COUNT(*) FROM establishments WHERE state = ?", ["CA", 1])


def test_explain_touches_nothing(con):
    ex = con.explain("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2")
    assert "SUM(\"payann\")" in ex.exact_sql and "UNNEST(RANGE(" in ex.reference_sql
    assert con.session.ledger.spent == 0


def test_closed_connection(demo):
    con = dpsql.connect(*demo)
    con.close()
    with pytest.raises(dpsql.InterfaceError):
        con.cursor().execute("SELECT COUNT(*) FROM establishments")
    con.close()  # closing twice is harmless


def test_rollback_not_supported_and_commit_is_noop(con):
    con.commit()
    with pytest.raises(dpsql.NotSupportedError):
        con.rollback()


def test_bad_rho(demo):
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.connect(*demo, rho="-1")
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.connect(*demo, rho=float("nan"))


def test_missing_database_and_policy(tmp_path, demo):
    with pytest.raises(dpsql.OperationalError, match="does not exist"):
        dpsql.connect(tmp_path / "none.duckdb", demo[1])
    other = tmp_path / "copy.duckdb"
    other.write_bytes(demo[0].read_bytes())
    with pytest.raises(dpsql.OperationalError, match="no policy given"):
        dpsql.connect(other)
