"""The quantile's exact query by GROUP BY group, bin (issue 34, ``quantiles.binned_sql``) against
today's sparse histogram (``quantiles.histogram_sql``) on hostile values, its totality proof
(the final check accepts it, tampered forms are refused), and the end-to-end path."""

from __future__ import annotations

import duckdb
import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.policy.model import QuantileGrid
from dpsql.sql.final_check import check_final
from dpsql.sql.quantiles import binned_sql, histogram_sql
from dpsql.testing import seeded_random
from tests.test_many_rows import assert_refused_by_the_final_check

GRIDS = [QuantileGrid(0, 10**8, "log", 1000), QuantileGrid(0, 100, "log", 30), QuantileGrid(-50, 50, "linear", 7),
         QuantileGrid(-2**62, 2**62, "linear", 1000), QuantileGrid(0, 2**62, "log", 200), QuantileGrid(3, 5, "linear", 3)]


def _hostile(grid: QuantileGrid) -> list[int | None]:
    """Every bound and candidate, one below and above, the ends, far out, BIGINT's extremes, NULL."""
    out: list[int | None] = [None, -2**63, -2**63 + 1, 2**63 - 1, 2**63 - 2, 0, -1, 1, grid.lo - 10**9, grid.hi + 10**9]
    for b in grid.bounds():
        out += [b - 1, b, b + 1]
    return [v for v in out if v is None or -2**63 <= v < 2**63]


def _both(con, grid: QuantileGrid, column: str, value: str) -> tuple[dict, dict]:
    old = (f"SELECT g, {histogram_sql(value, grid.bounds())}, COUNT(*) FROM t GROUP BY g")
    new = binned_sql([("g", "g")], value, "t", grid.candidates(), grid.scale, ["p"], "n")
    check_final(new, {"g": "INTEGER", column: con.execute(f"SELECT typeof({column}) FROM t LIMIT 1").fetchone()[0]})
    return ({g: (h, n) for g, h, n in con.execute(old).fetchall()},
            {g: (h, n) for g, h, n in con.execute(new).fetchall()})


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g.scale}-{g.lo}-{g.hi}-{g.points}")
def test_binned_counts_equal_the_histograms_on_hostile_bigints(grid):
    """Per group (one of every value, spread over groups, a NULL group key, a group of NULLs
    only): the same [bins, counts] lists, key for key and in the same order, and the same rows."""
    values = _hostile(grid)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (g INTEGER, v BIGINT)")
    rows = [[i % 7, v] for i, v in enumerate(values)] + [[None, v] for v in values[::3]] + [[99, None], [99, None]]
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    old, new = _both(con, grid, "v", "v")
    assert old == new
    assert new[99] == ([None, None], 2)


def test_binned_counts_equal_the_histograms_on_hostile_doubles():
    """A DOUBLE measure as dpsql reads it (TRY_CAST(ROUND(x) AS BIGINT)): NaN, ±inf, values past
    BIGINT, halves next to the bounds — the same lists as today's form."""
    grid = QuantileGrid(0, 10**6, "log", 100)
    values = [float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 9.3e18, -9.3e18, -0.5, 0.5, 0.49, 1.5]
    values += [b + d for b in grid.bounds() for d in (-0.5, 0.0, 0.5, 0.51)]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (g INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [[i % 5, v] for i, v in enumerate(values)])
    old, new = _both(con, grid, "x", "TRY_CAST(ROUND(x) AS BIGINT)")
    assert old == new


def test_binned_sql_passes_the_final_check_and_tampered_forms_do_not():
    """What makes each step total is checked on the text: tampering with any of it is refused."""
    grid = QuantileGrid(0, 10**8, "log", 1000)
    sql = binned_sql([("g", "g")], "v", "t", grid.candidates(), grid.scale, ["p"], "n")
    types = {"g": "INTEGER", "v": "BIGINT"}
    check_final(sql, types)
    ln = sql[sql.index("LN("):sql.index(", 1.0))") + len(", 1.0))")]
    start = sql.index("array_extract('[") + len("array_extract(")
    first_array = sql[start:sql.index("]'::BIGINT[", start) + len("]'::BIGINT[")]
    tampered = [
        sql.replace(ln, ln.replace("GREATEST(", "(", 1).replace(", 1.0)", ")", 1), 1),  # LN of any value: LN(-1) fails
        sql.replace(ln, ln.replace(", 1.0)", ", 0.0)", 1), 1),  # LN(0)
        sql.replace(", 1), 3349) AS BIGINT)", ", 1), 9223372036854775807) AS BIGINT)", 1),  # a clamp a double cannot hold
        sql.replace("CAST(LEAST(GREATEST(FLOOR(", "CAST((FLOOR(", 1).replace(", 1), 3349) AS BIGINT)", ") AS BIGINT)", 1),
        sql.replace(first_array, first_array.replace("'[1, ", "'[1, 2, ", 1), 1),  # n elements, not n
        sql.replace("array_extract(", "list_extract(", 1),
        sql.replace("ELSE __qk END ELSE CASE WHEN __qw IS NOT NULL", "ELSE __qk END ELSE CASE WHEN __qw > 0", 1),
        sql.replace("LIST(__qb ORDER BY __qb)", "LIST(__qb // 0 ORDER BY __qb)", 1),
        sql.replace("FILTER (WHERE __qb IS NOT NULL)", "FILTER (WHERE __qb // 0 > 1)", 1),
    ]
    assert ln and ", 1), 3349) AS BIGINT)" in sql
    assert_refused_by_the_final_check(sql, tampered, types)


@pytest.mark.parametrize("sql", [
    "SELECT county, MEDIAN(payann) FROM establishments GROUP BY county",
    "SELECT state, MEDIAN(payann), QUANTILE_CONT(payann, 0.9) FROM establishments GROUP BY state",
    "SELECT MEDIAN(payann) FROM establishments WHERE naics2 = '23'",
])
def test_quantile_only_queries_run_the_binned_form(demo, sql):
    """The demo's quantile-only queries plan to the binned form and answer (charged, one value per
    group of the grid); a quantile beside a SUM keeps the histogram."""
    db, policy = demo
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        plan, query = con.session._planned(sql, None)
        assert query.startswith("WITH __q1 AS") and "HISTOGRAM" not in query
        cur = con.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        grid = set(plan.table.measures["payann"].grid.candidates())
        assert rows and all(r[-1] in grid for r in rows)
        _, mixed = con.session._planned("SELECT state, MEDIAN(payann), SUM(payann) FROM establishments GROUP BY state", None)
        assert "HISTOGRAM" in mixed


def test_final_check_refuses_the_binned_form_over_a_text_measure():
    grid = QuantileGrid(0, 100, "log", 30)
    sql = binned_sql([("g", "g")], "v", "t", grid.candidates(), grid.scale, ["p"], None)
    with pytest.raises(QueryRefused):
        check_final(sql, {"g": "INTEGER", "v": "VARCHAR"})
