"""A quantile grid's default points (policy/grid.py default_points, docs/policy.md): a linear
``range`` written without ``points`` has every value of the range as a candidate when it holds at
most 10,000 of them, else 1,000 points; a log grid 1,000. The oracles are written here: every
integer of the range in granularity units, or 1,000 points spaced by exact rational rounding.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.policy.loader import load_policy
from dpsql.testing import seeded_random
import table_rows

POLICY = """
[budget]
default_rho = 1000
total_rho = 1e9
[tables.t]
privacy_unit = "id"
[tables.t.measures]
v = {{ threshold = 100{fields} }}
[tables.t.keys]
g = {{ keyset = ["a", "b"] }}
"""


def _files(tmp_path: Path, fields: str, values: list[int] | None = None) -> tuple[Path, Path]:
    db, policy = tmp_path / "t.duckdb", tmp_path / "t.policy.toml"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t (id BIGINT, g VARCHAR, v BIGINT)")
    if values:
        table_rows.insert(con, "t", [(i, "ab"[i % 2], x) for i, x in enumerate(values)])
    con.close()
    policy.write_text(POLICY.format(fields=fields))
    return db, policy


def _grid(tmp_path: Path, fields: str):
    """The grid the policy loader reads from ``fields`` (the policy alone: no database)."""
    policy = tmp_path / "grid.policy.toml"
    policy.write_text(POLICY.format(fields=fields))
    return load_policy(policy).tables["t"].measures["v"].grid


def _linear_1000(lo: int, hi: int) -> tuple[int, ...]:
    """1,000 points from lo to hi, each the nearest integer to lo + (hi - lo)·i/999 (halves up)."""
    out = []
    for i in range(1000):
        x = lo + Fraction((hi - lo) * i, 999)
        out.append(int((x + Fraction(1, 2)) // 1))
    return tuple(dict.fromkeys(out))


@pytest.mark.parametrize("fields,lo,hi,every", [
    (", range = [-120, 1440]", -120, 1440, True),        # a delay in minutes: 1,561 candidates, one a minute
    (", range = [0, 9999]", 0, 9999, True),              # 10,000 values: still every one
    (", range = [0, 10000]", 0, 10000, False),           # 10,001: 1,000 points
    (", range = [-1000000, 1000000]", -10**6, 10**6, False),
    (", range = [0, 100]", 0, 100, True),                # short ranges: as before (1,000 points rounded to 101)
    (", range = [-1.2, 14.4], granularity = 0.01", -120, 1440, True),  # counted in granularity units
    (", range = [0, 100000], granularity = 10", 0, 10000, False),
])
def test_a_linear_range_without_points_has_every_value_when_it_holds_at_most_10000(tmp_path, fields, lo, hi, every):
    grid = _grid(tmp_path, fields)
    expected = tuple(range(lo, hi + 1)) if every else _linear_1000(lo, hi)
    assert grid.candidates() == expected
    assert len(expected) == (hi - lo + 1 if every else 1000)


def test_written_points_and_log_grids_keep_their_count(tmp_path):
    assert len(_grid(tmp_path, ", range = [-120, 1440], points = 1000").candidates()) == 1000
    assert _grid(tmp_path, ", range = [-120, 1440], points = 1000").candidates() == _linear_1000(-120, 1440)
    assert _grid(tmp_path, ", range = [0, 5000], points = 11").candidates() == tuple(range(0, 5001, 500))
    log = _grid(tmp_path, ', range = [0, 5000], grid = "log"').candidates()  # 5,001 values, but log: 1,000 points asked
    written = _grid(tmp_path, ', range = [0, 5000], grid = "log", points = 1000').candidates()
    assert log == written and len(log) < 5001 and log[0] == 0 and log[-1] == 5000


def test_a_whole_minute_median_comes_back_exact_on_the_default_grid(tmp_path):
    """All values −2 (not a candidate of 1,000 points over [−120, 1440]: the oracle above), at a
    large ρ: the default grid returns −2 in every run; the written 1,000-point grid never can."""
    assert -2 not in _linear_1000(-120, 1440)
    values = [-2] * 400 + [-5, 3] * 20
    db, policy = _files(tmp_path, ", range = [-120, 1440]", values)
    for seed in range(5):
        with dpsql.connect(db, policy, _random_source=seeded_random(seed)) as con:
            cur = con.cursor()
            cur.execute("SELECT MEDIAN(v) FROM t")
            assert cur.fetchall() == [(-2,)]
    (tmp_path / "written").mkdir()
    db2, policy2 = _files(tmp_path / "written", ", range = [-120, 1440], points = 1000", values)
    with dpsql.connect(db2, policy2, _random_source=seeded_random(0)) as con:
        cur = con.cursor()
        cur.execute("SELECT MEDIAN(v) FROM t")
        (got,), = cur.fetchall()
        assert got != -2 and got in _linear_1000(-120, 1440)
