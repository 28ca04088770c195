"""A per-query cap in the policy (issue 33): ``budget.max_query_rho``. One ``SET dpsql.moe`` or
``SET dpsql.rho`` cannot spend a large share of a budget in one answer: a query whose charge
(noise and partition selection) would pass the cap is refused before anything runs, with its
cost stated, and nothing is charged. The oracle of each cost is written here from the policy."""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql


@pytest.fixture()
def capped(demo, tmp_path):
    database, policy = demo
    text = policy.read_text()
    assert "max_query_rho" not in text
    policy.write_text(text.replace("[budget]", "[budget]\nmax_query_rho = 0.3", 1))
    return database, policy


def _refused(cur, sql: str) -> dpsql.OperationalError:
    with pytest.raises(dpsql.OperationalError) as err:
        cur.execute(sql)
    assert err.value.code == "DP303"
    return err.value


def test_a_query_above_the_cap_is_refused_with_its_cost_and_charged_nothing(capped):
    database, policy = capped
    with dpsql.connect(database, policy) as con:
        cur = con.cursor()
        cur.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state")  # 0.1: under the cap
        assert cur.receipt.rho == Fraction(1, 10)
        spent = Fraction(con.budget["spent"])
        cur.execute("SET dpsql.rho = 0.3")  # exactly the cap: allowed
        cur.execute("SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2")
        assert cur.receipt.rho == Fraction(3, 10)
        cur.execute("SET dpsql.rho = 0.31")
        err = _refused(cur, "SELECT state, SUM(payann) FROM establishments GROUP BY state")
        assert "rho=0.31" in err.message and "max_query_rho=0.3" in err.message
        # a private key adds partition selection's ε²/2: noise at cap − ε²/2 + 0.01 passes the cap by 0.01
        eps = Fraction(con.session.policy.selection.epsilon)
        rho = Fraction(3, 10) - eps * eps / 2 + Fraction(1, 100)
        assert rho > 0
        cur.execute(f"SET dpsql.rho = {float(rho)!r}")
        cur.execute("SELECT state, COUNT(*) FROM establishments WHERE employees > 7 GROUP BY state")  # no selection
        spent_before_selection = Fraction(con.budget["spent"])
        err = _refused(cur, "SELECT county, COUNT(*) FROM establishments GROUP BY county")
        assert "max_query_rho=0.3" in err.message
        spent = spent_before_selection - Fraction(3, 10)
        cur.execute("SET dpsql.moe = 1")  # accuracy first: a tiny margin costs a great deal
        _refused(cur, "SELECT state, COUNT(*) AS n FROM establishments WHERE employees > 3 GROUP BY state")
        assert Fraction(con.budget["spent"]) == spent_before_selection
        assert len(con.session.ledger.charges) == 3  # the three answered; no refused one


def test_no_cap_means_only_the_walls(demo):
    database, policy = demo
    with dpsql.connect(database, policy) as con:
        cur = con.cursor()
        cur.execute("SET dpsql.rho = 2")
        cur.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state")
        assert cur.receipt.rho == 2
