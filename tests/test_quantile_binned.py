"""The quantile-only exact query (issue 34): each group's values (``quantiles.values_sql``), fetched
as the engine fetches them and counted into bins in numpy (``em_bins.value_entries``), against
the sparse histogram (``quantiles.histogram_sql``, counted by DuckDB) on hostile values; its
totality proof (the final check accepts it, tampered forms are refused), and the end-to-end path."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.policy.model import QuantileGrid
from dpsql.sql.final_check import check_final
from dpsql.backends.duckdb_arrays import fetch_arrays
from dpsql.privacy.em_bins import value_entries
from dpsql.sql.quantiles import OTHER_BIN, histogram_sql, values_sql
from dpsql.testing import seeded_random
from tests.test_many_rows import assert_refused_by_the_final_check

GRIDS = [QuantileGrid(0, 10**8, "log", 1000), QuantileGrid(0, 100, "log", 30), QuantileGrid(-50, 50, "linear", 7),
         QuantileGrid(-2**62, 2**62, "linear", 1000), QuantileGrid(0, 2**62, "log", 200), QuantileGrid(3, 5, "linear", 3),
         # c_0 − 1 and c_{m−1} + 1 at INTEGER's ends exactly (INTEGER lists), then one past either end (BIGINT)
         QuantileGrid(-2**31 + 1, 2**31 - 2, "linear", 5), QuantileGrid(-2**31 + 1, 2**31 - 1, "linear", 5),
         QuantileGrid(-2**31, 2**31 - 2, "linear", 5)]


def _hostile(grid: QuantileGrid) -> list[int | None]:
    """Every bound and candidate, one below and above, the ends, far out, BIGINT's extremes, NULL."""
    out: list[int | None] = [None, -2**63, -2**63 + 1, 2**63 - 1, 2**63 - 2, 0, -1, 1, grid.lo - 10**9, grid.hi + 10**9]
    for b in grid.bounds():
        out += [b - 1, b, b + 1]
    return [v for v in out if v is None or -2**63 <= v < 2**63]


def _histograms(con, value: str, grid: QuantileGrid) -> dict:
    """{group: ([bins, counts] or NULL, rows)}: DuckDB's own HISTOGRAM form, the oracle."""
    sql = f"SELECT g, {histogram_sql(value, grid.bounds())}, COUNT(*) FROM t GROUP BY g"
    return {g: (h, n) for g, h, n in con.execute(sql).fetchall()}


def _values_form(con, grid: QuantileGrid, column: str, value: str, key: str = "INTEGER") -> dict:
    """{group: ({bin key: count}, rows)} from values_sql, fetched by the engine's fetch_arrays and
    counted by value_entries; positions mapped back to HISTOGRAM's keys here."""
    sql = values_sql([("g", "g")], value, "t", grid.candidates(), ["p"], "n")
    check_final(sql, {"g": key, column: con.execute(f"SELECT typeof({column}) FROM t LIMIT 1").fetchone()[0]})
    rows = fetch_arrays(con.execute(sql))
    group, pos, counts = value_entries([r[1] for r in rows], grid)
    cands = grid.candidates()
    key_of = {2 * i: c - 1 for i, c in enumerate(cands)} | {2 * i + 1: c for i, c in enumerate(cands)} | {2 * len(cands): OTHER_BIN}
    bins: dict[int, dict[int, int]] = {}
    for gi, p, n in zip(group.tolist(), pos.tolist(), counts.tolist()):
        bins.setdefault(gi, {})[key_of[p]] = n
    return {r[0]: (bins.get(i, {}), r[-1]) for i, r in enumerate(rows)}


def _as_dicts(hists: dict) -> dict:
    return {g: ({} if h[0] is None else dict(zip(*h)), n) for g, (h, n) in hists.items()}


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g.scale}-{g.lo}-{g.hi}-{g.points}")
def test_value_counts_equal_the_histograms_on_hostile_bigints(grid):
    """Per group (one of every value, spread over groups, a NULL group key, a group of NULLs
    only): the same bins and counts as DuckDB's histogram, and the same rows."""
    values = _hostile(grid)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (g INTEGER, v BIGINT)")
    rows = [[i % 7, v] for i, v in enumerate(values)] + [[None, v] for v in values[::3]] + [[99, None], [99, None]]
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    old = _histograms(con, "v", grid)
    new = _values_form(con, grid, "v", "v")
    assert _as_dicts(old) == new
    assert new[99] == ({}, 2) and len(new) == 9


def test_value_counts_equal_the_histograms_on_hostile_doubles():
    """A DOUBLE measure as dpsql reads it (TRY_CAST(ROUND(x) AS BIGINT)): NaN, ±inf, values past
    BIGINT, halves next to the bounds — the same bins as DuckDB's histogram; a text key (the
    numpy fetch) and a DATE key (fetchall, then arrays) alike."""
    grid = QuantileGrid(0, 10**6, "log", 100)
    values = [float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 9.3e18, -9.3e18, -0.5, 0.5, 0.49, 1.5]
    values += [b + d for b in grid.bounds() for d in (-0.5, 0.0, 0.5, 0.51)]
    for key, keys in (("VARCHAR", ["a", "b", None, "é", ""]), ("DATE", ["2020-01-01", "1999-12-31", None, "2020-01-02", "0001-01-01"])):
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t (g {key}, x DOUBLE)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [[keys[i % 5], v] for i, v in enumerate(values)])
        old = _histograms(con, "TRY_CAST(ROUND(x) AS BIGINT)", grid)
        assert _as_dicts(old) == _values_form(con, grid, "x", "TRY_CAST(ROUND(x) AS BIGINT)", key)


def test_fetch_arrays_reads_the_other_columns_as_fetchall_does():
    """fetch_arrays: the same rows as fetchall, lists as int64 arrays (int32 for INTEGER lists;
    NULL: None), through numpy for text, integer and boolean keys, through fetchall for a DATE, a
    DECIMAL, a TIMESTAMP."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (s VARCHAR, i BIGINT, j INTEGER, b BOOLEAN, d DATE, e DECIMAL(9, 2), ts TIMESTAMP, v BIGINT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [["a", 1, 1, True, "2020-01-01", 1.25, "2020-01-01 10:00:00", 5], ["a", 1, 1, True, "2020-01-01", 1.25, "2020-01-01 10:00:00", 7],
                     [None, None, None, None, None, None, None, 3], ["b", 2**62, -2, False, "1970-01-02", -0.5, "1960-01-01 00:00:01", None]])
    for (cols, v, dtype) in [(c, v, d) for c in ("s, i, j, b", "s, i, j, b, d", "e, s", "ts")
                             for v, d in (("v", np.int64), ("TRY_CAST(v % 2**31 AS INTEGER)", np.int32))]:
        sql = f"SELECT {cols}, LIST({v}) FILTER (WHERE v IS NOT NULL), COUNT(*) FROM t GROUP BY ALL ORDER BY ALL"
        want = con.execute(sql).fetchall()
        got = fetch_arrays(con.execute(sql))
        assert [r[:-2] + r[-1:] for r in got] == [r[:-2] + r[-1:] for r in want]
        assert [None if r[-2] is None else (r[-2].dtype, sorted(r[-2].tolist())) for r in got] \
            == [None if r[-2] is None else (np.dtype(dtype), sorted(r[-2])) for r in want]
        assert all(type(a) is type(b) for r, w in zip(got, want) for a, b in zip(r[:-2], w[:-2]))


def test_values_sql_lists_integers_only_when_the_grids_ends_fit_one():
    """INTEGER lists exactly when c_0 − 1 and c_{m−1} + 1 fit 32 bits (public: the grid's), else
    BIGINT; the counts of both are checked against DuckDB's histogram by the hostile tests above."""
    for grid, int32 in zip(GRIDS, [True, True, True, False, False, True, True, False, False]):
        sql = values_sql([("g", "g")], "v", "t", grid.candidates(), ["p"], "n")
        assert ("AS INTEGER) AS __qw" in sql, "AS BIGINT) AS __qw" in sql) == (int32, not int32)


@pytest.mark.parametrize("grid", [QuantileGrid(0, 10**8, "log", 1000), QuantileGrid(0, 2**62, "log", 200)],
                         ids=["integer", "bigint"])
def test_values_sql_passes_the_final_check_and_tampered_forms_do_not(grid):
    """The values form is total by the rules the final check already had (a clamp of the value by
    integer literals, a cast of it to BIGINT or a TRY_CAST to INTEGER, LIST with FILTER, COUNT):
    tampering is refused."""
    sql = values_sql([("g", "g")], "v", "t", grid.candidates(), ["p"], "n")
    types = {"g": "INTEGER", "v": "BIGINT"}
    check_final(sql, types)
    tampered = [
        sql.replace("AS BIGINT) AS __qw", "AS INTEGER) AS __qw", 1)  # a cast that fails past 2^31
        if "AS BIGINT) AS __qw" in sql else sql.replace("TRY_CAST(CASE", "CAST(CASE", 1),
        sql.replace("ELSE v END", "ELSE v * 3 END", 1),  # a product that overflows
        sql.replace("LIST(__qw)", "LIST(__qw // 0)", 1),
        sql.replace("FILTER (WHERE __qw IS NOT NULL)", "FILTER (WHERE __qw // 0 > 1)", 1),
        sql.replace("COUNT(*) AS n", "SUM(__qw) * 2 AS n", 1),
    ]
    assert all(t != sql for t in tampered)
    assert_refused_by_the_final_check(sql, tampered, types)
    with pytest.raises(QueryRefused):
        check_final(values_sql([("g", "g")], "v", "t", grid.candidates(), ["p"], None), {"g": "INTEGER", "v": "VARCHAR"})


@pytest.mark.parametrize("sql", [
    "SELECT county, MEDIAN(payann) FROM establishments GROUP BY county",
    "SELECT state, MEDIAN(payann), QUANTILE_CONT(payann, 0.9) FROM establishments GROUP BY state",
    "SELECT MEDIAN(payann) FROM establishments WHERE naics2 = '23'",
])
def test_quantile_only_queries_run_the_values_form(demo, sql):
    """The demo's quantile-only queries plan to the values form and answer (charged, one value per
    group of the grid); a quantile beside a SUM keeps the histogram."""
    db, policy = demo
    with dpsql.connect(db, policy, _random_source=seeded_random(4)) as con:
        plan, query = con.session._planned(sql, None)
        assert query.startswith("WITH __q1 AS") and "LIST(__qw)" in query and "HISTOGRAM" not in query and plan.quantile_values
        cur = con.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        grid = set(plan.table.measures["payann"].grid.candidates())
        assert rows and all(r[-1] in grid for r in rows)
        _, mixed = con.session._planned("SELECT state, MEDIAN(payann), SUM(payann) FROM establishments GROUP BY state", None)
        assert "HISTOGRAM" in mixed
