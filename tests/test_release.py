"""What a release returns: noisy rows, a receipt with honest σ / MOE, charges before release."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import dpsql
from dpsql.testing import seeded_random


def test_receipt_sigma_for_sum_and_count(con):
    """σ = T/√(2ρ) for a SUM and 1/√(2ρ) for a COUNT (paper 004 Algorithm 5, σ² = Δ²/(2ρ))."""
    for rho in ("0.1", "0.5"):
        con.set_rho(rho)
        cur = con.execute("SELECT SUM(payann) FROM establishments")
        (term,) = cur.receipt.noise
        assert term.sigma == (pytest.approx(10000 / math.sqrt(2 * float(rho))),)
        assert cur.receipt.columns["SUM(payann)"].sigma == (pytest.approx(10000 / math.sqrt(2 * float(rho))),)
        cur = con.execute("SELECT COUNT(*) AS n FROM establishments")
        assert cur.receipt.columns["n"].sigma == (pytest.approx(1 / math.sqrt(2 * float(rho))),)
        # 95% MOE = 1.96 σ rounded up (paper 004 E.2's bound; see docs/noise.md on its floor)
        assert cur.receipt.columns["n"].moe95 == (math.ceil(1.96 / math.sqrt(2 * float(rho))),)


def test_budget_is_split_equally_over_primitives(con):
    cur = con.execute("SELECT COUNT(*), SUM(payann), AVG(employees) FROM establishments")
    rc = cur.receipt
    assert rc.rho == Fraction(1, 10)
    # AVG(employees) over a NOT NULL column shares COUNT(*)'s noisy count: 3 primitives.
    assert [t.aggregate for t in rc.noise] == ["COUNT(units)", "SUM(payann)", "SUM(employees)"]
    assert all(t.rho == Fraction(1, 30) for t in rc.noise)
    terms = {t["scale"]: t for t in rc.policy_terms}
    assert terms["|A(r)|^2"]["measures"] == ["employees", "payann"]
    assert Fraction(terms["|A(r)|^2"]["rho"]) == pytest.approx(Fraction(2, 30))


def test_public_keys_every_declared_key_and_nothing_else(con):
    """WHERE keeps one state's rows, yet all 51 states come back (empty ones as noise on zero): its OR
    with a measure's condition (no row has a negative payroll) does not narrow the keyset (sql/narrow.py)."""
    cur = con.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE state = 'VT' OR payann < 0 GROUP BY state")
    rows = cur.fetchall()
    keyset = con.session.policy.tables["establishments"].keys["state"].keyset
    assert [r[0] for r in rows] == list(keyset)
    others = [n for s, n in rows if s != "VT"]
    sigma = 1 / math.sqrt(2 * 0.1)
    # Empty groups are pure noise: mean ≈ 0 within 4 standard errors of the mean of 50 draws.
    assert abs(sum(others) / len(others)) < 4 * sigma / math.sqrt(len(others))
    assert dict(rows)["VT"] > 100


def test_noise_is_really_there(con, session):
    exact = dict(session.engine.run("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2"))
    rows = con.execute("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2").fetchall()
    diffs = [v - exact.get(k, 0) for k, v in rows]
    assert sum(d != 0 for d in diffs) >= len(diffs) - 1
    sigma = 10000 / math.sqrt(0.2)
    assert all(abs(d) < 6 * sigma for d in diffs)


def test_seeded_source_is_deterministic(demo):
    def run(seed):
        with dpsql.connect(*demo, _random_source=seeded_random(seed)) as c:
            c.execute("SET dpsql.reuse = off")  # a fresh release each time, not the one before (pipeline/reuse.py)
            return c.execute("SELECT naics2, SUM(payann), COUNT(*) FROM establishments GROUP BY naics2").fetchall()

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_default_source_is_secure(demo):
    from dpsql.privacy.randomness import SecureRandom

    with dpsql.connect(*demo) as c:
        assert isinstance(c.session.rng, SecureRandom)


def test_having_order_limit_apply_to_noisy_values(con):
    rows = con.execute("SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2 "
                       "HAVING SUM(payann) > 5000000 ORDER BY pay DESC LIMIT 5").fetchall()
    assert len(rows) == 5
    pays = [r[1] for r in rows]
    assert pays == sorted(pays, reverse=True) and all(p > 5_000_000 for p in pays)


def test_error_bars_follow_rows_through_order_by(con):
    cur = con.execute("SELECT naics2, COUNT(*) AS n, SUM(payann) AS pay FROM establishments GROUP BY naics2 ORDER BY n DESC")
    rc = cur.receipt
    assert len(rc.columns["pay"].sigma) == len(cur.fetchall())


def test_per_group_sensitivity(demo, tmp_path):
    """Paper 000 Example 5.7: GROUP BY industry gives Mining's payroll its own threshold."""
    text = demo[1].read_text().replace(
        "payroll = { threshold = 5000000 }",
        'payroll = { threshold = 5000000, overrides = { key = "industry", thresholds = { Mining = 10000000 } } }')
    policy = tmp_path / "p.toml"
    policy.write_text(text)
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(1)) as c:
        cur = c.execute("SELECT industry, SUM(payroll) AS p FROM paper_table2 GROUP BY industry")
        rows = cur.fetchall()
        sig = dict(zip([r[0] for r in rows], cur.receipt.columns["p"].sigma))
        base = 5_000_000 / math.sqrt(0.2)
        assert sig == {"Agriculture": pytest.approx(base), "Mining": pytest.approx(2 * base), "Retail": pytest.approx(base)}
        # Without grouping by industry a cell can hold any record: the largest threshold applies.
        cur = c.execute("SELECT SUM(payroll) AS p FROM paper_table2")
        assert cur.receipt.columns["p"].sigma == (pytest.approx(2 * base),)


def test_granularity_scales_noise(con):
    cur = con.execute("SELECT SUM(latency_ms) AS s FROM devices")
    # threshold 500 ms at granularity 0.1: noise on tenths with Δ = 5000, shown in ms
    assert cur.receipt.columns["s"].sigma == (pytest.approx(500 / math.sqrt(0.2)),)
    value = cur.fetchone()[0]
    assert isinstance(value, float) and round(value * 10) == pytest.approx(value * 10)


def test_budget_refusal_charges_and_releases_nothing(demo):
    with dpsql.connect(*demo, rho="4", _random_source=seeded_random(3)) as c:
        c.execute("SET dpsql.reuse = off")  # each query a fresh, charged release (pipeline/reuse.py)
        c.execute("SELECT COUNT(*) FROM establishments")
        c.execute("SELECT COUNT(*) FROM establishments")
        spent = c.session.ledger.spent
        cur = c.cursor()
        with pytest.raises(dpsql.BudgetExceededError) as err:
            cur.execute("SELECT COUNT(*) FROM establishments")
        assert isinstance(err.value, dpsql.OperationalError)
        assert "needs rho=4" in str(err.value) and "only rho=2" in str(err.value)
        assert c.session.ledger.spent == spent == 8
        assert cur.description is None and cur.receipt is None
        c.set_rho(2)
        assert c.execute("SELECT COUNT(*) FROM establishments").receipt.budget_remaining == 0


def test_refusal_charges_nothing(con):
    with pytest.raises(dpsql.NotSupportedError):
        con.execute("SELECT MAX(payann) FROM establishments")
    with pytest.raises(dpsql.ProgrammingError):
        con.execute("SELECT SUM(firm_id) FROM establishments")
    assert con.session.ledger.spent == 0


def test_noisy_values_are_exact_sums_on_both_integer_paths():
    """exact + noise in int64 when everything is far below 2^63, in Python ints otherwise; an
    empty group (None) is 0; as_array shows values past 2^62 as floats and scales by the
    granularity with one rounding."""
    from fractions import Fraction

    import numpy as np

    from dpsql.pipeline.release import as_array, exact_and_noise

    noise = np.array([3, -4, 5], dtype=np.int64)
    e, n = exact_and_noise([10, None, -7], noise)
    assert e.dtype == np.int64 and (e + n).tolist() == [13, -4, -2]
    e, n = exact_and_noise([2**70, None, -(2**63)], noise)
    assert e.dtype == object and (e + n).tolist() == [2**70 + 3, -4, -(2**63) + 5]
    e, n = exact_and_noise([1, 2, 3], np.array([2**62, 0, 0], dtype=np.int64))  # the noise decides
    assert e.dtype == object and (e + n).tolist() == [2**62 + 1, 2, 3]
    assert as_array(np.array([2**70, 1], dtype=object), Fraction(1)).tolist() == [float(2**70), 1.0]
    assert as_array(np.array([5, -3], dtype=np.int64), Fraction(1)).dtype == np.int64
    assert as_array(np.array([1, 3], dtype=np.int64), Fraction(1, 3)).tolist() == [1 / 3, 1.0]


def test_groups_sort_without_a_key_exactly_as_with_it():
    """sorted_groups takes the tuples' own order when each position holds one type, text or
    integers, with no NULL; it must be sort_key's order, and sort_key's itself otherwise."""
    import random

    from dpsql.pipeline.domain import sort_key, sorted_groups

    rnd = random.Random(5)
    values = {"str": lambda: rnd.choice(["", "a", "B", "ab", "é", "10", "9"]), "int": lambda: rnd.randint(-3, 3),
              "mixed": lambda: rnd.choice([1, "1", None, 2.5, True])}
    for trial in range(300):
        kinds = [rnd.choice(list(values)) for _ in range(rnd.randint(1, 3))]
        groups = list({tuple(values[k]() for k in kinds) for _ in range(rnd.randint(0, 30))})
        rnd.shuffle(groups)
        assert sorted_groups(groups) == sorted(groups, key=sort_key), (kinds, groups)


def test_many_groups_of_one_key_sort_as_with_sort_key():
    """Past 1,000 groups of one integer key the order comes from numpy's argsort (Python's sort
    past int64); text by the value itself: both must be sort_key's order."""
    import random

    from dpsql.pipeline.domain import sort_key, sorted_groups

    rnd = random.Random(7)
    for draw in (lambda: rnd.randint(-2**63, 2**63 - 1), lambda: rnd.randint(-5, 5) * 2**62,
                 lambda: rnd.randint(-50, 50), lambda: "".join(rnd.choice("ab\x00é") for _ in range(rnd.randint(0, 3)))):
        groups = list({(draw(),) for _ in range(3000)})
        rnd.shuffle(groups)
        assert len(groups) > 10 and sorted_groups(groups) == sorted(groups, key=sort_key)
