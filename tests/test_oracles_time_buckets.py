"""A TIMESTAMP key's public keyset holds its grain's instants only (dpsql/sql/time_keys.py), so a
GROUP BY may read it through buckets at least as coarse as the grain (issue 35). For each grain
— the minute, the hour, the day — a bucket exactly as coarse is answered and a bucket one step
finer is refused in phase 1 (DP1xx, nothing charged), in every form an analyst or a BI tool
writes: DATE_TRUNC, EXTRACT, date_part, strftime. The grains are written here, not read from
the code: minute < hour < day."""

from __future__ import annotations

import textwrap

import duckdb
import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.testing import seeded_random

#: grain -> (the bucket unit one step finer, its strftime code)
FINER = {"minute": ("second", "%S"), "hour": ("minute", "%M"), "day": ("hour", "%H")}
SAME = {"minute": ("minute", "%M"), "hour": ("hour", "%H"), "day": ("day", "%d")}


@pytest.fixture(scope="module")
def grains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grains")
    db = folder / "ev.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE ev (id INTEGER, t_minute TIMESTAMP, t_hour TIMESTAMP, t_day TIMESTAMP, amt INTEGER)")
    con.execute("INSERT INTO ev SELECT i, TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND * 37, "
                "TIMESTAMP '2024-01-01' + INTERVAL (i) MINUTE * 7, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, i % 10 "
                "FROM range(1000) r(i)")
    con.close()
    policy = folder / "ev.policy.toml"
    policy.write_text(textwrap.dedent("""
        [budget]
        default_rho = 1.0
        total_rho = 1000.0
        [tables.ev]
        privacy_unit = "id"
        [tables.ev.measures]
        amt = { threshold = 10 }
        [tables.ev.keys]
        t_minute = { range = ["2024-01-01", "2024-01-01"], grain = "minute" }
        t_hour = { range = ["2024-01-01", "2024-01-31"], grain = "hour" }
        t_day = { range = ["2024-01-01", "2024-12-31"], grain = "day" }
        """))
    return db, policy


def _forms(unit: str, code: str, col: str) -> list[str]:
    return [f"DATE_TRUNC('{unit}', {col})", f"EXTRACT({unit} FROM {col})", f"date_part('{unit}', {col})",
            f"strftime({col}, '%Y-%m-%d {code}')"]


@pytest.mark.parametrize("grain", list(FINER))
def test_a_bucket_one_step_finer_than_the_grain_is_refused(grains, grain):
    db, policy = grains
    unit, code = FINER[grain]
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        for form in _forms(unit, code, f"t_{grain}"):
            with pytest.raises(QueryRefused) as err:
                con.execute(f"SELECT {form} AS b, COUNT(*) FROM ev GROUP BY 1")
            assert err.value.code.startswith("DP1") and f"t_{grain}" in str(err.value), (form, str(err.value))
        assert con.session.ledger.spent == 0


@pytest.mark.parametrize("grain", list(SAME))
def test_a_bucket_as_coarse_as_the_grain_is_answered(grains, grain):
    db, policy = grains
    unit, code = SAME[grain]
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        for form in _forms(unit, code, f"t_{grain}"):
            rows = con.execute(f"SELECT {form} AS b, COUNT(*) FROM ev GROUP BY 1").fetchall()
            assert rows, form


def test_the_demo_hour_key_refuses_minutes_and_answers_hours(con):
    before = con.session.ledger.spent
    with pytest.raises(QueryRefused):
        con.execute("SELECT DATE_TRUNC('minute', first_seen) AS m, COUNT(*) FROM devices GROUP BY 1")
    assert con.session.ledger.spent == before
    rows = con.execute("SELECT DATE_TRUNC('hour', first_seen) AS h, COUNT(*) FROM devices GROUP BY 1").fetchall()
    assert len(rows) == 366 * 24  # every hour of 2024's public range
