"""A large answer's exact rows fetched as columns (issue 34, dpsql/backends/columns.py and
dpsql/pipeline/columnar.py) release exactly what the rows release.

Oracles: DuckDB's own row fetch (``fetchall``, which predates the columns) for the values and
types of every column, and the row path of ``release.release`` (unchanged, the path every small
answer still takes) for the released cells, noise, σ, margins and groups, drawn from one seeded
source. The privacy check of the selection on columns is against Theorem 1's order of magnitude:
a group of one unit is all but never kept (π(1) ≈ 1e-5 at ε = 1, δ = 1e-5), whatever its sum.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.backends.columns import Columns
from dpsql.pipeline import columnar
from dpsql.pipeline.release import release
from dpsql.testing import seeded_random

BIG = 2**61  # a measure's value (threshold 1000: split, summed whole): 30 units sum past int64
POLICY = """
[budget]
default_rho = 0.5
total_rho = 1e15
total_delta = 0.5
[selection]
epsilon = 1
delta = 1e-5
[tables.t]
privacy_unit = "id"
[tables.t.measures]
v = {{ threshold = 100 }}
big = {{ threshold = 1000 }}
w = {{ threshold = 1000000 }}
[tables.t.keys]
kpub = {{ keyset = {keyset} }}
ksparse = {{ keyset = {sparse} }}
region = {{ keyset = ["a", "b", "c"] }}
kpriv = {{}}
ktext = {{}}
knull = {{}}
"""
KEYSET = list(range(-500, 2500, 2))  # 1,500 public values: some empty, odd data keys outside
SPARSE = [j * 10**12 for j in range(-100, 1400)]  # 1,500 values far apart (no table of rows)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("columnar")
    db, policy = d / "c.duckdb", d / "c.policy.toml"
    con = duckdb.connect(str(db))
    # groups of kpriv 0..399 hold 30 units each (π = 1); 400..699 one unit each (π = 1e-5), w = 10^6
    con.execute(f"""CREATE TABLE t AS
        SELECT i AS id,
               CAST(HASH(i, 1) % 3000 AS BIGINT) AS kpub,
               CAST(HASH(i, 4) % 1600 AS BIGINT) * 1000000000000 AS ksparse,
               CASE HASH(i, 2) % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END AS region,
               CAST(CASE WHEN i < 12000 THEN i // 30 ELSE 400 + (i - 12000) END AS BIGINT) AS kpriv,
               'g' || CAST((i // 30) % 250 AS VARCHAR) AS ktext,
               CAST(CASE WHEN i % 4 = 0 THEN NULL ELSE (i // 30) % 300 END AS BIGINT) AS knull,
               CAST(HASH(i, 3) % 200 AS BIGINT) AS v,
               CAST({BIG} AS BIGINT) AS big,
               CASE WHEN i < 12000 THEN 1 ELSE 1000000 END AS w
        FROM range(12300) r(i)""")
    con.execute("UPDATE t SET v = NULL WHERE kpriv % 7 = 0")  # whole groups whose SUM is NULL
    for c in ("kpub", "ksparse", "region", "kpriv", "ktext"):
        con.execute(f"ALTER TABLE t ALTER COLUMN {c} SET NOT NULL")
    con.close()
    policy.write_text(POLICY.format(keyset=KEYSET, sparse=SPARSE))
    return db, policy


def session(files: tuple[Path, Path]) -> Any:
    # one thread: DuckDB's group order (the order groups meet the selection's draws) is fixed,
    # so two runs of the exact query return their groups in the same order
    return dpsql.connect(str(files[0]), str(files[1]), reuse=False, threads=1).session


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types: arrays by dtype and values, lists element by element."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and _same_list(a.tolist(), b.tolist()))
    return _same_list(list(a), list(b))


def _same_list(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(type(x) is type(y) and (x == y or (x != x and y != y)) for x, y in zip(a, b))


SHAPES = {
    "public keyset, int key": "SELECT kpub, COUNT(*), SUM(v) FROM t GROUP BY kpub",
    "public keyset, sparse int key": "SELECT ksparse, COUNT(*), SUM(v) FROM t GROUP BY ksparse",
    "public keysets, two keys": "SELECT region, kpub, COUNT(*) AS n, SUM(v) FROM t GROUP BY region, kpub",
    "selection, int key": "SELECT kpriv, SUM(v), COUNT(*) AS n FROM t GROUP BY kpriv",
    "selection, int key, sums past int64": "SELECT kpriv, SUM(big) AS s, AVG(v) FROM t GROUP BY kpriv",
    "selection, text key": "SELECT ktext, COUNT(*), SUM(v) FROM t GROUP BY ktext",
    "selection, two keys": "SELECT ktext, kpriv, COUNT(*) FROM t GROUP BY ktext, kpriv",
    "selection, int key with a NULL group": "SELECT knull, COUNT(*), SUM(v) FROM t GROUP BY knull",
}


@pytest.mark.parametrize("sql", SHAPES.values(), ids=SHAPES.keys())
def test_columns_release_what_rows_release(files, sql):
    s = session(files)
    try:
        d = s.decide(sql)
        assert columnar.wants_columns(d)
        rows, cols = s.engine.run(d.query), s.engine.run_columns(d.query)
        assert isinstance(cols, Columns) and columnar.supported(d, cols)
        assert same(cols.rows(), rows) and all(_same_list(list(x), list(y)) for x, y in zip(cols.rows(), rows))
        by_rows = release(d, rows, seeded_random(5))
        by_cols = release(d, cols, seeded_random(5))
    finally:
        s.close()
    assert by_rows[1] == by_cols[1]  # noise terms: σ, margins, sensitivities
    assert by_rows[2] == by_cols[2]  # the released groups, in order
    assert by_rows[0].keys() == by_cols[0].keys()
    for name in by_rows[0]:
        assert same(by_rows[0][name], by_cols[0][name]), name
    assert len(by_rows[0]["__row"]) >= 250  # many cells: the columns carried a large answer
    if "knull" in sql:
        assert by_cols[2][-1] == (None,)  # the NULL group, released last (sort_key's order)


def test_a_huge_sum_comes_back_exact(files):
    """HUGEINT past BIGINT: numpy's float64 would round it; the column holds the exact ints."""
    s = session(files)
    try:
        cols = s.engine.run_columns("SELECT kpriv, SUM(big) AS s, SUM(v) AS v FROM t GROUP BY kpriv")
    finally:
        s.close()
    assert isinstance(cols, Columns) and cols.types == ["BIGINT", "HUGEINT", "HUGEINT"]
    con = duckdb.connect(str(files[0]), read_only=True)
    truth = dict(con.execute("SELECT kpriv, SUM(big) FROM t GROUP BY kpriv").fetchall())
    nulls = dict(con.execute("SELECT kpriv, SUM(v) FROM t GROUP BY kpriv").fetchall())
    con.close()
    got = dict(zip(cols.arrays[0].tolist(), cols.arrays[1].tolist()))
    assert got == truth and max(truth.values()) == 30 * BIG > 2**63
    assert all(type(v) is int for v in got.values())
    assert dict(zip(cols.arrays[0].tolist(), cols.arrays[2].tolist())) == nulls and None in nulls.values()


def test_types_without_an_exact_array_are_fetched_as_rows(files):
    s = session(files)
    try:
        sql = "SELECT kpriv, CAST(SUM(v) AS DECIMAL(18, 2)) AS d, DATE '2020-01-01' + CAST(kpriv AS INTEGER) AS day FROM t GROUP BY kpriv"
        got = s.engine.run_columns(sql)
        assert isinstance(got, list) and got == s.engine.run(sql)
    finally:
        s.close()


def test_selection_on_columns_counts_units_not_sums(files):
    """The 300 one-unit groups hold w = 10^6 each (their SUM far above any count): selection on
    the unit count keeps none of them (π(1) = 1e-5) and every 30-unit group (π(30) = 1);
    selecting on the SUM column (the first aggregate) would keep them all."""
    con = dpsql.connect(str(files[0]), str(files[1]), reuse=False, _random_source=seeded_random(11))
    cur = con.cursor()
    cur.execute("SELECT kpriv, SUM(w) AS s, COUNT(*) AS n FROM t GROUP BY kpriv")
    kept = [r[0] for r in cur.fetchall()]
    con.close()
    assert kept == list(range(400))
