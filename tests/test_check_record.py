"""The empty-twin check is remembered across processes (dpsql/records/check.py): a pass is
recorded under a key of the analyst, the policy, the schema's DDL, DuckDB's version and the SQL;
a later session in the same context does not check again (and builds no twin); anything else in
the key changed checks again; a refusal is never recorded; and a forged pass costs budget, not
privacy: the error is then charged and reported with fixed text."""

from __future__ import annotations

import duckdb
import pytest

import dpsql
from dpsql.records import check as check_record
from dpsql.errors import DpsqlError, QueryFailed
from tests.test_unit_record import POLICY, calls_of, files  # noqa: F401 - files: the people database fixture

QUERY = "SELECT region, COUNT(*), SUM(income) FROM people GROUP BY region"
#: binds on no schema (a text function of a number): refused on the twin, DP120
UNBOUND = "SELECT region, COUNT(*) FROM people WHERE LENGTH(income) > 1 GROUP BY region"


def _checks(con, monkeypatch) -> list[str]:
    return calls_of(con.session.engine, "check", monkeypatch)


def _run(files, monkeypatch, sql=QUERY, analyst=None):
    """Answer ``sql`` on a new connection; the engine checks it made."""
    with dpsql.connect(*files, analyst=analyst) as con:
        checks = _checks(con, monkeypatch)
        con.execute(sql)
        twin_built = con.session.engine._twin is not None
    return checks, twin_built


def test_a_pass_is_recorded_and_not_checked_again(files, monkeypatch):
    checks, built = _run(files, monkeypatch)
    assert len(checks) == 1 and built
    assert len(check_record.RECORDS._load(check_record.RECORDS.path)) == 1
    checks, built = _run(files, monkeypatch)
    assert checks == [] and not built  # the new session found the pass: no twin at all


def test_another_analyst_checks_again(files, monkeypatch):
    _run(files, monkeypatch, analyst="ann")
    checks, _ = _run(files, monkeypatch, analyst="bob")
    assert len(checks) == 1  # a shared key would tell bob, by timing, what ann had asked


def test_a_changed_schema_checks_again(files, monkeypatch):
    _run(files, monkeypatch)
    with duckdb.connect(str(files[0])) as con:
        con.execute("ALTER TABLE people ADD COLUMN note VARCHAR")
    checks, _ = _run(files, monkeypatch)
    assert len(checks) == 1


def test_an_edited_policy_checks_again(files, monkeypatch):
    _run(files, monkeypatch)
    files[1].write_text(POLICY.replace("threshold = 100", "threshold = 50"))
    checks, _ = _run(files, monkeypatch)
    assert len(checks) == 1


def test_a_refusal_is_never_recorded(files, monkeypatch):
    for _ in range(2):
        with dpsql.connect(*files) as con:
            with pytest.raises(DpsqlError) as err:
                con.execute(UNBOUND)
            assert err.value.code == "DP120" and con.session.ledger.spent == 0
    assert not check_record.RECORDS.path.exists()


def test_a_forged_pass_costs_budget_not_privacy(files, monkeypatch):
    """Whoever can write dpsql's folder can add a key; the query the twin would have refused
    then fails while the rows are read: charged, and reported with fixed text only."""
    with dpsql.connect(*files) as con:
        session = con.session
        _, query = session._planned(UNBOUND, None)
        check_record.RECORDS.add(check_record.key(session._plan_context, session.engine.check_identity, query))
        with pytest.raises(QueryFailed) as err:
            con.execute(UNBOUND)
        assert session.ledger.spent > 0
        assert "LENGTH" not in str(err.value) and "income" not in str(err.value)


def test_writers_at_once_leave_a_readable_record(files, monkeypatch):
    """Threads of one process (a wire server's connections) adding at once: the record stays
    whole JSON holding only keys that were added (some may be lost: a later process checks
    again), and no temporary file is left behind. (Each writer has its own temporary file; with
    one per process the race was still rare enough that this test passed on it too.)"""
    import json
    import threading

    keys = [[f"{i:064x}"] for i in range(64)]
    threads = [threading.Thread(target=check_record.RECORDS.add, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kept = json.loads(check_record.RECORDS.path.read_text())["records"]
    assert kept and all(k in keys for k in kept)
    assert not list(check_record.RECORDS.path.parent.glob(".*.tmp"))
