"""GROUP BY private keys through DP partition selection, in the engine."""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql
from dpsql.privacy import policy_function as pf
from dpsql.privacy.pi_opt import release_probability
from dpsql.testing import seeded_random


def with_selection(demo, tmp_path, **fields) -> tuple:
    extra = "\n[selection]\n" + "\n".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in fields.items())
    policy = tmp_path / "sel.policy.toml"
    policy.write_text(demo[1].read_text() + extra + "\n")
    return demo[0], policy


def test_private_key_groups_are_selected_not_listed(con, session):
    cur = con.execute("SELECT county, COUNT(*) AS n FROM establishments GROUP BY county")
    rows = cur.fetchall()
    exact = dict(session.engine.run("SELECT county, COUNT(*) FROM establishments GROUP BY county"))
    released = {r[0] for r in rows}
    assert released < set(exact)  # a strict subset: small counties are dropped
    # big counties are (almost) surely released, single-establishment ones almost never
    sel = session.policy.selection
    big = [c for c, n in exact.items() if release_probability(n, float(sel.epsilon), float(sel.delta)) == 1.0]
    assert set(big) <= released
    tiny = [c for c, n in exact.items() if n == 1]
    assert sum(c in released for c in tiny) <= max(1, len(tiny) // 100)
    rc = cur.receipt
    assert rc.selection["released_groups"] == len(rows) and rc.selection["keys"] == ["county"]
    assert rc.delta == sel.delta and rc.rho == Fraction(1, 10) + sel.epsilon**2 / 2


def test_public_and_private_keys_together(con):
    cur = con.execute("SELECT state, naics, COUNT(*) AS n FROM establishments WHERE naics2 = '55' GROUP BY state, naics")
    rows = cur.fetchall()
    naics = {r[1] for r in rows}
    states = {r[0] for r in rows}
    assert len(states) == 51  # public: every declared state, for every released naics
    assert len(rows) == 51 * len(naics) and all(n.startswith("55") for n in naics)


def test_explain_shows_selection_and_charges_nothing(con):
    ex = con.explain("SELECT county, SUM(payann) FROM establishments GROUP BY county")
    assert ex.selection["keys"] == ["county"] and ex.selection["method"] == "optimal"
    assert any("partition selection" in n for n in ex.notes)
    assert ex.delta == Fraction(1, 10**6)
    assert con.session.ledger.spent == 0


def test_ledger_and_policy_function_carry_delta(con):
    con.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county")
    (charge,) = con.session.ledger.history()
    assert charge.delta == Fraction(1, 10**6)
    terms = pf.collect([charge])
    text = pf.formula(terms)["establishments"]
    assert "δ(r) = 1e-06" in text
    total, lines = pf.evaluate(terms, "establishments", {})
    assert total == Fraction(1, 10) + Fraction(1, 8)


def test_split_rows_selection_finds_groups_of_few_huge_records(demo, tmp_path):
    """Counting split rows (paper 000 §5.4), a group of one huge record is released; the
    record pays by group privacy, shown in P(r)."""
    db, policy = with_selection(demo, tmp_path, count="split_rows", epsilon=1, delta=1e-6)
    with dpsql.connect(db, policy, _random_source=seeded_random(9)) as con:
        exact = con.session.engine.run(
            "SELECT county, naics, COUNT(*), SUM(GREATEST(1, CEIL(payann / 10000))) FROM establishments GROUP BY ALL")
        few_but_huge = {(c, n) for c, n, units, splits in exact if units <= 3 and splits >= 40}
        assert len(few_but_huge) >= 10  # the demo data has such groups (49 at the default seed)
        cur = con.execute("SELECT county, naics, SUM(payann) FROM establishments GROUP BY county, naics")
        released = {(r[0], r[1]) for r in cur.fetchall()}
        # π(40) = 1 at ε = 1, δ = 1e-6: all are found; counting units (π(3) ≈ 1e-5) none would be
        assert few_but_huge <= released
        terms = pf.collect(con.session.ledger.history())
        text = pf.formula(terms)["establishments"]
        assert "|A(r)|·e^((|A(r)|−1)·1)" in text
        total, _ = pf.evaluate(terms, "establishments", {"payann": "25000"})  # 3 splits
        assert total == (Fraction(1, 10) + Fraction(1, 2)) * 9


def test_truncated_geometric_count_costs_nothing_extra(demo, tmp_path):
    db, policy = with_selection(demo, tmp_path, method="truncated_geometric", epsilon=1, delta=1e-6)
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        cur = con.execute("SELECT county, COUNT(*) AS n FROM establishments GROUP BY county")
        assert cur.receipt.rho == Fraction(1, 2)  # only the selection: its noisy count is the COUNT
        exact = dict(con.session.engine.run("SELECT county, COUNT(*) FROM establishments GROUP BY county"))
        from dpsql.privacy.tsgd import tsgd_threshold

        k = tsgd_threshold(Fraction(1), Fraction(1, 10**6))
        rows = cur.fetchall()
        assert rows and all(abs(n - exact[c]) <= k and n > k for c, n in rows)
        assert cur.receipt.columns["n"].moe95[0] == k
        # with a public key too, the count is noised on its own again
        cur = con.execute("SELECT state, county, COUNT(*) FROM establishments WHERE state = 'VT' GROUP BY state, county")
        assert cur.receipt.rho == Fraction(1, 2) + Fraction(1, 10)


@pytest.mark.parametrize("bad, field", [("count = 'rows'", "selection.count"), ("method = 'laplace'", "selection.method"),
                                        ("delta = 1.5", "selection.delta")])
def test_bad_selection_policy(demo, tmp_path, bad, field):
    policy = tmp_path / "bad.toml"
    policy.write_text(demo[1].read_text() + f"\n[selection]\n{bad}\n")
    with pytest.raises(dpsql.OperationalError, match=field):
        dpsql.connect(demo[0], policy)
