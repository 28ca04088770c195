"""End to end: the noise a release really adds has the spread its receipt states.

Each test runs queries through ``dpsql.connect`` (seeded through the test-only hook) on the demo
database, computes the exact answers with raw DuckDB on the same file, and looks at
z = (released − exact) / σ, with σ the standard deviation the receipt states for that cell.
A release path that adds half the noise (or 0.8σ, or 1.25σ) while its receipt — and its ledger
charge — claim the full σ is a weaker privacy guarantee than the one charged; the unit tests of
the samplers cannot see it, these tests do.

The statistic and its tolerance (``assert_spread``):

* r = √(mean z²), the root mean square about the known mean 0 (the noise is unbiased, so a
  bias shows up here too; the mean is also checked, within 5 standard errors).
* Accept |r − 1| ≤ TOL = 0.10. A release with 0.8σ gives r ≈ 0.80 and one with 1.25σ gives
  r ≈ 1.25: both at least 0.1 beyond the edge.
* Over n independent cells mean z² has relative standard deviation √((κ − 1)/n), κ the kurtosis
  of the noise (3 for the Gaussian, ≈ 6.1 for the discrete Laplace at the scales used here: the
  familiar √(2/n) for the Gaussian), so r has relative SD s = ½√((κ − 1)/n). ``assert_spread``
  refuses to run with fewer cells than make TOL ≥ 5s (n ≥ 1250 Gaussian, n ≥ 3200 Laplace), and
  the tests use more (2 240 – 6 278 cells): a correct release fails with probability below
  ~1e-7 per check, the ±20% errors pass with probability below ~1e-9 (more than 6 SD away).
* The seeds are fixed, so the outcome is reproducible; the figures above say how unlucky a seed
  would have to be for it to matter.

The discrete Gaussian's variance equals σ² to double precision for σ ≥ 1 (all σ here are ≥ 2.2).
For the geometric mechanism the receipt's σ is the exact standard deviation of L_Z(b),
√(2a)/(1 − a) with a = e^(−1/b), checked against that formula. For the truncated-geometric count
the receipt states the untruncated L_Z(1/ε)'s σ, an upper bound of the k-TSGD's; the test
normalises by the k-TSGD's exact standard deviation (summed from its pmf, paper 002 Definition 6)
and checks that the receipt's is at least that, and within 0.1% of it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.policy.model import Budget
from dpsql.privacy.pi_opt import release_probability
from dpsql.privacy.tsgd import tsgd_release_probability, tsgd_threshold
from dpsql.testing import seeded_random

pytestmark = pytest.mark.statistical

TOL = 0.10  # |root mean square of z − 1|; see the module docstring
Z = 5.0  # standard errors allowed for means and counts
GAUSSIAN_KURTOSIS = 3.0


def dlap_kurtosis(b: float) -> float:
    """E[Y⁴]/Var² of L_Z(b): Σ y⁴ a^|y| (1−a)/(1+a) = 2a(1+11a+11a²+a³)/((1+a)(1−a)⁴)."""
    a = math.exp(-1 / b)
    return (1 + 11 * a + 11 * a * a + a**3) / (2 * a * (1 + a))


def dlap_sd(b: float) -> float:
    a = math.exp(-1 / b)
    return math.sqrt(2 * a) / (1 - a)


def assert_spread(z: list[float] | np.ndarray, kurtosis: float, what: str) -> None:
    z = np.asarray(z, dtype=np.float64)
    n = z.size
    s = 0.5 * math.sqrt((kurtosis - 1) / n)
    assert TOL >= Z * s, f"{what}: {n} cells are too few for the tolerance (test design)"
    rms = math.sqrt(float(np.mean(z * z)))
    mean = float(np.mean(z))
    assert abs(rms - 1) <= TOL, f"{what}: noise spread is {rms:.3f} × the receipt's σ over {n} cells"
    assert abs(mean) <= Z / math.sqrt(n), f"{what}: noise is biased, mean {mean:.3f} σ over {n} cells"


# ----------------------------------------------------------------------------- set-up


def raw(db: Path, sql: str) -> list[tuple]:
    """Exact answers straight from DuckDB, read-only (same configuration as dpsql's engine, so it
    can share the file with an open dpsql connection in this process)."""
    from dpsql.backends.duckdb import LOCKDOWN

    con = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def write_policy(tmp_path: Path, base: Path, name: str, *, replace: tuple[tuple[str, str], ...] = (),
                 append: str = "") -> Path:
    """The demo policy with a ledger in ``tmp_path``, a budget no test here can exhaust, and the
    given edits (each must apply exactly once). ``budget.total_delta`` (a cap on δ being added
    by a teammate, default 1e-5: 10 partition selections) is set to 0.5 when the loader knows it."""
    text = base.read_text()
    for old, new in replace:
        assert text.count(old) == 1, f"the demo policy changed: {old!r} no longer occurs once"
        text = text.replace(old, new)
    assert text.count("total_rho = 10.0") == 1 and "ledger =" not in text
    text = text.replace("total_rho = 10.0", "total_rho = 1000000")
    extra = [f"ledger = {json.dumps(str(tmp_path / (name + '.ledger.sqlite')))}"]
    if "total_delta" in {f.name for f in dataclasses.fields(Budget)}:
        if re.search(r"^total_delta\s*=", text, flags=re.M):
            text = re.sub(r"^total_delta\s*=.*$", "total_delta = 0.5", text, flags=re.M)
        else:
            extra.append("total_delta = 0.5")
    text = text.replace("[budget]\n", "[budget]\n" + "\n".join(extra) + "\n", 1)
    path = tmp_path / f"{name}.policy.toml"
    path.write_text(text + append)
    return path


def zs(rows: list[tuple], sigmas: tuple, exact: dict, nk: int, col: int, scale: float = 1.0) -> list[float]:
    """(released − exact)/σ for one column of released rows; cells missing from ``exact`` are
    empty groups (exact 0)."""
    return [(row[col] - scale * exact.get(tuple(row[:nk]), 0)) / s for row, s in zip(rows, sigmas)]


# ----------------------------------------------------------------------------- discrete Gaussian


def test_count_spread_including_empty_groups(demo_files, tmp_path):
    """COUNT(*) over the public keys state × naics2, with WHERE emptying most of the cells (its OR
    with a measure's condition, true of no row, keeps it from narrowing the keyset: sql/narrow.py):
    every empty group must get the same noise on zero as a full group gets on its count."""
    db, base = demo_files
    sql = "SELECT state, naics2, COUNT(*) AS n FROM establishments WHERE (state < 'M' OR payann < 0) GROUP BY state, naics2"
    exact = {(s, k): (n,) for s, k, n in raw(db, sql)}
    empty, full = [], []
    with dpsql.connect(db, write_policy(tmp_path, base, "count"), _random_source=seeded_random(101)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for _ in range(5):  # 5 × 1 224 cells: 3 880 empty, 2 240 not
            cur = con.execute(sql)
            rows, sig = cur.fetchall(), cur.receipt.columns["n"].sigma
            assert len(rows) == 51 * 24
            assert sig[0] == pytest.approx(1 / math.sqrt(2 * 0.1)) and len(set(sig)) == 1
            for row, z in zip(rows, zs(rows, sig, {k: v[0] for k, v in exact.items()}, 2, 2)):
                (full if tuple(row[:2]) in exact else empty).append(z)
    assert_spread(empty, GAUSSIAN_KURTOSIS, "COUNT(*), empty groups")
    assert_spread(full, GAUSSIAN_KURTOSIS, "COUNT(*), groups with units")


def test_granular_sum_spread(demo_files, tmp_path):
    """SUM(latency_ms): granularity 0.1, threshold 500 ms, so noise is drawn on whole tenths with
    Δ = 5 000 tenths and shown in ms. To release thousands of cells in one query the policy gives
    device_model a public keyset: every model of the data and 500 absent ones (empty groups)."""
    db, base = demo_files
    models = [r[0] for r in raw(db, "SELECT DISTINCT device_model FROM devices ORDER BY 1")]
    keyset = models + [f"zz-absent-{i}" for i in range(500)]
    policy = write_policy(tmp_path, base, "granular", replace=(
        ("device_model = {}", f"device_model = {{ keyset = {json.dumps(keyset)} }}"),))
    # dpsql rounds each value to its granularity before anything else: the exact sum in tenths
    exact = {(m,): t for m, t in raw(db, "SELECT device_model, SUM(CAST(ROUND(latency_ms * 10) AS BIGINT)) "
                                        "FROM devices GROUP BY device_model")}
    z: list[float] = []
    with dpsql.connect(db, policy, _random_source=seeded_random(102)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for _ in range(2):  # 2 × 3 139 cells
            cur = con.execute("SELECT device_model, SUM(latency_ms) AS s FROM devices GROUP BY device_model")
            rows, sig = cur.fetchall(), cur.receipt.columns["s"].sigma
            assert len(rows) == len(keyset)
            assert all(x == pytest.approx(500 / math.sqrt(2 * 0.1)) for x in sig)  # ms: 5 000 tenths/√(2ρ)/10
            for row in rows:
                assert round(row[1] * 10) == pytest.approx(row[1] * 10, abs=1e-6)  # whole tenths
            z += zs(rows, sig, {k: v / 10 for k, v in exact.items()}, 1, 1)
    assert_spread(z, GAUSSIAN_KURTOSIS, "SUM(latency_ms) at granularity 0.1")


def test_avg_parts_spread(demo_files, tmp_path):
    """AVG(employees) = noisy SUM / noisy COUNT. Asked together with SUM and COUNT(*), the three
    columns share the two noisy primitives, so the AVG is exactly s/n and both parts are seen."""
    db, base = demo_files
    exact = {(s, k): (n, e) for s, k, n, e in raw(
        db, "SELECT state, naics2, COUNT(*), SUM(employees) FROM establishments GROUP BY state, naics2")}
    sql = ("SELECT state, naics2, AVG(employees) AS a, SUM(employees) AS s, COUNT(*) AS n "
           "FROM establishments GROUP BY state, naics2")
    z_sum: list[float] = []
    z_count: list[float] = []
    with dpsql.connect(db, write_policy(tmp_path, base, "avg"), _random_source=seeded_random(103)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        only_avg = con.execute("SELECT state, naics2, AVG(employees) FROM establishments GROUP BY state, naics2")
        for _ in range(2):  # 2 × 1 224 cells per part
            cur = con.execute(sql)
            rows, rc = cur.fetchall(), cur.receipt
            # the AVG alone is made of the same two primitives with the same noise
            assert [(t.aggregate, t.sigma) for t in rc.noise] == [(t.aggregate, t.sigma) for t in only_avg.receipt.noise]
            assert {t.aggregate: t.sigma for t in rc.noise} == {
                "SUM(employees)": (pytest.approx(100 / math.sqrt(2 * 0.05)),),
                "COUNT(units)": (pytest.approx(1 / math.sqrt(2 * 0.05)),)}
            for cell_avg, s, n in ((r[2], r[3], r[4]) for r in rows):
                assert (cell_avg is None) if n < 1 else cell_avg == pytest.approx(s / n, rel=1e-12)
            z_sum += zs([r[:2] + (r[3],) for r in rows], rc.columns["s"].sigma, {k: v[1] for k, v in exact.items()}, 2, 2)
            z_count += zs([r[:2] + (r[4],) for r in rows], rc.columns["n"].sigma, {k: v[0] for k, v in exact.items()}, 2, 2)
    assert_spread(z_sum, GAUSSIAN_KURTOSIS, "AVG's SUM(employees)")
    assert_spread(z_count, GAUSSIAN_KURTOSIS, "AVG's COUNT(units)")


#: per-group thresholds of payann by naics2 (paper 000 Example 5.7), above and below the default
OVERRIDES = {"11": 2500, "21": 40000, "22": 40000, "23": 20000, "31": 5000, "42": 20000, "44": 15000,
             "51": 30000, "52": 20000, "54": 25000, "62": 20000, "72": 5000}


def test_per_group_threshold_sum_spread(demo_files, tmp_path):
    """SUM(payann) grouped by the key that sets per-group thresholds: each cell's noise has its
    own group's T, and so does its receipt σ — in the overridden and the default groups alike."""
    db, base = demo_files
    table = ", ".join(f'"{k}" = {v}' for k, v in OVERRIDES.items())
    policy = write_policy(tmp_path, base, "override", replace=(
        ("payann = { threshold = 10000,",
         f'payann = {{ threshold = 10000, overrides = {{ key = "naics2", thresholds = {{ {table} }} }},'),))
    exact = {(s, k): p for s, k, p in raw(db, "SELECT state, naics2, SUM(payann) FROM establishments GROUP BY ALL")}
    overridden, default = [], []
    with dpsql.connect(db, policy, _random_source=seeded_random(104)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for _ in range(4):  # 4 × 1 224 cells: 2 448 overridden, 2 448 default
            cur = con.execute("SELECT state, naics2, SUM(payann) AS p FROM establishments GROUP BY state, naics2")
            rows, sig = cur.fetchall(), cur.receipt.columns["p"].sigma
            for row, s, z in zip(rows, sig, zs(rows, sig, exact, 2, 2)):
                t = OVERRIDES.get(row[1], 10000)
                assert s == pytest.approx(t / math.sqrt(2 * 0.1))
                (overridden if row[1] in OVERRIDES else default).append(z)
    assert_spread(overridden, GAUSSIAN_KURTOSIS, "SUM(payann), groups with their own threshold")
    assert_spread(default, GAUSSIAN_KURTOSIS, "SUM(payann), groups with the default threshold")


# ----------------------------------------------------------------------------- pure DP, geometric


def test_geometric_spread(demo_files, tmp_path):
    """noise.mechanism = "geometric": ε = 0.5 split over COUNT and SUM, b = Δ/ε_i."""
    db, base = demo_files
    policy = write_policy(tmp_path, base, "geometric", replace=(
        ('mechanism = "discrete_gaussian"', 'mechanism = "geometric"'),
        ("default_rho = 0.1", "default_rho = 0.1\ndefault_epsilon = 0.5")))
    sql = ("SELECT state, naics2, COUNT(*) AS n, SUM(payann) AS p FROM establishments WHERE (state < 'M' OR payann < 0) "
           "GROUP BY state, naics2")
    exact = {(s, k): (n, p) for s, k, n, p in raw(db, "SELECT state, naics2, COUNT(*), SUM(payann) FROM establishments "
                                                     "WHERE (state < 'M' OR payann < 0) GROUP BY ALL")}
    z_count: list[float] = []
    z_sum: list[float] = []
    with dpsql.connect(db, policy, _random_source=seeded_random(105)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for _ in range(4):  # 4 × 1 224 cells per aggregate
            cur = con.execute(sql)
            rows, rc = cur.fetchall(), cur.receipt
            assert rc.mechanism == "geometric" and rc.epsilon == Fraction(1, 2)
            assert all(x == pytest.approx(dlap_sd(1 / 0.25)) for x in rc.columns["n"].sigma)
            assert all(x == pytest.approx(dlap_sd(10000 / 0.25)) for x in rc.columns["p"].sigma)
            z_count += zs([r[:3] for r in rows], rc.columns["n"].sigma, {k: v[0] for k, v in exact.items()}, 2, 2)
            z_sum += zs([r[:2] + (r[3],) for r in rows], rc.columns["p"].sigma, {k: v[1] for k, v in exact.items()}, 2, 2)
    assert_spread(z_count, dlap_kurtosis(4), "geometric COUNT(*)")
    assert_spread(z_sum, dlap_kurtosis(40000), "geometric SUM(payann)")


# ----------------------------------------------------------------------------- partition selection


def tsgd_sd(epsilon: Fraction, k: int) -> float:
    """Exact standard deviation of the k-TSGD, P(x) ∝ e^(−ε|x|) on |x| ≤ k (paper 002 Def. 6)."""
    x = np.arange(-k, k + 1, dtype=np.float64)
    w = np.exp(-float(epsilon) * np.abs(x))
    return math.sqrt(float(np.sum(w * x * x) / np.sum(w)))


def test_thresholded_count_spread(demo_files, tmp_path):
    """[selection] method = "truncated_geometric": the COUNT of a private-key group is the
    selection's own noisy count (paper 002 Theorem 6). Groups with more than 2k+1 units are
    released whatever the noise (|X| ≤ k), so their noise is not conditioned by the selection;
    smaller groups are checked through the number released instead (eq. 8)."""
    db, base = demo_files
    policy = write_policy(tmp_path, base, "tsgd", append='\n[selection]\nmethod = "truncated_geometric"\n')
    eps, delta = Fraction(1, 2), Fraction(1, 10**6)  # the policy's selection defaults
    k = tsgd_threshold(eps, delta)
    sd = tsgd_sd(eps, k)
    z: list[float] = []
    # rho = 0.5 covers the selection's ε²/2 = 0.125 however the session accounts for it
    with dpsql.connect(db, policy, rho="0.5", _random_source=seeded_random(106)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for key in ("county", "naics"):
            exact = dict(raw(db, f"SELECT {key}, COUNT(*) FROM establishments GROUP BY {key}"))
            n = np.array(list(exact.values()))
            p = tsgd_release_probability(n, eps, delta)
            released = 0
            for _ in range(4):  # 4 × (685 counties + 613 industries) cells above 2k+1 = 51 units
                cur = con.execute(f"SELECT {key}, COUNT(*) AS n FROM establishments GROUP BY {key}")
                rows, rc = cur.fetchall(), cur.receipt
                # the count is the selection's own: no noise term of its own, no ρ beyond the selection's
                assert [(t.aggregate, t.mechanism, t.rho) for t in rc.noise] == [("COUNT(units)", "truncated_geometric", 0)]
                assert all(sd <= s <= 1.001 * sd for s in rc.columns["n"].sigma)
                assert all(abs(c - exact[g]) <= k and c > k for g, c in rows)
                z += [(c - exact[g]) / sd for g, c in rows if exact[g] > 2 * k + 1]
                released += len(rows)
                assert {g for g in exact if exact[g] > 2 * k + 1} <= {g for g, _ in rows}
            expected, var = 4 * p.sum(), 4 * float(np.sum(p * (1 - p)))
            assert abs(released - expected) <= Z * math.sqrt(var) + 1, (key, released, expected)
    assert_spread(z, dlap_kurtosis(1 / float(eps)), "truncated-geometric count")


def test_optimal_selection_release_rate(demo_files, tmp_path):
    """The optimal partition selection (paper 002 Theorem 1) keeps a group of n units with
    probability π(n): over 5 queries of device_model (2 639 groups, 1 300 of them single users)
    the number released must match Σ π(n) for the policy's (ε, δ) — a wrong ε, δ or n (split
    rows, rows instead of units) shifts it by many standard deviations."""
    db, base = demo_files
    exact = dict(raw(db, "SELECT device_model, COUNT(*) FROM devices GROUP BY device_model"))
    p = release_probability(np.array(list(exact.values())), Fraction(1, 2), Fraction(1, 10**6))
    released = []
    with dpsql.connect(db, write_policy(tmp_path, base, "optimal"), rho="0.5", _random_source=seeded_random(107)) as con:
        con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
        for _ in range(5):
            rows = con.execute("SELECT device_model, COUNT(*) FROM devices GROUP BY device_model").fetchall()
            released += [exact[r[0]] for r in rows]
    expected, var = 5 * p.sum(), 5 * float(np.sum(p * (1 - p)))
    assert abs(len(released) - expected) <= Z * math.sqrt(var) + 1, (len(released), expected)


# ----------------------------------------------------------------------------- many rows per unit, κ > 1


MANY_POLICY = """
[budget]
default_rho = 1
total_rho = 1000000
total_delta = 0.5
ledger = {ledger}
[selection]
epsilon = 1
[tables.visits]
privacy_unit = "pid"
max_groups = {kappa}
row_threshold = 4
max_splits = 5
[tables.visits.measures]
amount = {{ threshold = 50, range = [0, 1000] }}
[tables.visits.keys]
region = {{ keyset = {regions} }}
shop = {{}}
"""
MANY_REGIONS = [f"R{i:02d}" for i in range(50)]


def many_rows_db(tmp_path: Path, kappa: int, rows: list[tuple]) -> tuple[Path, Path]:
    db, policy = tmp_path / f"many{kappa}.duckdb", tmp_path / f"many{kappa}.policy.toml"
    csv = tmp_path / f"many{kappa}.csv"
    csv.write_text("".join(f"{u},{g},{a},{sh}\n" for u, g, a, sh in rows))  # executemany is slow at this size
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE visits(pid INTEGER, region VARCHAR NOT NULL, amount BIGINT, shop VARCHAR)")  # issue 32
    con.execute(f"INSERT INTO visits SELECT * FROM read_csv('{csv}', header = false, columns = "
                "{'pid': 'INTEGER', 'region': 'VARCHAR', 'amount': 'BIGINT', 'shop': 'VARCHAR'})")
    con.close()
    policy.write_text(MANY_POLICY.format(ledger=json.dumps(str(tmp_path / f"many{kappa}.ledger.sqlite")),
                                         kappa=kappa, regions=json.dumps(MANY_REGIONS)))
    return db, policy


#: the two-level exact answer, written here: per (unit, region) rows and amounts, top-coded at
#: K·R = 20 rows and ±K·T = ±250, then summed per region (no unit is in more than κ regions)
MANY_EXACT = """
SELECT region, SUM(LEAST(n, 20)), COUNT(*), SUM(GREATEST(LEAST(s, 250), -250))
FROM (SELECT pid, region, COUNT(*) AS n, COALESCE(SUM(amount), 0) AS s FROM visits
      WHERE pid IS NOT NULL GROUP BY pid, region) GROUP BY region
"""


def test_many_rows_kappa_three_spread(tmp_path):
    """A table with many rows per unit, κ = 3 (each unit in 1-3 regions, 1-9 rows each, so the
    bounding keeps every row and the exact answer needs no salt): COUNT(*) (rows, split at R = 4),
    COUNT(DISTINCT pid) and SUM(amount) (T = 50) over 50 public regions, 30 queries = 1 500 cells
    each. The receipt's σ is Δ/√(2ρ) of its own noise term with Δ = R, 1, T — per (unit, group)
    record, as P(u) accounts it — and the released values spread by that σ."""
    import random

    r = random.Random(5)
    rows = [(u, g, r.randint(0, 120), "s") for u in range(3000) for g in r.sample(MANY_REGIONS, r.randint(1, 3))
            for _ in range(r.randint(1, 9))]
    db, policy = many_rows_db(tmp_path, 3, rows)
    exact = {g: (n, u, s) for g, n, u, s in raw(db, MANY_EXACT)}
    sql = "SELECT region, COUNT(*) AS n, COUNT(DISTINCT pid) AS u, SUM(amount) AS s FROM visits GROUP BY region"
    z: dict[str, list[float]] = {"n": [], "u": [], "s": []}
    with dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(77)) as con:
        for _ in range(30):
            cur = con.execute(sql)
            got = cur.fetchall()
            assert len(got) == 50
            terms = {t.aggregate: t for t in cur.receipt.noise}
            for i, (name, label, delta) in enumerate((("n", "COUNT(*) rows", 4), ("u", "COUNT(units)", 1),
                                                       ("s", "SUM(amount)", 50))):
                sig = cur.receipt.columns[name].sigma
                assert sig[0] == pytest.approx(delta / math.sqrt(2 * float(terms[label].rho)), rel=1e-12)
                z[name] += zs(got, sig, {(g,): v[i] for g, v in exact.items()}, 1, 1 + i)
    for name in z:
        assert_spread(z[name], GAUSSIAN_KURTOSIS, f"κ = 3, {name}")


def test_many_rows_gaussian_selection_spread(tmp_path):
    """κ = 8, private key shop: the selection runs Gaussian thresholding (the rule's choice at
    ε = 1, δ = 1e-6), and the released groups' COUNT(DISTINCT pid) and COUNT(*) spread by the
    receipt's σ = Δ/√(2ρ) (Δ = 1 and R = 4): selection decides which groups, never their noise.
    60 shops of 150 units (always kept: n is 7σ above the threshold) × 25 queries = 1 500 cells."""
    rows = [(u, "R00", 1, f"s{u % 60:02d}") for u in range(9000) for _ in range(1 + u % 3)]
    db, policy = many_rows_db(tmp_path, 8, rows)
    exact = {(s,): (n, u) for s, n, u in raw(db, "SELECT shop, SUM(LEAST(n, 20)), COUNT(*) FROM (SELECT pid, shop, "
                                                  "COUNT(*) AS n FROM visits GROUP BY pid, shop) GROUP BY shop")}
    sql = "SELECT shop, COUNT(*) AS n, COUNT(DISTINCT pid) AS u FROM visits GROUP BY shop"
    z: dict[str, list[float]] = {"n": [], "u": []}
    with dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(78)) as con:
        for _ in range(25):
            cur = con.execute(sql)
            got = cur.fetchall()
            assert len(got) == 60 and cur.receipt.selection["kappa_method"] == "gaussian"
            terms = {t.aggregate: t for t in cur.receipt.noise}
            for i, (name, label, delta) in enumerate((("n", "COUNT(*) rows", 4), ("u", "COUNT(units)", 1))):
                sig = cur.receipt.columns[name].sigma
                assert sig[0] == pytest.approx(delta / math.sqrt(2 * float(terms[label].rho)), rel=1e-12)
                z[name] += zs(got, sig, {k: v[i] for k, v in exact.items()}, 1, 1 + i)
    for name in z:
        assert_spread(z[name], GAUSSIAN_KURTOSIS, f"κ = 8, Gaussian selection, {name}")
