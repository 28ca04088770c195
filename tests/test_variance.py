"""VARIANCE / VAR_POP / STDDEV / STDDEV_POP from noisy sums of split squares, sums and counts
(issue 32; dpsql/sql/spread.py, docs/privacy.md "Variance and standard deviation").

A generated DuckDB table, one row per unit: group ``a`` holds values within the threshold T (its
estimand is exactly the sample variance, checked against ``statistics``), group ``b`` values
beyond T, negative values and NULLs (its estimand is the split-square one, computed here in plain
Python from the rows). Statistical tests are seeded; each states its tolerance.
"""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random

T = 100

POLICY = """
[budget]
default_rho = {rho}
total_rho = 1e15
[tables.t]
privacy_unit = "id"
[tables.t.measures]
x = {{ threshold = {t} }}
[tables.t.keys]
g = {{ keyset = ["a", "b"] }}
"""


def _rows(seed: int = 1) -> list[tuple]:
    r = random.Random(seed)
    rows = [(i, "a", r.randint(0, T)) for i in range(2000)]
    rows += [(10_000 + i, "b", None if i % 17 == 0 else r.choice([r.randint(-3 * T, 5 * T), r.randint(0, T)]))
             for i in range(1500)]
    return rows


def _database(tmp_path: Path, rho: str, rows: list[tuple] | None = None) -> tuple[Path, Path]:
    db, policy = tmp_path / "t.duckdb", tmp_path / "t.policy.toml"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(id INTEGER, g VARCHAR NOT NULL, x BIGINT)")  # no NULL group (issue 32)
    values = ", ".join(f"({i}, '{g}', {'NULL' if x is None else x})" for i, g, x in (rows if rows is not None else _rows()))
    con.execute(f"INSERT INTO t VALUES {values}")
    con.close()
    policy.write_text(POLICY.format(rho=rho, t=T))
    return db, policy


def _estimand(values: list[int], pop: bool = False) -> float:
    """The spread's target, from the rows: a record's square is the sum of its splits' squares
    at T (⌊|x|/T⌋·T² + (|x| mod T)²), its sum its value (paper 000 Algorithm 1)."""
    xs = [x for x in values if x is not None]
    n, s = len(xs), sum(xs)
    q = sum((abs(x) // T) * T * T + (abs(x) % T) ** 2 for x in xs)
    return max(0.0, (q - Fraction(s * s, n)) / (n if pop else n - 1))


def test_without_noise_the_answer_is_the_estimand(tmp_path):
    """At a huge ρ the noise is ~0 (σ ~ 1e-4): every function equals its estimand computed here."""
    rows = _rows()
    db, policy = _database(tmp_path, "1e12")
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        got = dict((g, v) for g, *v in con.execute(
            "SELECT g, VARIANCE(x), VAR_POP(x), STDDEV(x), STDDEV_POP(x), STD(x), VAR_SAMP(x), STDDEV_SAMP(x) "
            "FROM t GROUP BY g ORDER BY g").fetchall())
    for g in ("a", "b"):
        values = [x for _, gg, x in rows if gg == g]
        v, p = _estimand(values), _estimand(values, pop=True)
        want = [v, p, math.sqrt(v), math.sqrt(p), math.sqrt(v), v, math.sqrt(v)]
        assert got[g] == pytest.approx(want, rel=1e-6), g
    a = [x for _, gg, x in rows if gg == "a"]  # within T: the estimand is the sample variance itself
    assert got["a"][0] == pytest.approx(statistics.variance(a), rel=1e-6)
    assert got["a"][1] == pytest.approx(statistics.pvariance(a), rel=1e-6)
    b = [x for _, gg, x in rows if gg == "b" and x is not None]
    assert got["b"][0] < statistics.variance(b)  # beyond T the squares are under-stated: the bias accepted


def test_the_sensitivity_and_charge_of_the_squares(tmp_path):
    """The sum of squares is noised for sensitivity T² (a split adds at most T²) and every spread
    primitive enters the policy function's split term with SUM's |A(r)|²."""
    db, policy = _database(tmp_path, "0.3")
    with dpsql.connect(db, policy, _random_source=seeded_random(2)) as con:
        cur = con.execute("SELECT VARIANCE(x) FROM t")
        cur.fetchall()
        rc = cur.receipt
    terms = {n.aggregate: n for n in rc.noise}
    squares = next(n for a, n in terms.items() if a.startswith("SUM(x^2)"))
    assert squares.sensitivity == (float(T * T),) and terms["SUM(x)"].sensitivity == (float(T),)
    assert rc.rho == Fraction(3, 10) and len(rc.noise) == 3
    assert squares.sigma[0] == pytest.approx(T * T / math.sqrt(2 * float(squares.rho)), rel=1e-9)
    split = next(t for t in rc.policy_terms if t["scale"] == "|A(r)|^2")
    assert Fraction(split["rho_exact"]) == squares.rho + terms["SUM(x)"].rho and split["measures"] == ["x"]


GROUPS, PER_GROUP = 400, 500


def _many_groups(tmp_path: Path, rho: str) -> tuple[Path, Path, dict[str, list[int]]]:
    """GROUPS groups of PER_GROUP values within T (each cell an independent release), and the values
    read back per group for the oracle."""
    db, policy = tmp_path / "m.duckdb", tmp_path / "m.policy.toml"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t AS SELECT i AS id, printf('g%03d', i % {GROUPS}) AS g, "
                f"CAST(HASH(i, 'x') % {T + 1} AS BIGINT) AS x FROM range({GROUPS * PER_GROUP}) r(i)")
    con.execute("ALTER TABLE t ALTER COLUMN g SET NOT NULL")  # no NULL group (issue 32)
    by_group: dict[str, list[int]] = {}
    for g, x in con.execute("SELECT g, x FROM t").fetchall():
        by_group.setdefault(g, []).append(x)
    con.close()
    keyset = ", ".join(f'"g{i:03d}"' for i in range(GROUPS))
    policy.write_text(POLICY.format(rho=rho, t=T).replace('g = { keyset = ["a", "b"] }', f"g = {{ keyset = [{keyset}] }}"))
    return db, policy, by_group


@pytest.mark.parametrize("mechanism", ["discrete_gaussian", "geometric"])
def test_error_and_moe_coverage(tmp_path, mechanism):
    """GROUPS independent cells of PER_GROUP values within T, released at ρ = 0.05 (one seeded
    query; a cell's variance is then ~5σ from 0, so the clamp at 0 does not act), or under the
    geometric (pure DP) at ε = 0.8, whose squares' σ = √2·T²·3/0.8 is about the Gaussian's: per
    function, the error against the true (sample or population) variance or standard deviation is unbiased within 4 standard errors, its spread within 15% of the delta method's
    mean σ, and the stated 95% MOE covers the truth in 91%–99% of cells (binomial sd at 400: 1.1%)."""
    db, policy, by_group = _many_groups(tmp_path, "0.05")
    if mechanism == "geometric":
        policy.write_text(policy.read_text() + '[noise]\nmechanism = "geometric"\n')
    fns = {"VARIANCE(x)": statistics.variance, "STDDEV_POP(x)": statistics.pstdev, "VAR_POP(x)": statistics.pvariance}
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as con:
        if mechanism == "geometric":
            con.execute("SET dpsql.epsilon = 0.8")
        cur = con.execute(f"SELECT g, {', '.join(fns)} FROM t GROUP BY g")
        rows = cur.fetchall()
        errs = cur.receipt.columns
    assert len(rows) == GROUPS
    for j, (name, truth_of) in enumerate(fns.items()):
        errors, sigmas, covered = [], [], 0
        for k, row in enumerate(rows):
            err = row[1 + j] - truth_of(by_group[row[0]])
            errors.append(err)
            sigmas.append(errs[name].sigma[k])
            moe = errs[name].moe95[k]
            covered += moe is not None and abs(err) <= moe  # no stated MOE (a clamped 0) covers nothing
        mean, sd = statistics.fmean(errors), statistics.pstdev(errors)
        assert abs(mean) <= 4 * sd / math.sqrt(GROUPS), (name, mean, sd)
        assert sd == pytest.approx(statistics.fmean(sigmas), rel=0.15), name
        assert 0.91 <= covered / GROUPS <= 0.99, (name, covered / GROUPS)


def test_too_few_units_give_null(tmp_path):
    """N below 2 (sample) or 1 (population) on the noisy count: NULL, not a division by zero."""
    db, policy = _database(tmp_path, "1e12", rows=[(1, "a", 5)])
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        rows = con.execute("SELECT g, VARIANCE(x), VAR_POP(x), STDDEV(x) FROM t GROUP BY g ORDER BY g").fetchall()
    assert rows == [("a", None, pytest.approx(0, abs=1e-3), None), ("b", None, None, None)]


def test_many_rows_tables_refuse_spreads_free(tmp_path):
    db, policy = _database(tmp_path, "1")
    policy.write_text(policy.read_text().replace('privacy_unit = "id"', 'privacy_unit = "id"\nmax_groups = 1'))
    with dpsql.connect(db, policy) as con:
        with pytest.raises(dpsql.DatabaseError, match="DP211"):
            con.execute("SELECT VARIANCE(x) FROM t")
        assert con.session.ledger.spent == 0


@pytest.mark.parametrize("mechanism", ["discrete_gaussian", "geometric"])
def test_explain_states_the_squares_noise_the_release_draws(tmp_path, mechanism):
    """EXPLAIN shows the sum of squares at sensitivity T² and the scale the release then draws (it
    showed 1 and a count's σ), under either mechanism; under the geometric (pure ε-DP, L1) the
    squares' b is T²/ε at their equal third of ε = 0.9: b = 3T²/0.9, σ = b·√2 (about; the discrete
    Laplace's σ is within 1e-6 of the continuous one's at this b)."""
    db, policy = _database(tmp_path, "0.3")
    if mechanism == "geometric":
        policy.write_text(policy.read_text() + '[noise]\nmechanism = "geometric"\n')
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as con:
        if mechanism == "geometric":
            con.execute("SET dpsql.epsilon = 0.9")
        shown = {n["aggregate"]: n for n in con.explain("SELECT VARIANCE(x) FROM t").noise}
        cur = con.execute("SELECT VARIANCE(x) FROM t")
        cur.fetchall()
        drawn = {n.aggregate: n for n in cur.receipt.noise}
    label = next(a for a in drawn if a.startswith("SUM(x^2)"))
    assert shown[label]["sensitivity"] == [float(T * T)] == list(drawn[label].sensitivity)
    assert shown[label]["sigma"] == pytest.approx(list(drawn[label].sigma), rel=1e-12)
    want = T * T / math.sqrt(2 * 0.1) if mechanism == "discrete_gaussian" else math.sqrt(2) * T * T * 3 / 0.9
    assert shown[label]["sigma"][0] == pytest.approx(want, rel=1e-6)
