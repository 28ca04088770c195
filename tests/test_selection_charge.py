"""Partition selection for units in κ > 1 groups, calibrated to the selection's charge (the
default ``selection.kappa_rule = "charge"``; dpsql/privacy/selection_gauss.py).

Every selection is charged ε²/2 in ρ and δ in δ. Gaussian thresholding is charged κ/(2σ²) and
δ_thr, so σ² = κ/ε² (rounded up) and δ_thr = δ spend exactly that charge. The oracles here are
written from the definitions: the discrete Gaussian's tail and its Rényi divergence summed from
its mass, π_opt's mid-point from paper 002 Theorem 1 (tests/test_selection_kappa.py), the
receipt's numbers recomputed. The paper's calibration (``kappa_rule = "paper"``) is
tests/test_selection_kappa.py's and tests/test_many_rows.py's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.testing import seeded_random
from test_many_rows import HEAVY, HUGE, ROWS_T, _answer, _database, _dgauss_tail
from test_selection_kappa import pi_theorem1

EPS_STUDY = Fraction(158113883, 10**9)  # the nycflights study's selection ε (docs/evaluation.md §5)
KAPPA8 = f"max_groups = 8\nrow_threshold = {ROWS_T}"


def _charge_policy(db_policy):
    """The test_many_rows policy with the default kappa_rule (its POLICY says "paper")."""
    db, policy = db_policy
    policy.write_text(policy.read_text().replace('kappa_rule = "paper"\n', ""))
    return db, policy


def _pi_midpoint(eps: float, delta: float) -> int:
    n = 1
    while pi_theorem1(n, eps, delta) < 0.5:
        n += 1
    return n


@pytest.mark.parametrize("eps, delta, kappa", [(Fraction(1), Fraction(1, 10**6), 8), (EPS_STUDY, Fraction(1, 10**6), 35),
                                               (Fraction(1, 10), Fraction(1, 10**5), 4),
                                               (Fraction(1, 2), Fraction(1, 10**8), 16), (EPS_STUDY, Fraction(1, 10**6), 2)])
def test_charge_calibration_spends_the_selection_charge_and_no_more(eps, delta, kappa):
    """σ² is κ/ε² rounded up to a multiple of 2⁻²⁰, so the charge κ/(2σ²) is ε²/2 or just below
    it, never above; the whole δ goes to the threshold (δ_thr ≤ δ, within a float of it; no δ_noise);
    t is the smallest integer with P[Z ≥ t − 1] ≤ 1 − (1 − δ_thr)^(1/κ) (a group only the added
    unit is in has n = 1), the tail summed here; the rule picks the lower mid-point of π_opt at
    (ε/κ, δ/κ) (Theorem 1, written in the test) and t."""
    from dpsql.privacy.selection_gauss import plan

    how = plan(eps, delta, kappa)
    g = how.gaussian
    assert how.kappa_rule == "charge"
    assert Fraction(kappa) / eps**2 <= g.sigma2 < Fraction(kappa) / eps**2 + Fraction(1, 2**20)
    assert g.charge[0] <= eps**2 / 2 and g.charge[0] > eps**2 / 2 * (1 - Fraction(1, 10**5))
    assert g.noise_delta == 0 and Fraction(g.threshold_delta) <= delta
    assert Fraction(g.threshold_delta) > delta * (1 - Fraction(1, 10**12))
    p_max = 1 - (1 - g.threshold_delta) ** (1 / kappa)
    assert _dgauss_tail(g.sigma2, g.threshold - 1) <= p_max
    assert g.threshold == 2 or _dgauss_tail(g.sigma2, g.threshold - 2) > p_max
    opt = _pi_midpoint(float(eps) / kappa, float(delta) / kappa) if kappa <= 8 else None
    if opt is not None:
        assert how.optimal_midpoint == opt
    assert how.method == ("optimal" if how.optimal_midpoint <= g.threshold else "gaussian")
    assert (how.rho, how.delta) == (g.charge if how.method == "gaussian" else (eps**2 / 2, delta))
    assert how.rho <= eps**2 / 2 and how.delta <= delta


def test_the_charge_is_the_renyi_divergence_of_the_kappa_shifted_discrete_gaussians():
    """The zCDP claim, checked numerically from the mass: for N_Z(σ²) shifted by 1 against N_Z(σ²),
    D_α ≤ α/(2σ²) (Canonne, Kamath & Steinke 2020); a unit shifts ≤ κ independent counts, so the
    divergence is ≤ κ·α/(2σ²) = α·(charge) ≤ α·ε²/2 at the calibrated σ²."""
    from dpsql.privacy.selection_gauss import plan

    for eps, delta, kappa in ((Fraction(1), Fraction(1, 10**6), 8), (EPS_STUDY, Fraction(1, 10**6), 35)):
        g = plan(eps, delta, kappa).gaussian
        s2 = float(g.sigma2)
        reach = int(60 * math.sqrt(s2)) + 5
        x = np.arange(-reach, reach + 1, dtype=np.float64)
        logp = -(x**2) / (2 * s2)
        logq = -((x - 1) ** 2) / (2 * s2)
        norm = np.logaddexp.reduce(logp)  # the same for the shifted one
        for alpha in (1.5, 2.0, 4.0, 16.0):
            d = np.logaddexp.reduce(alpha * (logq - norm) + (1 - alpha) * (logp - norm)) / (alpha - 1)
            assert kappa * d <= alpha * float(eps) ** 2 / 2 * (1 + 1e-9), (kappa, alpha, d)


def test_the_threshold_keeps_a_new_units_groups_with_at_most_delta():
    """A unit new to κ = 3 groups (n = 1 in each) makes some of them appear with frequency ≤ δ_thr
    (seeded, 120,000 units), measured at a δ large enough to see it (δ = 0.2); and groups of n
    around t are kept at P[Z ≥ t − n], the tail summed here."""
    from dpsql.privacy.selection_gauss import plan

    rng, trials = seeded_random(41), 40_000
    big = plan(Fraction(1, 2), Fraction(1, 5), 3).gaussian
    some = big.keep(np.ones(3 * trials, dtype=np.int64), rng).reshape(trials, 3).any(axis=1).mean()
    assert some <= big.threshold_delta + 5 * math.sqrt(big.threshold_delta / trials)
    assert some > big.threshold_delta / 4  # the test can see a threshold one unit too low
    g = plan(Fraction(1), Fraction(1, 10**6), 8).gaussian
    for n in (g.threshold - 6, g.threshold - 1, g.threshold, g.threshold + 4):
        kept = g.keep(np.full(trials, n, dtype=np.int64), rng).mean()
        p = _dgauss_tail(g.sigma2, g.threshold - n)
        assert abs(kept - p) <= 5 * math.sqrt(p * (1 - p) / trials) + 1e-9, (n, kept, p)


def test_the_query_path_runs_and_charges_the_charge_calibration(tmp_path):
    """κ = 8 at ε = 1, δ = 1e-6, no kappa_rule in the policy: the receipt says "charge" and
    Gaussian thresholding; σ² = κ/ε² = 8 exactly (on the grid), t recomputed here, the charge is
    the noise's ρ + κ/(2σ²) = ρ + 1/2 and δ_thr = 1e-6; EXPLAIN states the same threshold. Groups
    of 60 units (t + 43, 15σ above) are all released."""
    rows = [(u, "A", 1, f"s{u % 3}") for u in range(180)]
    db, policy = _charge_policy(_database(tmp_path, rows, table=KAPPA8))
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop ORDER BY shop")
    sel = receipt.selection
    assert sel["kappa_method"] == "gaussian" and sel["kappa_rule"] == "charge"
    assert [a[0] for a in answer] == ["s0", "s1", "s2"]
    sigma2, t = Fraction(sel["sigma2_exact"]), sel["threshold"]
    assert sigma2 == 8 and float(sel["noise_delta"]) == 0.0
    td = float(sel["threshold_delta"])
    assert Fraction(td) <= Fraction(1, 10**6)
    p_max = 1 - (1 - td) ** (1 / 8)
    assert _dgauss_tail(sigma2, t - 1) <= p_max < _dgauss_tail(sigma2, t - 2)
    noise_rho = sum((n.rho for n in receipt.noise), Fraction(0))
    assert receipt.rho == noise_rho + Fraction(1, 2) and receipt.delta == Fraction(td)
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    ex = con.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop")
    con.close()
    assert ex.selection["midpoint"] == t and ex.rho == receipt.rho and ex.delta == receipt.delta


def test_the_query_path_keeps_groups_at_the_stated_rate(tmp_path):
    """Groups of n units around the receipt's threshold t, released over 10 seeded queries (400
    draws per n): the rate is P[Z ≥ t − n] for N_Z(σ²) of the receipt, summed here, within 5
    standard errors — the selection that runs is the one charged."""
    probe = _charge_policy(_database(tmp_path, [(0, "A", 1, "x")], table=KAPPA8, name="probe"))
    con0 = dpsql.connect(*probe)
    t = con0.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop").selection["threshold"]
    con0.close()
    sizes = [t - 5, t - 2, t, t + 2, t + 5]
    db, policy = _charge_policy(_database(tmp_path, [], table=KAPPA8))
    raw = duckdb.connect(str(db))
    for k, n in enumerate(sizes):
        raw.execute(f"INSERT INTO visits SELECT {k * 10**6} + i * {n} + j, 'A', 1, 'n{n}_' || i "
                    f"FROM range(40) a(i), range({n}) b(j)")
    raw.close()
    con = dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(9))
    cur = con.cursor()
    kept = {n: 0 for n in sizes}
    for _ in range(10):
        for (shop, _) in cur.execute("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop").fetchall():
            kept[int(shop[1:shop.index("_")])] += 1
        assert cur.receipt.selection["threshold"] == t
        sigma2 = Fraction(cur.receipt.selection["sigma2_exact"])
    con.close()
    for n in sizes:
        p = _dgauss_tail(sigma2, t - n)
        assert abs(kept[n] / 400 - p) <= 5 * math.sqrt(p * (1 - p) / 400), (n, kept[n], p)


def test_whole_unit_neighbours_keep_the_outcome_kind(tmp_path):
    """κ = 8, the default calibration: a unit in 10⁵ groups of a private key, a unit with 10⁵ rows
    and huge amounts, NULL units; removing either whole unit keeps the outcome's kind (answered,
    same columns, the same three groups released), by a private key alone and mixed with a public one."""
    base = ("SELECT u, 'A', 1, 's' || (u % 3) FROM range(300) t(u)",
            "SELECT NULL, 'A', 10, 's0' FROM range(1000)")
    heavy = f"SELECT {HEAVY}, 'B', {HUGE}, 's0' FROM range(100000)"
    wide = f"SELECT {HEAVY + 1}, 'C', 1, 'z' || g FROM range(100000) t(g)"
    queries = ("SELECT shop, COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits GROUP BY shop",
               "SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop")
    outcomes = []
    for name, parts in (("all", (*base, heavy, wide)), ("no_heavy", (*base, wide)), ("no_wide", (*base, heavy))):
        db, policy = _charge_policy(_database(tmp_path, [], table=KAPPA8, name=name))
        con = duckdb.connect(str(db))
        for part in parts:
            con.execute(f"INSERT INTO visits {part}")
        con.close()
        kinds = []
        for q in queries:
            answer, receipt = _answer(db, policy, q)
            assert receipt.selection["kappa_method"] == "gaussian" and receipt.selection["kappa_rule"] == "charge"
            shop = 0 if q.startswith("SELECT shop") else 1
            kinds.append((sorted({r[shop] for r in answer}), len(answer), len(answer[0])))
        outcomes.append(kinds)
    assert outcomes[0] == outcomes[1] == outcomes[2] == [(["s0", "s1", "s2"], 3, 4), (["s0", "s1", "s2"], 30, 3)]


def test_the_policy_reads_kappa_rule_and_refuses_another(tmp_path):
    db, policy = _database(tmp_path, [(1, "A", 1, "s")], table=KAPPA8)
    from dpsql.errors import DpsqlError
    from dpsql.policy.loader import load_policy

    assert load_policy(policy).selection.kappa_rule == "paper"
    assert load_policy(_charge_policy((db, policy))[1]).selection.kappa_rule == "charge"
    policy.write_text(policy.read_text().replace("[selection]\n", '[selection]\nkappa_rule = "fast"\n'))
    with pytest.raises(DpsqlError, match="kappa_rule"):
        load_policy(policy)
