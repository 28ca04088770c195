"""DP quantiles (docs/sql.md "Quantiles", dpsql/privacy/quantile.py): the exponential mechanism
over a public grid. Its sampler against the mechanism's exact distribution, its error against
the accuracy it states, the exact query's bins against a direct count, and the whole path on
the demo (charge in the ledger, receipt, refusals before any row is read)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.pipeline.format import footer as fmt_footer
from dpsql.backends.duckdb import LOCKDOWN
from dpsql.errors import BudgetValueError, PolicyFileError
from dpsql.policy.model import QuantileGrid
from dpsql.policy.loader import load_policy
from dpsql.privacy import quantile
from dpsql.privacy.randomness import SeededRandom
from dpsql.sql.quantiles import histogram_sql
from dpsql.testing import seeded_random


def _hist(values: list[int], grid: QuantileGrid) -> dict[int, int]:
    """The exact query's per-group histogram, as DuckDB computes it from the SQL dpsql runs."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (v BIGINT)")
    con.executemany("INSERT INTO t VALUES (?)", [[v] for v in values])
    (h,), = con.execute(f"SELECT {histogram_sql('v', grid.bounds())} FROM t").fetchall()
    con.close()
    return h or {}


def _em_probabilities(score_row, q: Fraction, eps: Fraction) -> np.ndarray:
    """The mechanism's distribution written here, not read from quantile.py: ∝ exp(−ε s / 2Δ)
    with Δ = max(a, b − a) for q = a/b (one unit moves #{x < c} or #{x > c} by one)."""
    s = np.array(score_row, dtype=float)
    w = np.exp(-float(eps) * (s - s.min()) / (2 * max(q.numerator, q.denominator - q.numerator)))
    return w / w.sum()


def _direct_scores(values: list[int | None], grid: QuantileGrid, q: Fraction) -> list[int]:
    a, b = q.numerator, q.denominator
    xs = [v for v in values if v is not None]
    return [abs((b - a) * sum(x < c for x in xs) - a * sum(x > c for x in xs)) for c in grid.candidates()]


@pytest.mark.parametrize("grid", [QuantileGrid(0, 100, "linear", 11), QuantileGrid(0, 10**6, "log", 40),
                                  QuantileGrid(-50, 50, "linear", 7)])
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(99, 100)])
def test_scores_from_the_exact_query_equal_a_direct_count(grid, q):
    """HISTOGRAM over the grid's bounds gives #{x < c} and #{x > c} for every candidate, with
    values on, between, below and above the candidates, and NULLs (not counted)."""
    r = random.Random(7)
    cands = grid.candidates()
    values = [r.choice(cands) + r.choice([-1, 0, 0, 1]) for _ in range(300)]
    values += [grid.lo - 10**9, grid.hi + 10**9, -2**63, 2**63 - 1]
    got = quantile.scores([_hist(values, grid)], grid, q)[0].tolist()
    assert got == _direct_scores(values, grid, q)
    assert quantile.scores([None], grid, q)[0].tolist() == [0] * len(cands)  # an empty group


@pytest.mark.parametrize("q,eps", [(Fraction(1, 2), Fraction(1)), (Fraction(9, 10), Fraction(1, 4)),
                                   (Fraction(1, 4), Fraction(3))])
def test_sampler_draws_the_exponential_mechanisms_distribution(q, eps):
    """40,000 draws (seeded) against the exact probabilities ∝ exp(−ε s / 2Δ): every
    candidate's frequency within 5 standard errors (+0.001) of its probability."""
    grid = QuantileGrid(0, 20, "linear", 21)
    r = random.Random(3)
    values = [min(20, int(r.expovariate(1 / 6))) for _ in range(40)]
    s = quantile.scores([_hist(values, grid)], grid, q)
    n = 40_000
    draws = quantile.sample(np.repeat(s, n, axis=0), q, eps, SeededRandom(11))
    freq = np.bincount(draws, minlength=len(grid.candidates())) / n
    p = _em_probabilities(s[0], q, eps)
    tol = 5 * np.sqrt(p * (1 - p) / n) + 0.001
    assert np.all(np.abs(freq - p) <= tol), (freq, p)


def test_groups_are_drawn_independently_each_from_its_own_scores():
    """Rows of very different concentration sampled together: each row's draws follow its own
    distribution (the batching across rows changes nothing)."""
    grid = QuantileGrid(0, 9, "linear", 10)
    q, eps = Fraction(1, 2), Fraction(2)
    rows = quantile.scores([_hist([3] * 50, grid), _hist([8] * 2, grid), None], grid, q)
    n = 20_000
    draws = np.array(quantile.sample(np.repeat(rows, n, axis=0), q, eps, SeededRandom(5))).reshape(3, n)
    for i in range(3):
        freq = np.bincount(draws[i], minlength=10) / n
        p = _em_probabilities(rows[i], q, eps)
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 0.001), (i, freq, p)


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(9, 10)])
def test_rank_error_is_within_the_stated_95_percent_bound(q):
    """On 5,000 skewed values and a 1,000-point log grid, the released value's rank error (how
    far its score is from the best candidate's, in units) stays within rank_error95 in at least
    95% of 2,000 seeded draws: the receipt's accuracy statement holds."""
    grid = QuantileGrid(0, 10**8, "log", 1000)
    r = random.Random(1)
    values = [int(math.exp(r.gauss(4.6, 2))) for _ in range(5000)]
    eps = quantile.epsilon_for_rho(Fraction(1, 10))
    s = quantile.scores([_hist(values, grid)], grid, q)
    draws = quantile.sample(np.repeat(s, 2000, axis=0), q, eps, SeededRandom(2))
    err = (s[0][draws] - s[0].min()) / q.denominator  # in units of rank
    bound = quantile.rank_error95(q, eps, len(grid.candidates()))
    assert np.mean(err <= bound) >= 0.95, (np.percentile(err, 95), bound)
    # and the released values sit where the quantile is: within the values of ranks q·n ± bound
    xs = sorted(values)
    lo = xs[max(0, int(q * len(xs) - bound) - 1)]
    hi = xs[min(len(xs) - 1, int(q * len(xs) + bound) + 1)]
    cands = np.array(grid.candidates())
    # a grid value is "there" when it lies between the neighbours of [lo, hi] on the grid
    lo_g = cands[max(0, np.searchsorted(cands, lo) - 1)]
    hi_g = cands[min(len(cands) - 1, np.searchsorted(cands, hi))]
    inside = np.mean((cands[draws] >= lo_g) & (cands[draws] <= hi_g))
    assert inside >= 0.95, inside


def test_epsilon_is_the_largest_six_decimal_value_the_charge_covers():
    for rho in (Fraction(1, 10), Fraction(1, 3), Fraction(2), Fraction(1, 10**6)):
        eps = quantile.epsilon_for_rho(rho)
        assert eps * eps / 8 <= rho < (eps + Fraction(1, 10**6)) ** 2 / 8


def test_grid_candidates():
    assert QuantileGrid(0, 100, "linear", 101).candidates() == tuple(range(101))
    assert QuantileGrid(-50, 50, "linear", 11).candidates() == tuple(range(-50, 51, 10))
    log = QuantileGrid(0, 10**8, "log", 1000).candidates()
    assert log[0] == 0 and log[1] == 1 and log[-1] == 10**8 and list(log) == sorted(set(log))
    ratios = [b / a for a, b in zip(log[1:], log[2:]) if a >= 1000]
    assert max(ratios) < 1.02  # about 1.9% apart where rounding no longer merges them


# ------------------------------------------------------------------------------ the policy
@pytest.mark.parametrize("fields,reason", [
    ("range = [10, 5]", "lowest value below its highest"),
    ("range = [0]", "two numbers"),
    ("range = [0, 0.5]", "whole multiple of the granularity"),
    ("range = [-5, 5]\ngrid = \"log\"", "starts at 0 or above"),
    ("range = [0, 5]\ngrid = \"cubic\"", "must be one of"),
    ("range = [0, 5]\npoints = 1", "from 2 to"),
    ("range = [0, 5]\npoints = 10001", "from 2 to 10000"),
    ("grid = \"log\"", "needs range"),
])
def test_a_bad_grid_is_refused_with_its_field(demo, fields, reason):
    db, policy = demo
    text = policy.read_text().replace("payqtr1 = { threshold = 2500 }", "")
    policy.write_text(text + f"\n[tables.establishments.measures.payqtr1]\nthreshold = 2500\n{fields}\n")
    with pytest.raises(PolicyFileError) as err:
        load_policy(policy)
    assert "payqtr1" in str(err.value) and reason in str(err.value)


# ------------------------------------------------------------------------------ end to end
def test_median_per_group_on_the_demo_is_where_the_median_is_and_is_charged(demo):
    """MEDIAN(age) per sex on the demo's persons: a whole age (its grid is 0..100), equal to the
    exact median or next to it (n is large, the rank error a few units), charged the query's ρ
    in the ledger; the receipt states the mechanism, ε's charge and the rank error."""
    db, policy = demo
    exact = dict(duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN)).execute(  # as test_advise.py
        "SELECT sex, quantile_cont(age, 0.5) FROM persons GROUP BY sex").fetchall())
    with dpsql.connect(db, policy, rho=Fraction(1, 5), _random_source=seeded_random(9)) as con:
        before = con.session.ledger.spent
        cur = con.cursor()
        cur.execute("SELECT sex, MEDIAN(age) AS m, COUNT(*) FROM persons GROUP BY sex ORDER BY sex")
        rows = cur.fetchall()
        rc = cur.receipt
        footer = fmt_footer(cur.result)
        assert con.session.ledger.spent - before == rc.rho == Fraction(1, 5)
    # what Theorem 3.11 proves is a bound on the score gap, and the footer says so (issue 29)
    assert "score" in footer and "not on the units between" in footer and "rank is within" not in footer
    assert [r[0] for r in rows] == ["F", "M"]
    for sex, m, _ in rows:
        assert isinstance(m, int) and abs(m - exact[sex]) <= 1, (sex, m, exact[sex])
    term = next(t for t in rc.noise if t.aggregate == "MEDIAN(age)")
    assert term.mechanism == "exponential" and term.rho == Fraction(1, 10)
    assert term.rank_error95 == pytest.approx(quantile.rank_error95(Fraction(1, 2), quantile.epsilon_for_rho(Fraction(1, 10)), 101))
    assert rc.columns["m"].moe95 == (None, None) and "ranks" in rc.columns["m"].note
    assert {"rho": "0.2", "scale": "1"}.items() <= rc.policy_terms[0].items()  # unsplit: every record pays ρ


def test_median_of_a_private_key_and_a_granular_measure(con):
    """devices: MEDIAN(latency_ms) (granularity 0.1, a log grid) per device model, a private key
    (partition selection): values are grid values in the measure's own units."""
    cur = con.cursor()
    cur.execute("SELECT device_model, MEDIAN(latency_ms) AS m FROM devices GROUP BY device_model")
    rows = cur.fetchall()
    assert rows, "partition selection released no device model"
    m = con.session.policy.tables["devices"].measures["latency_ms"]
    grid = {round(c * float(m.granularity), 6) for c in m.grid.candidates()}
    assert all(round(v, 6) in grid for _, v in rows)


def test_quantiles_under_pure_dp_are_charged_epsilon_squared_over_two(demo):
    """A policy in pure DP (mechanism = "geometric"): the exponential mechanism at the query's ε."""
    db, policy = demo
    policy.write_text(policy.read_text().replace('mechanism = "discrete_gaussian"', 'mechanism = "geometric"', 1))
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as con:
        cur = con.cursor()
        cur.execute("SET dpsql.epsilon = 0.5")
        cur.execute("SELECT QUANTILE_CONT(age, 0.9) FROM persons")
        term = cur.receipt.noise[0]
    assert term.mechanism == "exponential" and term.epsilon == Fraction(1, 2) and term.rho == Fraction(1, 8)


def test_an_accuracy_target_cannot_size_a_quantile_and_nothing_is_charged(con):
    cur = con.cursor()
    cur.execute("SET dpsql.moe = 10")
    before = con.session.ledger.spent
    with pytest.raises(BudgetValueError) as err:
        cur.execute("SELECT sex, COUNT(*), MEDIAN(age) FROM persons GROUP BY sex")
    assert "ranks" in str(err.value) and con.session.ledger.spent == before


def test_explain_states_the_mechanism_and_reads_no_row(con):
    cur = con.cursor()
    before = con.session.ledger.spent
    cur.execute("EXPLAIN SELECT state, MEDIAN(payann) FROM establishments GROUP BY state")
    text = "\n".join(str(r[0]) for r in cur.fetchall())
    assert "exponential mechanism over 837 log-spaced values from 0 to 100000000" in text
    assert "LIST(__qw) FILTER (WHERE __qw IS NOT NULL)" in text and con.session.ledger.spent == before  # each state's values


def test_many_public_groups_with_a_quantile_are_answered_in_bounded_memory(con):
    """51 states × 24 sectors × 35 years = 42,840 public groups with a MEDIAN over the 837-value
    payann grid (1,675 bins a group). DuckDB's HISTOGRAM over the bounds would have kept all 72M
    bins (refused in phase 1 before issue 29); the sparse histogram keeps one entry per row, and
    the scores are drawn in chunks, so it is answered (docs/performance.md, "Quantiles")."""
    cur = con.cursor()
    cur.execute("SELECT state, naics2, EXTRACT(year FROM opened) AS y, MEDIAN(payann) FROM establishments "
                "GROUP BY state, naics2, EXTRACT(year FROM opened)")
    assert len(cur.fetchall()) == 51 * 24 * 35


def test_min_and_max_are_refused_with_the_quantile_to_ask_for(con):
    with pytest.raises(dpsql.NotSupportedError) as err:
        con.cursor().execute("SELECT MAX(payann) FROM establishments")
    assert err.value.code == "DP109" and "QUANTILE_CONT(measure, 0.99)" in str(err.value)
