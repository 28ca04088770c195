"""Output options (dpsql/pipeline/output.py): error columns in the rows, clamping at zero, and notes on
values that cannot be negative. All of it post-processing of noisy values: the tests compare a
run with its twin drawn from the same seeded (test-only) source, never with hard-coded noise."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest
import sqlalchemy as sa

import dpsql
from dpsql.faces.sqlalchemy import last_receipt
from dpsql.pipeline.format import footer
from dpsql.testing import seeded_random

BY_STATE = ("SELECT state, COUNT(*) AS n, SUM(payann) AS pay, AVG(employees) AS avg_emp, COUNT(*) * 2 AS twice "
            "FROM establishments GROUP BY state HAVING COUNT(*) > 100 ORDER BY n DESC LIMIT 10")
#: a query whose counts are mostly near zero: with a tiny rho, some noisy counts are negative
SMALL_CELLS = "SELECT naics2, COUNT(*) AS n FROM establishments WHERE state = 'WY' GROUP BY naics2"  # 24 small cells (a WHERE on naics2 would narrow its keyset)


def twins(demo, seed: int = 7, **options):
    """Two connections drawing the same noise (the same seeded source): one plain, one with options."""
    return (dpsql.connect(*demo, _random_source=seeded_random(seed)),
            dpsql.connect(*demo, _random_source=seeded_random(seed), **options))


# --------------------------------------------------------------------------- error columns


def test_error_columns_follow_the_columns_asked_for(con):
    assert con.execute("SET dpsql.error_columns = on").fetchall() == [("dpsql.error_columns", "on")]
    cur = con.execute(BY_STATE)
    names = [d[0] for d in cur.description]
    assert names == ["state", "n", "pay", "avg_emp", "twice", "n_moe95", "pay_moe95", "avg_emp_moe95", "twice_moe95"]
    assert [d[1] for d in cur.description][5] == "DOUBLE" and cur.receipt.rho > 0
    rows = cur.fetchall()
    errors = cur.receipt.columns
    for i, name in ((5, "n"), (6, "pay"), (7, "avg_emp"), (8, "twice")):
        assert [r[i] for r in rows] == list(errors[name].moe95)  # each row its own MOE, after ORDER/LIMIT
    assert set(errors) == {"n", "pay", "avg_emp", "twice"}  # the receipt describes the analyst's columns only
    # COUNT(*) * 2 is derived (linear): its ± is exactly twice the count's (docs/privacy.md, "Derived columns")
    assert [r[8] for r in rows] == pytest.approx([2 * r[5] for r in rows], rel=1e-12)


def test_error_columns_with_sigma_and_reset_to_the_connection_option(demo):
    with dpsql.connect(*demo, error_columns="sigma", _random_source=seeded_random(2)) as con:
        assert con.execute("SHOW dpsql.error_columns").fetchall() == [("dpsql.error_columns", "all")]
        cur = con.execute("SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2")
        assert [d[0] for d in cur.description] == ["naics2", "pay", "pay_moe95", "pay_sigma"]
        rows = cur.fetchall()
        assert [r[3] for r in rows] == list(cur.receipt.columns["pay"].sigma)
        con.execute("SET dpsql.error_columns = off")
        assert len(con.execute("SELECT COUNT(*) FROM establishments").description) == 1
        con.execute("RESET dpsql.error_columns")  # back to the connection's option, not to off
        assert len(con.execute("SELECT COUNT(*) AS n FROM establishments").description) == 3
        con.execute("SET dpsql.error_columns = off")
        con.execute("RESET dpsql.all")
        assert con.execute("SHOW dpsql.error_columns").fetchall() == [("dpsql.error_columns", "all")]


@pytest.mark.parametrize("sql", ["SET dpsql.error_columns = maybe", "SET dpsql.clamp_negative = 2"])
def test_bad_output_settings_are_refused(con, sql):
    with pytest.raises(dpsql.ProgrammingError) as err:
        con.execute(sql)
    assert err.value.code == "DP119"


def test_bad_connect_option_is_refused(demo):
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.connect(*demo, error_columns="sometimes")


def test_describe_names_the_error_columns_as_execute_returns_them(con):
    """A wire client's Describe comes before the rows: both must agree."""
    con.execute("SET dpsql.error_columns = all")
    names, types = con.session.describe(BY_STATE)
    cur = con.execute(BY_STATE)
    assert names == [d[0] for d in cur.description] and types == [d[1] for d in cur.description]


def test_public_answers_have_no_error_columns(con):
    con.execute("SET dpsql.error_columns = on")
    assert [d[0] for d in con.execute("SELECT code, region FROM states").description] == ["code", "region"]


def test_pandas_read_sql_returns_the_error_columns(demo):
    url = sa.engine.URL.create("dpsql", database=str(demo[0]),
                               query={"policy": str(demo[1]), "error_columns": "on"})
    engine = sa.create_engine(url, connect_args={"_random_source": seeded_random(4)})
    try:
        df = pd.read_sql("SELECT naics2, COUNT(*) AS n, AVG(payann) AS avg_pay FROM establishments GROUP BY naics2",
                         engine)
        assert list(df.columns) == ["naics2", "n", "avg_pay", "n_moe95", "avg_pay_moe95"]
        receipt = last_receipt(engine)
        assert df["n_moe95"].tolist() == list(receipt.columns["n"].moe95)
        assert df["avg_pay_moe95"].tolist() == pytest.approx(list(receipt.columns["avg_pay"].moe95))
        assert (df["n_moe95"] > 0).all()
        # the setting in SQL, as a BI tool would send it
        with engine.connect() as conn:
            conn.execute(sa.text("SET dpsql.error_columns = sigma"))
            df = pd.read_sql(sa.text("SELECT SUM(payann) AS pay FROM establishments"), conn)
        assert list(df.columns) == ["pay", "pay_moe95", "pay_sigma"]
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- clamping and notes


def test_clamping_shows_negative_counts_as_zero_and_says_so(demo):
    plain, clamped = twins(demo, clamp_negative=True)
    try:
        for con in (plain, clamped):
            con.execute("SET dpsql.rho = 0.0001")
        a = plain.execute(SMALL_CELLS)
        b = clamped.execute(SMALL_CELLS)
        raw, shown = a.fetchall(), b.fetchall()
        assert [r[0] for r in raw] == [r[0] for r in shown]
        assert [max(r[1], 0) for r in raw] == [r[1] for r in shown]  # the same draws, clamped
        negatives = sum(1 for r in raw if r[1] < 0)
        assert negatives > 0, "choose a seed that draws a negative count"
        assert any("clamped at 0" in n and f"{negatives} noisy value{'s' if negatives != 1 else ''} below 0" in n for n in b.receipt.notes)
        assert any("n:" in n and "cannot be negative" in n for n in a.receipt.notes)  # the note without the clamp
        assert not any("cannot be negative" in n for n in b.receipt.notes)
        assert a.receipt.columns["n"].moe95 == b.receipt.columns["n"].moe95  # the ± is unchanged
        assert "Note: clamped at 0" in footer(b.result)
    finally:
        plain.close()
        clamped.close()


def test_clamping_comes_before_having_and_avg(demo):
    plain, clamped = twins(demo, seed=11)
    try:
        clamped.execute("SET dpsql.clamp_negative = on")
        assert clamped.execute("SHOW dpsql.clamp_negative").fetchall() == [("dpsql.clamp_negative", "on")]
        sql = ("SELECT naics2, COUNT(*) AS n FROM establishments WHERE state = 'WY' GROUP BY naics2 "
               "HAVING COUNT(*) <= 0 ORDER BY naics2")
        for con in (plain, clamped):
            con.execute("SET dpsql.rho = 0.0001")
        raw, shown = plain.execute(sql).fetchall(), clamped.execute(sql).fetchall()
        assert all(n == 0 for _, n in shown)  # HAVING saw the clamped values
        assert [k for k, _ in shown] == [k for k, _ in raw]  # the same groups: n <= 0 before and after
    finally:
        plain.close()
        clamped.close()


def test_no_note_when_nothing_is_negative(con):
    cur = con.execute("SELECT state, COUNT(*) AS n FROM establishments GROUP BY state")
    assert all(r[1] >= 0 for r in cur.fetchall()) and cur.receipt.notes == ()


def test_sums_are_not_clamped_without_a_schema_fact(demo):
    """The demo's measures are plain BIGINT without CHECK: their sums may show negative."""
    with dpsql.connect(*demo, clamp_negative="on") as con:
        assert con.session.nonnegative["establishments"] == set()
        cur = con.execute("SELECT SUM(payann) AS pay FROM establishments WHERE state = 'WY' AND naics2 = '55'")
        assert any("no aggregate of this query is known to be non-negative" in n for n in cur.receipt.notes)
        cur = con.execute("SELECT COUNT(*) AS n, SUM(payann) AS pay FROM establishments")
        assert any(n.startswith("clamped at 0") and "COUNT(units);" in n for n in cur.receipt.notes)


def _signed(tmp_path):
    """A table whose measures are unsigned, bounded by a CHECK, or free to be negative."""
    db = tmp_path / "signed.duckdb"
    with duckdb.connect(str(db)) as c:
        c.execute("CREATE TABLE t (id BIGINT NOT NULL, region VARCHAR NOT NULL, u UINTEGER NOT NULL, "
                  "c BIGINT NOT NULL CHECK (c >= 0), r DOUBLE NOT NULL CHECK (0 <= r AND r < 1000), "
                  "f BIGINT NOT NULL, o BIGINT NOT NULL CHECK (o >= 0 OR o < -5))")
        c.executemany("INSERT INTO t VALUES (?, ?, 1, 1, 1, 1, 1)", [(i, "a" if i % 2 else "b") for i in range(40)])
    policy = tmp_path / "signed.policy.toml"
    policy.write_text('[budget]\ndefault_rho = 0.0001\ntotal_rho = 100\n\n[tables.t]\nprivacy_unit = "id"\n'
                      '[tables.t.measures]\nu = { threshold = 1000 }\nc = { threshold = 1000 }\n'
                      'r = { threshold = 1000 }\nf = { threshold = 1000 }\no = { threshold = 1000 }\n'
                      '[tables.t.keys]\nregion = { keyset = ["a", "b", "c", "d", "e", "f", "g", "h"] }\n')
    return db, policy


def test_the_schema_says_which_sums_cannot_be_negative(tmp_path):
    db, policy = _signed(tmp_path)
    sql = ("SELECT region, SUM(u) AS su, SUM(c) AS sc, AVG(r) AS ar, SUM(f) AS sf, SUM(o) AS so FROM t "
           "GROUP BY region ORDER BY region")
    plain = dpsql.connect(db, policy, _random_source=seeded_random(21))
    clamped = dpsql.connect(db, policy, clamp_negative=True, _random_source=seeded_random(21))
    try:
        assert clamped.session.nonnegative["t"] == {"u", "c", "r"}
        raw, shown = plain.execute(sql).fetchall(), clamped.execute(sql).fetchall()
        for r, s in zip(raw, shown):
            assert s[1] == max(r[1], 0) and s[2] == max(r[2], 0)  # unsigned type, CHECK (c >= 0)
            assert s[4] == r[4] and s[5] == r[5]  # no schema fact (an OR proves nothing): untouched
            assert s[3] is None or s[3] >= 0  # AVG of a CHECKed measure: clamped SUM / clamped COUNT
        assert all(any(r[i] < 0 for r in raw) for i in (1, 2, 4)), "choose a seed that draws negative sums"
    finally:
        plain.close()
        clamped.close()
