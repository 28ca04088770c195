"""The data owner's view of spending (issue 33): ``dpsql ledger --all`` covers every release of
the data set, those a real ``dpsql serve`` charged (alice, through psycopg) and those charged
embedded (bob, ``dpsql.connect``), each ledger read once.

Oracle: the charges each test makes, computed in the test from the rho it sets and the
policy's selection parameters (read from the TOML file), never from dpsql's ledger code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

import dpsql
from server_harness import policy_with_budget

psycopg = pytest.importorskip("psycopg")


def run_ledger(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DPSQL_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "dpsql", "ledger", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _policy(source: Path, dest: Path, **budget: str) -> Path:
    """A copy of the demo policy with the test's own partition selection (ε = 0.4, δ = 1e-7)."""
    policy_with_budget(source, dest, **budget)
    assert "[selection]" not in dest.read_text()
    dest.write_text(dest.read_text() + "\n[selection]\nepsilon = 0.4\ndelta = 1e-7\n")
    return dest


def _alice_through_the_server(srv) -> tuple[Fraction, Fraction]:
    """alice's releases over the wire; returns the (rho, delta) they cost, computed here."""
    selection = tomllib.loads(srv.policy.read_text())["selection"]
    eps, sel_delta = Fraction(str(selection["epsilon"])), Fraction(str(selection["delta"]))
    assert (eps, sel_delta) == (Fraction(2, 5), Fraction(1, 10**7))
    with srv.connect("alice") as conn:
        conn.execute("SET dpsql.rho = 0.05")
        conn.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state").fetchall()
        conn.execute("SELECT COUNT(*) FROM establishments").fetchall()
        conn.execute("SET dpsql.rho = 0.02")
        conn.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county").fetchall()  # + selection
    return Fraction(5, 100) * 2 + Fraction(2, 100) + eps * eps / 2, sel_delta


def _bob_embedded(database: Path, policy: Path) -> Fraction:
    with dpsql.connect(database, policy, analyst="bob", rho=Fraction(3, 100)) as con:
        con.execute("SELECT state, SUM(payann) FROM establishments GROUP BY state").fetchall()
        con.execute("SELECT COUNT(*) FROM establishments").fetchall()
    return Fraction(6, 100)


def test_ledger_all_sums_the_servers_and_the_embedded_charges(start_server, demo_files, tmp_path):
    work = tmp_path / "owner"
    work.mkdir()
    policy = _policy(demo_files[1], work / "visits.policy.toml",
                                analysts='{ alice = { total_rho = 20.0 } }')
    state = work / "visits.dpsql-server"  # where `ledger --policy visits.policy.toml` looks by default
    srv = start_server(users=("alice",), policy=policy, state=state)
    alice_rho, alice_delta = _alice_through_the_server(srv)
    bob_rho = _bob_embedded(demo_files[0], policy)
    assert srv.spent("alice") == alice_rho  # the server's own ledger agrees with the test's sum

    home = tmp_path / "home"
    for found in (["--state", str(state)], []):  # named, then found from the policy's file name
        p = run_ledger("--policy", str(policy), "--all", "--json", *found, home=home)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        d = out["dataset"]
        assert Fraction(d["spent"]) == alice_rho + bob_rho
        assert Fraction(d["delta_spent"]) == alice_delta
        assert {k: Fraction(v["spent"]) for k, v in d["ledgers"].items()} == {"embedded": bob_rho,
                                                                                "served": alice_rho}
        assert out["served"]["shared"] is False and Path(out["served"]["state"]) == state
        got = sorted((c["where"], c["analyst"]) for c in out["charges"])
        assert got == [("embedded", "bob")] * 2 + [("served", "alice")] * 3
        assert sum(Fraction(c["rho"]) for c in out["charges"]) == alice_rho + bob_rho

    # One analyst's view: alice's budget through the server, with her own wall from the policy.
    p = run_ledger("--policy", str(policy), "--analyst", "alice", "--json", home=home)
    served = json.loads(p.stdout)["served"]["budget"]
    assert Fraction(served["spent"]) == alice_rho and served["total"] == "20"
    assert Fraction(json.loads(p.stdout)["budget"]["spent"]) == 0  # nothing embedded
    p = run_ledger("--policy", str(policy), "--all", home=home)  # the text view names both parts
    assert p.returncode == 0, p.stderr
    parts = d["ledgers"]
    assert (f"the data set (all analysts): spent rho={d['spent']} (embedded {parts['embedded']['spent']} + "
            f"served {parts['served']['spent']})") in p.stdout
    assert "\nserved:\n" in p.stdout and "\nembedded:\n" in p.stdout


def test_a_server_charging_the_embedded_ledger_is_counted_once(start_server, demo_files, tmp_path):
    """With budget.ledger in the policy, the server and embedded use share one file: its charges
    must not be added twice."""
    work = tmp_path / "shared"
    work.mkdir()
    policy = _policy(demo_files[1], work / "shared.policy.toml",
                                ledger=json.dumps(str(work / "one.ledger.sqlite")))
    state = work / "state"
    srv = start_server(users=("alice",), policy=policy, state=state)
    alice_rho, _ = _alice_through_the_server(srv)
    bob_rho = _bob_embedded(demo_files[0], policy)
    p = run_ledger("--policy", str(policy), "--state", str(state), "--all", "--json", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["served"]["shared"] is True
    assert Fraction(out["dataset"]["spent"]) == alice_rho + bob_rho
    assert list(out["dataset"]["ledgers"]) == ["embedded and served"]
    assert len(out["charges"]) == 5


def test_a_state_folder_that_is_no_servers_is_refused(demo, tmp_path):
    empty = tmp_path / "not-a-server"
    empty.mkdir()
    p = run_ledger("--policy", str(demo[1]), "--state", str(empty), "--all", home=tmp_path / "home")
    assert p.returncode == 1 and "DP411" in p.stderr


def test_a_replaced_server_ledger_is_refused_not_read(start_server, demo_files, tmp_path):
    """The owner's view reads the ledger the state folder adopted, as the server checks it: a copy
    put in its place (another inode) is refused with DP404, not summed as the server's charges."""
    srv = start_server(users=("alice",), policy=_policy(demo_files[1], tmp_path / "r.policy.toml"))
    _alice_through_the_server(srv)
    srv.stop()
    copy = srv.ledger_path.with_name("copy.sqlite")
    shutil.copyfile(srv.ledger_path, copy)
    os.replace(copy, srv.ledger_path)
    p = run_ledger("--policy", str(srv.policy), "--state", str(srv.state), "--all", home=tmp_path / "home")
    assert p.returncode == 1 and "DP404" in p.stderr
