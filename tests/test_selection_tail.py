"""Phase 1 of a κ > 1 selection is bounded in time and memory for every policy (issue 31/34, task P).

Before: ``selection_gauss.tail`` summed a discrete Gaussian over ±60σ (σ² = κ/ε²: ε = 1e-6, κ = 1000
asked 12.6 GiB), the threshold search called it once per integer between its guess and t (σ = 2,828
took 38 s), and π_opt's mid-point built an array of n2 ≈ κ·ln(1/δ)/ε floats; a κ = 1 selection at
ε = 1e-6 failed in the release, after the rows were read (DP901, charged). Now the tail is bounded
by integrals past a reach of 2¹⁸, t is bisected, the mid-point bisected past 2²⁰ counts, and what
cannot run is refused in phase 1 (DP213, free). The oracles: the discrete Gaussian's mass summed in
the test (log-sum-exp over ±(60σ + |a|)), and the former linear search written here."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def _naive_tail(s2: float, a: int) -> float:
    """P[Z ≥ a], Z ~ N_Z(s2): the mass summed over ±(60σ + |a|) in log space."""
    reach = int(60 * math.sqrt(s2)) + abs(a) + 5
    x = np.arange(-reach, reach + 1, dtype=np.float64)
    lw = -x * x / (2 * s2)
    return math.exp(np.logaddexp.reduce(lw[x >= a]) - np.logaddexp.reduce(lw))


def _old_tail(sigma2: Fraction, a: int) -> float:
    """The former ``tail`` (term by term to 60σ), for the grid of normal settings."""
    s2 = float(sigma2)
    reach = int(60 * math.sqrt(s2)) + 2
    lo = max(a, -reach)
    if lo > reach:
        return 0.0
    x = np.arange(lo, reach + 1, dtype=np.float64)
    num = math.fsum(np.exp(-x * x / (2 * s2)).tolist())
    y = np.arange(1, reach + 1, dtype=np.float64)
    den = 1.0 + 2.0 * math.fsum(np.exp(-y * y / (2 * s2)).tolist())
    return min(1.0, num / den * (1 + 1e-9))


def _is_old_threshold(t: int, sigma2: Fraction, kappa: int, threshold_delta: float) -> bool:
    """Whether t is what the former search returned: the smallest t ≥ 2 with tail(t − 1) ≤
    1 − (1 − δ_thr)^{1/κ} by the former tail (non-increasing in a: two evaluations decide it)."""
    p_max = -math.expm1(math.log1p(-threshold_delta) / kappa) * (1 - 1e-9)
    return _old_tail(sigma2, t - 1) <= p_max and (t == 2 or _old_tail(sigma2, t - 2) > p_max)


GRID = [(eps, delta, kappa) for eps in (Fraction(1, 20), Fraction(158113883, 10**9), Fraction(1, 2), Fraction(1), Fraction(2))
        for delta in (Fraction(1, 10**5), Fraction(1, 10**6), Fraction(1, 10**9)) for kappa in (2, 8, 35, 100)]


@pytest.mark.parametrize("rule", ["charge", "paper"])
def test_the_threshold_is_unchanged_on_a_grid_of_normal_settings(rule):
    """On 60 (ε, δ, κ) of normal policies the bisected t equals the former linear search's from the
    former tail, and the
    mid-point of π_opt at (ε/κ, δ/κ) equals a scan of Theorem 1's π over every n."""
    from dpsql.privacy.pi_opt import _anchors, _pi_float
    from dpsql.privacy.selection_gauss import plan
    from dpsql.privacy.selection_numbers import _float_down

    for eps, delta, kappa in GRID:
        how = plan(eps, delta, kappa, rule)
        g = how.gaussian
        assert _is_old_threshold(g.threshold, g.sigma2, kappa, g.threshold_delta), (eps, delta, kappa, rule)
        e, d = _float_down(eps / kappa), _float_down(delta / kappa)
        ns = np.arange(0, _anchors(e, d)[2] + 3, dtype=np.int64)
        assert how.optimal_midpoint == int(np.argmax(_pi_float(ns, e, d) >= 0.5))


def test_the_integral_bound_is_sound_and_within_1e_5_of_the_sum():
    """Past the reach of 2¹⁸ (σ > 4,369) the tail is an integral bound: never below the summed mass,
    within a relative 10⁻⁵ of it where thresholds lie (1.5σ-30σ) and 10⁻³ anywhere; t found with it
    is the summed tail's own (checked by the sum at t − 1 and t − 2)."""
    from dpsql.privacy.selection_gauss import _at, tail

    for s in (4400.0, 7000.0, 30000.0):
        s2 = Fraction(s * s)
        for z in (-3, -1, -0.01, 0.01, 0.5, 1, 1.5, 2, 4, 5, 6, 8, 20, 30):
            a = int(z * s)
            exact, bound = _naive_tail(s * s, a), tail(s2, a)
            assert exact <= bound <= exact * (1 + (1e-5 if z >= 1.5 else 1e-3)), (s, a, exact, bound)
        g = _at(s2, 8, 0.0, 1e-6, 2)
        p_max = -math.expm1(math.log1p(-1e-6) / 8)
        assert _naive_tail(s * s, g.threshold - 1) <= p_max < _naive_tail(s * s, g.threshold - 2)


def test_the_midpoint_bisection_equals_the_scan_past_its_cap():
    """ε/κ = 5e-6 and 3e-6: n2 is past the 2²⁰ counts scanned, so the mid-point is bisected; a
    scan over every n (done here, up to ~7·10⁶ counts) finds the same n."""
    from dpsql.privacy.pi_opt import _anchors, _pi_float
    from dpsql.privacy.selection_analysis import _MAX_SCAN, midpoint
    from dpsql.privacy.selection_numbers import _float_down

    for eps, delta in ((Fraction(5, 10**6), Fraction(1, 10**7)), (Fraction(3, 10**6), Fraction(1, 10**9))):
        e, d = _float_down(eps), _float_down(delta)
        n2 = _anchors(e, d)[2]
        assert n2 + 3 > _MAX_SCAN
        ns = np.arange(0, n2 + 3, dtype=np.int64)
        for level in (0.05, 0.5, 0.95):
            assert midpoint(eps, delta, level=level) == int(np.argmax(_pi_float(ns, e, d) >= level))


_CHILD = textwrap.dedent("""
    import resource, sys, json
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # 3 GiB: the former code asked 12.6
    sys.path.insert(0, {tests!r})
    import dpsql
    from test_many_rows import ROWS_T, _database
    from dpsql.testing import seeded_random
    from pathlib import Path
    eps, delta, kappa, rule, method = {args!r}
    db, policy = _database(Path({tmp!r}), [(u, "A", 1, "s" + str(u % 3)) for u in range(300)],
                           table="max_groups = " + str(kappa) + "\\nrow_threshold = " + str(ROWS_T))
    text = policy.read_text().replace('kappa_rule = "paper"', 'kappa_rule = "' + rule + '"\\nmethod = "' + method + '"')
    policy.write_text(text.replace("[selection]\\nepsilon = 1\\n", "[selection]\\nepsilon = " + eps + "\\ndelta = " + delta + "\\n"))
    con = dpsql.connect(db, policy, _random_source=seeded_random(3))
    cur = con.cursor()
    try:
        cur.execute("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop")
        out = {{"kind": "answer", "rows": len(cur.fetchall()), "method": cur.receipt.selection.get("kappa_method")}}
    except dpsql.Error as e:
        out = {{"kind": getattr(e, "code", "?"), "text": str(e)}}
    out["charges"] = len(con.session.ledger.history())
    ex = None
    try:
        ex = con.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop").selection.get("midpoint")
    except dpsql.Error as e:
        ex = getattr(e, "code", "?")
    out["explain"] = ex
    con.close()
    print(json.dumps(out))
""")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("eps, delta, kappa, rule, kind, method", [(*c, "optimal")[:6] for c in [
    ("1e-6", "1e-6", 1000, "charge", "answer"),  # σ ≈ 3.2·10⁷: 12.6 GiB before
    ("1e-6", "1e-6", 1000, "paper", "answer"),  # 3.6 GiB before
    ("1e-5", "1e-6", 8, "charge", "answer"),  # σ ≈ 2.8·10⁵: minutes of linear search before
    ("1e-6", "1e-6", 1, "charge", "DP213"),  # π_opt's table: DP901 after the rows, charged, before
    ("1e-18", "1e-6", 1000, "charge", "DP213"),  # σ ≥ 2⁵⁷
    ("1e-12", "1e-6", 1000000000000, "charge", "DP213"),  # huge κ: σ = 10¹⁸
    ("0.5", "1e-300", 1000, "charge", "DP213"),  # a per-group tail below 1e-250
    ("1", "1e-200", 4611686018427387904, "charge", "answer"),  # κ = 2⁶², σ = 2³¹: π_opt's n1 is past 2⁶² before
    # κ = 1, the truncated geometric: redraws ~2·10⁶ times per group at ε = 1e-12 (hung), and a scale
    # 1/ε of more than 62 bits failed in the sampler after the rows (DP901, charged)
    ("1e-12", "1e-6", 1, "charge", "DP213", "truncated_geometric"),
    ("1.2345678901234567e-5", "1e-6", 1, "charge", "DP213", "truncated_geometric"),
    ("1e-18", "1e-6", 1, "charge", "DP213", "truncated_geometric"),
    ("1.2345678901234567", "1e-6", 1, "charge", "answer", "truncated_geometric"),  # k = 11: all three kept
    # ε too large: e^ε overflowed in phase 1 (decimal.Overflow, OverflowError: foreign exceptions)
    ("1e15", "1e-6", 1, "charge", "DP213"),
    ("1e15", "1e-6", 1000, "charge", "DP213"),
    ("1e6", "1e-6", 1000, "paper", "DP213"),
    ("1e15", "1e-6", 1, "charge", "DP213", "truncated_geometric"),
]])
def test_hostile_selection_policies_are_planned_in_bounded_time_and_memory(tmp_path, eps, delta, kappa, rule, kind, method):
    """Each policy in a child process limited to 3 GiB of address space and 120 s: the query is
    answered (three groups of 100 units: below the thresholds of the tiny ε, none released) or refused
    in phase 1 with DP213, and a refusal charges nothing; EXPLAIN agrees."""
    code = _CHILD.format(tests=str(HERE), args=(eps, delta, kappa, rule, method), tmp=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=110, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["kind"] == kind, out
    if kind == "answer":
        assert out["charges"] == 1 and isinstance(out["explain"], int)
        assert out["rows"] == (3 if method == "truncated_geometric" else 0)  # groups of 100 units: kept at ε = 1.23
    else:
        assert out["charges"] == 0 and out["explain"] == "DP213" and "nothing was read or charged" in out["text"]


def test_the_analysis_midpoints_bisect_to_the_scan():
    """The same pattern in the analysis (Figure 4's comparison, the benchmarks): the continuous
    Gaussian thresholding's mid-point scanned threshold + 40σ counts, the truncated geometric's
    2k + 3 ≈ 2 ln(1/δ)/ε. Both now bisect; a scan here finds the same n at three levels."""
    from dpsql.privacy.selection_analysis import _MAX_SCAN, midpoint
    from dpsql.privacy.selection_kappa import gaussian_thresholding
    from dpsql.privacy.tsgd import tsgd_release_probability, tsgd_threshold

    for eps, delta, kappa in ((Fraction(1), Fraction(1, 10**5), 4), (Fraction(1, 10), Fraction(1, 10**6), 35),
                              (Fraction(1, 100), Fraction(1, 10**6), 100)):
        g = gaussian_thresholding(eps, delta, kappa)
        p = g.keep_probability(np.arange(0, math.ceil(g.threshold + 40.0 * g.sigma) + 2, dtype=np.int64))
        for level in (0.05, 0.5, 0.95):
            assert g.midpoint(level) == int(np.argmax(p >= level)), (eps, delta, kappa, level)
    eps, delta = Fraction(1, 10**5), Fraction(1, 10**9)
    k = tsgd_threshold(eps, delta)
    assert 2 * k + 3 > _MAX_SCAN
    p = tsgd_release_probability(np.arange(0, 2 * k + 3, dtype=np.int64), eps, delta)
    for level in (0.05, 0.5, 0.95):
        assert midpoint(eps, delta, "truncated_geometric", level=level) == int(np.argmax(p >= level))
