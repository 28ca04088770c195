"""Unit splitting (paper 000 Algorithm 1) and the rewrite's exactness (Lemma 5.2).

The exact per-group values noise is added to are compared three ways on the demo data: the
fast algebraic query that runs, the reference over materialised split records, and the
analyst's original un-split query run directly in DuckDB.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import dpsql
from dpsql.sql.rewrite import exact_sql, reference_sql, split_relation_sql

# Paper 000 Table 2(b): (id, industry, employees, payroll) per split, in order.
TABLE_2B = [
    (1, "Agriculture", 50, 5_000_000), (1, "Agriculture", 50, 5_000_000), (1, "Agriculture", 50, 0),
    (2, "Agriculture", 50, 5_000_000), (2, "Agriculture", 0, 5_000_000), (2, "Agriculture", 0, 5_000_000),
    (3, "Mining", 50, 5_000_000), (3, "Mining", 50, 5_000_000),
    (4, "Mining", 50, 5_000_000), (4, "Mining", 0, 5_000_000),
    (5, "Retail", 20, 1_000_000),
]


def split_rows(session, table: str, measures: list[str]) -> list[tuple]:
    tp = session.policy.tables[table]
    sql = split_relation_sql(tp, [tp.measures[m] for m in measures], session.schema[table], ["industry"])
    return session.engine.run(f"SELECT __unit, industry, {', '.join(measures)} FROM ({sql}) ORDER BY __unit, __i")


def test_table_2b_row_for_row(session):
    assert split_rows(session, "paper_table2", ["employees", "payroll"]) == TABLE_2B


def test_splitting_is_query_scoped(session):
    """A payroll-only query must not pay for the employee column's splits (DESIGN.md)."""
    rows = split_rows(session, "paper_table2", ["payroll"])
    per_unit = {u: sum(1 for r in rows if r[0] == u) for u in range(1, 6)}
    assert per_unit == {1: 2, 2: 3, 3: 2, 4: 2, 5: 1}
    rows = split_rows(session, "paper_table2", ["employees"])
    assert {u: sum(1 for r in rows if r[0] == u) for u in range(1, 6)} == {1: 3, 2: 1, 3: 2, 4: 1, 5: 1}


def test_example_5_7_per_group_thresholds(demo, tmp_path):
    """Mining payroll threshold 10,000,000: record 3 splits in 2 (employees), record 4 in 1."""
    text = Path(demo[1]).read_text().replace(
        "payroll = { threshold = 5000000 }",
        'payroll = { threshold = 5000000, overrides = { key = "industry", thresholds = { Mining = 10000000 } } }')
    assert "Mining = 10000000" in text
    policy = tmp_path / "p.toml"
    policy.write_text(text)
    with dpsql.connect(demo[0], policy) as con:
        rows = split_rows(con.session, "paper_table2", ["employees", "payroll"])
        counts = {u: sum(1 for r in rows if r[0] == u) for u in range(1, 6)}
        assert counts == {1: 3, 2: 3, 3: 2, 4: 1, 5: 1}
        # each split of a Mining record is bounded by its own group's threshold
        assert max(r[3] for r in rows if r[1] == "Mining") == 10_000_000


# ----------------------------------------------------------------------------- Lemma 5.2

WHERES = ["", "WHERE state IN ('CA', 'TX', 'NY')", "WHERE employees > 20 AND NOT naics2 = '72'",
          "WHERE payann BETWEEN 100 AND 5000 OR county LIKE '06%'", "WHERE naics IS NOT NULL"]
GROUPS = [[], ["naics2"], ["state"], ["state", "naics2"]]
AGGS = [["COUNT(*)"], ["SUM(payann)"], ["AVG(employees)"], ["COUNT(*)", "SUM(employees)", "AVG(payqtr1)", "SUM(payann)"]]


def exact_values(session, sql: str):
    """Per group: the exact primitives of dpsql's fast query and of the split reference."""
    plan = session.plan(sql)
    schema = session.schema[plan.table.name]
    nk = len(plan.keys)
    fast = {tuple(r[:nk]): r[nk:] for r in session.engine.run(exact_sql(plan, schema))}
    ref = {tuple(r[:nk]): r[nk:] for r in session.engine.run(reference_sql(plan, schema))}
    return plan, fast, ref


@pytest.mark.parametrize("where, keys, aggs", list(itertools.product(WHERES, GROUPS, AGGS)))
def test_lemma_5_2_on_demo_data(session, demo, where, keys, aggs):
    select = ", ".join(keys + aggs)
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    sql = f"SELECT {select} FROM establishments {where}{group}"
    plan, fast, ref = exact_values(session, sql)
    assert fast == ref  # fast path == materialised split reference, both ways

    # The original, un-split query, run as is (a test may; analysts never reach the engine).
    original = {tuple(r[:len(keys)]): r[len(keys):] for r in session.engine.run(sql)}
    assert set(original) == set(fast)
    for cell, values in original.items():
        for out, value in zip(plan.outputs[len(keys):], values):
            if out.primitive is not None:
                assert fast[cell][out.primitive] == value
            else:
                s, c = out.ratio
                assert fast[cell][s] / fast[cell][c] == pytest.approx(float(value), rel=1e-12)


def test_lemma_5_2_non_integer_measure(session, demo):
    """latency_ms has granularity 0.1: noise is added to whole tenths; sums agree exactly."""
    sql = "SELECT SUM(latency_ms), COUNT(*) FROM devices WHERE latency_ms > 50"
    plan, fast, ref = exact_values(session, sql)
    assert fast == ref
    tenths, count = session.engine.run("SELECT SUM(CAST(ROUND(latency_ms * 10) AS BIGINT)), COUNT(*) FROM devices "
                                       "WHERE latency_ms > 50")[0]
    total = session.engine.run("SELECT SUM(latency_ms) FROM devices WHERE latency_ms > 50")[0][0]
    assert fast[()] == (tenths, count)
    assert tenths / 10 == pytest.approx(total, rel=1e-9)


def test_max_splits_tops_code_both_paths(demo, tmp_path):
    """With max_splits = K, values beyond K*T are top-coded in the fast and the reference path alike."""
    text = Path(demo[1]).read_text().replace('[tables.establishments]\nprivacy_unit = "id"',
                                             '[tables.establishments]\nprivacy_unit = "id"\nmax_splits = 3')
    assert "max_splits = 3" in text
    policy = tmp_path / "p.toml"
    policy.write_text(text)
    with dpsql.connect(demo[0], policy) as con:
        plan, fast, ref = exact_values(con.session, "SELECT naics2, SUM(payann), COUNT(*) FROM establishments GROUP BY naics2")
        assert fast == ref
        capped = dict(con.session.engine.run("SELECT naics2, SUM(LEAST(payann, 30000)) FROM establishments GROUP BY naics2"))
        assert {k[0]: v[0] for k, v in fast.items()} == capped


def test_a_null_measure_adds_nothing_under_max_splits(tmp_path):
    """With max_splits the value is top-coded at K·T; a NULL value must stay NULL (ignored by SUM,
    one split), not become −K·T as LEAST(GREATEST(NULL, −c), c) does in DuckDB (GREATEST skips
    NULL): that moved a NULL record's cell by K·T while P(r) charged it one split."""
    import duckdb

    from dpsql.testing import seeded_random

    db, policy = tmp_path / "n.duckdb", tmp_path / "n.policy.toml"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t(id INTEGER, x INTEGER, y DOUBLE)")
    con.execute("INSERT INTO t VALUES (1, 10, 1.5), (2, NULL, NULL), (3, 5, 'NaN'), (4, 900, 2.5)")
    con.close()
    policy.write_text('[budget]\ndefault_rho = 1e12\ntotal_rho = 1e15\n[tables.t]\nprivacy_unit = "id"\nmax_splits = 2\n'
                      '[tables.t.measures]\nx = { threshold = 100 }\ny = { threshold = 1, granularity = 0.5 }\n')
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as c:
        cur = c.cursor()
        cur.execute("SELECT SUM(x), SUM(y) FROM t")
        assert cur.fetchall() == [(10 + 5 + 200, 1.5 + 2.0)]  # 900 top-coded at 2·100; y: NULL and NaN add nothing, 2.5 → 2·1
