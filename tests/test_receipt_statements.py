"""What the receipt, `dpsql ledger` and `\\budget` say on tables with many rows per unit (issue 31).

Three statements were untrue or misleading there; each is checked here against text built in
the test from the policy's numbers:

* the κ > 1 selection's ``rule`` says what ran and why, including where π_opt's mid-point is the
  lower or equal one but its exact table does not fit, so Gaussian thresholding runs;
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import dpsql
from dpsql.testing import seeded_random
from test_many_rows import _database, _rows
from test_selection_kappa import pi_theorem1  # paper 002 Theorem 1, written from the paper

MAX_TABLE, MAX_EPS = 250_000, 2**16  # π_opt's exact table: steps, and ε per group (docs/partition_selection.md)


def _with_selection(db_policy, epsilon: str, kappa: int, rule: str = "charge"):
    db, policy = db_policy
    text = policy.read_text().replace('epsilon = 1\nkappa_rule = "paper"',
                                      f'epsilon = {epsilon}\ndelta = 1e-6\nkappa_rule = "{rule}"')
    policy.write_text(text.replace("max_groups = 3\n", f"max_groups = {kappa}\n"))
    return db, policy


def _selection(db, policy, sql="SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop"):
    con = dpsql.connect(db, policy, _random_source=seeded_random(4))
    try:
        con.execute("SET dpsql.reuse = off")
        cur = con.cursor()
        cur.execute(sql)
        cur.fetchall()
        return cur.receipt.selection
    finally:
        con.close()


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
