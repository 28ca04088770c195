"""The pure-ε (geometric) mode on a table with many rows per unit states a per-unit bound E(u).

The ledger keeps ρ = ε²/2 and P(u) = Σ_g ρ·|A_g(u)|² (zCDP). The pure-ε statement per unit is
E(u) = Σ_g ε_split·|A_g(u)| + ε_const·(groups of u) + ε_sel (docs/privacy.md, "Pure ε per unit"),
at most κ·K·ε_split + κ·ε_const + ε_sel. The oracles are written here: the query's ε is split
equally over its n noisy aggregates (ε/n each), the split term takes the sums and row counts, the
constant term counts of units, COUNT(DISTINCT col) and quantiles; and a whole-unit neighbour measured
through the engine (noise ≈ 0 at a huge ε) attains the bound exactly."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction

import pytest

import dpsql
from dpsql.pipeline.format import explanation
from dpsql.privacy.budget import fmt_up as _fmt_up
from dpsql.testing import seeded_random
from test_many_rows import AMOUNT_T, HEAVY, K, KAPPA, REGIONS, ROWS_T, _database, _rows

E = Fraction(3, 5)  # the policy's default_epsilon


def _geometric(db_policy, epsilon: str = "0.6", rule: str = "paper"):
    db, policy = db_policy
    text = policy.read_text().replace("[budget]\ndefault_rho = 1e12\n", f"[budget]\ndefault_epsilon = {epsilon}\n")
    text = text.replace('kappa_rule = "paper"', f'kappa_rule = "{rule}"')
    policy.write_text(text + '\n[noise]\nmechanism = "geometric"\n')
    return db, policy


def _terms(db, policy, sql):
    con = dpsql.connect(db, policy, _random_source=seeded_random(2))
    try:
        con.execute("SET dpsql.reuse = off")
        cur = con.cursor()
        cur.execute(sql)
        cur.fetchall()
        ex = con.explain(sql)
        return cur.receipt.policy_terms, ex.policy_terms, explanation(ex)
    finally:
        con.close()


def _bounds(terms):
    return {t["scale"]: t.get("unit_epsilon_bound_exact") for t in terms}


# (query, n aggregates, of which split, selection ε): E(u)'s bound per term, from the closed form
CASES = [
    ("SELECT region, SUM(amount) FROM visits GROUP BY region", 1, 1, None),
    ("SELECT region, COUNT(DISTINCT pid) FROM visits GROUP BY region", 1, 0, None),
    ("SELECT region, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY region", 3, 2, None),
    ("SELECT region, MEDIAN(amount) FROM visits GROUP BY region", 1, 0, None),
    ("SELECT region, COUNT(DISTINCT shop) FROM visits GROUP BY region", 1, 0, None),
    ("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop", 1, 0, Fraction(1)),  # π_opt at κ = 3: (1, δ)
]


@pytest.mark.parametrize("sql, n, n_split, eps_sel", CASES)
def test_the_receipt_and_explain_state_e_of_u_by_the_closed_form(tmp_path, sql, n, n_split, eps_sel):
    """Split term: κ·K·(n_split·ε/n); constant term: κ·(n_const·ε/n) + ε_sel; the receipt and EXPLAIN
    agree, and EXPLAIN's text says it is per unit and that the query's ε is per (unit, group)."""
    db, policy = _geometric(_database(tmp_path, _rows()))
    receipt, explained, shown = _terms(db, policy, sql)
    want = {}
    if n_split:
        want["|A(r)|^2"] = str(KAPPA * K * Fraction(n_split) * E / n)
    if n - n_split or eps_sel:
        want["1"] = str(KAPPA * Fraction(n - n_split) * E / n + (eps_sel or 0))
    assert _bounds(receipt) == want
    assert _bounds(explained) == want
    for bound in want.values():
        assert "pure epsilon-DP per unit (geometric)" in shown and "(the query's epsilon is per (unit, group) record)" in shown
        assert f"at most {_fmt_up(Fraction(bound))}" in shown


def test_no_pure_statement_where_none_holds(tmp_path):
    """Gaussian noise states no E(u); Gaussian thresholding at the charge (zCDP, not (ε, δ)-DP) leaves
    the constant term without one ("none"), while the split term of the same query keeps its own."""
    db, policy = _database(tmp_path, _rows())
    receipt, _, _ = _terms(db, policy, "SELECT region, SUM(amount), COUNT(DISTINCT pid) FROM visits GROUP BY region")
    assert all("unit_epsilon_bound" not in t for t in receipt)
    db, policy = _geometric(_database(tmp_path, _rows(), name="charge"), rule="charge")
    receipt, _, _ = _terms(db, policy, "SELECT shop, SUM(amount), COUNT(DISTINCT pid) FROM visits GROUP BY shop")
    assert _bounds(receipt) == {"|A(r)|^2": str(KAPPA * K * E / 2), "1": "None"}


def _exact_cells(tmp_path, name, rows):
    """The released cells at ε = 10⁷ (b ≤ 1.5·10⁻⁵: every noise draw is 0 but with probability
    < 10⁻²⁰⁰⁰⁰), i.e. the bounded exact values; the same seed draws the same salt on both sides."""
    db, policy = _geometric(_database(tmp_path, rows, name=name), epsilon="1e7")
    con = dpsql.connect(db, policy, _random_source=seeded_random(5))
    cur = con.cursor()
    cur.execute("SELECT region, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY region ORDER BY region")
    out = {r[0]: r[1:] for r in cur.fetchall()}
    con.close()
    return out


def test_a_whole_unit_neighbour_attains_the_bound(tmp_path):
    """The heavy unit (40 rows of 700 in each of the ten regions) removed: in each of its κ kept
    regions its SUM moves by K·T and its row count by K·R, its unit count by 1; the privacy loss of
    the geometric cells at the policy's ε, Σ_g Σ_i ε_i·|shift|/Δ_i, is exactly the stated bound
    κ·K·(2ε/3) + κ·(ε/3) = 11ε, and no other region moves."""
    rows = _rows()
    with_u, without_u = _exact_cells(tmp_path, "with", rows), _exact_cells(tmp_path, "without", [r for r in rows if r[0] != HEAVY])
    eps_i = E / 3
    loss = Fraction(0)
    moved = 0
    for region in REGIONS:
        shifts = [abs(a - b) for a, b in zip(with_u[region], without_u[region])]
        moved += any(shifts)
        assert shifts in ([0, 0, 0], [K * AMOUNT_T, K * ROWS_T, 1]), (region, shifts)
        loss += eps_i * (Fraction(shifts[0], AMOUNT_T) + Fraction(shifts[1], ROWS_T) + shifts[2])
    assert moved == KAPPA
    db, policy = _geometric(_database(tmp_path, rows, name="stated"))
    receipt, _, _ = _terms(db, policy, "SELECT region, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY region")
    assert loss == sum(Fraction(t["unit_epsilon_bound_exact"]) for t in receipt) == 11 * E


def test_dpsql_policy_evaluates_e_of_u_for_a_unit(tmp_path):
    """`dpsql policy` after one query (SUM, COUNT(*), COUNT(DISTINCT pid) at ε = 0.6): the formula
    states E(u), and for amount=120,10,400 rows=2,9,1 (|A_g(u)| = 3, 3, 5 here: ⌈120/50⌉, ⌈9/4⌉,
    min(5, ⌈400/50⌉)) E(u) = 0.4·11 + 0.2·3 = 5."""
    db, policy = _geometric(_database(tmp_path, _rows()))
    _terms(db, policy, "SELECT region, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY region")
    splits = [min(K, max(1, math.ceil(a / AMOUNT_T), math.ceil(r / ROWS_T))) for a, r in ((120, 2), (10, 9), (400, 1))]
    assert splits == [3, 3, 5]
    want = E * 2 / 3 * sum(splits) + E / 3 * 3
    env = dict(os.environ, DPSQL_HOME=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "dpsql", "policy", "--policy", str(policy), "amount=120,10,400", "rows=2,9,1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "pure ε-DP per unit (geometric): E(u) = Σ_g 0.4·|A_g(u)|  +  0.2·(groups of u)" in p.stdout
    assert f"pure epsilon-DP (geometric): E(u) = {_fmt_up(want)}" in p.stdout and want == 5


def test_a_selection_alone_states_its_epsilon(tmp_path):
    """SELECT DISTINCT of a private key draws no noise: E(u) is the selection's ε alone (π_opt at
    κ = 3, ε = 1), and `dpsql policy`'s formula still states E(u) for the table."""
    db, policy = _geometric(_database(tmp_path, _rows()))
    receipt, _, _ = _terms(db, policy, "SELECT DISTINCT shop FROM visits")
    assert _bounds(receipt) == {"1": "1"}
    from dpsql.privacy import policy_function as pf

    con = dpsql.connect(db, policy)
    formula = pf.formula(pf.collect(con.session.ledger.history()))
    con.close()
    assert formula["visits"].endswith("E(u) = 0·(groups of u) + 1")
