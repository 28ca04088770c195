"""Small forms of SmartNoise's SQL that dpsql answers (issue 32; docs/sql.md): a bare number as a
condition (``WHERE married``), ``SIGN`` and T-SQL's ``SQUARE``. Checked end to end on SmartNoise's
PUMS sample against the CSV read by the csv module (at ρ = 1000 a count's σ is 0.02: the released
count is the exact one); a bare text column as a condition is refused before any row is read.
"""

from __future__ import annotations

import csv
import math
import textwrap
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.testing import seeded_random
import table_rows

PUMS = Path(__file__).resolve().parents[2] / "shared" / "data" / "pums" / "PUMS_pid.csv"
if not PUMS.exists():
    PUMS = Path("/work/shared/data/pums/PUMS_pid.csv")


def _rows() -> list[dict]:
    with PUMS.open() as f:
        return [{k: (float(v) if k == "income" else int(v)) for k, v in r.items()} for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def pums(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("pums_forms")
    db = folder / "pums.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE pums (age BIGINT NOT NULL, sex BIGINT NOT NULL, educ BIGINT NOT NULL, income DOUBLE NOT NULL, "
                "married BIGINT NOT NULL, label VARCHAR, pid BIGINT PRIMARY KEY)")
    table_rows.insert(con, "pums", [[r["age"], r["sex"], r["educ"], r["income"], r["married"], "abc", r["pid"]] for r in _rows()])
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
        sex = { keyset = [0, 1] }
        """))
    return db, policy


def _answer(pums, sql: str) -> list[tuple]:
    with dpsql.connect(*pums, _random_source=seeded_random(5)) as con:
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall()


@pytest.mark.parametrize("where, keep", [
    ("married", lambda r: r["married"] != 0),
    ("married AND sex = 1", lambda r: r["married"] != 0 and r["sex"] == 1),
    ("NOT married OR age > 80", lambda r: r["married"] == 0 or r["age"] > 80),
    ("income", lambda r: r["income"] != 0),  # a DOUBLE: true when not 0, as DuckDB casts it
])
def test_a_bare_number_as_a_condition_is_true_when_not_zero(pums, where, keep):
    assert _answer(pums, f"SELECT COUNT(*) FROM pums WHERE {where}") == [(sum(1 for r in _rows() if keep(r)),)]


def test_a_bare_text_column_as_a_condition_is_refused_before_reading(pums):
    """Every row holds 'abc', whose cast to BOOLEAN fails: the query must be refused whatever the
    rows, in phase 1 (DP122), not fail after reading them."""
    with pytest.raises(QueryRefused) as err:
        _answer(pums, "SELECT COUNT(*) FROM pums WHERE label")
    assert err.value.code == "DP122"


def test_sign_and_square_of_keys_and_of_noisy_aggregates(pums):
    rows = _rows()
    got = dict(_answer(pums, "SELECT SIGN(age - 50) AS s, COUNT(*) FROM pums GROUP BY SIGN(age - 50)"))
    assert got == {s: sum(1 for r in rows if (r["age"] > 50) - (r["age"] < 50) == s) for s in (-1, 0, 1)}
    assert _answer(pums, "SELECT COUNT(*) FROM pums WHERE SQUARE(age) > 2500") == [(sum(1 for r in rows if r["age"] ** 2 > 2500),)]
    (square, sign), = _answer(pums, "SELECT SQUARE(AVG(age)), SIGN(SUM(age) - 1e9) FROM pums")
    mean = sum(r["age"] for r in rows) / len(rows)
    assert sign == -1 and abs(math.sqrt(square) - mean) < 0.5  # σ of SUM(age) at ρ = 1000/2: ~3, over 1,000 people
