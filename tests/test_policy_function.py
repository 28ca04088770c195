"""The public policy function P(r): a formula from the ledger, evaluated only for typed-in records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction

import dpsql
from dpsql.privacy import policy_function as pf

# Paper 000 Table 2(a): (employees, payroll) of establishments 1..5
TABLE_2A = [(150, 10_000_000), (50, 15_000_000), (100, 10_000_000), (50, 10_000_000), (20, 1_000_000)]


def test_example_5_4_nine_four_one_rho(demo):
    """Sums over Table 2 split at (50, 5,000,000): establishments 1 and 2 pay 9ρ, 3 and 4 pay 4ρ,
    5 pays ρ (paper 000 Example 5.4)."""
    with dpsql.connect(*demo, rho="0.1") as con:
        con.execute("SELECT SUM(employees), SUM(payroll) FROM paper_table2")
        terms = pf.collect(con.session.ledger.history())
    rho = Fraction(1, 10)
    losses = [pf.evaluate(terms, "paper_table2", {"employees": str(e), "payroll": str(p)})[0] for e, p in TABLE_2A]
    assert losses == [9 * rho, 9 * rho, 4 * rho, 4 * rho, rho]


def test_composition_adds_terms_and_counts_are_constant(demo):
    with dpsql.connect(*demo) as con:
        con.execute("SELECT SUM(employees) FROM paper_table2")                 # 0.1·|A|², A on employees only
        con.execute("SELECT COUNT(*), SUM(payroll) FROM paper_table2")         # 0.05·|A|² (payroll) + 0.05
        terms = pf.collect(con.session.ledger.history())
    text = pf.formula(terms)["paper_table2"]
    assert "⌈|employees|/50⌉" in text and "⌈|payroll|/5000000⌉" in text and "+  0.05" in text
    # employees=150 (3 splits on employees), payroll=15M (3 splits on payroll)
    total, lines = pf.evaluate(terms, "paper_table2", {"employees": "150", "payroll": "15000000"})
    assert total == Fraction(1, 10) * 9 + Fraction(1, 20) * 9 + Fraction(1, 20)
    assert len(lines) == 3


def test_per_group_thresholds_need_the_key(demo, tmp_path):
    text = demo[1].read_text().replace(
        "payroll = { threshold = 5000000 }",
        'payroll = { threshold = 5000000, overrides = { key = "industry", thresholds = { Mining = 10000000 } } }')
    policy = tmp_path / "p.toml"
    policy.write_text(text)
    with dpsql.connect(demo[0], policy) as con:
        con.execute("SELECT industry, SUM(employees), SUM(payroll) FROM paper_table2 GROUP BY industry")
        terms = pf.collect(con.session.ledger.history())
    rho = Fraction(1, 10)
    # Example 5.7: record 4 (Mining, 50, 10M) is not split under Mining's threshold
    assert pf.evaluate(terms, "paper_table2", {"employees": "50", "payroll": "10000000", "industry": "Mining"})[0] == rho
    assert pf.evaluate(terms, "paper_table2", {"employees": "50", "payroll": "10000000", "industry": "Retail"})[0] == 4 * rho
    try:
        pf.evaluate(terms, "paper_table2", {"employees": "50", "payroll": "10000000"})
        raise AssertionError("evaluating without the key must be refused")
    except dpsql.DpsqlError as err:
        assert "industry" in str(err)


def run_cli(*args: str, home) -> subprocess.CompletedProcess:
    env = dict(os.environ, DPSQL_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "dpsql", *args], capture_output=True, text=True, env=env, timeout=120)


def test_ledger_policy_and_convert_commands(demo, tmp_path):
    db, policy = (str(p) for p in demo)
    assert run_cli("query", "SELECT SUM(employees), SUM(payroll) FROM paper_table2", "--db", db, "--policy", policy,
                   home=tmp_path).returncode == 0
    p = run_cli("ledger", "--policy", policy, "--json", home=tmp_path)
    out = json.loads(p.stdout)
    assert out["budget"]["spent"] == "0.1" and out["budget"]["remaining"] == "9.9"
    assert out["charges"][0]["query"].startswith("SELECT SUM(employees)")
    p = run_cli("ledger", "--policy", policy, home=tmp_path)
    assert "spent rho=0.1 of 10" in p.stdout and "SELECT SUM(employees)" in p.stdout
    p = run_cli("policy", "--policy", policy, "employees=150", "payroll=10000000", home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "⌈150/50⌉=3" in p.stdout and "P(r) = 0.9" in p.stdout
    p = run_cli("policy", "--policy", policy, "--json", home=tmp_path)
    assert "paper_table2" in json.loads(p.stdout)["policy_function"]
    p = run_cli("convert", "--rho", "0.5", "--delta", "1e-10", "--json", home=tmp_path)
    conv = json.loads(p.stdout)
    assert conv["epsilon_tight"] < conv["epsilon_analytic"]
    assert abs(conv["epsilon_analytic"] - (0.5 + 2 * (0.5 * 23.025850929940457) ** 0.5)) < 1e-9


def test_policy_on_an_empty_ledger_says_nothing_was_released(demo, tmp_path):
    """Issue 29, finding 15: with no release yet, a hypothetical record's P(r) is 0; the command
    said "several tables have releases" (and failed)."""
    policy = str(demo[1])
    p = run_cli("policy", "--policy", policy, "employees=150", home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "several tables" not in p.stdout + p.stderr
    assert "nothing released yet: P(r) = 0 for every record" in p.stdout
    p = run_cli("policy", "--policy", policy, "employees=150", "--json", home=tmp_path)
    out = json.loads(p.stdout)
    assert out["policy_function"] == {} and out["record"]["P"] == "0" and out["record"]["terms"] == []
