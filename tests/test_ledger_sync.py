"""Every charge commits with ``synchronous=FULL`` (an fsync before the answer leaves), while the
released answer kept for reuse (dpsql/ledger/answers.py) commits without an fsync of its own
(issue 34). Read from the statements SQLite itself runs on the ledger's connection."""

from __future__ import annotations

import dpsql
from dpsql.testing import seeded_random

SQL = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"


def _commits(statements: list[str]) -> list[tuple[str, str]]:
    """(what the transaction wrote, the synchronous mode in force at its end) for each write."""
    mode, wrote, out = "FULL", None, []  # the ledger opens with FULL (book.py)
    for s in (x.strip().upper() for x in statements):
        if s.startswith("PRAGMA SYNCHRONOUS="):
            mode = s.split("=", 1)[1]
        elif s.startswith("INSERT INTO CHARGES"):
            wrote = "charge"
        elif s.startswith("INSERT OR REPLACE INTO ANSWERS"):
            out.append(("answer", mode))  # autocommit: its own transaction
        elif s == "COMMIT" and wrote:
            out.append((wrote, mode))
            wrote = None
    return out


def test_charges_are_synced_and_kept_answers_are_not(demo):
    with dpsql.connect(*demo, reuse=False, _random_source=seeded_random(3)) as con:
        con.execute(SQL)  # opens the ledger's tables for answers
        seen: list[str] = []
        con.session.ledger._db.set_trace_callback(seen.append)
        for _ in range(3):
            con.execute(SQL).fetchall()
        con.session.ledger._db.set_trace_callback(None)
    commits = _commits(seen)
    assert [w for w, _ in commits] == ["charge", "answer"] * 3
    assert all(mode == "FULL" for w, mode in commits if w == "charge")
    assert all(mode == "NORMAL" for w, mode in commits if w == "answer")
