"""Dates and times as GROUP BY keys (issue 18): a DATE / TIMESTAMP key with a public range
declared in the policy, its time buckets answered with the bucket's image of the range as their
keyset; rows outside the range, or holding values no date function can take, fail nothing and
fall in no released group. The SQL forms themselves are in grammar_tests/dates*.sql."""

from __future__ import annotations

import datetime
import shutil
import subprocess
import textwrap
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import PolicyFileError
from dpsql.policy.loader import parse_policy
from dpsql.testing import seeded_random

BASE = {"budget": {"default_rho": 1.0, "total_rho": 1000.0},
        "tables": {"ev": {"privacy_unit": "id", "measures": {"amt": {"threshold": 100}}}}}


def _policy(keys: dict) -> dict:
    doc = {"budget": dict(BASE["budget"]), "tables": {"ev": dict(BASE["tables"]["ev"])}}
    doc["tables"]["ev"]["keys"] = keys
    return doc


def test_range_key_keyset_is_every_instant_of_the_range():
    p = parse_policy(_policy({"d": {"range": ["2020-01-01", "2020-12-31"]},
                              "ts": {"range": [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)], "grain": "hour"}}))
    d, ts = p.tables["ev"].keys["d"], p.tables["ev"].keys["ts"]
    assert d.public and len(d.keyset) == 366 and d.keyset[0] == datetime.date(2020, 1, 1)
    assert d.keyset[-1] == datetime.date(2020, 12, 31)
    assert len(ts.keyset) == 48 and ts.keyset[-1] == datetime.datetime(2024, 1, 2, 23, 0)
    assert "range 2020-01-01 to 2020-12-31 by day" in p.tables["ev"].role("d")


@pytest.mark.parametrize("lo, hi, grain", [("2024-02-29", "2024-02-29", "day"), ("1990-01-01", "2024-12-31", "day"),
                                           ("2024-12-31", "2024-12-31", "hour"), ("2023-03-25", "2023-03-27", "minute")])
def test_range_keyset_is_lo_plus_i_steps(lo, hi, grain):
    """The keyset is built by C-level iterators at policy load (start-up, issue 15): exactly the
    instants lo + i * step, i = 0 .. size - 1, of the definition, one-day ranges included."""
    key = parse_policy(_policy({"k": {"range": [lo, hi], "grain": grain}})).tables["ev"].keys["k"]
    first, last = datetime.date.fromisoformat(lo), datetime.date.fromisoformat(hi)
    step = {"day": datetime.timedelta(days=1), "hour": datetime.timedelta(hours=1),
            "minute": datetime.timedelta(minutes=1)}[grain]
    start = first if grain == "day" else datetime.datetime.combine(first, datetime.time())
    size = ((last - first).days + 1) * (datetime.timedelta(days=1) // step)
    assert key.keyset == tuple(start + i * step for i in range(size))
    assert all(type(v) is type(start) for v in key.keyset)


@pytest.mark.parametrize("key, reason", [
    ({"range": ["2020-01-01"]}, "must be [first day, last day]"),
    ({"range": ["2020-02-30", "2020-03-01"]}, "is not a day written YYYY-MM-DD"),
    ({"range": ["2021-01-01", "2020-01-01"]}, "ends (2020-01-01) before it starts (2021-01-01)"),
    ({"range": ["2020-01-01", "2020-12-31"], "grain": "week"}, "must be one of day, hour, minute"),
    ({"range": ["2020-01-01", "2020-12-31"], "keyset": ["a"]}, "has both a keyset and a range"),
    ({"range": [1.5, 2.5]}, "must hold two days"),  # [1, 2] is an integer range (tests/test_number_keys.py)
    ({"range": ["1900-01-01", "2020-12-31"], "grain": "minute"}, "more than 1,000,000"),
])
def test_bad_range_is_refused_naming_the_field(key, reason):
    with pytest.raises(PolicyFileError) as err:
        parse_policy(_policy({"d": key}))
    assert "tables.ev.keys.d" in str(err.value) and reason in str(err.value)


@pytest.fixture()
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """2,000 rows in range (two a day over 1,000 days from 2020-01-01, amounts 0..99) and rows
    no date function can take: 'infinity', the largest DATE and TIMESTAMP, years BC, NULL."""
    db = tmp_path / "ev.duckdb"
    con = duckdb.connect(str(db))
    con.execute("""CREATE TABLE ev AS SELECT i AS id, DATE '2020-01-01' + CAST(i // 2 AS INTEGER) AS d,
                   TIMESTAMP '2024-01-01 00:00:00' + to_minutes(CAST(i * 7 AS BIGINT)) AS ts,
                   i % 100 AS amt FROM range(2000) r(i)""")
    con.execute("""INSERT INTO ev VALUES (5001, 'infinity', 'infinity', 99), (5002, '-infinity', '-infinity', 99),
                   (5003, '5877642-06-25', '294247-01-10 04:00:54', 99), (5004, '5877641-06-25 (BC)', '290309-12-22 (BC) 00:00:00', 99),
                   (5005, NULL, NULL, 99), (5006, '2019-12-31', '2023-12-31 23:59:59', 99)""")
    con.close()
    policy = tmp_path / "ev.policy.toml"
    policy.write_text(textwrap.dedent("""
        [budget]
        default_rho = 1000.0
        total_rho = 100000.0
        [tables.ev]
        privacy_unit = "id"
        [tables.ev.measures]
        amt = { threshold = 100 }
        [tables.ev.keys]
        d = { range = ["2020-01-01", "2022-12-31"] }
        ts = { range = [2024-01-01, 2024-12-31], grain = "hour" }
        """))
    return db, policy


@pytest.mark.parametrize("sql", [
    "SELECT DATE_TRUNC('year', d) AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
    "SELECT EXTRACT(year FROM d) AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
    "SELECT strftime(d, '%Y') AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
    "SELECT DATE_TRUNC('week', d + INTERVAL '1 day') - INTERVAL '1 day' AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
    "SELECT year(ts) AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
    "SELECT DATE_TRUNC('month', ts) AS y, COUNT(*) AS n, SUM(amt) AS s FROM ev GROUP BY 1",
])
def test_rows_outside_the_range_fail_nothing_and_count_nowhere(hostile, sql):
    """Rows outside the range count nowhere; the NULL row counts in the NULL group only. At ρ = 1000 a count's σ is about 0.03 (so it is exact) and a sum's about 3.2: the six hostile
    rows (none in range, each amt 99) would move a count by 1 and a sum by 99, so any of them
    falling into a cell is seen."""
    db, policy = hostile
    with dpsql.connect(db, policy, _random_source=seeded_random(7)) as con:
        cur = con.cursor()
        cur.execute(sql)
        got = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
    raw = duckdb.connect(str(db), read_only=True)
    bucket = sql.split(" AS y")[0].removeprefix("SELECT ")
    col = "ts" if "ts" in bucket else "d"
    lo, hi = ("TIMESTAMP '2024-01-01'", "TIMESTAMP '2025-01-01'") if col == "ts" else ("DATE '2020-01-01'", "DATE '2023-01-01'")
    exact = {r[0]: (r[1], r[2]) for r in raw.execute(
        f"SELECT {bucket}, COUNT(*), SUM(amt) FROM ev WHERE {col} >= {lo} AND {col} < {hi} OR {col} IS NULL "
        "GROUP BY 1").fetchall()}
    raw.close()
    # the column is nullable: its NULL row (5005) is the NULL group, as in SQL (issue 32)
    assert exact and set(exact) <= set(got) and exact[None] == (1, 99)
    for k, (n, s) in got.items():
        want_n, want_s = exact.get(k, (0, 0))
        assert n == want_n and abs(s - want_s) <= 20, (k, n, want_n, s, want_s)


def test_demo_monthly_series_over_the_declared_range(con):
    """Every month of 1990-2024 is released (empty ones as noise on zero), as datetimes."""
    cur = con.cursor()
    cur.execute("SELECT DATE_TRUNC('month', opened) AS month, COUNT(*) AS n FROM establishments GROUP BY 1 ORDER BY 1")
    rows = cur.fetchall()
    assert len(rows) == 35 * 12
    assert rows[0][0] == datetime.datetime(1990, 1, 1) and rows[-1][0] == datetime.datetime(2024, 12, 1)
    # Young establishments are the most common: the last year's months hold more than the first's.
    assert sum(n for m, n in rows[-12:]) > sum(n for m, n in rows[:12])


def test_demo_hours_of_a_timestamp_key(con):
    cur = con.cursor()
    cur.execute("SELECT EXTRACT(hour FROM first_seen) AS h, COUNT(*) FROM devices GROUP BY 1 ORDER BY 1")
    assert [r[0] for r in cur.fetchall()] == list(range(24))


def test_range_on_a_text_column_is_refused(tmp_path, demo):
    policy = tmp_path / "p.toml"
    text = Path(demo[1]).read_text().replace('county = {}', 'county = { range = ["2020-01-01", "2020-12-31"] }')
    policy.write_text(text)
    with pytest.raises(dpsql.Error) as err:
        dpsql.connect(demo[0], policy)
    assert "a range is declared for DATE or TIMESTAMP columns" in str(err.value)


def test_date_grain_finer_than_a_day_is_refused(tmp_path, demo):
    policy = tmp_path / "p.toml"
    text = Path(demo[1]).read_text().replace('opened = { range = ["1990-01-01", "2024-12-31"] }',
                                             'opened = { range = ["1990-01-01", "1990-12-31"], grain = "hour" }')
    policy.write_text(text)
    with pytest.raises(dpsql.Error) as err:
        dpsql.connect(demo[0], policy)
    assert "is a DATE, so its grain is the day" in str(err.value)


def test_psql_reads_a_time_series(dpsql_server):
    if shutil.which("psql") is None:
        pytest.fail("psql is missing: scripts/test-deps.sh installs it")
    out = subprocess.run(["psql", dpsql_server.dsn("alice"), "-AtXc",
                          "SELECT DATE_TRUNC('year', opened)::DATE AS y, COUNT(*) FROM establishments "
                          "WHERE opened >= '2020-01-01' GROUP BY 1 ORDER BY 1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    years = [line.split("|")[0] for line in out.stdout.splitlines()]
    # the WHERE on the key narrows its keyset (sql/narrow.py): the range's years from 2020 on, not all 35
    assert years == [f"{y}-01-01" for y in range(2020, 2025)], years
