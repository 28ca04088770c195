"""Integer keys with a public range, and a column in two roles (issue 32).

``age = { range = [0, 120] }`` makes every integer of the range the key's public keyset; GROUP BY
the column or an expression of it (``FLOOR(age / 10) * 10``, ``age // 10 * 10``, ``WIDTH_BUCKET``,
a ``CASE``) releases the expression's image of the range, computed here in Python, independently
of dpsql; a row outside the range is read as NULL. The same column may also be a measure:
``GROUP BY age`` with ``AVG(age)``. End to end on SmartNoise's PUMS sample (../shared/data/pums/),
with counts and sums checked against the CSV read by the csv module. Hostile rows on neighbours:
tests/test_hostile_schemas.py. The SQL forms themselves: grammar_tests/number_keys*.sql.
"""

from __future__ import annotations

import csv
import math
import textwrap
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import PolicyFileError, QueryRefused
from dpsql.policy.loader import parse_policy
from dpsql.sql.spellings import width_bucket_as_case
from dpsql.testing import seeded_random
import table_rows

PUMS = Path(__file__).resolve().parents[2] / "shared" / "data" / "pums" / "PUMS_pid.csv"
if not PUMS.exists():  # the main checkout and a worktree both sit beside ../shared
    PUMS = Path("/work/shared/data/pums/PUMS_pid.csv")

BASE = {"budget": {"default_rho": 1.0, "total_rho": 1000.0},
        "tables": {"p": {"privacy_unit": "id", "measures": {"m": {"threshold": 100}}}}}


def _policy(keys: dict, measures: dict | None = None) -> dict:
    table = {"privacy_unit": "id", "measures": measures if measures is not None else {"m": {"threshold": 100}}, "keys": keys}
    return {"budget": dict(BASE["budget"]), "tables": {"p": table}}


def test_an_integer_range_key_holds_every_integer_of_its_range():
    p = parse_policy(_policy({"age": {"range": [0, 120]}, "year": {"range": [-3, 2]}}))
    age, year = p.tables["p"].keys["age"], p.tables["p"].keys["year"]
    assert age.public and age.numeric and age.keyset == tuple(i for i in range(121))
    assert year.keyset == (-3, -2, -1, 0, 1, 2) and year.range == (-3, 2)
    assert "public integer key" in p.tables["p"].role("age") and "range 0 to 120" in p.tables["p"].role("age")


@pytest.mark.parametrize("key, reason", [
    ({"range": [0, "120"]}, "must hold two integers"),
    ({"range": [0, 120], "grain": "day"}, "applies to a date/time range"),
    ({"range": [10, 1]}, "ends (1) before it starts (10)"),
    ({"range": [0, 1_000_000]}, "more than 1,000,000"),
    ({"range": [0, 120], "keyset": [1, 2]}, "has both a keyset and a range"),
    ({"range": [True, False]}, "must hold two days"),
    ({"range": [0]}, "or [lowest, highest] integers"),
])
def test_a_bad_integer_range_is_refused_naming_the_field(key, reason):
    with pytest.raises(PolicyFileError) as err:
        parse_policy(_policy({"age": key}))
    assert "tables.p.keys.age" in str(err.value) and reason in str(err.value)


def test_a_column_may_be_a_key_and_a_measure():
    """Two roles: the same name under [keys] and [measures]; each entry is validated as its own."""
    p = parse_policy(_policy({"age": {"range": [0, 120]}, "sex": {}}, {"age": {"threshold": 100}}))
    t = p.tables["p"]
    assert t.keys["age"].numeric and t.measures["age"].threshold == 100
    with pytest.raises(PolicyFileError, match="tables.p.measures.age.threshold"):
        parse_policy(_policy({"age": {"range": [0, 120]}}, {"age": {}}))
    with pytest.raises(PolicyFileError, match="privacy_unit"):
        parse_policy(_policy({"id": {"range": [0, 120]}}, {"age": {"threshold": 100}}))


# ------------------------------------------------------------------------------- on the PUMS sample
def _rows() -> list[dict]:
    with PUMS.open() as f:
        return [{k: (float(v) if k == "income" else int(v)) for k, v in r.items()} for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def pums(tmp_path_factory) -> tuple[Path, Path]:
    """PUMS_pid.csv as a DuckDB file (income DOUBLE, the rest BIGINT), and a policy in which age
    is a public integer key and a measure, educ an integer key, sex a keyset, married private."""
    folder = tmp_path_factory.mktemp("pums")
    db = folder / "pums.duckdb"
    con = duckdb.connect(str(db))
    # NOT NULL as the sample is (no NULL): a nullable key would add its NULL group (tests/test_null_keys.py)
    con.execute("CREATE TABLE pums (age BIGINT NOT NULL, sex BIGINT NOT NULL, educ BIGINT NOT NULL, race BIGINT NOT NULL, "
                "income DOUBLE NOT NULL, married BIGINT NOT NULL, pid BIGINT PRIMARY KEY)")
    table_rows.insert(con, "pums", [[r[c] for c in ("age", "sex", "educ", "race", "income", "married", "pid")] for r in _rows()])
    con.close()
    policy = folder / "pums.policy.toml"
    policy.write_text(textwrap.dedent("""
        [budget]
        default_rho = 1000.0
        total_rho = 1000000.0
        [tables.pums]
        privacy_unit = "pid"
        [tables.pums.measures]
        age = { threshold = 100 }
        income = { threshold = 500000 }
        [tables.pums.keys]
        age = { range = [0, 120] }
        educ = { range = [1, 16] }
        sex = { keyset = [0, 1] }
        married = {}
        """))
    return db, policy


def _answer(pums, sql: str, seed: int = 1) -> list[tuple]:
    db, policy = pums
    with dpsql.connect(db, policy, _random_source=seeded_random(seed)) as con:
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall()


# At ρ = 1000 a count's σ is √(1/2000) ≈ 0.022 (so a released count is the exact one) and a sum of
# age (T = 100) has σ ≈ 2.2: an average over n people is within 5σ/n of the exact one.
SUM_SIGMA = 100 / math.sqrt(2 * 1000)


def _avg_within(avg: float, a: float, n: int) -> bool:
    """AVG(age) over the n people of age a (so its exact value is a) is within 5σ of it: AVG is a
    noisy SUM (T = 100) over a noisy COUNT, each at half of ρ = 1000 (σ_s = 100/√1000, σ_c =
    1/√1000), so AVG − a ≈ (e_s − a·e_c) / n: σ = √(σ_s² + a²σ_c²) / n, the count at least n − 5σ_c."""
    s_sigma, c_sigma = 100 / math.sqrt(1000), 1 / math.sqrt(1000)
    return abs(avg - a) <= 5 * math.hypot(s_sigma, a * c_sigma) / (n - 5 * c_sigma)


def test_group_by_age_with_avg_age_on_pums(pums):
    """``SELECT age, AVG(age), COUNT(*) ... GROUP BY age``: every age 0..120 (the public keyset,
    empty ones too), each count the CSV's, each average its age (or NULL when nobody has it)."""
    got = {r[0]: r[1:] for r in _answer(pums, "SELECT age, AVG(age), COUNT(*) FROM pums GROUP BY age")}
    rows = _rows()
    assert set(got) == set(range(0, 121))
    for age in range(121):
        n = sum(1 for r in rows if r["age"] == age)
        avg, count = got[age]
        assert count == n, age
        if n:
            assert abs(avg - age) <= 5 * SUM_SIGMA / n, (age, avg)


def test_group_by_sex_with_avg_age_and_educ_with_avg_income(pums):
    rows = _rows()
    got = {r[0]: r[1:] for r in _answer(pums, "SELECT sex, AVG(age), COUNT(*) FROM pums GROUP BY sex")}
    for sex in (0, 1):
        ages = [r["age"] for r in rows if r["sex"] == sex]
        assert got[sex][1] == len(ages) and abs(got[sex][0] - sum(ages) / len(ages)) <= 5 * SUM_SIGMA / len(ages)
    got = {r[0]: r[1:] for r in _answer(pums, "SELECT educ, AVG(income), COUNT(*) FROM pums GROUP BY educ")}
    assert set(got) == set(range(1, 17))
    income_sigma = 500000 / math.sqrt(2 * 1000)
    for educ in range(1, 17):
        incomes = [r["income"] for r in rows if r["educ"] == educ]
        assert got[educ][1] == len(incomes)
        if incomes:
            assert abs(got[educ][0] - sum(incomes) / len(incomes)) <= 5 * income_sigma / len(incomes), educ


def _pg_width_bucket(x: float, low: float, high: float, n: int) -> int:
    """PostgreSQL's width_bucket, from its documentation: buckets 1..n of equal width, 0 below
    and n + 1 above (mirrored when high < low)."""
    if low < high:
        return 0 if x < low else n + 1 if x >= high else int((x - low) * n // (high - low)) + 1
    return 0 if x > low else n + 1 if x <= high else int((low - x) * n // (low - high)) + 1


BINS = [  # SQL of age, the same function in Python
    ("FLOOR(age / 10) * 10", lambda a: math.floor(a / 10) * 10),
    ("age // 10 * 10", lambda a: a // 10 * 10),
    ("WIDTH_BUCKET(age, 0, 100, 10)", lambda a: _pg_width_bucket(a, 0, 100, 10)),
    ("WIDTH_BUCKET(age, 90, 15, 4)", lambda a: _pg_width_bucket(a, 90, 15, 4)),
    ("CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' ELSE 'senior' END",
     lambda a: "minor" if a < 18 else "adult" if a < 65 else "senior"),
    ("age % 7", lambda a: a % 7),
]


@pytest.mark.parametrize("expr, f", BINS, ids=[b[0] for b in BINS])
def test_bins_of_an_integer_key_release_the_image_of_its_range(pums, expr, f):
    """The released groups are exactly {f(a) : a in 0..120}, computed here, and each group's count
    is the number of CSV rows a maps into it (every PUMS age is within the range)."""
    got = {r[0]: r[1] for r in _answer(pums, f"SELECT {expr} AS b, COUNT(*) FROM pums GROUP BY 1")}
    image = {f(a) for a in range(0, 121)}
    assert set(got) == image
    rows = _rows()
    for b in image:
        assert got[b] == sum(1 for r in rows if f(r["age"]) == b), b


def test_width_bucket_is_postgresql_s_on_every_integer_and_edge():
    """The CASE that WIDTH_BUCKET becomes, run by DuckDB, against PostgreSQL's definition written
    above: both directions, bounds, values far outside, NULL."""
    from sqlglot import parse_one

    con = duckdb.connect()
    for low, high, n in [(0, 100, 10), (100, 0, 10), (-7, 13, 3), (0, 1, 1), (5, 6, 1000), (-2**40, 2**40, 1024)]:
        values = sorted({low, high, low - 1, high + 1, (low + high) // 2, -2**62, 2**62} | set(range(-20, 120)))
        tree = width_bucket_as_case(parse_one(f"SELECT WIDTH_BUCKET(x, {low}, {high}, {n}) FROM v", read="duckdb"))
        con.execute("CREATE OR REPLACE TABLE v (x BIGINT)")
        con.executemany("INSERT INTO v VALUES (?)", [[x] for x in values] + [[None]])
        got = [r[0] for r in con.execute(tree.sql("duckdb").replace("FROM v", "FROM v ORDER BY x NULLS LAST")).fetchall()]
        assert got == [_pg_width_bucket(x, low, high, n) for x in values] + [None], (low, high, n)


@pytest.mark.parametrize("sql", [
    "SELECT WIDTH_BUCKET(age, 0, 100, 0) AS b, COUNT(*) FROM pums GROUP BY 1",
    "SELECT WIDTH_BUCKET(age, 5, 5, 3) AS b, COUNT(*) FROM pums GROUP BY 1",
    "SELECT WIDTH_BUCKET(age, educ, 100, 3) AS b, COUNT(*) FROM pums GROUP BY 1",
    "SELECT WIDTH_BUCKET(age, 0, 100, 2.5) AS b, COUNT(*) FROM pums GROUP BY 1",
])
def test_width_bucket_without_literal_bounds_is_refused(pums, sql):
    with pytest.raises(QueryRefused) as err:
        _answer(pums, sql)
    assert err.value.code == "DP110"


def test_groups_without_aggregates_of_an_integer_key_are_its_range_free(pums):
    """SELECT DISTINCT of a range key (or of its bins) is the public image: every value, charged 0."""
    db, policy = pums
    with dpsql.connect(db, policy) as con:
        cur = con.cursor()
        cur.execute("SELECT DISTINCT age // 10 * 10 AS d FROM pums")
        assert [r[0] for r in cur.fetchall()] == list(range(0, 121, 10)) and cur.receipt.rho == 0


def test_a_width_bucket_column_is_named_as_written(pums):
    db, policy = pums
    with dpsql.connect(db, policy) as con:
        cur = con.cursor()
        cur.execute("SELECT WIDTH_BUCKET(age, 0, 100, 10), COUNT(*) FROM pums GROUP BY WIDTH_BUCKET(age, 0, 100, 10)")
        assert [d[0] for d in cur.description] == ["WIDTH_BUCKET(age, 0, 100, 10)", "COUNT(*)"]
        assert [r[0] for r in cur.fetchall()] == list(range(1, 12))


def test_a_private_key_and_a_measure_in_two_roles(pums):
    """married is a private key (partition selection) and age a measure beside it."""
    got = {r[0]: r[1:] for r in _answer(pums, "SELECT married, AVG(age), COUNT(*) FROM pums GROUP BY married")}
    rows = _rows()
    assert set(got) == {0, 1}
    for m in (0, 1):
        ages = [r["age"] for r in rows if r["married"] == m]
        assert got[m][1] == len(ages) and abs(got[m][0] - sum(ages) / len(ages)) <= 5 * SUM_SIGMA / len(ages)


def test_a_range_that_the_column_cannot_hold_is_refused_at_connect(tmp_path):
    """A DOUBLE or DECIMAL holds values between the integers, a TINYINT no 1,000, a DATE no
    integer: refused when connecting, whatever the rows (the schema and the policy are public)."""
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE p (id BIGINT, m BIGINT, d DOUBLE, c DECIMAL(10,2), t TINYINT, day DATE, u UTINYINT, "
                "h UHUGEINT)")
    con.close()
    for column, rng, reason in [("d", "[0, 120]", "is DOUBLE"), ("c", "[0, 120]", "is DECIMAL"),
                                ("t", "[0, 1000]", "does not fit"), ("day", "[0, 120]", "is DATE"),
                                ("u", "[-1, 10]", "does not fit")]:
        policy = tmp_path / f"{column}.toml"
        policy.write_text(f"[tables.p]\nprivacy_unit = 'id'\n[tables.p.measures]\nm = {{ threshold = 5 }}\n"
                          f"[tables.p.keys]\n{column} = {{ range = {rng} }}\n")
        with pytest.raises(PolicyFileError) as err:
            dpsql.connect(db, policy).close()
        assert f"tables.p.keys.{column}.range" in str(err.value) and reason in str(err.value), str(err.value)
    policy = tmp_path / "ok.toml"
    policy.write_text("[tables.p]\nprivacy_unit = 'id'\n[tables.p.keys]\nt = { range = [-128, 127] }\n"
                      "u = { range = [0, 255] }\nh = { range = [0, 5] }\n")
    dpsql.connect(db, policy).close()


def test_init_drafts_age_as_a_key_and_a_measure_and_calendar_fields_with_their_ranges(tmp_path):
    """`dpsql init` on the PUMS CSV (the real command): age is drafted as a key with the range its
    name means and as a measure, and GROUP BY age with AVG(age) and its bins answer; a month
    column gets 1 to 12, whatever values the rows hold (3 to 5 here: nothing read from them)."""
    import os
    import subprocess
    import sys
    import tomllib

    with PUMS.open() as src, (tmp_path / "pums.csv").open("w") as out:
        lines = src.read().splitlines()
        out.write(lines[0] + ",month\n" + "".join(f"{line},{3 + i % 3}\n" for i, line in enumerate(lines[1:])))
    env = dict(os.environ, DPSQL_HOME=str(tmp_path), COLUMNS="120")
    p = subprocess.run([sys.executable, "-m", "dpsql", "init", "pums.csv", "--unit", "pid"], cwd=tmp_path,
                       input="", capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    policy = tmp_path / "pums.policy.toml"
    spec = tomllib.loads(policy.read_text())["tables"]["pums"]
    assert spec["keys"]["age"] == {"range": [0, 120]} and spec["keys"]["month"] == {"range": [1, 12]}
    assert spec["measures"]["age"] == {"threshold": 120, "range": [0, 120], "points": 121}
    # init imports private columns as nullable (a NOT NULL would tell that no row is NULL), so each
    # key also has its NULL group (tests/test_null_keys.py), released whatever the rows hold
    with dpsql.connect(tmp_path / "pums.duckdb", policy) as con:
        cur = con.cursor()
        cur.execute("SELECT age, AVG(age), COUNT(*) FROM pums GROUP BY age")
        assert [r[0] for r in cur.fetchall()] == [*range(121), None]
        cur.execute("SELECT month, COUNT(*) FROM pums GROUP BY month")
        assert [r[0] for r in cur.fetchall()] == [*range(1, 13), None]
        cur.execute("SELECT WIDTH_BUCKET(age, 0, 100, 5) AS b, MEDIAN(age) FROM pums GROUP BY 1")
        assert [r[0] for r in cur.fetchall()] == [1, 2, 3, 4, 5, 6, None]


def test_many_rows_per_unit_bins_an_integer_key_in_two_roles(tmp_path):
    """PUMS_dup.csv (1,948 rows of the 1,000 people, max_groups = 2): WIDTH_BUCKET of age counts
    each person once in the bucket of their age (the CSV's distinct pids per bucket, computed
    here), and AVG(age) by sex is within the noise of the people's mean age."""
    dup = PUMS.with_name("PUMS_dup.csv")
    with dup.open() as f:
        rows = [{k: int(float(v)) for k, v in r.items()} for r in csv.DictReader(f)]
    db = tmp_path / "dup.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE pums (age BIGINT NOT NULL, sex BIGINT NOT NULL, pid BIGINT NOT NULL)")
    table_rows.insert(con, "pums", [[r["age"], r["sex"], r["pid"]] for r in rows])
    con.close()
    policy = tmp_path / "dup.toml"
    policy.write_text("[budget]\ndefault_rho = 1000.0\ntotal_rho = 1e6\n[tables.pums]\nprivacy_unit = 'pid'\n"
                      "max_groups = 2\nrow_threshold = 3\n[tables.pums.measures]\nage = { threshold = 100 }\n"
                      "[tables.pums.keys]\nage = { range = [0, 120] }\nsex = { keyset = [0, 1] }\n")
    with dpsql.connect(db, policy, _random_source=seeded_random(2)) as c:
        cur = c.cursor()
        cur.execute("SELECT WIDTH_BUCKET(age, 0, 100, 10) AS b, COUNT(DISTINCT pid) FROM pums GROUP BY 1")
        got = dict(cur.fetchall())
        cur.execute("SELECT sex, AVG(age) FROM pums GROUP BY sex")
        avg = dict(cur.fetchall())
    people = {r["pid"]: r for r in rows}
    assert set(got) == set(range(1, 12))
    for b in range(1, 12):
        assert got[b] == len({p for p, r in people.items() if _pg_width_bucket(r["age"], 0, 100, 10) == b}), b
    assert set(avg) == {0, 1}
    for sex in (0, 1):  # a row-weighted mean (COUNT(*) counts rows here); each person is in one sex group
        ages = [r["age"] for r in rows if r["sex"] == sex]
        assert abs(avg[sex] - sum(ages) / len(ages)) <= 5 * SUM_SIGMA / len(ages) + 0.01, sex


def test_bins_and_two_roles_through_dpsql_serve_and_psycopg(pums, tmp_path):
    """A real `dpsql serve` on the PUMS file and psycopg (the extended protocol a BI tool uses):
    GROUP BY age with AVG(age) and WIDTH_BUCKET bins come back as typed columns, every bin of the
    range, counts as the CSV's."""
    psycopg = pytest.importorskip("psycopg")
    import server_clients_harness as harness

    db, policy = pums
    harness.add_user(tmp_path, "alice", "alice-Pw-1", str(db))
    served = harness.start(tmp_path, str(db), "--policy", str(policy))
    try:
        with psycopg.connect(served.dsn("alice", "alice-Pw-1", dbname="pums")) as con:
            cur = con.execute("SELECT WIDTH_BUCKET(age, 0, 100, 10) AS b, COUNT(*) AS n FROM pums "
                              "WHERE age > %s GROUP BY 1 ORDER BY 1", [0])
            got = cur.fetchall()
            assert [d.name for d in cur.description] == ["b", "n"]
            rows = _rows()
            assert got == [(b, sum(1 for r in rows if r["age"] > 0 and _pg_width_bucket(r["age"], 0, 100, 10) == b))
                           for b in range(1, 12)]
            cur = con.execute("SELECT age, AVG(age) AS a FROM pums GROUP BY age ORDER BY age")
            ages = cur.fetchall()
            assert [a for a, _ in ages] == list(range(121))
            for a, v in ages:
                n = sum(1 for r in rows if r["age"] == a)
                assert (v is None) if n == 0 else _avg_within(v, a, n), (a, v)  # unseeded: the server's own draws
    finally:
        served.stop()
