"""A released answer is reused, not re-bought (issue 33; docs/privacy.md, "A released answer is
reused, not re-bought"): the same statement on the same data, policy and analyst returns the noisy
answer already released, charged nothing; anything that changes the release is charged.

The oracle for "charged" is the ledger itself (its charges, read through the ledger or its SQLite
file), never the receipt the code under test writes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.ledger import answers
from dpsql.ledger.book import Charge, Ledger
from dpsql.testing import seeded_random
from server_harness import policy_with_budget

REPO = Path(__file__).resolve().parents[1]
Q = "SELECT naics2, COUNT(*) AS n, SUM(payann) AS payroll FROM establishments GROUP BY naics2 ORDER BY naics2"


def _charges(c) -> int:
    return len(c.session.ledger.charges)


def test_same_statement_twice_is_one_charge_and_identical_rows(con):
    first = con.execute(Q)
    rows, first_id = first.fetchall(), first.receipt.charge_id
    assert _charges(con) == 1 and con.session.ledger.spent == Fraction(1, 10)
    again = con.execute(Q)
    assert again.fetchall() == rows
    assert _charges(con) == 1 and con.session.ledger.spent == Fraction(1, 10)  # nothing charged
    rc = again.receipt
    assert rc.rho == 0 and rc.charge_id is None and rc.reused["charge_id"] == first_id
    assert rc.reused["rho"] == "0.1" and rc.policy_terms == ()  # adds nothing to P(r)
    assert rc.notes[0].startswith("reused: released at ") and "charged 0 now (rho=0.1 when first released)" in rc.notes[0]
    assert rc.columns.keys() == first.receipt.columns.keys()  # the error bars of the release, kept


@pytest.mark.parametrize("sql", [
    "SELECT DATE_TRUNC('month', opened) AS month, COUNT(*) AS n FROM establishments GROUP BY 1 ORDER BY 1",  # datetimes
    "SELECT state, AVG(payann) AS avg_pay FROM establishments GROUP BY state ORDER BY state",  # floats
    "SELECT EXTRACT(hour FROM first_seen) AS h, COUNT(*) FROM devices GROUP BY 1 ORDER BY 1",
    "SELECT state, QUANTILE_CONT(payann, 0.5) AS median FROM establishments GROUP BY state ORDER BY state",
])
def test_values_come_back_exactly_as_released_with_their_types(con, sql):
    first = con.execute(sql)
    rows = first.fetchall()
    again = con.execute(sql)
    got = again.fetchall()
    assert again.receipt.rho == 0 and _charges(con) == 1
    assert got == rows and [tuple(map(type, r)) for r in got] == [tuple(map(type, r)) for r in rows]
    assert again.description == first.description


def test_a_new_connection_and_a_new_process_reuse_it(demo, tmp_path):
    """Durable beside the ledger: another process (a restart) gets the same rows, free."""
    script = ("import dpsql, sys, json\n"
              f"c = dpsql.connect({str(demo[0])!r}, {str(demo[1])!r})\n"
              f"print(json.dumps([list(map(str, r)) for r in c.execute({Q!r}).fetchall()]))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=True)
    import json
    released = json.loads(out.stdout)
    with dpsql.connect(*demo, _random_source=seeded_random(5)) as c:
        got = c.execute(Q)
        assert [list(map(str, r)) for r in got.fetchall()] == released
        assert got.receipt.rho == 0 and _charges(c) == 1


def test_a_different_statement_is_charged(con):
    con.execute(Q)
    con.execute(Q.replace("COUNT(*) AS n", "COUNT(*) AS m"))  # another column name: another answer
    assert _charges(con) == 2
    con.execute(Q.replace("GROUP BY", "WHERE employees > 5 GROUP BY"))  # another WHERE
    con.execute(Q.replace("naics2", "state"))  # another grouping
    con.execute(Q.replace("SUM(payann)", "SUM(employees)"))  # another aggregate
    con.execute(Q.replace("ORDER BY", "HAVING COUNT(*) > 100 ORDER BY"))  # another HAVING
    assert _charges(con) == 6  # (another LIMIT, OFFSET or ORDER BY is a page of one release: test_reuse_pages.py)


def test_same_plan_written_differently_is_reused(con):
    rows = con.execute(Q).fetchall()
    again = con.execute(Q.lower().replace("select", "SELECT\n  "))  # spelling, not meaning
    assert again.fetchall() == rows and _charges(con) == 1


def test_parameters_are_part_of_the_statement(con):
    sql = "SELECT COUNT(*) AS n FROM establishments WHERE employees > ?"
    five = con.execute(sql, (5,)).fetchall()
    con.execute(sql, (6,))
    assert _charges(con) == 2
    assert con.execute(sql, (5,)).fetchall() == five and _charges(con) == 2


def test_settings_that_change_the_release_are_charged(con):
    con.execute(Q)
    con.execute("SET dpsql.rho = 0.2")
    assert con.execute(Q).receipt.rho == Fraction(1, 5)
    assert [c.rho for c in con.session.ledger.charges] == [Fraction(1, 10), Fraction(1, 5)]


def test_error_columns_are_shown_from_the_release_free(con):
    rows = con.execute(Q).fetchall()
    con.execute("SET dpsql.error_columns = on")
    cur = con.execute(Q)
    shown = cur.fetchall()
    assert [d[0] for d in cur.description] == ["naics2", "n", "payroll", "n_moe95", "payroll_moe95"]
    assert [(r[0], r[1], r[2]) for r in shown] == rows and _charges(con) == 1


def test_another_analyst_is_charged(demo):
    with dpsql.connect(*demo, analyst="alice", _random_source=seeded_random(1)) as a, \
            dpsql.connect(*demo, analyst="bob", _random_source=seeded_random(2)) as b:
        alice = a.execute(Q).fetchall()
        got = b.execute(Q)
        assert got.receipt.rho == Fraction(1, 10) and got.receipt.reused is None
        assert got.fetchall() != alice  # bob's own release, fresh noise
        assert a.execute(Q).fetchall() == alice  # alice's is still hers, free
        assert b.execute(Q).receipt.rho == 0  # and bob's his
        assert [c.analyst for c in a.session.ledger.history()] == ["alice", "bob"]


def test_a_changed_policy_is_charged(demo):
    """The policy's digest is in the key: partition selection's ε lives only in the policy."""
    sql = "SELECT county, COUNT(*) AS n FROM establishments GROUP BY county"
    with dpsql.connect(*demo, _random_source=seeded_random(1)) as c:
        c.execute(sql)
        assert c.execute(sql).receipt.rho == 0
    demo[1].write_text(demo[1].read_text() + "\n[selection]\nepsilon = 0.4\n")
    with dpsql.connect(*demo, _random_source=seeded_random(2)) as c:
        cur = c.execute(sql)
        assert cur.receipt.reused is None and _charges(c) == 2


def test_a_stored_answer_is_found_only_through_the_analysts_own_charge(demo, tmp_path):
    """The ledger's guard: even under the same key, bob never gets an answer alice paid for."""
    path = tmp_path / "l.sqlite"
    alice, bob = Ledger(path, "alice", Fraction(1)), Ledger(path, "bob", Fraction(1))
    try:
        alice.charge(Charge(query="q", rho=Fraction(1, 10), mechanism="discrete_gaussian"),
                     answers.kept(alice, "k", lambda: '{"rows": []}'))
        assert answers.find(alice, "k") is not None and answers.find(alice, "k").rho == Fraction(1, 10)
        assert answers.find(bob, "k") is None
        assert answers.find(alice, "k", wanted=False) is None and answers.find(alice, None) is None
    finally:
        alice.close()
        bob.close()


def test_an_answer_the_store_refuses_leaves_its_charge_standing(demo):
    """The answer is written in its charge's transaction, in a SAVEPOINT (ledger/answers.py
    ``kept``): when SQLite refuses it (here a trigger the data owner's tools might have left),
    the answer is rolled back alone, the charge commits and the rows are shown; only the reuse
    is lost, so the statement is charged again."""
    other = "SELECT state, COUNT(*) AS n FROM establishments GROUP BY state ORDER BY state"
    with dpsql.connect(*demo, _random_source=seeded_random(5)) as c:
        c.execute(Q)  # the store made ready, one answer kept
        db = sqlite3.connect(c.session.ledger.path)
        db.execute("CREATE TRIGGER refuse_answers BEFORE INSERT ON answers BEGIN SELECT RAISE(ABORT, 'no'); END")
        db.commit()
        db.close()
        first = c.execute(other)
        assert first.fetchall() and first.receipt.charge_id is not None and _charges(c) == 2
        again = c.execute(other)
        assert again.receipt.reused is None and _charges(c) == 3  # not kept: charged again
        assert c.execute(Q).receipt.reused is not None  # the answer kept before is untouched
    db = sqlite3.connect(demo[1].parent / f"{demo[1].name.removesuffix('.toml')}.ledger.sqlite")
    try:
        assert [r[0] for r in db.execute("SELECT charge_id FROM answers")] == [1]
    finally:
        db.close()


def test_a_changed_data_file_is_charged(demo, tmp_path):
    db = tmp_path / "copy.duckdb"
    shutil.copyfile(demo[0], db)
    with dpsql.connect(db, demo[1], _random_source=seeded_random(1)) as c:
        c.execute(Q)
        c.execute(Q)
        assert _charges(c) == 1
    w = duckdb.connect(str(db))
    w.execute("CREATE TABLE unrelated (x INTEGER)")  # any write: the rows may have changed
    w.close()
    with dpsql.connect(db, demo[1], _random_source=seeded_random(2)) as c:
        assert c.execute(Q).receipt.rho == Fraction(1, 10) and _charges(c) == 2


def test_fresh_release_is_explicit_charged_and_new_noise(con):
    rows = con.execute(Q).fetchall()
    assert con.execute("SHOW dpsql.reuse").fetchall() == [("dpsql.reuse", "on")]
    con.execute("SET dpsql.reuse = off")
    fresh = con.execute(Q)
    fresh_rows = fresh.fetchall()
    assert fresh.receipt.rho == Fraction(1, 10) and fresh.receipt.reused is None and _charges(con) == 2
    assert fresh_rows != rows  # new noise
    con.execute("RESET dpsql.reuse")
    assert con.execute(Q).fetchall() == fresh_rows and _charges(con) == 2  # the newest release is reused


def test_reuse_survives_an_exhausted_budget(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", total_rho="0.1")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(1)) as c:
        rows = c.execute(Q).fetchall()
        assert c.session.ledger.remaining == 0
        assert c.execute(Q).fetchall() == rows  # free: post-processing of what was paid for
        with pytest.raises(dpsql.BudgetExceededError):
            c.execute("SELECT COUNT(*) FROM establishments")


def test_text_receipt_says_when_it_was_charged(con):
    from dpsql.intercept import execute
    from dpsql.pipeline.format import status

    con.execute(Q)
    text = status(execute(con.session, Q))
    assert "reused: released at " in text and "charged 0 now" in text and "nothing charged" not in text


def test_explain_says_whether_it_would_reuse(con):
    def plan_text() -> str:
        return "\n".join(r[0] for r in con.execute("EXPLAIN " + Q).fetchall())

    assert "reuse: not released before" in plan_text()
    charge_id = con.execute(Q).receipt.charge_id
    assert "reuse: would show the answer released at " in plan_text() and f"(charge {charge_id})" in plan_text()
    con.execute("SET dpsql.reuse = off")
    assert "reuse: not released before (or reuse is off)" in plan_text()
    assert _charges(con) == 1  # EXPLAIN charged nothing


# ---------------------------------------------------------------------------- real clients, real server
def test_psql_watch_is_one_charge(dpsql_server):
    """psql's \\watch repeats the statement until interrupted: one charge, the same rows each time."""
    srv = dpsql_server
    srv.add_user("watcher", cli=False)
    before = len(srv.charges("watcher"))
    out = srv.workdir / "watch.out"
    env = {**os.environ, "PGSSLMODE": "disable"}
    with open(out, "w") as fh:
        proc = subprocess.Popen(["psql", srv.dsn("watcher"), "-X", "-A", "-t"], stdin=subprocess.PIPE, stdout=fh,
                                stderr=subprocess.STDOUT, text=True, env=env)
        try:
            assert proc.stdin is not None
            proc.stdin.write("SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY state \\watch 0.2\n")
            proc.stdin.flush()
            deadline = time.monotonic() + 120
            while out.read_text().count("NOTICE:  dpsql:") < 5 and time.monotonic() < deadline:
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)  # as a user's ^C: ends the \watch
            proc.stdin.close()
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    text = out.read_text()
    notices = text.count("NOTICE:  dpsql:")
    assert notices >= 5, text
    assert len(srv.charges("watcher")) == before + 1  # the ledger: one release for them all
    assert text.count("reused: released at") == notices - 1
    blocks = [b for b in text.split("NOTICE:  dpsql:")[1:]]
    answers_seen = {tuple(line for line in b.splitlines() if line.count("|") == 1) for b in blocks}
    assert len(answers_seen) == 1  # identical rows every time


def test_psycopg_repeats_over_one_and_new_connections_are_one_charge(dpsql_server):
    srv = dpsql_server
    srv.add_user("dash", cli=False)
    sql = "SELECT state, SUM(payann) AS payroll FROM establishments GROUP BY state ORDER BY state"
    seen = []
    with srv.connect("dash") as conn:
        for _ in range(3):
            seen.append(conn.execute(sql).fetchall())
    for _ in range(2):
        with srv.connect("dash") as conn:
            seen.append(conn.execute(sql).fetchall())
    assert all(s == seen[0] for s in seen) and len(srv.charges("dash")) == 1
    with srv.connect("dash", options="-c dpsql.reuse=off") as conn:  # a BI tool asking for fresh noise
        fresh = conn.execute(sql).fetchall()
    assert fresh != seen[0] and len(srv.charges("dash")) == 2


def test_error_bars_come_back_exactly_as_released(con):
    # one σ for every row (COUNT: stored once) and one per row (AVG: the delta method)
    sql = "SELECT state, COUNT(*) AS n, AVG(payann) AS a FROM establishments GROUP BY state ORDER BY state"
    first = con.execute(sql)
    first.fetchall()
    again = con.execute(sql)
    again.fetchall()
    assert again.receipt.rho == 0 and _charges(con) == 1
    shown = first.receipt.columns
    assert len(set(shown["n"].sigma)) == 1 and len(set(shown["a"].sigma)) > 1  # both shapes are exercised
    for name, e in shown.items():
        got = again.receipt.columns[name]
        assert got.sigma == e.sigma and got.moe95 == e.moe95 and len(got.sigma) == 51
