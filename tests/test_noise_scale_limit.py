"""A noise scale the exact samplers cannot draw in int64 is refused in phase 1 (DP212), before any
charge. It depends only on the policy's threshold and ρ: with a SUM threshold near 2^61 the
discrete Gaussian's Laplace step overflowed in some draws, after the charge (DP901). The
oracle is the closed form σ² = Δ²/(2ρ) (the whole ρ on the one SUM), not the code's allocation."""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.testing import seeded_random

SQL = "SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2"
RHO = Fraction(1, 10)


def _with_threshold(policy, threshold: int) -> None:
    text = policy.read_text()
    old = "payann = { threshold = 10000,"
    assert old in text
    policy.write_text(text.replace(old, f"payann = {{ threshold = {threshold},"))


@pytest.mark.parametrize("threshold", [6 * 10**16, 7 * 10**16, 2**61, 2**63 - 1])
def test_a_scale_past_2_57_is_refused_before_the_charge(demo, threshold):
    db, policy = demo
    _with_threshold(policy, threshold)
    fits = Fraction(threshold) ** 2 / (2 * RHO) < Fraction(2) ** 114  # σ < 2^57
    with dpsql.connect(db, policy, rho=str(RHO), _random_source=seeded_random(5)) as con:
        cur = con.cursor()
        if fits:
            cur.execute(SQL)
            rows = cur.fetchall()
            assert len(rows) > 10 and all(isinstance(r[1], int) for r in rows)
            assert con.session.ledger.spent == RHO
        else:
            with pytest.raises(QueryRefused) as e:
                cur.execute(SQL)
            assert e.value.code == "DP212" and "SUM(payann)" in str(e.value)
            assert con.session.ledger.spent == 0 and con.session.ledger.history() == []
    assert fits == (threshold == 6 * 10**16)
