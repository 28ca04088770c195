"""Printed privacy parameters round the safe way (issue 35): every ε and δ people or scripts
read — a receipt, its footer, EXPLAIN, the ledger, a charge, ``dpsql convert``, a workload's
plan, SHOW — is at least the exact value, and close to it. A δ of 1.23456449e-7 shown as
1.23e-07 or 1.23456e-07, or an ε of 0.52345649 shown as 0.523456, states a stronger guarantee than holds.

The exact values are the policy's own decimals (read here as Fractions) and the closed form of
the analytic conversion, ρ + 2·√(ρ·ln(1/δ)) (paper 004 Lemma 5), computed here with 40 digits.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from fractions import Fraction

import pytest

import dpsql
from dpsql.pipeline.format import charge_dict, explanation, footer
from dpsql.privacy.budget import fmt, fmt_down, fmt_up
from dpsql.testing import seeded_random
from dpsql.workload import spec
from dpsql.workload.plan import plan

SEL_EPS, SEL_DELTA = "0.52345649", "1.23456449e-7"
PRIVATE = "SELECT county, COUNT(*) AS n FROM establishments GROUP BY county"


def _safe(printed: object, exact: Fraction | float, digits: int = 6) -> None:
    """``printed`` is at least ``exact`` and above it by less than one unit of its last digit."""
    got = Fraction(str(printed))
    exact = Fraction(exact)
    assert got >= exact, f"{printed} understates {float(exact)!r}"
    assert got - exact <= exact * Fraction(1, 10 ** (digits - 1)), f"{printed} is far above {float(exact)!r}"


def _naive_up(f: Fraction, digits: int, rounding: str = ROUND_CEILING) -> str:
    """``digits`` significant digits rounded toward +∞ (or as ``rounding`` says), by the decimal module."""
    with localcontext(Context(prec=60)):
        d = Decimal(f.numerator) / Decimal(f.denominator)
        return str(d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=rounding))


def _below(printed: object, exact: Fraction) -> None:
    """``printed`` (what is left of a budget) is at most ``exact`` and close to it."""
    got = Fraction(str(printed))
    assert got <= exact, f"{printed} overstates what is left, {float(exact)!r}"
    assert exact - got <= exact * Fraction(1, 10**5), f"{printed} is far below {float(exact)!r}"


def test_fmt_up_is_decimal_rounding_toward_infinity():
    r = random.Random(35)
    values = [Fraction(r.randrange(1, 10**12), 10 ** r.randrange(0, 30)) for _ in range(3000)]
    values += [Fraction(1, 3), Fraction(2, 3), Fraction(10**6 - 1, 10**6), Fraction(999_999_5, 10**7), Fraction(1, 10**6),
               Fraction(1), Fraction(123456789, 10**15), Fraction(99_999_999, 10**8)]
    for v in values:
        for digits in (3, 6):
            printed = fmt_up(v, digits)
            assert Fraction(printed) == Fraction(_naive_up(v, digits)), (v, digits, printed)
    assert fmt_up(0.1 + 0.2) == "0.300001" and fmt_up(Fraction(1, 3)) == "0.333334"
    for v in values:  # a budget spent (fmt) rounds up, what is left (fmt_down) down; both exact when short
        assert Fraction(fmt(v)) == (v if v.denominator == 1 else Fraction(_naive_up(v, 6)))
        assert Fraction(fmt_down(v)) == (v if v.denominator == 1 else Fraction(_naive_up(v, 6, ROUND_FLOOR)))


def test_rho_charged_and_spent_are_printed_up_and_what_is_left_down(demo):
    """ρ = 1/3 per query: the charge and the spent budget are at least 1/3, what is left of the
    10 at most 29/3 — in the receipt, its footer, EXPLAIN, the charge and the ledger's summary."""
    db, policy = demo
    third = Fraction(1, 3)
    with dpsql.connect(db, policy, rho="1/3", _random_source=seeded_random(4)) as con:
        session = con.session
        result = session.execute("SELECT COUNT(*) FROM establishments")
        d = result.receipt.to_dict()
        _safe(d["rho"], third)
        _safe(d["budget"]["spent"], third)
        _below(d["budget"]["remaining"], 10 - third)
        text = footer(result)
        charged = re.search(r"charged rho=([0-9.e+-]+)", text).group(1)
        spent, left = re.search(r"budget spent ([0-9.e+-]+) of 10, ([0-9.e+-]+) left", text).groups()
        _safe(charged, third)
        _safe(spent, third)
        _below(left, 10 - third)
        _safe(re.search(r"rho for this query: ([0-9.e+-]+)", explanation(session.explain("SELECT COUNT(*) FROM establishments"))).group(1), third)
        _safe(charge_dict(session.ledger.charges[0])["rho"], third)
        summary = session.ledger.summary()
        _safe(summary["spent"], third)
        _below(summary["remaining"], 10 - third)


@pytest.fixture()
def odd_policy(demo):
    """The demo under a selection whose ε and δ have more digits than are printed."""
    db, policy = demo
    policy.write_text(policy.read_text() + f"\n[selection]\nepsilon = {SEL_EPS}\ndelta = {SEL_DELTA}\n")
    return db, policy


def test_partition_selection_parameters_are_printed_up_everywhere(odd_policy):
    db, policy = odd_policy
    eps, delta = Fraction(SEL_EPS), Fraction(SEL_DELTA)
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        session = con.session
        result = session.execute(PRIVATE)
        rc = result.receipt
        assert rc.delta == delta  # the exact charge
        _safe(rc.selection["epsilon"], eps)
        _safe(rc.selection["delta"], delta)
        _safe(rc.to_dict()["delta"], delta)
        _safe(rc.to_dict()["selection"]["epsilon"], eps)
        printed = re.search(r"delta=([0-9.e+-]+)", footer(result))
        assert printed, footer(result)
        _safe(printed.group(1), delta)
        text = explanation(session.explain(PRIVATE))
        _safe(re.search(r"epsilon=([0-9.e+-]+), delta=", text).group(1), eps)
        _safe(re.search(r", delta=([0-9.e+-]+), charged", text).group(1), delta)
        _safe(re.search(r"rho for this query: [0-9.e+-]+, delta=([0-9.e+-]+)", text).group(1), delta)
        (charge,) = session.ledger.charges
        _safe(charge_dict(charge)["delta"], delta)
        summary = session.ledger.summary(Fraction(1, 10**6))
        _safe(summary["delta_spent"], delta)
        _safe(summary["delta"], delta + Fraction(1, 10**6))  # δ spent plus the conversion's δ'


def test_pure_dp_epsilon_is_printed_up(demo):
    db, policy = demo
    policy.write_text(policy.read_text().replace('mechanism = "discrete_gaussian"', 'mechanism = "geometric"', 1))
    eps = Fraction(SEL_EPS)
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        cur = con.cursor()
        cur.execute(f"SET dpsql.epsilon = {SEL_EPS}")
        cur.execute("SHOW dpsql.epsilon")
        _safe(cur.fetchall()[0][1], eps)
        cur.execute("SELECT COUNT(*) FROM establishments")
        assert cur.receipt.epsilon == eps
        _safe(cur.receipt.to_dict()["epsilon"], eps)
        _safe(cur.receipt.to_dict()["noise"][0]["epsilon"], eps)
        _safe(charge_dict(con.session.ledger.charges[0])["epsilon"], eps)
        ex = con.session.explain("SELECT COUNT(*) FROM establishments")
        _safe(ex.noise[0]["epsilon"], eps)


def _analytic(rho: Fraction, delta: Fraction) -> Decimal:
    with localcontext(Context(prec=40)):
        r, d = Decimal(rho.numerator) / rho.denominator, Decimal(delta.numerator) / delta.denominator
        return r + 2 * (r * (1 / d).ln()).sqrt()


def test_convert_prints_epsilon_and_delta_up():
    rho, delta, plus = "0.0123456789", "1e-7", SEL_DELTA
    out = subprocess.run([sys.executable, "-m", "dpsql", "convert", "--rho", rho, "--delta", delta,
                          "--plus-delta", plus, "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    _safe(got["delta_total"], Fraction(delta) + Fraction(plus))
    text = subprocess.run([sys.executable, "-m", "dpsql", "convert", "--rho", rho, "--delta", delta,
                           "--plus-delta", plus], capture_output=True, text=True, timeout=120).stdout
    analytic = re.search(r"epsilon = ([0-9.e+-]+)  \(analytic", text).group(1)
    _safe(analytic, Fraction(str(_analytic(Fraction(rho), Fraction(delta)))))
    tight = re.search(r"epsilon = ([0-9.e+-]+)  \(tight", text).group(1)
    assert Fraction(tight) <= Fraction(analytic)  # the tight conversion is never above Lemma 5
    _safe(re.search(r"implies \(epsilon, ([0-9.e+-]+)\)-DP", text).group(1), Fraction(delta) + Fraction(plus))


def test_a_workload_plan_prints_its_delta_and_epsilon_up(odd_policy):
    """Two queries with partition selection: the workload's δ is the sum of theirs (sequential
    composition), printed up; its ε too."""
    db, policy = odd_policy
    text = ("[workload]\nname = \"two\"\n"
            "[[query]]\nname = \"a\"\nsql = \"SELECT county, COUNT(*) FROM establishments GROUP BY county\"\nrho = \"1/10\"\n"
            "[[query]]\nname = \"b\"\nsql = \"SELECT naics, COUNT(*) FROM establishments GROUP BY naics\"\nrho = \"1/10\"\n")
    with dpsql.connect(db, policy) as con:
        p = plan(con.session, spec.parse(text))
    d = p.to_dict()
    _safe(d["delta"], 2 * Fraction(SEL_DELTA))
    for q in d["queries"]:
        _safe(q["delta"], Fraction(SEL_DELTA))
    _safe(d["epsilon"]["analytic"], Fraction(str(_analytic(p.rho, Fraction(p.conversion_delta)))))
