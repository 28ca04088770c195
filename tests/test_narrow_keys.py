"""A public keyset narrowed by the query's own WHERE on that key (dpsql/sql/narrow.py; docs/sql.md,
"WHERE on a public key").

``WHERE age BETWEEN 20 AND 30 GROUP BY age`` releases ages 20..30, not all 0..120 with 110
noise-only groups; Superset's time range ``WHERE opened >= '2015-01-01' AND opened < '2016-01-01'
GROUP BY DATE_TRUNC('month', opened)`` releases 2015's twelve months. The groups expected are
computed here in Python from the policy's keysets and the predicate written a second time as a
Python function (SQL's NULL: a comparison with NULL is not true); the counts against the rows
inserted. Conjuncts that must narrow nothing (OR with a measure, two keys, a TIMESTAMP finer than
its grain, RANDOM()) keep the whole keyset.
"""

from __future__ import annotations

import datetime
import textwrap
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
import table_rows

STATES = ["CA", "NY", "TX", "WA"]
FIRST, LAST = datetime.date(2014, 1, 1), datetime.date(2016, 12, 31)


def _day(i: int) -> datetime.date:
    return FIRST + datetime.timedelta(days=(i * 37) % ((LAST - FIRST).days + 1))


def _rows() -> list[tuple]:
    """(id, age, state, opened, seen, income): ages 0..99, a NULL state every 7th row."""
    return [(i, i % 100, None if i % 7 == 0 else STATES[i % 4], _day(i),
             datetime.datetime.combine(_day(i), datetime.time(18, 0)), float(i % 50)) for i in range(600)]


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("narrow")
    path = folder / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, age BIGINT NOT NULL, state VARCHAR, opened DATE NOT NULL, "
                "seen TIMESTAMP NOT NULL, income DOUBLE NOT NULL)")
    table_rows.insert(con, "t", _rows())
    con.close()
    policy = folder / "t.policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [budget]
        default_rho = 1000.0
        total_rho = 1000000.0
        [tables.t]
        privacy_unit = "id"
        [tables.t.measures]
        income = {{ threshold = 100 }}
        [tables.t.keys]
        age = {{ range = [0, 120] }}
        state = {{ keyset = {STATES!r} }}
        opened = {{ range = ["{FIRST}", "{LAST}"] }}
        seen = {{ range = ["{FIRST}", "{LAST}"], grain = "day" }}
        """).replace("'", '"'))
    return path, policy


def _answer(db, sql: str) -> dict:
    with dpsql.connect(*db, _random_source=seeded_random(7)) as con:
        cur = con.cursor()
        cur.execute(sql)
        return {r[0]: r[1] for r in cur.fetchall()}


AGES = range(0, 121)
STATE_KEYSET = [*STATES, None]  # the column is nullable: NULL is a public value of its keyset


@pytest.mark.parametrize("where, admits", [
    ("age BETWEEN 20 AND 30", lambda a: 20 <= a <= 30),
    ("age > 95 OR age < 3", lambda a: a > 95 or a < 3),
    ("NOT (age >= 10) AND age <> 4", lambda a: a < 10 and a != 4),
    ("age IN (1, 7, 200)", lambda a: a in (1, 7)),
    ("age > 500", lambda a: False),
    ("age % 10 = 0 AND income > 10", lambda a: a % 10 == 0),  # the measure's conjunct narrows nothing
])
def test_an_integer_range_key_releases_the_ages_its_where_admits(db, where, admits):
    got = _answer(db, f"SELECT age, COUNT(*) FROM t WHERE {where} GROUP BY age")
    assert set(got) == {a for a in AGES if admits(a)}
    for age, n in got.items():  # ρ = 1000: a count's σ is 0.02, the released count is the exact one
        income_ok = "income > 10" not in where
        assert n == sum(1 for r in _rows() if r[1] == age and (income_ok or r[5] > 10)), age


@pytest.mark.parametrize("where, admits", [
    ("state IN ('CA', 'NY')", lambda s: s in ("CA", "NY")),
    ("state <> 'CA'", lambda s: s is not None and s != "CA"),
    ("state IS NULL", lambda s: s is None),
    ("state IS NOT NULL AND state < 'P'", lambda s: s is not None and s < "P"),
    ("COALESCE(state, 'none') = 'none'", lambda s: s is None),
])
def test_a_keyset_with_its_null_group_narrowed_as_sql_reads_null(db, where, admits):
    got = _answer(db, f"SELECT state, COUNT(*) FROM t WHERE {where} GROUP BY state")
    assert set(got) == {s for s in STATE_KEYSET if admits(s)}
    for state, n in got.items():
        assert n == sum(1 for r in _rows() if r[2] == state), state


def test_a_date_range_narrowed_to_a_year_of_months(db):
    """Superset's time range over a DATE key: 2015's months only, each count the rows'."""
    got = _answer(db, "SELECT DATE_TRUNC('month', opened) AS m, COUNT(*) FROM t "
                      "WHERE opened >= '2015-01-01' AND opened < '2016-01-01' GROUP BY 1")
    months = {datetime.date(2015, m, 1) for m in range(1, 13)}
    assert {m.date() if isinstance(m, datetime.datetime) else m for m in got} == months
    for m, n in got.items():
        m = m.date() if isinstance(m, datetime.datetime) else m
        assert n == sum(1 for r in _rows() if (r[3].year, r[3].month) == (m.year, m.month)), m


def test_two_keys_each_narrowed_by_its_own_conjunct(db):
    got = _answer(db, "SELECT state, age, COUNT(*) FROM t WHERE state = 'TX' AND age BETWEEN 3 AND 5 "
                      "AND EXTRACT(year FROM opened) = 2015 GROUP BY state, age")
    assert set(got) == {"TX"}
    with dpsql.connect(*db, _random_source=seeded_random(7)) as con:
        cur = con.cursor()
        cur.execute("SELECT state, age, COUNT(*) FROM t WHERE state = 'TX' AND age BETWEEN 3 AND 5 GROUP BY state, age")
        assert {(r[0], r[1]) for r in cur.fetchall()} == {("TX", a) for a in (3, 4, 5)}


@pytest.mark.parametrize("where", [
    "age < 30 OR income > 5",            # an OR that reads a measure
    "age < LENGTH(state)",               # two keys in one conjunct
])
def test_conjuncts_that_must_narrow_nothing_keep_the_whole_keyset(db, where):
    got = _answer(db, f"SELECT age, COUNT(*) FROM t WHERE {where} GROUP BY age")
    assert set(got) == set(AGES)


@pytest.mark.parametrize("conjunct", ["age < 30 + RANDOM()", "opened < CURRENT_DATE", "age < (SELECT 3)"])
def test_a_conjunct_whose_value_is_not_fixed_by_its_columns_narrows_nothing(conjunct):
    """Refused by the allow-list today (DP110); should one be allowed, it must still not narrow a
    keyset that is cached with the plan."""
    from sqlglot import parse_one

    from dpsql.sql.narrow import conjuncts, _fixed

    terms = conjuncts(parse_one(f"SELECT 1 FROM t WHERE age > 1 AND ({conjunct})", read="duckdb").args["where"].this)
    assert [_fixed(t) for t in terms] == [True, False]


def test_a_timestamp_finer_than_its_grain_is_not_narrowed(db):
    """``seen`` is declared by the day; every row is at 18:00. ``seen >= '2015-06-01 12:00'`` fails
    June 1st's midnight, the grid's instant, yet the row of June 1st at 18:00 passes it: narrowing
    on the grid would drop a group rows fall in. The keyset stays whole."""
    got = _answer(db, "SELECT DATE_TRUNC('month', seen) AS m, COUNT(*) FROM t "
                      "WHERE seen >= '2015-06-01 12:00:00' GROUP BY 1")
    assert len(got) == 36  # every month of the range


def test_a_recorded_plan_keeps_its_narrowing(db):
    """A plan read back from its record (a fresh process repeating a query) has no WHERE tree:
    the narrowing travels as text with its key."""
    from dpsql.policy.loader import load_policy
    from dpsql.records import plan as record
    from dpsql.sql.parse import parse
    from dpsql.sql.planner import build_plan

    policy = load_policy(db[1])
    sql = "SELECT age, COUNT(*) FROM t WHERE age BETWEEN 20 AND 30 GROUP BY age"
    plan = build_plan(parse(sql), sql, policy, {"t": {"id": "BIGINT", "age": "BIGINT", "state": "VARCHAR",
                                                             "opened": "DATE", "seen": "TIMESTAMP", "income": "DOUBLE"}})
    back = record.decode(record.encode(plan), policy)
    assert plan.keys[0].narrowed and back.keys[0].narrowed == plan.keys[0].narrowed


def test_a_joined_public_column_narrowed_by_its_own_conjunct(demo):
    """A key of a joined public table: its block is the table's rows the conjunct admits, read
    here from the public table directly."""
    db, policy = demo
    with duckdb.connect(str(db), read_only=True) as raw:
        regions = {r[0] for r in raw.execute("SELECT DISTINCT region FROM states").fetchall()}
    assert "West" in regions
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as con:
        cur = con.cursor()
        cur.execute("SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
                    "WHERE s.region <> 'West' GROUP BY s.region")
        assert {r[0] for r in cur.fetchall()} == regions - {"West"}
        cur.execute("SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
                    "WHERE s.region <> 'West' OR e.employees > 5 GROUP BY s.region")
        assert {r[0] for r in cur.fetchall()} == regions
