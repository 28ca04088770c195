"""Quantiles against oracles that do not move with the code (issue 35).

The exponential mechanism's distribution is written here a second time, naively, from the
closed forms of Dwork & Roth 2014 (Theorem 3.10) and Smith 2011: utility
u(c) = −|(1 − q)·#{x < c} − q·#{x > c}| in ranks, sensitivity Δu = max(q, 1 − q) (one unit
moves #{x < c} or #{x > c} by one), Pr[c] ∝ exp(ε·u(c) / (2·Δu)). Nothing here calls
``quantile.sensitivity`` or ``quantile.probabilities``. The ε the sampler is *called with* is
recorded by a wrapper around ``quantile.sample`` and compared with ε computed here from the
setting (pure DP) or from ρ (the largest six-decimal ε with ε²/8 ≤ ρ, by integer square root
written here). The receipt's 95 % rank error is compared with Theorem 3.11's closed form. And
the SQL forms: ``ORDER BY m DESC`` asks for 1 − q, q = 0 and q = 1 are refused.
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.backends.duckdb import LOCKDOWN
from dpsql.pipeline.format import footer
from dpsql.policy.model import QuantileGrid
from dpsql.privacy import quantile
from dpsql.privacy.randomness import SeededRandom
from dpsql.testing import seeded_random


def _naive_probabilities(values: list[int], candidates: list[int], q: Fraction, eps: Fraction) -> np.ndarray:
    """Dwork & Roth's exponential mechanism over ``candidates``, in floats, from the definition."""
    qf, ef = float(q), float(eps)
    du = max(qf, 1 - qf)
    u = [-abs((1 - qf) * sum(x < c for x in values) - qf * sum(x > c for x in values)) for c in candidates]
    w = np.array([math.exp(ef * (ui - max(u)) / (2 * du)) for ui in u])
    return w / w.sum()


def _naive_epsilon_for_rho(rho: Fraction) -> Fraction:
    """The largest ε = k / 10^6 with ε²/8 ≤ ρ, by bisection on k (no square root of the code's)."""
    lo, hi = 0, 10**12
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if Fraction(mid, 10**6) ** 2 / 8 <= rho:
            lo = mid
        else:
            hi = mid - 1
    return Fraction(lo, 10**6)


@pytest.mark.parametrize("q,eps", [(Fraction(9, 10), Fraction(1, 4)), (Fraction(1, 4), Fraction(1, 2)),
                                   (Fraction(1, 2), Fraction(1)), (Fraction(3, 100), Fraction(1, 20))])
def test_sampler_draws_the_naive_exponential_mechanism(q, eps):
    """40,000 seeded draws against the naive distribution: each candidate's frequency within
    5 standard errors (+0.002) of its probability. At q = 0.9 a sensitivity of min(q, 1 − q)
    runs the mechanism at 9 × ε: the probabilities then differ by far more than that."""
    grid = QuantileGrid(0, 20, "linear", 21)
    r = random.Random(3)
    values = [min(20, int(r.expovariate(1 / 6))) for _ in range(60)]
    cands = list(grid.candidates())
    a, b = q.numerator, q.denominator
    scores = np.array([[abs((b - a) * sum(x < c for x in values) - a * sum(x > c for x in values)) for c in cands]],
                      dtype=np.int64)  # the integer scores, counted here
    n = 40_000
    draws = quantile.sample(np.repeat(scores, n, axis=0), q, eps, SeededRandom(17))
    freq = np.bincount(draws, minlength=len(cands)) / n
    p = _naive_probabilities(values, cands, q, eps)
    tol = 5 * np.sqrt(p * (1 - p) / n) + 0.002
    assert np.all(np.abs(freq - p) <= tol), (freq.round(3), p.round(3))


def test_the_naive_oracle_tells_sensitivities_apart():
    """The oracle itself: at q = 0.9 the distribution at Δ = max(q, 1 − q) and at Δ = min(...)
    differ by more than the test's tolerance (else the previous test could not fail)."""
    values = list(range(0, 20)) * 3
    cands = list(range(21))
    p = _naive_probabilities(values, cands, Fraction(9, 10), Fraction(1, 4))
    p9 = _naive_probabilities(values, cands, Fraction(9, 10), Fraction(9, 4))  # 9 × ε
    assert np.abs(p - p9).max() > 0.05


@pytest.fixture()
def spy(monkeypatch):
    """Every ε ``quantile.sample`` is called with (it is called through the module)."""
    seen: list[Fraction] = []
    real = quantile.sample

    def recording(score_rows, q, epsilon, rng):
        seen.append(epsilon)
        return real(score_rows, q, epsilon, rng)

    monkeypatch.setattr(quantile, "sample", recording)
    return seen


def test_pure_dp_runs_the_exponential_mechanism_at_the_set_epsilon(demo, spy):
    db, policy = demo
    policy.write_text(policy.read_text().replace('mechanism = "discrete_gaussian"', 'mechanism = "geometric"', 1))
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as con:
        cur = con.cursor()
        cur.execute("SET dpsql.epsilon = 0.5")
        before = con.session.ledger.spent
        cur.execute("SELECT QUANTILE_CONT(age, 0.9) FROM persons")
        cur.fetchall()
        assert con.session.ledger.spent - before == Fraction(1, 8)  # ε²/2 charged
        cur.execute("SET dpsql.epsilon = 0.3")
        cur.execute("SELECT COUNT(*), MEDIAN(age) FROM persons")  # ε split evenly: 0.15 each
        cur.fetchall()
    assert spy == [Fraction(1, 2), Fraction(3, 20)]


def test_zcdp_runs_the_exponential_mechanism_at_the_epsilon_its_rho_covers(demo, spy):
    db, policy = demo
    with dpsql.connect(db, policy, rho="0.2", _random_source=seeded_random(3)) as con:
        before = con.session.ledger.spent
        con.execute("SELECT MEDIAN(age) FROM persons").fetchall()
        con.execute("SELECT COUNT(*), QUANTILE_CONT(age, 0.25) FROM persons").fetchall()  # ρ 0.1 each
        assert con.session.ledger.spent - before == Fraction(2, 5)
    assert spy == [_naive_epsilon_for_rho(Fraction(1, 5)), _naive_epsilon_for_rho(Fraction(1, 10))]
    assert spy == [Fraction("1.264911"), Fraction("0.894427")]  # √1.6, √0.8, to six decimals, down
    assert all(e * e / 8 <= r for e, r in zip(spy, (Fraction(1, 5), Fraction(1, 10))))


@pytest.mark.parametrize("q_text,q", [("0.5", Fraction(1, 2)), ("0.9", Fraction(9, 10)), ("0.05", Fraction(1, 20))])
def test_receipt_states_theorem_3_11s_rank_error_and_prints_it_rounded_up(demo, q_text, q):
    """rank_error95 = 2·max(q, 1 − q)/ε · ln(20 m), m = 101 ages, ε from ρ = 0.1 (computed
    here); the footer's printed bound is at least that (an understated error is a wrong claim)."""
    db, policy = demo
    with dpsql.connect(db, policy, rho="0.1", _random_source=seeded_random(5)) as con:
        result = con.session.execute(f"SELECT QUANTILE_CONT(age, {q_text}) FROM persons")
    eps = float(_naive_epsilon_for_rho(Fraction(1, 10)))
    want = 2 * max(float(q), 1 - float(q)) / eps * math.log(20 * 101)
    (term,) = result.receipt.noise
    assert term.rank_error95 == pytest.approx(want, rel=1e-9)
    printed = re.search(r"is within ([0-9.e+-]+) units of the best", footer(result))
    assert printed and want <= float(printed.group(1)) <= want * 1.01, (printed, want)
    # n values give every candidate a score within max(q, 1 − q)·n <= n of the best: below the
    # bound it is no bound at all, and the footer says so
    assert "a group of fewer values than that has every grid value within the bound" in footer(result)


# ------------------------------------------------------------------------------ the SQL forms
def _exact_quantiles(db) -> dict[str, float]:
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    try:
        (p10, p90), = raw.execute("SELECT quantile_cont(age, 0.1), quantile_cont(age, 0.9) FROM persons").fetchall()
    finally:
        raw.close()
    return {"0.1": p10, "0.9": p90}


def test_percentile_within_group_desc_answers_one_minus_q(demo):
    """PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY age DESC) is PostgreSQL's 10th percentile of
    age: at ρ = 2 (rank error a few units over tens of thousands of people) it lands next to
    the exact 10th percentile, far from the 90th; ASC lands next to the 90th."""
    db, policy = demo
    exact = _exact_quantiles(db)
    assert exact["0.9"] - exact["0.1"] > 20  # the two answers are far apart on the demo
    with dpsql.connect(db, policy, rho="2", _random_source=seeded_random(8)) as con:
        desc = con.execute("SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY age DESC) FROM persons").fetchall()[0][0]
        asc = con.execute("SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY age) FROM persons").fetchall()[0][0]
        disc = con.execute("SELECT PERCENTILE_DISC(0.1) WITHIN GROUP (ORDER BY age DESC) FROM persons").fetchall()[0][0]
    assert abs(desc - exact["0.1"]) <= 2, (desc, exact)
    assert abs(asc - exact["0.9"]) <= 2, (asc, exact)
    assert abs(disc - exact["0.9"]) <= 2, (disc, exact)


@pytest.mark.parametrize("sql", [
    "SELECT QUANTILE_CONT(age, 0) FROM persons", "SELECT QUANTILE_CONT(age, 1) FROM persons",
    "SELECT QUANTILE_CONT(age, 1.0) FROM persons", "SELECT QUANTILE_DISC(age, 0.0) FROM persons",
    "SELECT QUANTILE(age, 0) FROM persons", "SELECT APPROX_QUANTILE(age, 1) FROM persons",
    "SELECT PERCENTILE_CONT(0) WITHIN GROUP (ORDER BY age) FROM persons",
    "SELECT PERCENTILE_DISC(1) WITHIN GROUP (ORDER BY age DESC) FROM persons",
    "SELECT QUANTILE_CONT(age, 1.5) FROM persons", "SELECT QUANTILE_CONT(age, -0.5) FROM persons",
])
def test_the_extremes_and_beyond_are_refused_before_reading(con, sql):
    """q = 0 or 1 has no rank the exponential mechanism can aim at: every candidate below the
    minimum scores like the minimum. Refused with DP109 in phase 1, nothing charged."""
    before = con.session.ledger.spent
    with pytest.raises(dpsql.NotSupportedError) as err:
        con.cursor().execute(sql)
    assert err.value.code == "DP109" and con.session.ledger.spent == before
