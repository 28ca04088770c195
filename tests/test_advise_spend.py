"""What `dpsql advise` spends (issue 31): by default the smaller of 0.1 and a tenth of the charged
analyst's total_rho (a fixed 0.1 was 40% of the 0.25 `dpsql init` drafts), said before the query
runs together with whose budget it comes out of and its share of it.

Through the real command (``python -m dpsql``) on a table `dpsql init` drafted from a generated CSV;
the oracles are the policy file (tomllib) and the ledger's SQLite file, read here, never the report.
"""

from __future__ import annotations

import json
import sqlite3
import tomllib
from fractions import Fraction

import pytest

from dpsql.ledger.book import os_user
from tests.test_init import _customers, _dpsql


@pytest.fixture()
def drafted(tmp_path):
    _customers(tmp_path / "customers.csv", n=2000)
    p = _dpsql("init", "customers.csv", "--unit", "customer_id", "--threshold", "spend=500", "--yes", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    policy = tmp_path / "customers.policy.toml"
    total = Fraction(str(tomllib.loads(policy.read_text())["budget"]["total_rho"]))
    return tmp_path, policy, total


def _charges(policy) -> list[tuple[str, Fraction]]:
    ledger = policy.with_name(policy.stem + ".ledger.sqlite")
    if not ledger.exists():
        return []
    db = sqlite3.connect(ledger)
    try:
        return [(a, Fraction(r)) for a, r in db.execute("SELECT analyst, rho FROM charges ORDER BY id")]
    finally:
        db.close()


def _advise(cwd, *extra: str):
    return _dpsql("advise", "customers", "--db", "customers.duckdb", "--policy", "customers.policy.toml",
                  "--measure", "spend", *extra, cwd=cwd, timeout=300)


def test_the_default_is_a_tenth_of_the_drafted_total_and_said_before(drafted):
    cwd, policy, total = drafted
    expected = min(Fraction(1, 10), total / 10)
    assert expected < Fraction(1, 10)  # the drafted total is small: the share, not 0.1, decides
    p = _advise(cwd)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith(f"dpsql advise will charge rho={float(expected):g} (the default"), first
    assert f"{float(100 * expected / total):g}% of the total_rho={float(total):g} of analyst {os_user()!r}" in first
    assert f"in the ledger {policy.with_name('customers.policy.ledger.sqlite')}" in first
    assert _charges(policy) == [(os_user(), expected)]


def test_the_notice_comes_before_the_query_even_when_the_budget_refuses_it(drafted):
    cwd, policy, total = drafted
    p = _advise(cwd, "--rho", str(float(total * 2)))
    assert p.returncode != 0 and "DP301" in p.stderr
    assert p.stdout.splitlines()[0].startswith(f"dpsql advise will charge rho={float(total * 2):g} (--rho): 200% of")
    assert _charges(policy) == []


def test_json_keeps_stdout_json_and_says_what_it_charged(drafted):
    cwd, policy, total = drafted
    p = _advise(cwd, "--rho", "0.05", "--json")
    assert p.returncode == 0, p.stderr
    spend = json.loads(p.stdout)["spend"]
    assert "dpsql advise will charge rho=0.05 (--rho)" in p.stderr
    assert (Fraction(spend["rho"]), Fraction(spend["total_rho"]), spend["analyst"]) == (Fraction(1, 20), total, os_user())
    assert spend["share_of_total_rho"] == pytest.approx(float(Fraction(1, 20) / total))
    assert _charges(policy) == [(os_user(), Fraction(1, 20))]


def test_a_many_row_table_is_charged_the_same_default(tmp_path):
    """The many-row path (faces/advise_units.py) runs its own connection: it charges what was said."""
    from tests.test_own_many_rows import _flights

    _flights(tmp_path / "flights.csv", units=300)
    assert _dpsql("init", "flights.csv", "--unit", "tail", cwd=tmp_path).returncode == 0
    policy = tmp_path / "flights.policy.toml"
    total = Fraction(str(tomllib.loads(policy.read_text())["budget"]["total_rho"]))
    p = _dpsql("advise", "flights", "--db", "flights.duckdb", "--json", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    expected = min(Fraction(1, 10), total / 10)
    assert f"dpsql advise will charge rho={float(expected):g} (the default" in p.stderr
    assert Fraction(json.loads(p.stdout)["spend"]["rho"]) == expected
    assert _charges(policy) == [(os_user(), expected)]
