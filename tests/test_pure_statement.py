"""Pure ε-DP stated where it holds: in geometric mode, with no partition selection and no table
with many rows per unit, everything spent is (Σε, 0)-DP for a record never split (basic
composition), which `dpsql ledger`, ``--json`` and ``Connection.budget`` now say beside the
conversion of the ρ charged. The expected ε is the policy's per-query ε times the queries, summed
here; where a selection (δ > 0) or a zCDP charge is among them, nothing pure is stated."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import dpsql
from dpsql.testing import seeded_random
from repl_harness import ENTER, drive

EPS = Fraction(3, 20)  # the test policy's default_epsilon


def _geometric(policy):
    text = policy.read_text()
    assert "default_rho = 0.1 " in text and 'mechanism = "discrete_gaussian"' in text
    policy.write_text(text.replace("default_rho = 0.1 ", f"default_epsilon = {float(EPS)} ")
                      .replace('mechanism = "discrete_gaussian"', 'mechanism = "geometric"'))
    return policy


def _ledger(db, policy, *extra):
    done = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "--db", str(db), "--policy", str(policy), *extra],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _run(db, policy, *sql):
    with dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(3)) as con:
        for q in sql:
            con.cursor().execute(q).fetchall()
        return con.budget


def test_pure_charges_are_stated_as_pure_epsilon_dp(demo):
    db, policy = demo
    _geometric(policy)
    queries = ["SELECT state, COUNT(*) FROM establishments GROUP BY state",
               "SELECT naics2, SUM(payann), AVG(employees) FROM establishments GROUP BY naics2",
               "SELECT sex, MEDIAN(age) FROM persons GROUP BY sex"]  # the exponential mechanism, pure too
    budget = _run(db, policy, *queries)
    want = EPS * len(queries)  # each query's epsilon is the policy's, shared among its aggregates
    assert Fraction(budget["pure_epsilon"]) == want
    text = _ledger(db, policy)
    assert f"and pure ({float(want):g}, 0)-DP for a record never split" in text
    assert json.loads(_ledger(db, policy, "--json"))["pure"] == {"epsilon": f"{float(want):g}", "delta": "0"}


def test_a_selection_or_a_zcdp_charge_states_nothing_pure(demo, tmp_path):
    db, policy = demo
    _geometric(policy)
    budget = _run(db, policy, "SELECT state, COUNT(*) FROM establishments GROUP BY state",
                  "SELECT county, COUNT(*) FROM establishments GROUP BY county")  # partition selection: delta > 0
    assert "pure_epsilon" not in budget
    assert "and pure" not in _ledger(db, policy) and "pure" not in json.loads(_ledger(db, policy, "--json"))
    zcdp = tmp_path / "zcdp" / "demo.policy.toml"
    zcdp.parent.mkdir()
    zcdp.write_text((demo[1].parent / "demo.policy.toml").read_text()
                    .replace('mechanism = "geometric"', 'mechanism = "discrete_gaussian"')
                    .replace(f"default_epsilon = {float(EPS)} ", "default_rho = 0.1 "))
    budget = _run(db, zcdp, "SELECT state, COUNT(*) FROM establishments GROUP BY state")
    assert "pure_epsilon" not in budget and "and pure" not in _ledger(db, zcdp)


def test_repl_budget_states_pure_epsilon_dp(demo):
    """\\budget in the REPL, driven as a person types: the same line after two pure queries."""
    db, policy = demo
    _geometric(policy)
    con = dpsql.connect(db, policy, _random_source=seeded_random(4))
    try:
        out, err, rc = drive(con, "SELECT state, COUNT(*) FROM establishments GROUP BY state;" + ENTER
                             + "SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2;" + ENTER + "\\budget" + ENTER)
    finally:
        con.close()
    assert rc == 0 and err == "", err
    assert f"And pure ({float(2 * EPS):g}, 0)-DP for a record never split" in out
