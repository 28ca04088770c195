"""The durable ledger: charges survive restarts, crashes (kill -9) and racing processes."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import dpsql
from dpsql.session import ledger_path
from dpsql.policy import load_policy


def set_budget(policy: Path, total: str, default: str = "0.1", extra: str = "") -> Path:
    text = policy.read_text()
    text = text.replace("default_rho = 0.1", f"default_rho = {default}").replace("total_rho = 10.0", f"total_rho = {total}{extra}")
    assert f"total_rho = {total}" in text
    policy.write_text(text)
    return policy


def ledger_file(policy: Path) -> Path:
    return ledger_path(load_policy(policy))


def test_restarting_does_not_restore_budget(demo):
    with dpsql.connect(*demo) as con:
        con.execute("SELECT COUNT(*) FROM establishments")
        con.execute("SELECT SUM(payann) FROM establishments WHERE state = 'CA'")
        assert con.session.ledger.spent == Fraction(2, 10)
    with dpsql.connect(*demo) as con:
        assert con.session.ledger.spent == Fraction(2, 10)
        assert con.budget["remaining"] == "9.8"


def test_history_records_every_field(demo):
    with dpsql.connect(*demo, analyst="ada") as con:
        cur = con.execute("SELECT naics2, SUM(payann), COUNT(*) FROM establishments GROUP BY naics2")
        (charge,) = con.session.ledger.history()
        assert charge.id == cur.receipt.charge_id
        assert charge.analyst == "ada" and charge.session == con.session.session_id
        assert charge.query.startswith("SELECT naics2") and charge.mechanism == "discrete_gaussian"
        assert charge.rho == Fraction(1, 10) and charge.delta == 0
        assert charge.dataset == str(demo[0])
        scales = {t["scale"] for t in charge.policy_terms}
        assert scales == {"|A(r)|^2", "1"}
        assert time.time() - charge.time < 60


def test_budget_is_per_analyst_and_dataset_cap_binds_all(demo):
    set_budget(demo[1], total="0.3", extra="\ndataset_rho = 0.5")
    with dpsql.connect(*demo, analyst="a") as a, dpsql.connect(*demo, analyst="b") as b:
        for _ in range(3):
            a.execute("SELECT COUNT(*) FROM establishments")
        with pytest.raises(dpsql.BudgetExceededError):
            a.execute("SELECT COUNT(*) FROM establishments")
        b.execute("SELECT COUNT(*) FROM establishments")
        b.execute("SELECT COUNT(*) FROM establishments")
        with pytest.raises(dpsql.BudgetExceededError, match="for the data set"):
            b.execute("SELECT COUNT(*) FROM establishments")  # b has 0.1 of its own left, the data set none
        assert a.session.ledger.spent == Fraction(3, 10) and b.session.ledger.spent == Fraction(2, 10)


CHILD = r"""
import sys, dpsql
db, policy, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = dpsql.connect(db, policy, analyst="racer")
for i in range(n):
    try:
        cur = con.cursor().execute("SELECT naics2, SUM(payann) FROM establishments WHERE employees > ? GROUP BY naics2", [i])
        rows = cur.fetchall()
        print("RELEASED", cur.receipt.charge_id, len(rows), flush=True)
    except dpsql.BudgetExceededError:
        print("REFUSED", flush=True)
"""


def check_consistent(ledger: Path) -> list[tuple]:
    db = sqlite3.connect(ledger)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        charges = db.execute("SELECT id, analyst, rho FROM charges").fetchall()
        totals = dict(db.execute("SELECT analyst, rho FROM totals").fetchall())
    finally:
        db.close()
    by_analyst: dict[str, Fraction] = {}
    for _, analyst, rho in charges:
        by_analyst[analyst] = by_analyst.get(analyst, Fraction(0)) + Fraction(rho)
    # the running totals are exactly the sum of the charges, for each analyst and for all
    assert {k: Fraction(v) for k, v in totals.items() if k} == by_analyst
    assert Fraction(totals.get("", "0")) == sum(by_analyst.values(), Fraction(0))
    return charges


@pytest.mark.slow
def test_processes_racing_for_the_last_of_a_budget(demo):
    """8 processes, 5 queries each, a budget of 10 queries: exactly 10 released and charged,
    the other 30 refused having released nothing."""
    set_budget(demo[1], total="1")
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(demo[0]), str(demo[1]), "5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    lines = [line.split() for out, _ in outs for line in out.splitlines()]
    released = [int(parts[1]) for parts in lines if parts[0] == "RELEASED"]
    refused = [parts for parts in lines if parts[0] == "REFUSED"]
    assert len(released) + len(refused) == 40
    charges = check_consistent(ledger_file(demo[1]))
    total = sum((Fraction(c[2]) for c in charges), Fraction(0))
    assert total <= 1
    assert sorted(released) == sorted(c[0] for c in charges)  # every release charged, every charge released
    assert len(released) == 10 and total == 1


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_the_ledger_consistent(demo):
    """Kill a querying process with SIGKILL at random moments, again and again: the ledger
    stays consistent and every answer the process released is charged in it."""
    rng = random.Random(20261122)
    ledger = ledger_file(demo[1])
    released: list[int] = []
    for _ in range(12):
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(demo[0]), str(demo[1]), "1000"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(rng.uniform(0.3, 1.5))  # import takes ~0.3 s: kill before, during and between queries
        os.kill(p.pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=60)
        released += [int(line.split()[1]) for line in out.splitlines() if line.startswith("RELEASED")]
        if ledger.exists():
            charged = {c[0] for c in check_consistent(ledger)}
            assert set(released) <= charged
    assert released, "the processes never got to release anything: the test proved nothing"
