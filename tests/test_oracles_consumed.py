"""Every privacy parameter where it is consumed (issue 35): the scale each noise draw is made at
(a wrapper around ``Allocation.sample`` records σ² or b per cell), the ε and δ the partition
selection samplers are called with, and the ρ, δ, ε the ledger records — each against closed
forms written here from what the query and the policy say:

* discrete Gaussian (CKS20 Theorem 4): σ² = Δ² / (2ρ_i), ρ_i = ρ / (number of aggregates);
* discrete Laplace (the geometric mechanism): b = Δ / ε_i, ε_i = ε / (number of aggregates),
  charged Σ ε_i² / 2;
* partition selection: the policy's [selection] ε and δ, charged ε² / 2 and δ.

Nothing here reads the receipt to learn what to expect.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

import dpsql
from dpsql.privacy import allocate, selection, tsgd
from dpsql.testing import seeded_random

SEL_EPS, SEL_DELTA = Fraction(3, 5), Fraction(2, 10**7)


@pytest.fixture()
def scales(monkeypatch):
    seen: list[Fraction] = []
    real = allocate.Allocation.sample

    def sample(self, scale_list, group, rng):
        seen.extend(scale_list[int(g)] for g in group)
        return real(self, scale_list, group, rng)

    monkeypatch.setattr(allocate.Allocation, "sample", sample)
    return seen


@pytest.fixture()
def selections(monkeypatch):
    """(method, ε, δ) of every partition selection sampler call."""
    seen: list[tuple[str, Fraction, Fraction]] = []
    real_select, real_tsgd = selection.select, tsgd.thresholded_release

    def select(n, eps, delta, rng):
        seen.append(("optimal", eps, delta))
        return real_select(n, eps, delta, rng)

    def thresholded(n, eps, delta, rng):
        seen.append(("truncated_geometric", eps, delta))
        return real_tsgd(n, eps, delta, rng)

    monkeypatch.setattr(selection, "select", select)
    monkeypatch.setattr(tsgd, "thresholded_release", thresholded)
    return seen


# the OR with a measure's condition keeps the WHERE from narrowing the state keyset (sql/narrow.py)
SQL = "SELECT naics2, COUNT(*) AS n, SUM(payann) AS p FROM establishments WHERE state < 'M' OR payann < 0 GROUP BY state, naics2"
CELLS = 51 * 24  # every state of the public keyset (empty ones noised too) by 24 sectors: arrays


def test_gaussian_draws_at_delta_squared_over_two_rho_and_the_ledger_records_rho(demo, scales):
    db, policy = demo
    with dpsql.connect(db, policy, rho="0.3", _random_source=seeded_random(1)) as con:
        before = con.session.ledger.spent
        con.execute(SQL.replace("naics2, COUNT", "state, naics2, COUNT")).fetchall()
        (charge,) = con.session.ledger.charges
        assert con.session.ledger.spent - before == Fraction(3, 10) == charge.rho and charge.delta == 0
    share = Fraction(3, 10) / 2
    assert Counter(scales) == Counter({Fraction(1) / (2 * share): CELLS, Fraction(10000**2) / (2 * share): CELLS})


def test_geometric_draws_at_delta_over_epsilon_and_the_ledger_records_its_rho(demo, scales):
    db, policy = demo
    policy.write_text(policy.read_text().replace('mechanism = "discrete_gaussian"', 'mechanism = "geometric"', 1))
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        cur = con.cursor()
        cur.execute("SET dpsql.epsilon = 0.8")
        cur.execute(SQL.replace("naics2, COUNT", "state, naics2, COUNT")).fetchall()
        (charge,) = con.session.ledger.charges
    eps_i = Fraction(4, 10)
    assert Counter(scales) == Counter({1 / eps_i: CELLS, 10000 / eps_i: CELLS})
    assert charge.rho == 2 * eps_i**2 / 2 and charge.epsilon == Fraction(4, 5)


@pytest.mark.parametrize("method", ["optimal", "truncated_geometric"])
def test_partition_selection_runs_at_the_policys_epsilon_and_delta_and_is_charged_them(demo, selections, method):
    db, policy = demo
    policy.write_text(policy.read_text() + f'\n[selection]\nepsilon = 0.6\ndelta = 2e-7\nmethod = "{method}"\n')
    with dpsql.connect(db, policy, rho="0.1", _random_source=seeded_random(2)) as con:
        con.execute("SELECT county, COUNT(*) AS n FROM establishments GROUP BY county").fetchall()
        (charge,) = con.session.ledger.charges
    assert selections == [(method, SEL_EPS, SEL_DELTA)]
    assert charge.delta == SEL_DELTA
    noise_rho = Fraction(0) if method == "truncated_geometric" else Fraction(1, 10)  # TSGD's noisy count is the COUNT
    assert charge.rho == noise_rho + SEL_EPS**2 / 2, charge.rho
