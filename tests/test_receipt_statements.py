"""What the receipt, `dpsql ledger` and `\\budget` say on tables with many rows per unit (issue 31).

Three statements were untrue or misleading there; each is checked here against text built in
the test from the policy's numbers:

* the κ > 1 selection's ``rule`` says what ran and why, including where π_opt's mid-point is the
  lower or equal one but its exact table does not fit, so Gaussian thresholding runs;
* in geometric mode the receipt's top-level ``epsilon`` is a (unit, group) record's: beside it,
  ``epsilon_unit_bound`` = κ·K·ε_split + κ·ε_const + ε_sel, E(u)'s bound, in the receipt, its
  footer, EXPLAIN and the ledger's charges — and one row per unit keeps its receipt as it was;
* `dpsql ledger` and ``\budget`` say "(ε, δ)-DP for a record never split"; with charges on a
  many-row table they add what holds for a unit: P(u) ≤ Σ of the charges' per-unit bounds (κ·K²·ρ
  for a sum, κ·ρ for a count of units) plus the ρ spent on other tables, converted.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np

import dpsql
from dpsql.pipeline.format import explanation, footer
from dpsql.privacy.accounting import guarantee
from dpsql.privacy.budget import fmt_up
from dpsql.testing import seeded_random
from repl_harness import ENTER, drive
from test_geometric_many_rows import _geometric
from test_many_rows import KAPPA, K, MANY, _database, _rows
from test_selection_kappa import pi_theorem1  # paper 002 Theorem 1, written from the paper

MAX_TABLE, MAX_EPS = 250_000, 2**16  # π_opt's exact table: steps, and ε per group (docs/partition_selection.md)


def _with_selection(db_policy, epsilon: str, kappa: int, rule: str = "charge"):
    db, policy = db_policy
    text = policy.read_text().replace('epsilon = 1\nkappa_rule = "paper"',
                                      f'epsilon = {epsilon}\ndelta = 1e-6\nkappa_rule = "{rule}"')
    policy.write_text(text.replace("max_groups = 3\n", f"max_groups = {kappa}\n"))
    return db, policy


def _released(db, policy, sql: str, seed: int, explain: bool = False):
    """(the cursor of a fresh release of ``sql``, and its EXPLAIN when asked)."""
    con = dpsql.connect(db, policy, _random_source=seeded_random(seed))
    try:
        con.execute("SET dpsql.reuse = off")
        cur = con.cursor()
        cur.execute(sql)
        cur.fetchall()
        return cur, con.explain(sql) if explain else None
    finally:
        con.close()


def _selection(db, policy, sql="SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop"):
    return _released(db, policy, sql, 4)[0].receipt.selection


def _theorem1_n2(eps: float, delta: float) -> int:
    """Theorem 1's n2: π_opt's exact table has n2 + 3 steps."""
    e = math.exp(eps)
    n1 = 1 + math.floor(math.log((e + 2 * delta - 1) / ((e + 1) * delta)) / eps)
    p1 = delta * (math.exp(n1 * eps) - 1) / (e - 1)
    return n1 + math.floor(math.log(1 + (e - 1) / delta * (1 - p1)) / eps)


def _pi_midpoint(eps: float, delta: float) -> int:
    """The least n with π(n) ≥ 1/2, bisected over Theorem 1 (π is non-decreasing)."""
    lo, hi = 0, _theorem1_n2(eps, delta) + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if pi_theorem1(mid, eps, delta) >= 0.5 else (mid, hi)
    return hi


def _dg_tail(sigma2: float, a: int) -> float:
    """P[Z ≥ a], Z the discrete Gaussian N_Z(σ²), summed from its mass over ±60σ."""
    reach = int(60 * math.sqrt(sigma2)) + 2
    x = np.arange(-reach, reach + 1, dtype=np.float64)
    w = np.exp(-x * x / (2 * sigma2))
    return float(w[x >= a].sum() / w.sum())


def _rule(opt: int, gauss: int, why: str, rule: str = "charge") -> str:
    return ("the lower mid-point, a tie to pi_opt, pi_opt only where its exact table fits: pi_opt at (epsilon/kappa, "
            f"delta/kappa) keeps a group with probability 1/2 from {opt} units, Gaussian thresholding from {gauss}; "
            f"{why}; " + ("both charged at most (epsilon^2/2, delta)" if rule == "charge" else "both (epsilon, delta)-DP"))


def _no_fit(kappa: int, which: str) -> str:
    return (f"{which}, but its exact table at (epsilon/{kappa}, delta/{kappa}) does not fit (more than 250,000 steps, "
            "or epsilon/kappa above 65,536): Gaussian thresholding ran")


def test_rule_when_the_midpoints_tie_but_pi_opts_table_does_not_fit(tmp_path):
    """ε = 200,000, κ = 2: ε/κ = 10⁵ > 2¹⁶, so π_opt's exact table does not run. Its mid-point is 2
    (π(1) = δ/κ < 1/2; π(2) = (1 − e^{−ε/κ})(1 + δ/κ/(e^{ε/κ} − 1)) + … ≥ 1 − e^{−10⁵}), and Gaussian
    thresholding's is 2 too (t ≥ 2 by definition; σ² = κ/ε² rounded up to 2⁻²⁰ is 2⁻²⁰, so P[Z ≥ 1]
    ≤ e^{−2¹⁹}·… is far below the tail 1 − (1 − δ)^{1/2}): a tie, which would go to π_opt."""
    eps, kappa, delta = 200_000, 2, 1e-6
    assert eps / kappa > MAX_EPS and delta / kappa < 0.5
    sel = _selection(*_with_selection(_database(tmp_path, _rows()), str(eps), kappa))
    assert sel["kappa_method"] == "gaussian" and sel["threshold"] == 2
    assert sel["rule"] == _rule(2, 2, _no_fit(kappa, "the mid-points are equal (a tie goes to pi_opt)"))


def test_rule_when_pi_opts_midpoint_is_lower_but_its_table_does_not_fit(tmp_path):
    """ε = 4·10⁻⁵, δ = 10⁻⁶, κ = 2, "charge": π_opt at (ε/2, δ/2) reaches 1/2 before Gaussian
    thresholding does (both mid-points computed here: Theorem 1 bisected, and the discrete Gaussian's
    threshold at σ² = κ/ε² = 1.25·10⁹ from its mass), yet its table would take Theorem 1's n2 >
    250,000 steps: Gaussian thresholding runs, and the rule says so."""
    eps, delta, kappa = 4e-5, 1e-6, 2
    opt = _pi_midpoint(eps / kappa, delta / kappa)
    assert _theorem1_n2(eps / kappa, delta / kappa) + 3 > MAX_TABLE
    sel = _selection(*_with_selection(_database(tmp_path, _rows()), "4e-5", kappa))
    t = sel["threshold"]
    sigma2 = Fraction(kappa) / Fraction(4, 10**5) ** 2
    assert Fraction(sel["sigma2_exact"]) == sigma2  # already a multiple of 2⁻²⁰: not rounded
    p_max = 1 - (1 - delta) ** (1 / kappa)
    tail_t, tail_before = _dg_tail(float(sigma2), t - 1), _dg_tail(float(sigma2), t - 2)
    assert tail_t <= p_max * (1 + 1e-6) and tail_before > p_max * (1 - 1e-6)  # t is the least that passes
    assert opt < t
    assert sel["kappa_method"] == "gaussian"
    assert sel["rule"] == _rule(opt, t, _no_fit(kappa, "pi_opt's mid-point is the lower"))


def test_rule_says_which_ran_where_the_table_fits(tmp_path):
    """ε = 1, δ = 10⁻⁶: κ = 2 under "paper" runs π_opt (its mid-point the lower, Theorem 1 here);
    κ = 8 under "charge" runs Gaussian thresholding (its threshold the lower)."""
    sel = _selection(*_with_selection(_database(tmp_path, _rows(), name="p2"), "1", 2, "paper"))
    opt = _pi_midpoint(1 / 2, 1e-6 / 2)
    assert sel["kappa_method"] == "optimal"
    assert sel["rule"] == _rule(opt, int(sel["rule"].split("Gaussian thresholding from ")[1].split(";")[0]),
                                "pi_opt's mid-point is the lower: pi_opt ran", "paper")
    sel = _selection(*_with_selection(_database(tmp_path, _rows(), name="c8"), "1", 8))
    assert sel["kappa_method"] == "gaussian" and _pi_midpoint(1 / 8, 1e-6 / 8) > sel["threshold"]
    assert sel["rule"] == _rule(_pi_midpoint(1 / 8, 1e-6 / 8), sel["threshold"],
                                "Gaussian thresholding's mid-point is the lower: Gaussian thresholding ran")


# ------------------------------------------------------------------ the receipt's epsilon in geometric mode

E = Fraction(3, 5)  # test_geometric_many_rows's default_epsilon
BOTH = "SELECT shop, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY shop"
PUBLIC = "SELECT region, SUM(amount), COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY region"
#: the receipt's keys before issue 31's statements (a one-row-per-unit table must keep exactly these)
ONE_ROW_KEYS = {"rho", "epsilon", "delta", "mechanism", "table", "noise", "columns", "policy_terms", "charge_id", "budget"}


def _run(db, policy, sql, home):
    cur, ex = _released(db, policy, sql, 3, explain=True)
    return cur.receipt, footer(cur.result), ex


def _ledger_json(policy, home):
    p = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "--json", "--policy", str(policy)], capture_output=True,
                       text=True, env=dict(os.environ, DPSQL_HOME=str(home)), timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_geometric_receipt_states_the_units_bound_beside_the_records_epsilon(tmp_path):
    """SUM, COUNT(*) and COUNT(DISTINCT pid) at ε = 0.6 (ε/3 each): the split term takes 2ε/3, the
    constant term ε/3, and π_opt (κ = 3, "paper") is (1, δ)-DP per unit: E(u) ≤ κ·K·(2ε/3) + κ·(ε/3) + 1
    = 7.6; by public region alone (no selection) 6.6. The query's epsilon stays 0.6."""
    db, policy = _geometric(_database(tmp_path, _rows()))
    for sql, eps_sel in ((BOTH, 1), (PUBLIC, 0)):
        bound = KAPPA * K * (2 * E / 3) + KAPPA * (E / 3) + eps_sel
        receipt, foot, ex = _run(db, policy, sql, tmp_path)
        d = receipt.to_dict()
        assert d["epsilon"] == fmt_up(E) == "0.6"
        assert Fraction(d["epsilon_unit_bound_exact"]) == bound and d["epsilon_unit_bound"] == fmt_up(bound)
        assert receipt.epsilon_unit_bound == fmt_up(bound)
        assert (f"pure epsilon-DP: the noise's epsilon={fmt_up(E)} per (unit, group) record, at most {fmt_up(bound)} "
                "for a unit (E(u))") in foot
        assert ex.to_dict()["epsilon_unit_bound"] == fmt_up(bound)
        assert ("pure epsilon-DP (geometric): each aggregate's epsilon is per (unit, group) record; a unit's E(u) over "
                f"this query is at most {fmt_up(bound)}") in explanation(ex)
    charges = _ledger_json(policy, tmp_path)["charges"]
    assert [c["epsilon_unit_bound"] for c in charges] == [fmt_up(KAPPA * K * 2 * E / 3 + KAPPA * E / 3 + b) for b in (1, 0)]
    assert all(c["epsilon"] == "0.6" for c in charges)


def test_geometric_receipt_says_none_where_no_pure_bound_holds(tmp_path):
    """Without max_splits the split term has no bound; Gaussian thresholding at the charge is zCDP,
    not ε-DP: the unit's bound is "none (…)", never a number."""
    db, policy = _geometric(_database(tmp_path, _rows(), table=MANY.replace(f"\nmax_splits = {K}", ""), name="nok"))
    receipt, foot, _ = _run(db, policy, PUBLIC, tmp_path)
    assert receipt.to_dict()["epsilon_unit_bound"] == "none (no max_splits)"
    assert receipt.to_dict()["epsilon_unit_bound_exact"] == "None"
    assert "at most none (no max_splits) for a unit (E(u))" in foot
    db, policy = _geometric(_database(tmp_path, _rows(), name="charge"), rule="charge")
    receipt, _, _ = _run(db, policy, BOTH, tmp_path)
    assert receipt.epsilon_unit_bound == "none (the selection is Gaussian thresholding at the charge: zCDP, not epsilon-DP)"


def test_one_row_per_unit_keeps_its_receipt(tmp_path):
    """A table without max_groups (one row per unit, checked) in geometric mode: the receipt's keys
    are what they were, its epsilon the query's, and neither the footer nor EXPLAIN speak of units."""
    rows = [(u, "ABCDEF"[u % 6], u % 90, "s1") for u in range(200)]
    db, policy = _geometric(_database(tmp_path, rows, table="", name="one"))
    receipt, foot, ex = _run(db, policy, "SELECT region, SUM(amount), COUNT(*) FROM visits GROUP BY region", tmp_path)
    d = receipt.to_dict()
    assert set(d) - {"notes"} == ONE_ROW_KEYS and d["epsilon"] == "0.6" and receipt.epsilon_unit_bound is None
    assert "pure epsilon" not in foot and "epsilon_unit_bound" not in ex.to_dict() and "pure epsilon" not in explanation(ex)
    assert all("epsilon_unit_bound" not in c for c in _ledger_json(policy, tmp_path)["charges"])


# ------------------------------------------------------------------ `dpsql ledger` and \budget

PEOPLE = """
[tables.people]
privacy_unit = "pid"
[tables.people.measures]
income = { threshold = 100, range = [0, 1000] }
"""


def _two_tables(tmp_path):
    """visits (many rows per unit, κ = 3, K = 5) and people (one row per unit) in one data set."""
    import duckdb

    db, policy = _database(tmp_path, _rows())
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT range::INTEGER AS pid, (range % 500)::BIGINT AS income FROM range(300)")
    con.close()
    policy.write_text(policy.read_text() + PEOPLE)
    return db, policy


def _spend(db, policy, queries):
    con = dpsql.connect(db, policy, _random_source=seeded_random(6))
    try:
        for rho, sql in queries:
            con.execute(f"SET dpsql.rho = {rho}")
            cur = con.cursor()
            cur.execute(sql)
            cur.fetchall()
    finally:
        con.close()


def _ledger_text(policy, home):
    p = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "--policy", str(policy)], capture_output=True,
                       text=True, env=dict(os.environ, DPSQL_HOME=str(home)), timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _record_line(rho: Fraction) -> str:
    g = guarantee(rho, Fraction(0), Fraction(1, 10**6))
    return (f"everything this analyst has spent is ({fmt_up(g.epsilon_tight)}, 1e-06)-DP for a record never split (a "
            "split record r: dpsql policy gives its P(r)): epsilon converts rho by the tight conversion (paper 004 "
            "Lemma 4) at delta'=1e-06, delta adds the delta spent; the analytic bound rho + 2 sqrt(rho ln(1/delta')) "
            f"gives epsilon={fmt_up(g.epsilon_analytic)}")


def _unit_sentence(visits_rho: Fraction, bound: Fraction, other: Fraction, evaluate: str) -> str:
    g = guarantee(bound + other, Fraction(0), Fraction(1, 10**6))
    return ("on visits (many rows per unit) a record is one unit's rows in one group of a query, so that holds for a "
            "unit only if it is in one group of each query and never split; a unit pays P(u) = Σ_g ρ·|A_g(u)|² summed "
            f"over its groups (at most {KAPPA} in each query): at most {float(bound):g} for the {float(visits_rho):g} spent on "
            f"visits, so everything spent is ({fmt_up(g.epsilon_tight)}, 1e-06)-DP for every unit of visits (P(u) ≤ "
            f"{float(bound + other):g}, "
            f"its records in other tables never split); {evaluate} evaluates P(u) for a unit given one value per group")


def test_ledger_states_what_holds_for_a_unit_of_a_many_row_table(tmp_path):
    """ρ = 0.5 on visits, SUM and COUNT(DISTINCT pid) by region (0.25 each): the SUM's per-unit bound
    is κ·K²·0.25 = 18.75, the count's κ·0.25 = 0.75, so P(u) ≤ 19.5 from visits; ρ = 0.25 on people
    adds 0.25 for a record never split there: 19.75, converted at δ' = 10⁻⁶. The record line is unchanged."""
    db, policy = _two_tables(tmp_path)
    _spend(db, policy, [("0.5", "SELECT region, SUM(amount), COUNT(DISTINCT pid) FROM visits GROUP BY region"),
                        ("0.25", "SELECT SUM(income) FROM people")])
    bound = KAPPA * K**2 * Fraction(1, 4) + KAPPA * Fraction(1, 4)
    assert bound == Fraction(39, 2)
    out = _ledger_text(policy, tmp_path)
    assert _record_line(Fraction(3, 4)) + "\n  " + _unit_sentence(Fraction(1, 2), bound, Fraction(1, 4), "dpsql policy") + "\n" in out
    js = _ledger_json(policy, tmp_path)
    assert js["many_rows_per_unit"] == [{"table": "visits", "max_groups": KAPPA, "rho": "0.5", "unit_bound": "19.5"}]


def test_the_dbapi_budget_states_what_holds_for_a_unit(tmp_path):
    """Connection.budget(): the same per-unit sentence as `dpsql ledger`, under ``units``, only when a
    table with many rows per unit was charged (the same spending as the test above)."""
    db, policy = _two_tables(tmp_path)
    with dpsql.connect(db, policy, _random_source=seeded_random(6)) as con:
        con.execute("SET dpsql.rho = 0.25")
        con.cursor().execute("SELECT SUM(income) FROM people").fetchall()
        assert "units" not in con.budget  # one row per unit so far: the record line says it all
        con.execute("SET dpsql.rho = 0.5")
        con.cursor().execute("SELECT region, SUM(amount), COUNT(DISTINCT pid) FROM visits GROUP BY region").fetchall()
        got = con.budget["units"]
    assert got == _unit_sentence(Fraction(1, 2), Fraction(39, 2), Fraction(1, 4), "dpsql policy")


def test_ledger_wording_is_unchanged_for_one_row_per_unit(tmp_path):
    db, policy = _two_tables(tmp_path)
    _spend(db, policy, [("0.25", "SELECT SUM(income) FROM people")])
    out = _ledger_text(policy, tmp_path)
    assert _record_line(Fraction(1, 4)) + "\n" in out and "many rows per unit" not in out
    assert "many_rows_per_unit" not in _ledger_json(policy, tmp_path)


def test_ledger_says_no_bound_without_max_splits(tmp_path):
    db, policy = _database(tmp_path, _rows(), table=MANY.replace(f"\nmax_splits = {K}", ""))
    _spend(db, policy, [("0.5", "SELECT region, SUM(amount) FROM visits GROUP BY region")])
    out = _ledger_text(policy, tmp_path)
    assert ("summed over its groups (at most 3 in each query), with no bound: a query summed a measure of visits "
            "without max_splits; dpsql policy evaluates P(u) for a unit given one value per group\n") in out


def test_repl_budget_states_what_holds_for_a_unit(tmp_path):
    """The same charges through the REPL's \\budget: the record line as before, then the unit's."""
    db, policy = _two_tables(tmp_path)
    con = dpsql.connect(db, policy, _random_source=seeded_random(8))
    try:
        out, err, rc = drive(con, "\\set rho 0.5" + ENTER
                             + "SELECT region, SUM(amount), COUNT(DISTINCT pid) FROM visits GROUP BY region;" + ENTER
                             + "\\set rho 0.25" + ENTER + "SELECT SUM(income) FROM people;" + ENTER + "\\budget" + ENTER
                             + "\\policy" + ENTER + "\\policy visits amount=120,10,400" + ENTER)
    finally:
        con.close()
    assert rc == 0 and err == "", err
    g = guarantee(Fraction(3, 4), Fraction(0), Fraction(1, 10**6))
    assert f"Everything spent so far is ({fmt_up(g.epsilon_tight)}, 1e-06)-DP for a record never split" in out
    sentence = _unit_sentence(Fraction(1, 2), Fraction(39, 2), Fraction(1, 4), "\\policy")
    assert sentence[0].upper() + sentence[1:] + "." in out
    # \\policy: visits' is P(u), summed over the unit's groups; people's P(r) reads as before. For
    # amount = 120, 10, 400 (T = 50, K = 5): |A_g(u)| = 3, 1, 5, so 0.25·(9 + 1 + 25) + 0.25·3 = 9.5
    splits = [min(K, max(1, math.ceil(a / 50))) for a in (120, 10, 400)]
    want = Fraction(1, 4) * sum(a * a for a in splits) + Fraction(1, 4) * 3
    assert "a unit of visits (many rows per unit: a record is its rows in one group of a query):\n  P(u) = Σ_g 0.25·" in out
    assert "a record of people:\n  P(r) = 0.25·|A1(r)|²\n" in out
    assert "A record never split pays the sum of the ρ's." in out and "\\policy visits col=v1,v2,…" in out
    # the hint names this data set's summed measure (people's income), not the demo's columns
    assert "For a hypothetical record: \\policy income=100" in out and "employees" not in out
    assert "for the hypothetical unit, one value per group amount=120,10,400 (never an actual unit):" in out
    assert f"    P(u) = {float(want):g}\n" in out and want == Fraction(19, 2)
