"""The finish stage's projection path (dpsql/pipeline/finish.py, ``_projected``): a finish query that only
renames keys and noisy columns and divides for AVG is computed in Python instead of DuckDB. It
must give exactly DuckDB's answer — the same names, type names and values, to the bit and the
Python type — and leave every other finish query to DuckDB."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsql.pipeline import finish as finish_mod
from dpsql.pipeline.finish import finish
from dpsql.sql.plan import ROW_COLUMN

PROJECTIONS = [
    "SELECT naics2, COUNT(*), SUM(employees), AVG(payann) FROM establishments GROUP BY naics2",
    "SELECT COUNT(*), SUM(payann), AVG(employees) FROM establishments",
    "SELECT state, naics2, COUNT(*) AS n, SUM(payann) AS pay FROM establishments GROUP BY state, naics2",
    "SELECT SUM(payann), state FROM establishments GROUP BY state",
    "SELECT COUNT(*), COUNT(*) FROM establishments",  # two columns of one name
    "SELECT EXTRACT(month FROM opened) AS m, AVG(employees) FROM establishments GROUP BY m",
    "SELECT SUBSTR(naics, 1, 3) AS n3, COUNT(*) FROM establishments GROUP BY n3",  # a private key
    "SELECT industry, AVG(employees), SUM(employees) FROM paper_table1 GROUP BY industry",
    "SELECT device_model, SUM(latency_ms), AVG(latency_ms) FROM devices GROUP BY device_model",  # granularity 0.1
    "SELECT state, COUNT(*) FROM establishments WHERE employees > 10000 GROUP BY state",  # empty groups: noise on 0
]
NOT_PROJECTIONS = [
    "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2 ORDER BY 2 DESC",
    "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2 HAVING COUNT(*) > 100",
    "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2 LIMIT 3",
    "SELECT naics2, SUM(payann) / 1000 FROM establishments GROUP BY naics2",
    "SELECT naics2, COUNT(*) + 1 AS n FROM establishments GROUP BY naics2",
]


def _released(session, sql):
    """The decision and the noisy columns the finish stage receives (seeded)."""
    d = session.decide(sql)
    columns, _, _ = session._compute_and_release(d)
    return d.plan, columns


def _duckdb_answer(plan, columns, finisher):
    names, types, rows = finisher.run(columns, plan.finish_sql)
    n = len(plan.outputs)
    return names[:n], types[:n], [r[:n] for r in rows]


def _same(a, b):
    """Equal to the bit and the Python type (1 == 1.0 == True would hide a wrong type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    return a == b


@pytest.mark.parametrize("sql", PROJECTIONS)
def test_a_projection_is_exactly_duckdbs_answer(session, sql):
    plan, columns = _released(session, sql)
    assert plan.projection is not None
    names, types, rows, errors = finish(plan, columns, session.finisher)
    want_names, want_types, want_rows = _duckdb_answer(plan, columns, session.finisher)
    assert (names, types) == (want_names, want_types)
    assert len(rows) == len(want_rows) > 0
    for got, want in zip(rows, want_rows):
        assert len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want)), (got, want)
    assert [(e.sigma, e.moe95) if e else None for e in errors] == [(e.sigma, e.moe95) if e else None for e in
                                                        finish_mod.column_errors(plan, columns, np.arange(len(rows)))]


@pytest.mark.parametrize("sql", NOT_PROJECTIONS)
def test_anything_more_than_a_projection_goes_to_duckdb(session, sql):
    plan, columns = _released(session, sql)
    assert plan.projection is None
    assert finish(plan, columns, session.finisher)[2] == _duckdb_answer(plan, columns, session.finisher)[2]


def test_avg_divides_as_duckdb_does_on_any_values(session):
    """Counts below 1 (NULL), negative and huge sums (int64 values that are not doubles: DuckDB
    converts each side to DOUBLE, then divides), and DOUBLE sums."""
    plan, columns = _released(session, "SELECT naics2, SUM(employees), AVG(payann) FROM establishments GROUP BY naics2")
    ((_, s_col, c_col),) = [p for p in plan.projection if p[0] == "avg"]
    rng = np.random.default_rng(7)
    n = len(columns[ROW_COLUMN])
    for trial in range(30):
        big = 2**62 if trial % 2 else 2**40
        columns = dict(columns)
        columns[s_col] = rng.integers(-big, big, size=n, dtype=np.int64)
        columns[s_col][:3] = [2**53 + 1, -(2**62) + 7, 0]
        columns[c_col] = rng.integers(-3, 2**31, size=n, dtype=np.int64)
        columns[c_col][:6] = [3, 7, 1, 0, -1, 2**53 + 1]
        if trial % 3 == 0:
            columns[s_col] = rng.normal(0, 1e12, size=n)
        got = finish(plan, columns, session.finisher)[2]
        want = _duckdb_answer(plan, columns, session.finisher)[2]
        for g, w in zip(got, want):
            assert all(_same(a, b) for a, b in zip(g, w)), (g, w)


def test_keys_duckdb_would_type_otherwise_go_to_duckdb(session):
    """A date key (DuckDB's DATE or TIMESTAMP) or a key of NULLs alone: the projection declines,
    DuckDB runs it."""
    plan, columns = _released(session, "SELECT DATE_TRUNC('year', opened) AS y, COUNT(*) FROM establishments GROUP BY y")
    assert plan.projection is not None
    assert finish_mod._projected(plan, columns) is None
    plan, columns = _released(session, "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2")
    columns = dict(columns)
    columns[plan.keys[0].name] = [None] * len(columns[plan.keys[0].name])
    assert finish_mod._projected(plan, columns) is None
    assert finish(plan, columns, session.finisher)[2][0][0] is None
    plan, columns = _released(session, "SELECT EXTRACT(month FROM opened) AS m, COUNT(*) FROM establishments GROUP BY m")
    columns = dict(columns)
    columns[plan.keys[0].name] = [None] + list(columns[plan.keys[0].name])[1:]  # DuckDB types integers with a NULL INTEGER, not BIGINT
    assert finish_mod._projected(plan, columns) is None


@pytest.mark.parametrize("sql", ["SELECT naics2, COUNT(*), AVG(payann) FROM establishments GROUP BY naics2",
                                 "SELECT SUBSTR(naics, 1, 3) AS n3, SUM(employees) FROM establishments GROUP BY n3"])
def test_a_null_key_group_is_projected_as_duckdb_answers_it(session, sql):
    """A key's NULL group (a nullable key column: sql/null_keys.py) among text keys: the
    projection gives DuckDB's own answer, NULL where DuckDB has NULL, the column typed as DuckDB
    types it (a released answer shown again needs no DuckDB then: pipeline/reuse.py)."""
    plan, columns = _released(session, sql)
    columns = dict(columns)
    key = plan.keys[0].name
    columns[key] = [None] + list(columns[key])[1:]
    assert finish_mod._projected(plan, columns) is not None
    names, types, rows, _ = finish(plan, columns, session.finisher)
    want_names, want_types, want_rows = _duckdb_answer(plan, columns, session.finisher)
    assert (names, types) == (want_names, want_types) and rows[0][0] is None
    for got, want in zip(rows, want_rows):
        assert all(_same(g, w) for g, w in zip(got, want)), (got, want)
