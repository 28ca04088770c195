"""GROUP BY private keys through DP partition selection, in the engine."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpsql.privacy.budget import fmt_up

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


def with_max_splits(policy, k: int):
    text = policy.read_text()
    assert "[tables.establishments]\n" in text
    policy.write_text(text.replace("[tables.establishments]\n", f"[tables.establishments]\nmax_splits = {k}\n", 1))
    return policy


SPLIT_QUERY = "SELECT county, naics, SUM(payann) FROM establishments GROUP BY county, naics"


def group_delta(delta: float, eps: float, k: int) -> float:
    """δ_k of group privacy, summed term by term (not the closed form the code uses)."""
    return delta * sum(math.exp(i * eps) for i in range(k))


def test_split_rows_selection_without_max_splits_is_refused_for_free(demo, tmp_path):
    """Issue 29, finding 6: without a bound K on a record's splits, a record of k splits gets
    δ_k = δ(e^(kε) − 1)/(e^ε − 1), which reaches 1 from k ≈ 27 at ε = 0.5, δ = 1e-6."""
    assert group_delta(1e-6, 0.5, 26) < 1 <= group_delta(1e-6, 0.5, 27)
    db, policy = with_selection(demo, tmp_path, count="split_rows", epsilon=0.5, delta=1e-6)
    with dpsql.connect(db, policy) as con:
        with pytest.raises(dpsql.DpsqlError) as err:
            con.execute(SPLIT_QUERY)
        assert err.value.code == "DP209" and "max_splits" in str(err.value)
        assert con.session.ledger.spent == 0
        con.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county")  # no split measure: k = 1


def test_split_rows_selection_beyond_the_delta_wall_is_refused(demo, tmp_path):
    """The demo's δ wall is 1e-4: at ε = 1, δ = 1e-6, K = 5 gives δ_K = 8.6e-5, K = 6 gives 2.3e-4."""
    assert group_delta(1e-6, 1, 5) < 1e-4 <= group_delta(1e-6, 1, 6)
    db, policy = with_selection(demo, tmp_path, count="split_rows", epsilon=1, delta=1e-6)
    with_max_splits(policy, 6)
    with dpsql.connect(db, policy) as con:
        with pytest.raises(dpsql.DpsqlError) as err:
            con.execute(SPLIT_QUERY)
        assert err.value.code == "DP209" and f"delta_K = {fmt_up(group_delta(1e-6, 1, 6))}" in str(err.value)
        assert con.session.ledger.spent == 0
    policy.write_text(policy.read_text().replace("max_splits = 6", "max_splits = 5"))
    with dpsql.connect(db, policy, _random_source=seeded_random(9)) as con:
        assert con.execute(SPLIT_QUERY).fetchall()


def test_split_rows_selection_states_its_group_privacy(demo, tmp_path):
    """With K = 3 (δ_3 = 1.1e-5 below the wall), the query runs; EXPLAIN, the receipt and P(r)
    state the δ a record of K splits gets, computed here term by term."""
    db, policy = with_selection(demo, tmp_path, count="split_rows", epsilon=1, delta=1e-6)
    with_max_splits(policy, 3)
    want = fmt_up(group_delta(1e-6, 1, 3))  # printed rounded up, as every δ of a guarantee
    with dpsql.connect(db, policy, _random_source=seeded_random(9)) as con:
        ex = con.explain(SPLIT_QUERY)
        assert ex.selection["max_splits"] == 3 and f"delta_K = delta*(e^(K*epsilon)-1)/(e^epsilon-1) = {want}" \
            in ex.selection["group_privacy"]
        cur = con.execute(SPLIT_QUERY)
        assert cur.fetchall()
        assert cur.receipt.selection["group_privacy"] == ex.selection["group_privacy"]
        terms = pf.collect(con.session.ledger.history())
        assert "(e^(|A(r)|·1)−1)/(e^1−1)" in pf.formula(terms)["establishments"]
        total, lines = pf.evaluate(terms, "establishments", {"payann": "25000"})  # 3 splits
        assert total == (Fraction(1, 10) + Fraction(1, 2)) * 9
        assert any(line.get("delta") == want for line in lines)
        total, lines = pf.evaluate(terms, "establishments", {"payann": "2500000"})  # 250 splits, capped at K = 3
        assert total == (Fraction(1, 10) + Fraction(1, 2)) * 9 and any(line.get("delta") == want for line in lines)


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
