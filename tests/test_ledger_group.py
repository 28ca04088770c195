"""Charges that arrive together commit together (dpsql/ledger/group.py, issue 34): one
transaction for the charges queued behind a commit under way, each checked with its own
ledger's caps against the totals the charges before it left, refused alone; every caller
returns only after the COMMIT holding its charge. The overlap is arranged, not timed: the first
charge's transaction waits, inside BEGIN IMMEDIATE, until the others are queued behind it."""

from __future__ import annotations

import sqlite3
import threading
import time
from fractions import Fraction

import pytest

from dpsql.errors import BudgetExceededError
from dpsql.ledger import group, pool
from dpsql.ledger.book import Charge, Ledger

N = 8
CAP = {"a0": Fraction(1, 4), "a1": Fraction(1)}  # a0 can pay two charges of 0.1, a1 all four


def _on_disk(path) -> tuple[dict[str, Fraction], list[tuple[str, Fraction]]]:
    """Totals and charges read by a connection of the test's own."""
    with sqlite3.connect(path) as db:
        totals = {a: Fraction(r) for a, r in db.execute("SELECT analyst, rho FROM totals")}
        charges = [(a, Fraction(r)) for a, r in db.execute("SELECT analyst, rho FROM charges ORDER BY id")]
    return totals, charges


def test_charges_queued_behind_a_commit_share_the_next_one(tmp_path):
    path = tmp_path / "l.sqlite"
    ledgers = [Ledger(path, f"a{i % 2}", CAP[f"a{i % 2}"]) for i in range(N)]
    identity = ledgers[0]._opened
    commits: list[int] = []
    first_in, outcomes = threading.Event(), [None] * N

    def traced(i: int):
        def trace(sql: str) -> None:
            if sql.startswith("COMMIT"):
                commits.append(i)
            if i == 0 and sql.startswith("BEGIN IMMEDIATE") and not first_in.is_set():
                first_in.set()
                deadline = time.monotonic() + 60
                while len(group._QUEUES[identity].waiting) < N - 1 and time.monotonic() < deadline:
                    time.sleep(0.001)  # the other charges queue behind this transaction
        return trace

    for i, ledger in enumerate(ledgers):
        ledger._db.set_trace_callback(traced(i))

    def run(i: int) -> None:
        try:
            outcomes[i] = ledgers[i].charge(Charge(f"q{i}", Fraction(1, 10), "gaussian"))
        except BudgetExceededError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
    threads[0].start()
    assert first_in.wait(60)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(120)
    assert len(group._QUEUES[identity].waiting) == 0
    assert len(commits) == 2  # the first charge alone, then the seven queued behind it together

    ids = [o for o in outcomes if isinstance(o, int)]
    refused = [i for i, o in enumerate(outcomes) if isinstance(o, BudgetExceededError)]
    assert len(ids) == len(set(ids)) == 6 and len(refused) == 2
    assert all(i % 2 == 0 for i in refused)  # only a0, whose cap is 0.25, ran out
    totals, charges = _on_disk(path)
    assert totals == {"a0": Fraction(2, 10), "a1": Fraction(4, 10), "": Fraction(6, 10)}
    assert sorted(a for a, _ in charges) == ["a0"] * 2 + ["a1"] * 4
    # A receipt's figures are what its charge's transaction left (no read after it): the analyst's
    # charges up to its id, summed here from the file; the later ones of the batch are not in them.
    with sqlite3.connect(path) as db:
        rows = [(cid, a, Fraction(r)) for cid, a, r in db.execute("SELECT id, analyst, rho FROM charges")]
    for i, o in enumerate(outcomes):
        if isinstance(o, int):
            a = f"a{i % 2}"
            upto = sum((r for cid, who, r in rows if who == a and cid <= o), Fraction(0))
            assert ledgers[i].rho_spent_and_left(after=o) == (upto, CAP[a] - upto)
            assert ledgers[i].rho_spent_and_left() == (totals[a], CAP[a] - totals[a])  # read now
    for ledger in ledgers:
        ledger._db.set_trace_callback(None)
        ledger.close()
    pool.drop_all()


def test_a_failed_commit_is_every_callers_error(tmp_path):
    """A's batch holds the queue until B and C wait; one of them leads the next batch, with the
    other in it, and its transaction fails: the leader gets the failure, the other a LedgerError —
    neither an id, so neither releases."""
    from dpsql.errors import LedgerError

    ledger = Ledger(tmp_path / "l.sqlite", "a", Fraction(1))
    identity = ledger._opened
    pending = {name: group.Pending(ledger, Charge(name, Fraction(1, 10), "gaussian")) for name in "ABC"}
    seen: dict[str, object] = {}

    def slow(batch):
        deadline = time.monotonic() + 60
        while len(group._QUEUES[identity].waiting) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        for p in batch:
            p.outcome = 1

    def fail(batch):
        raise sqlite3.OperationalError("disk I/O error")

    def run(name: str, write) -> None:
        try:
            seen[name] = group.charge(identity, pending[name], write)
        except BaseException as exc:  # noqa: BLE001 - what each caller gets is the point
            seen[name] = exc

    a = threading.Thread(target=run, args=("A", slow))
    a.start()
    while not group._QUEUES.get(identity) or not group._QUEUES[identity].busy:
        time.sleep(0.001)
    b = threading.Thread(target=run, args=("B", fail))
    b.start()
    while len(group._QUEUES[identity].waiting) < 1:
        time.sleep(0.001)
    c = threading.Thread(target=run, args=("C", fail))
    c.start()
    for t in (a, b, c):
        t.join(120)
    assert seen["A"] == 1
    led, other = (seen["B"], seen["C"]) if isinstance(seen["B"], sqlite3.OperationalError) else (seen["C"], seen["B"])
    assert isinstance(led, sqlite3.OperationalError)
    assert isinstance(other, LedgerError) and "could not record its charge" in str(other)
    ledger.close()
    pool.drop_all()
