"""Every charge commits with ``synchronous=FULL`` (an fsync before the answer leaves), and the
released answer kept for reuse (dpsql/ledger/answers.py ``kept``) is written inside its charge's
own transaction, so the one fsync holds both (issue 34). A reuse marking an answer used commits
without an fsync (``_touch``); the charge after it is synced again. Read from the statements
SQLite itself runs on the ledger's connection."""

from __future__ import annotations

import dpsql
from dpsql.testing import seeded_random
from server_harness import policy_with_budget

SQL = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"
OTHER = "SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2"
THIRD = "SELECT naics2, AVG(payann) FROM establishments GROUP BY naics2"


def _commits(statements: list[str]) -> list[tuple[str, str]]:
    """(what the transaction wrote, the synchronous mode in force at its end) for each write:
    "charge", "charge+answer" (the answer inside the charge's transaction), "answer" or "used"
    (an answer written or marked used in a transaction, or in autocommit, of its own)."""
    mode, wrote, out = "FULL", "", []  # the ledger opens with FULL (book.py)
    for s in (x.strip().upper() for x in statements):
        if s.startswith("PRAGMA SYNCHRONOUS="):
            mode = s.split("=", 1)[1]
        elif s == "BEGIN IMMEDIATE":
            wrote = "open"
        elif s.startswith("INSERT INTO CHARGES"):
            wrote = "charge"
        elif s.startswith("INSERT OR REPLACE INTO ANSWERS") or s.startswith("UPDATE ANSWERS SET USED"):
            what = "answer" if s.startswith("INSERT") else "used"
            if wrote == "charge":
                wrote = "charge+answer"
            elif wrote == "open":
                wrote = what
            else:
                out.append((what, mode))  # autocommit: its own transaction
        elif s == "COMMIT" and wrote:
            out.append((wrote, mode))
            wrote = ""
    return out


def test_a_charge_and_the_answer_it_pays_for_commit_together_synced(demo):
    with dpsql.connect(*demo, reuse=False, _random_source=seeded_random(3)) as con:
        con.execute(SQL)  # opens the ledger's tables for answers
        seen: list[str] = []
        con.session.ledger._db.set_trace_callback(seen.append)
        for _ in range(3):
            con.execute(SQL).fetchall()
        con.session.ledger._db.set_trace_callback(None)
    assert _commits(seen) == [("charge+answer", "FULL")] * 3
    assert not any(s.upper().startswith("PRAGMA SYNCHRONOUS=NORMAL") for s in seen)


def test_a_charge_after_an_answer_marked_used_is_synced(demo, tmp_path):
    """With two answers kept, re-running the first marks it used (no fsync: it only orders the
    pruning); the next fresh statement's charge commits with FULL again."""
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="2")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(4)) as con:
        con.execute(SQL)
        con.execute(OTHER)
        seen: list[str] = []
        con.session.ledger._db.set_trace_callback(seen.append)
        assert con.execute(SQL).receipt.reused is not None
        con.execute(THIRD).fetchall()
        con.session.ledger._db.set_trace_callback(None)
    assert _commits(seen) == [("used", "NORMAL"), ("charge+answer", "FULL")]
