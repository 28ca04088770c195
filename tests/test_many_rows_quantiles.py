"""Quantiles and COUNT(DISTINCT col) on a table with many rows per unit (issue 31; sql/units.py,
docs/privacy.md "Many rows per unit").

Each kept (unit, group) record adds a keyed sample of its rows: at most ``quantile_rows`` = r
non-NULL values of the measure to the group's quantile histogram, at most ``row_threshold`` = R
distinct non-NULL values of the column to its COUNT(DISTINCT). The oracles here are plain Python
over the rows: the κ groups a unit keeps and the sample are chosen by DuckDB's HASH of (unit,
group, salt) and (unit, group, value, n, salt) for a quantile (n numbering the unit's rows of one
value in the group) or (unit, group, value, salt) for COUNT(DISTINCT), read from the file by plain
queries; everything
else (grouping, NULLs, ordering ties, bins, distinct values, the exponential mechanism's
distribution and its ε) is written here from the definitions, not read from dpsql.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
from test_many_rows import assert_refused_by_the_final_check
import table_rows

KAPPA, R, RQ = 3, 2, 3  # max_groups, row_threshold (distinct values per unit-group), quantile_rows
REGIONS = list("ABCDEFGHIJ")
OTHER = 2**63 - 1  # the histogram's key of values above every bound (sql/quantiles.py)

POLICY = """
[budget]
default_rho = {rho}
total_rho = 1e15
[selection]
epsilon = 1
[tables.visits]
privacy_unit = "pid"
max_groups = {kappa}
row_threshold = {r}
{extra}
[tables.visits.measures]
amount = {{ threshold = 50, range = [0, {hi}], points = {points} }}
[tables.visits.keys]
region = {{ keyset = {regions} }}
shop = {{}}
"""


def _database(tmp_path: Path, rows: list[tuple] | str, name: str = "q", rho: str = "1e12", extra: str = f"quantile_rows = {RQ}",
              hi: int = 200, points: int = 201, regions: list[str] = REGIONS) -> tuple[Path, Path]:
    """The visits table, from a list of rows or an INSERT ... SELECT statement (large units)."""
    db, policy = tmp_path / f"{name}.duckdb", tmp_path / f"{name}.policy.toml"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE visits(pid INTEGER, region VARCHAR NOT NULL, amount BIGINT, shop VARCHAR)")  # issue 32
    if isinstance(rows, str):
        con.execute(rows)
    elif rows:
        table_rows.insert(con, "visits", rows)
    con.close()
    policy.write_text(POLICY.format(rho=rho, kappa=KAPPA, r=R, extra=extra, hi=hi, points=points, regions=regions))
    return db, policy


def _rows(seed: int = 5) -> list[tuple]:
    import random

    r = random.Random(seed)
    rows = []
    for u in range(80):
        for _ in range(r.randint(1, 15)):  # many units with more than r rows in a group
            amount = None if r.random() < 0.1 else r.randint(0, 220)  # some above the grid's end
            rows.append((u, r.choice(REGIONS[:5]), amount, r.choice(["s1", "s2", "s3", "s4", None])))
    rows += [(999, g, 5 + i % 3, f"t{i}") for g in REGIONS for i in range(30)]  # in ten groups, 30 rows each
    rows += [(7, "A", 100, "s1")] * 6  # tied rows: the same (unit, group, value)
    rows += [(None, "A", 150, "s9")] * 4  # no unit: dropped
    return rows


def _oracle(db: Path, rows: list[tuple], salt: int, r: int, c: int, key: str = "region",
            other: str = "shop") -> dict[object, tuple[Counter, int]]:
    """Per group of ``key``: (the multiset of sampled amounts, the count of distinct sampled
    values of ``other``); a NULL key is a group of its own (as GROUP BY makes it)."""
    col = {"region": 1, "shop": 3}
    k, o = col[key], col[other]
    raw = duckdb.connect(str(db), read_only=True)
    group_hash = dict(((u, g), h) for u, g, h in raw.execute(
        f"SELECT DISTINCT pid, {key}, HASH(pid, {key}, {salt}) FROM visits WHERE pid IS NOT NULL").fetchall())
    value_hash = dict(((u, g, v, n), h) for u, g, v, n, h in raw.execute(  # a unit's n-th row of value v in group g
        f"SELECT pid, {key}, amount, n, HASH(pid, {key}, amount, n, {salt}) FROM (SELECT pid, {key}, amount, "
        f"CAST(ROW_NUMBER() OVER (PARTITION BY pid, {key}, amount) AS BIGINT) AS n FROM visits "
        "WHERE pid IS NOT NULL AND amount IS NOT NULL)").fetchall())
    other_hash = dict(((u, g, s), h) for u, g, s, h in raw.execute(
        f"SELECT DISTINCT pid, {key}, {other}, HASH(pid, {key}, {other}, {salt}) FROM visits "
        f"WHERE pid IS NOT NULL AND {other} IS NOT NULL").fetchall())
    raw.close()
    groups: dict[int, set] = {}
    for row in rows:
        if row[0] is not None:
            groups.setdefault(row[0], set()).add(row[k])
    kept = {(u, g) for u, gs in groups.items() for g in sorted(gs, key=lambda g: (group_hash[(u, g)], g is None, g or ""))[:KAPPA]}
    out = {}
    for group in {g for _, g in kept} | (set(REGIONS) if key == "region" else set()):
        values: Counter = Counter()
        seen: set = set()
        for u, g in kept:
            if g != group:
                continue
            mine = Counter(row[2] for row in rows if (row[0], row[k]) == (u, g) and row[2] is not None)
            each = sorted(((a, n) for a, count in mine.items() for n in range(1, count + 1)),
                          key=lambda an: (value_hash[(u, g, *an)], an[0]))
            values.update(a for a, _ in each[:r])
            distinct = sorted({row[o] for row in rows if (row[0], row[k]) == (u, g) and row[o] is not None},
                              key=lambda s: (other_hash[(u, g, s)], s))
            seen |= set(distinct[:c])
        out[group] = (values, len(seen))
    return out


def _bins(values: Counter, bounds: list[int]) -> dict[int, int]:
    """The sparse histogram of ``values`` over ``bounds``: bins (b_{j-1}, b_j], above all: OTHER."""
    out: Counter = Counter()
    for v, n in values.items():
        j = bisect.bisect_left(bounds, v)
        out[bounds[j] if j < len(bounds) else OTHER] += n
    return dict(out)


QUERY = "SELECT region, MEDIAN(amount), COUNT(DISTINCT shop), COUNT(*) FROM visits GROUP BY region ORDER BY region"


@pytest.mark.parametrize("rq", [1, RQ])
def test_the_bounded_histogram_and_distinct_count_equal_the_python_oracle(tmp_path, rq):
    """The exact query, run with a salt, holds per group exactly the oracle's sample: a unit's κ
    groups, in each at most r of its non-NULL amounts and R of its distinct shops."""
    from dpsql.sql.units import SALT

    rows = _rows()
    db, policy = _database(tmp_path, rows, extra=f"quantile_rows = {rq}")
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        ex = con.explain(QUERY)
        bounds = con.session.policy.tables["visits"].measures["amount"].grid.bounds()
    raw = duckdb.connect(str(db), read_only=True)
    for salt in (0, 987654321, 2**62 + 17):
        exact = raw.execute(ex.exact_sql.replace(SALT, str(salt))).fetchall()
        assert sorted(exact) == sorted(raw.execute(ex.reference_sql.replace(SALT, str(salt))).fetchall())  # EXPLAIN's
        got = {g: (h, d) for g, h, d, _ in exact}
        oracle = _oracle(db, rows, salt, rq, R)
        for g in REGIONS:
            values, distinct = oracle[g]
            hist, d = got.get(g, (None, None))
            bins = {} if hist is None or hist[0] is None else dict(zip(hist[0], hist[1]))
            assert bins == _bins(values, bounds), g
            assert (d or 0) == distinct, g
        assert sum(sum(v.values()) for v, _ in oracle.values()) > 0
    raw.close()


def test_a_private_key_with_null_groups_equals_the_oracle(tmp_path):
    """GROUP BY a private key (shop) with NULL shops: the NULL group is a group (kept or not by the
    same keyed hash), its sample and its distinct regions match the oracle, and the join of the
    sampled steps matches NULL with NULL."""
    from dpsql.sql.units import SALT

    rows = _rows()
    db, policy = _database(tmp_path, rows)
    sql = "SELECT shop, MEDIAN(amount), COUNT(DISTINCT region) FROM visits GROUP BY shop"
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        ex = con.explain(sql)
        bounds = con.session.policy.tables["visits"].measures["amount"].grid.bounds()
    raw = duckdb.connect(str(db), read_only=True)
    for salt in (3, 2**61 + 5):
        got = {g: (h, d) for g, h, d, _ in raw.execute(ex.exact_sql.replace(SALT, str(salt))).fetchall()}
        oracle = _oracle(db, rows, salt, RQ, R, key="shop", other="region")
        assert None in got and set(got) == set(oracle)
        for g, (values, distinct) in oracle.items():
            hist, d = got[g]
            bins = {} if hist is None or hist[0] is None else dict(zip(hist[0], hist[1]))
            assert bins == _bins(values, bounds) and (d or 0) == distinct, g
    raw.close()


def test_the_heavy_unit_adds_r_values_to_each_of_kappa_groups(tmp_path):
    """A unit with 30 rows in each of ten regions and nobody else: r values in κ regions."""
    rows = [(999, g, 5 + i % 3, f"t{i}") for g in REGIONS for i in range(30)]
    db, policy = _database(tmp_path, rows)
    from dpsql.sql.units import SALT

    with dpsql.connect(db, policy) as con:
        ex = con.explain(QUERY)
    raw = duckdb.connect(str(db), read_only=True)
    got = raw.execute(ex.exact_sql.replace(SALT, "4242")).fetchall()
    raw.close()
    hist = [sum(h[1]) for _, h, _, _ in got if h is not None and h[1] is not None]
    distinct = [d for _, _, d, _ in got if d]
    assert sorted(hist) == [RQ] * KAPPA and sorted(distinct) == [R] * KAPPA


def _answer(db: Path, policy: Path, sql: str, seed: int = 3):
    con = dpsql.connect(db, policy, _random_source=seeded_random(seed))
    try:
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall(), cur.receipt
    finally:
        con.close()


def test_neighbours_differing_by_a_unit_of_1e5_rows_have_the_same_outcome_kind(tmp_path):
    """D and D plus one unit with 10^5 rows in one group (and NULL shops, amounts off the grid):
    every query answers on both, with the same shape, and spends the same."""
    base = _rows()
    heavy = ("INSERT INTO visits SELECT 5000, 'A', CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1000003 END, "
             "CASE WHEN i % 5 = 0 THEN NULL ELSE 'h' || i END FROM range(100000) t(i)")
    queries = [QUERY, "SELECT MEDIAN(amount), QUANTILE_CONT(amount, 0.9), COUNT(DISTINCT shop) FROM visits",
               "SELECT shop, COUNT(DISTINCT region), MEDIAN(amount) FROM visits GROUP BY shop"]
    outcomes = []
    for j, extra in enumerate((None, heavy)):
        db, policy = _database(tmp_path, base, name=f"n{j}")
        if extra:
            con = duckdb.connect(str(db))
            con.execute(extra)
            con.close()
        outcomes.append([(a and len(a[0]), r.rho) for a, r in (_answer(db, policy, q) for q in queries)])
    assert outcomes[0][:2] == outcomes[1][:2]
    assert outcomes[0][2][1] == outcomes[1][2][1]  # a private key: which shops are released is noisy, the charge is not


def _eps(rho: Fraction) -> Fraction:
    """The exponential mechanism's ε for a charge ρ, from the definition: the largest ε with six
    decimals such that ε²/8 ≤ ρ."""
    e = Fraction(math.isqrt(int(8 * rho * 10**12)), 10**6)
    while (e + Fraction(1, 10**6)) ** 2 / 8 <= rho:
        e += Fraction(1, 10**6)
    return e


def test_the_sample_is_of_rows_not_of_distinct_values(tmp_path):
    """400 aircraft-like units, each with 9 rows of 5 and 1 row of 100 in one group, r = 1: a
    uniform sample of a unit's rows is 100 with probability 1/10 (about 40 of the 400 values), so
    the 75th percentile is 5 (100 would need more than 100 of them: Binomial(400, 1/10) is there
    with probability below 1e-20). A sample of the distinct values (equal values hashed alike, as
    before the row number joined the hash) is 100 half the time: the 75th percentile was 100."""
    rows = [(u, "A", 5, "s1") for u in range(400) for _ in range(9)] + [(u, "A", 100, "s1") for u in range(400)]
    db, policy = _database(tmp_path, rows, extra="quantile_rows = 1", rho="1e6")
    for seed in (1, 2, 3):
        with dpsql.connect(db, policy, _random_source=seeded_random(seed)) as con:
            cur = con.cursor()
            cur.execute(f"SELECT QUANTILE_CONT(amount, 0.75) FROM visits WHERE amount > -{seed} AND region = 'A'")
            assert cur.fetchall() == [(5,)]


def test_the_sampler_receives_epsilon_over_r(tmp_path, monkeypatch):
    """The ε the exponential mechanism is sampled at: √(8ρ_i) (six decimals, ρ_i = ρ / #aggregates)
    divided by r = quantile_rows; COUNT(DISTINCT col)'s noise is calibrated at Δ = R."""
    from dpsql.privacy import allocate, quantile

    seen: list[Fraction] = []
    real = quantile.draw

    def draw(hists, grid, q, epsilon, rng, *values):
        seen.append(epsilon)
        return real(hists, grid, q, epsilon, rng, *values)

    scales: list[Fraction] = []
    real_sample = allocate.Allocation.sample

    def sample(self, scale_list, group, rng):
        scales.extend(scale_list[int(g)] for g in group)
        return real_sample(self, scale_list, group, rng)

    monkeypatch.setattr(quantile, "draw", draw)
    monkeypatch.setattr(allocate.Allocation, "sample", sample)
    db, policy = _database(tmp_path, _rows(), rho="0.3")
    answer, receipt = _answer(db, policy, "SELECT MEDIAN(amount), COUNT(DISTINCT shop) FROM visits")
    rho_i = Fraction(3, 10) / 2
    assert seen == [_eps(rho_i) / RQ]
    assert scales == [Fraction(R * R) / (2 * rho_i)]  # σ² = Δ²/(2ρ_i) with Δ = R
    noise = {n.aggregate: n for n in receipt.noise}
    assert noise["MEDIAN(amount)"].sensitivity == (RQ * 0.5,)
    assert noise["COUNT(DISTINCT shop)"].sensitivity == (float(R),)
    # P(u): ρ per kept group for both (each group's release is ρ_i-zCDP in the unit), κ groups at most
    (term,) = receipt.policy_terms
    assert Fraction(term["rho_exact"]) == Fraction(3, 10) and Fraction(term["unit_bound_exact"]) == KAPPA * Fraction(3, 10)
    assert len(answer) == 1


def test_the_released_median_follows_the_exponential_mechanism_at_epsilon_over_r(tmp_path):
    """One query, 400 groups, each with the same data (so the same histogram whatever the salt):
    12 units per group, unit i with 5 rows all of value 2i (r = 3 of them sampled). The released
    medians are i.i.d. draws of the exponential mechanism over the grid 0..30 at ε/r; compared
    with a naive mechanism written here over the oracle histogram (a chi-square statistic), and
    shown far from the mechanism at ε (undivided), so the test can tell them apart."""
    groups = [f"g{i:03d}" for i in range(400)]
    rows = ("INSERT INTO visits SELECT g * 100 + u, 'g' || lpad(CAST(g AS VARCHAR), 3, '0'), 2 * u, 's' "
            "FROM range(400) a(g), range(12) b(u), range(5) c(k)")
    rho = Fraction(1, 50)
    db, policy = _database(tmp_path, rows, rho=str(float(rho)), hi=30, points=31, regions=groups)
    answer, _ = _answer(db, policy, "SELECT region, MEDIAN(amount) FROM visits GROUP BY region", seed=8)
    got = Counter(int(m) for _, m in answer)
    assert sum(got.values()) == len(groups)

    values = [2 * u for u in range(12) for _ in range(RQ)]  # the oracle histogram: r copies of each unit's value
    candidates = list(range(31))

    def em(eps: float) -> list[float]:
        score = [abs(0.5 * sum(v < c for v in values) - 0.5 * sum(v > c for v in values)) for c in candidates]
        w = [math.exp(-eps * s / (2 * RQ * 0.5)) for s in score]  # a unit moves a score by r·max(q, 1 − q)
        return [x / sum(w) for x in w]

    def chi2(p: list[float]) -> float:
        n = len(groups)
        # cells pooled where expected counts are small (at most one pool): a standard chi-square
        big = [i for i, x in enumerate(p) if x * n >= 5]
        small = [i for i in candidates if i not in big]
        stat = sum((got[c] - n * p[c]) ** 2 / (n * p[c]) for c in big)
        if small:
            e = n * sum(p[c] for c in small)
            stat += (sum(got[c] for c in small) - e) ** 2 / max(e, 1e-300)
        return stat

    eps = float(_eps(rho))
    # df ≤ 31: the 0.999 quantile of chi-square with 31 degrees of freedom is 61.1
    assert chi2(em(eps)) < 61.1
    assert chi2(em(eps * RQ)) > 200  # the mechanism at ε, not ε/r: a different distribution


def test_quantile_rows_is_validated_at_load(tmp_path):
    for i, (extra, words) in enumerate((("quantile_rows = 0", "positive integer"),
                                        ("quantile_rows = true", "positive integer"), ('quantile_rows = "2"', "positive integer"))):
        db, policy = _database(tmp_path, [], extra=extra, name=f"v{i}")
        with pytest.raises(dpsql.Error) as e:
            dpsql.connect(db, policy).close()
        assert "quantile_rows" in str(e.value) and words in str(e.value)
    db, policy = _database(tmp_path, [], name="none")
    policy.write_text(policy.read_text().replace("max_groups = 3\nrow_threshold = 2\n", ""))
    with pytest.raises(dpsql.Error) as e:
        dpsql.connect(db, policy).close()
    assert "quantile_rows" in str(e.value) and "max_groups" in str(e.value)


def test_the_sampled_sql_passes_the_final_check_and_tampered_forms_do_not(tmp_path):
    """The DENSE_RANK bounding of rows, the keyed samples and the joins of the per-group steps are
    proven total; the same text with another window function, a join on a failing cast, or a
    join to the private table itself is not."""
    from dpsql.sql.final_check import check_final
    from dpsql.sql.rewrite import exact_sql

    db, policy = _database(tmp_path, [(1, "A", 5, "a"), (1, "B", 7, "b"), (2, "A", 3, "a")])
    with dpsql.connect(db, policy) as con:
        s = con.session
        plan = s.plan(QUERY)
        types = dict(s.schema["visits"])
        sql = exact_sql(plan, types)
    check_final(sql, types)
    assert "QUALIFY DENSE_RANK()" in sql and "LEFT JOIN __h1 ON" in sql
    tampered = [sql.replace("DENSE_RANK()", "NTILE(2)", 1),
                sql.replace('(__agg."region" = __h1."region"', '(CAST(__agg."region" AS INTEGER) = __h1."region"', 1),
                sql.replace("LEFT JOIN __h1 ON", 'LEFT JOIN "visits" ON', 1)]
    assert_refused_by_the_final_check(sql, tampered, types)


def test_over_the_wire_with_psql_and_psycopg(start_server, tmp_path):
    """A real ``dpsql serve`` answers a median and a distinct count of a many-row table to psql
    and psycopg: one row per region, each median a value of the grid (0..200), and charges the
    analyst's ledger what one query costs."""
    import shutil
    import subprocess

    db, policy = _database(tmp_path, _rows(), rho="0.5")
    srv = start_server(users=("erin",), policy=policy, database=db)
    sql = "SELECT region, MEDIAN(amount) AS m, COUNT(DISTINCT shop) AS d FROM visits GROUP BY region ORDER BY region"
    with srv.connect("erin") as conn:
        rows = conn.execute(sql).fetchall()
    assert [r[0] for r in rows] == REGIONS
    assert all(float(m) == int(float(m)) and 0 <= float(m) <= 200 for _, m, _ in rows)
    assert srv.spent("erin") == Fraction(1, 2)
    if shutil.which("psql"):
        out = subprocess.run(["psql", srv.dsn("erin"), "-A", "-t", "-c", sql], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.strip().splitlines()
        assert [line.split("|")[0] for line in lines] == REGIONS
        assert srv.spent("erin") == Fraction(1, 2)  # the same statement: the release reused, not re-bought
        assert [line.split("|")[1] for line in lines] == [str(m) for _, m, _ in rows]
