"""A closed Ledger's SQLite connection serves the next Ledger of the process on the very same
files (dpsql/ledger/pool.py, issue 34), and never one on a file that replaced them."""

from __future__ import annotations

import os
import sqlite3
from fractions import Fraction

from dpsql.ledger import pool
from dpsql.ledger.book import Charge, Ledger


def _spent_on_disk(path) -> Fraction:
    """The analyst's total read by a connection of the test's own (an oracle apart from Ledger)."""
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT rho FROM totals WHERE analyst = 'a'").fetchone()
    return Fraction(row[0]) if row else Fraction(0)


def test_the_next_ledger_on_the_same_file_takes_the_connection(tmp_path):
    path = tmp_path / "l.sqlite"
    first = Ledger(path, "a", Fraction(1))
    kept = first._db
    first.charge(Charge("q1", Fraction(1, 10), "gaussian"))
    first.close()
    second = Ledger(path, "a", Fraction(1))
    assert second._db is kept
    second.charge(Charge("q2", Fraction(1, 5), "gaussian"))
    assert second.spent == Fraction(3, 10) == _spent_on_disk(path)  # committed, seen by another connection
    second.close()
    pool.drop_all()


def test_a_file_put_in_place_of_the_ledger_gets_its_own_connection(tmp_path):
    path = tmp_path / "l.sqlite"
    first = Ledger(path, "a", Fraction(1))
    first.charge(Charge("q1", Fraction(1, 10), "gaussian"))
    kept = first._db
    first.close()
    for f in (path, f"{path}-wal", f"{path}-shm"):  # the kept connection still holds the old files
        if os.path.exists(f):
            os.unlink(f)
    second = Ledger(path, "a", Fraction(1))
    assert second._db is not kept
    assert second.spent == 0 == _spent_on_disk(path)
    second.charge(Charge("q2", Fraction(1, 5), "gaussian"))
    assert _spent_on_disk(path) == Fraction(1, 5)
    second.close()
    pool.drop_all()


def test_beyond_the_kept_number_connections_are_closed(tmp_path):
    path = tmp_path / "l.sqlite"
    ledgers = [Ledger(path, "a", Fraction(1)) for _ in range(pool.PER_FILE + 3)]
    for ledger in ledgers:
        ledger.close()
    assert len(pool._IDLE[ledgers[0]._opened]) == pool.PER_FILE
    pool.drop_all()
    assert not pool._IDLE.get(ledgers[0]._opened)


def test_idle_connections_are_bounded_over_every_ledger_file(tmp_path, monkeypatch):
    """A process that opens many ledgers (a test run, a notebook over many data sets) keeps at
    most MAX_IDLE idle connections in all: each holds ~4 descriptors, and 120 ledgers had piled
    up ~480 of them, past which select()-based code (prompt_toolkit's input) fails at 1,024."""
    import os
    import shutil

    import dpsql
    from dpsql.demo_db import ensure_demo
    from dpsql.ledger import pool

    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    db, policy = ensure_demo(home=tmp_path / "home")
    pool.drop_all()
    before = len(os.listdir("/proc/self/fd"))
    for i in range(3 * pool.MAX_IDLE):
        folder = tmp_path / f"p{i}"
        folder.mkdir()
        shutil.copy(policy, folder / "p.toml")
        with dpsql.connect(db, folder / "p.toml") as con:
            con.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state").fetchall()
    assert sum(map(len, pool._IDLE.values())) <= pool.MAX_IDLE
    assert len(os.listdir("/proc/self/fd")) - before <= 5 * pool.MAX_IDLE + 10
    pool.drop_all()
