"""Composition, checked where it is consumed (issue 35): what a workload's one ledger row
records, against the policy's own numbers.

* Sequential composition adds δ as it adds ρ (approximate zCDP, Bun & Steinke 2016 Lemma 8.3;
  docs/workloads.md): two queries that each run a partition selection at the policy's δ charge
  2δ, not δ — in the plan, in the ledger row, and through the budget's δ wall.
* A random partition's salt is fresh for every run (docs/workloads.md: "a secret, uniformly
  random partition"): two runs of the same workload on the same seeded noise source put the
  units in different parts, which their near-exact counts (ρ = 50, σ = 0.1) show.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import BudgetExceededError
from dpsql.testing import seeded_random
from dpsql.workload import spec
from dpsql.workload.plan import plan
from dpsql.workload.run import run

SEL_DELTA = "3e-7"
TWO_SELECTIONS = """
[workload]
name = "two_selections"

[[query]]
name = "by_county"
sql = "SELECT county, COUNT(*) AS n FROM establishments GROUP BY county"
rho = "1/10"

[[query]]
name = "by_naics"
sql = "SELECT naics, SUM(employees) AS e FROM establishments GROUP BY naics"
rho = "1/10"

[output]
formats = ["csv"]
"""


@pytest.fixture()
def policy_delta(demo):
    db, policy = demo
    policy.write_text(policy.read_text() + f"\n[selection]\ndelta = {SEL_DELTA}\n")
    return db, policy


def test_two_partition_selections_charge_the_sum_of_their_deltas(policy_delta, tmp_path):
    db, policy = policy_delta
    delta = Fraction(SEL_DELTA)
    with dpsql.connect(db, policy, _random_source=seeded_random(2)) as con:
        w = spec.parse(TWO_SELECTIONS)
        assert plan(con.session, w).delta == 2 * delta
        run(con.session, w, tmp_path / "out")
        (charge,) = con.session.ledger.charges
        assert charge.delta == 2 * delta
        assert con.session.ledger.totals.delta == 2 * delta


def test_the_delta_wall_sees_the_sum(policy_delta, tmp_path):
    """A δ budget of 1.5 selections: each query alone fits, the workload (2δ) is refused whole,
    before reading, and charges nothing."""
    db, policy = policy_delta
    policy.write_text(policy.read_text().replace("total_delta = 1e-4", "total_delta = 4.5e-7", 1))
    with dpsql.connect(db, policy, _random_source=seeded_random(2)) as con:
        con.session.ledger.check(Fraction(1, 10), Fraction(SEL_DELTA))  # one query fits
        with pytest.raises(BudgetExceededError):
            run(con.session, spec.parse(TWO_SELECTIONS), tmp_path / "out")
        assert con.session.ledger.spent == 0 and con.session.ledger.totals.delta == 0


RANDOM_PARTITION = """
[workload]
name = "halves"

[[query]]
name = "a"
sql = "SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2"
rho = 50

[[query]]
name = "b"
sql = "SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2"
rho = 50

[random_partition]
units = 200000

[output]
formats = ["csv"]
"""


def test_every_run_of_a_random_partition_draws_a_fresh_salt(demo, tmp_path):
    """The same workload twice, each on a connection with the same seeded noise: with one
    partition (whatever the parts' order) each sector's count in part a of the second run would
    match part a or part b of the first within the noise (σ = 0.1); with a fresh salt it is a
    new binomial half (sd ≈ √(n/4), tens of units for most sectors), far from both."""
    db, policy = demo
    policy.write_text(policy.read_text().replace("total_rho = 10.0", "total_rho = 200.0", 1))
    runs = []
    for i in range(2):
        with dpsql.connect(db, policy, _random_source=seeded_random(7)) as con:
            _, results, _ = run(con.session, spec.parse(RANDOM_PARTITION), tmp_path / f"out{i}")
            runs.append([{r[0]: r[1] for r in res.rows} for res in results])
    (a1, b1), (a2, b2) = runs
    assert set(a1) == set(a2) == set(b1) == set(b2) and len(a1) == 24
    same = sum(abs(a1[k] - a2[k]) <= 2 for k in a1)
    swapped = sum(abs(b1[k] - a2[k]) <= 2 for k in a1)
    assert same <= 12 and swapped <= 12, (same, swapped, a1, a2, b1)
    # each run is still a partition: the two parts of each sector add up to the same sector total
    for k in a1:
        assert abs(a1[k] + b1[k] - a2[k] - b2[k]) <= 2, k
