"""kill -9 at every statement of a charge, deterministically (issue 35).

tests/test_ledger.py's kill -9 test kills a querying process at random moments: whether a kill
lands inside the few microseconds between two statements of a charge depends on the machine's
speed and load. Here the crash points are chosen, not drawn: a child process wraps
``sqlite3.connect`` so that every connection traces its statements, answers one query, then
arms the trace and SIGKILLs itself when the ledger is about to run its k-th statement of the
second query — for every k from the first statement of that query to the last. After each
crash the ledger must be consistent (the running totals are the sums of the charges, in both
currencies), and every answer the child released is charged; the second query is charged
exactly when its COMMIT ran.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from fractions import Fraction

import pytest

from server_harness import policy_with_budget
from tests.test_ledger import check_consistent, ledger_file

CHILD = r"""
import os, signal, sqlite3, sys

point = int(sys.argv[3])
statements = []
armed = [False]
real_connect = sqlite3.connect

def connect(*args, **kwargs):
    db = real_connect(*args, **kwargs)

    def trace(sql):
        if armed[0]:
            statements.append(" ".join(sql.split()[:2]).upper())
            if len(statements) == point:
                sys.stdout.write("DYING " + statements[-1] + "\n")
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    db.set_trace_callback(trace)
    return db

sqlite3.connect = connect
import dpsql

con = dpsql.connect(sys.argv[1], sys.argv[2], analyst="crash")
con.execute("SET dpsql.reuse = off")  # the second query a fresh, charged release; its answer is still stored after the charge
sql = "SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2"
cur = con.cursor().execute(sql)
cur.fetchall()
sys.stdout.write(f"RELEASED {cur.receipt.charge_id}\n")
armed[0] = True
cur = con.cursor().execute(sys.argv[4] if len(sys.argv) > 4 else sql)
cur.fetchall()
sys.stdout.write(f"RELEASED {cur.receipt.charge_id}\n")
sys.stdout.write("STATEMENTS " + "|".join(statements) + "\n")
sys.stdout.flush()
"""


def _child(db, policy, point: int, *second: str) -> tuple[int, list[str]]:
    p = subprocess.run([sys.executable, "-c", CHILD, str(db), str(policy), str(point), *second],
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout.splitlines()


@pytest.mark.slow
def test_a_kill_at_every_statement_of_a_charge_leaves_the_ledger_consistent(demo):
    db, policy = demo
    ledger = ledger_file(policy)
    code, out = _child(db, policy, 0)  # a run without a crash: which statements the second query runs
    assert code == 0, out
    statements = out[-1].removeprefix("STATEMENTS ").split("|")
    assert "COMMIT" in statements and any(s.startswith("BEGIN") for s in statements), statements
    commit_at = statements.index("COMMIT") + 1
    charged_before = len(check_consistent(ledger))
    for k in range(1, len(statements) + 1):
        code, out = _child(db, policy, k)
        assert code == -9 and out[-1] == f"DYING {statements[k - 1]}", (k, code, out)
        released = [int(line.split()[1]) for line in out if line.startswith("RELEASED")]
        assert len(released) == 1  # the first query's; the second was killed before it was shown
        charges = check_consistent(ledger)
        assert set(released) <= {c[0] for c in charges}
        # the second query is charged exactly when its COMMIT ran (a kill at the COMMIT statement
        # itself stops it before it runs)
        new = len(charges) - charged_before
        assert new == (2 if k > commit_at else 1), (k, statements, new)
        charged_before = len(charges)
        assert sum((Fraction(c[2]) for c in charges), Fraction(0)) > 0


@pytest.mark.slow
def test_a_kill_at_every_statement_of_keeping_and_pruning_an_answer(demo, tmp_path):
    """One answer kept (``budget.answers_kept = 1``): the second query's answer is kept and the
    first one's pruned in one transaction (issue 31). A kill at any statement leaves the one or the
    other stored, never both and never a half: the first until the keeping COMMIT ran, then the
    second's (a new charge's)."""
    db, policy = demo[0], policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="1")
    ledger = ledger_file(policy)
    other = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"

    def stored() -> list[int]:
        con = sqlite3.connect(ledger)
        try:
            return [r[0] for r in con.execute("SELECT charge_id FROM answers")]
        finally:
            con.close()

    code, out = _child(db, policy, 0, other)
    assert code == 0, out
    statements = out[-1].removeprefix("STATEMENTS ").split("|")
    assert "DELETE FROM" in statements, statements  # the pruning statement ran, inside the keeping transaction
    kept_at = len(statements) - statements[::-1].index("COMMIT")  # the last COMMIT: the answer's
    assert statements.index("DELETE FROM") + 1 < kept_at
    for k in range(1, len(statements) + 1):
        code, out = _child(db, policy, k, other)
        assert code == -9 and out[-1] == f"DYING {statements[k - 1]}", (k, code, out)
        released = [int(line.split()[1]) for line in out if line.startswith("RELEASED")]
        charges = [c[0] for c in check_consistent(ledger)]
        assert stored() == ([max(charges)] if k > kept_at else released), (k, statements, stored(), released)
