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

import subprocess
import sys
from fractions import Fraction

import pytest

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
cur = con.cursor().execute(sql)
cur.fetchall()
sys.stdout.write(f"RELEASED {cur.receipt.charge_id}\n")
sys.stdout.write("STATEMENTS " + "|".join(statements) + "\n")
sys.stdout.flush()
"""


def _child(db, policy, point: int) -> tuple[int, list[str]]:
    p = subprocess.run([sys.executable, "-c", CHILD, str(db), str(policy), str(point)],
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
