"""SQL over released answers (issue 32; docs/sql.md and docs/privacy.md, "SQL over released
answers"): an outer query over one aggregate subquery is post-processing of its release (charged
once, or reused free); a join of a table to an aggregate subquery of it (Superset's series limit)
is two named releases.

Oracles: "charged" is the ledger (its charges and their SQL, read through the ledger or the
server's SQLite file), never the receipt under test; the outer values are recomputed here, in
plain Python or a separate in-memory DuckDB, over the inner's released rows (fetched again by
running the inner statement alone: the same release, shown again for free)."""

from __future__ import annotations

import statistics
from fractions import Fraction

import duckdb
import pytest

import dpsql
from dpsql.errors import DpsqlError
from dpsql.testing import seeded_random
from server_harness import policy_with_budget

PAGE = "SELECT state AS state, AVG(employees) AS avg_emp FROM establishments GROUP BY state ORDER BY avg_emp DESC LIMIT 10"
ROWCOUNT = f"SELECT COUNT(*) AS rowcount FROM ({PAGE}) AS rowcount_qry"
COUNTS = "SELECT state, COUNT(*) AS n FROM establishments GROUP BY state"
TWICE = (f"WITH a AS ({COUNTS}) SELECT a.state, a.n, b.n AS m FROM a JOIN a AS b ON a.state = b.state "
         "WHERE a.n > 3000 ORDER BY a.state")
TOP = ("SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM establishments GROUP BY naics2 "
       "ORDER BY mme_inner__ DESC LIMIT 5")
#: ranked by COUNT(*), which the outer query does not compute: two releases (tests/test_series_limit_derived.py
#: has the one-release form, a ranking read off the outer answer)
SERIES = (f"SELECT naics2, DATE_TRUNC('year', opened) AS t, SUM(payann) AS n FROM establishments JOIN ({TOP}) AS series_limit "
          "ON establishments.naics2 = series_limit.naics2__ GROUP BY naics2, t ORDER BY naics2, t")


def _charges(c) -> list:
    return c.session.ledger.charges


def test_rowcount_after_the_page_query_charges_nothing_more(con):
    page = con.execute(PAGE).fetchall()
    assert len(_charges(con)) == 1
    cur = con.execute(ROWCOUNT)
    assert cur.fetchall() == [(len(page),)]  # the rows of the page released, counted here
    assert len(_charges(con)) == 1 and con.session.ledger.spent == Fraction(1, 10)  # nothing more
    assert cur.receipt.rho == 0 and cur.receipt.charge_id is None
    assert any(n.startswith("outer query: post-processing") and "charged 0" in n for n in cur.receipt.notes)
    assert any("reused, released at" in n for n in cur.receipt.notes)


def test_rowcount_first_charges_the_page_once_and_the_page_is_then_free(con):
    cur = con.execute(ROWCOUNT)
    (count,), = cur.fetchall()
    charges = _charges(con)
    assert len(charges) == 1 and charges[0].query == PAGE  # the inner statement, charged under its own text
    assert cur.receipt.rho == Fraction(1, 10) and cur.receipt.charge_id is not None
    assert len(con.execute(PAGE).fetchall()) == count and len(_charges(con)) == 1


def test_a_cte_used_twice_charges_once_and_the_outer_sql_runs_on_the_released_rows(con):
    got = con.execute(TWICE).fetchall()
    assert len(_charges(con)) == 1
    released = con.execute(COUNTS).fetchall()  # the same release, shown again
    assert len(_charges(con)) == 1
    expected = sorted((s, n, n) for s, n in released if n > 3000)  # the self-join on the unique state, in Python
    assert got == expected and got


def test_an_average_of_released_counts_is_the_mean_of_the_released_rows(con):
    (avg,), = con.execute(f"SELECT AVG(n) AS a FROM ({COUNTS}) t").fetchall()
    released = con.execute(COUNTS).fetchall()
    assert len(_charges(con)) == 1
    assert avg == pytest.approx(statistics.fmean(n for _, n in released), rel=1e-12)


def test_outer_sql_equals_the_same_sql_in_a_separate_duckdb_over_the_released_rows(con):
    outer = ("SELECT naics2, pay / (SELECT SUM(pay) FROM a) AS share, RANK() OVER (ORDER BY pay DESC) AS r "
             "FROM a WHERE pay > 0 ORDER BY r, naics2")
    inner = "SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2"
    got = con.execute(f"WITH a AS ({inner}) {outer}").fetchall()
    released = con.execute(inner).fetchall()
    other = duckdb.connect()
    other.execute("CREATE TABLE a (naics2 VARCHAR, pay DOUBLE)")
    other.executemany("INSERT INTO a VALUES (?, ?)", released)
    assert got == other.execute(outer).fetchall()
    assert len(_charges(con)) == 1


def test_the_series_limit_is_two_releases_and_keeps_the_released_groups(con):
    cur = con.execute(SERIES)
    rows = cur.fetchall()
    charges = _charges(con)
    assert [c.query for c in charges][0] == TOP and len(charges) == 2  # exactly two releases
    assert "IN (" in charges[1].query and "JOIN" not in charges[1].query.upper()
    assert cur.receipt.rho == Fraction(2, 10) == sum(c.rho for c in charges)
    assert [n.split(":")[0].split(",")[0] for n in cur.receipt.notes[:2]] == ["release 1 of 2", "release 2 of 2"]
    top = {k for k, _ in con.execute(TOP).fetchall()}  # the series limit's released groups, shown again free
    assert len(top) == 5 and len(_charges(con)) == 2
    assert rows and {k for k, _, _ in rows} <= top
    con.execute(SERIES)  # the same two statements again: both shown again, nothing charged
    assert len(_charges(con)) == 2


def test_the_series_limit_checks_the_budget_of_both_releases_first(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "small.toml", total_rho="1.0")
    with dpsql.connect(demo[0], policy, rho=0.6, _random_source=seeded_random(3)) as c:
        with pytest.raises(DpsqlError) as err:
            c.cursor().execute(SERIES)  # 0.6 + 0.6 > 1: refused whole, nothing charged
        assert err.value.code == "DP301" and _charges(c) == []
    with dpsql.connect(demo[0], policy, rho=0.5, _random_source=seeded_random(3)) as c:
        c.cursor().execute(TOP)  # 0.5 charged; 0.5 left
        c.cursor().execute(SERIES)  # the subquery reused (0) + the outer 0.5: covered
        assert [ch.rho for ch in _charges(c)] == [Fraction(1, 2), Fraction(1, 2)]


def test_a_series_limit_that_releases_no_group_is_one_release_and_no_rows(con):
    empty = ("SELECT county AS county__, COUNT(*) AS c FROM establishments WHERE state = 'ZZ' GROUP BY county "
             "ORDER BY c DESC LIMIT 5")
    cur = con.execute(f"SELECT county, COUNT(*) AS n FROM establishments JOIN ({empty}) AS s ON county = county__ "
                      "GROUP BY county")
    assert cur.fetchall() == [] and [d[0] for d in cur.description] == ["county", "n"]
    assert [c.query for c in _charges(con)] == [empty]
    assert any("not run" in n for n in cur.receipt.notes)


@pytest.mark.parametrize("sql, code", [
    (f"SELECT nope FROM ({COUNTS}) t", "DP124"),
    (f"SELECT COUNT(*) FROM ({COUNTS}) t JOIN establishments e ON t.state = e.state", "DP127"),
    ("SELECT naics2, COUNT(*) FROM establishments LEFT JOIN (SELECT naics2 AS k, COUNT(*) AS c FROM establishments "
     "GROUP BY naics2 LIMIT 5) s ON naics2 = k GROUP BY naics2", "DP126"),
    ("SELECT COUNT(*) FROM (SELECT state, payann FROM establishments GROUP BY state, payann) t", "DP206"),
], ids=["unbound_outer", "a_table_besides", "left_join", "inner_refused"])
def test_refused_in_phase_1_with_nothing_charged(con, sql, code):
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code == code and _charges(con) == []


def test_a_refusal_of_the_subquery_points_into_the_whole_statement(con):
    sql = "SELECT COUNT(*)\nFROM (SELECT state, payann FROM establishments GROUP BY state, payann) t"
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    line, column = err.value.line, err.value.column
    assert sql.split("\n")[line - 1][column - 1:].startswith("payann) t")  # the GROUP BY's payann


def test_an_outer_failure_on_the_noisy_rows_keeps_the_charge(con):
    sql = f"SELECT CAST(state AS INTEGER) AS s FROM ({COUNTS}) t"  # binds on no row; fails on 'AK'
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code == "DP125" and "AK" not in str(err.value)
    assert len(_charges(con)) == 1  # the subquery's release, charged and kept
    con.execute(sql.replace("CAST", "TRY_CAST"))
    assert len(_charges(con)) == 1  # shown again for the corrected outer query: free


def test_explain_states_the_inner_cost_and_a_free_outer(con):
    text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {ROWCOUNT}").fetchall())
    assert "post-processing, charged 0" in text and "rho=0.1" in text and "-- the outer query" in text
    series = "\n".join(r[0] for r in con.execute(f"EXPLAIN {SERIES}").fetchall())
    assert "two releases, rho=0.1 + 0.1 = 0.2" in series and "release 2 of 2" in series
    assert _charges(con) == []


def test_through_dpsql_serve_with_psycopg(dpsql_server):
    """The same over the wire (psycopg 3's extended protocol: Describe of the outer query runs
    nothing): rowcount after the page free, a CTE twice one charge, the series limit two."""
    srv, user = dpsql_server, "over_answers"
    srv.add_user(user, cli=False)
    with srv.connect(user) as conn:
        page = conn.execute(PAGE).fetchall()
        assert len(srv.charges(user)) == 1
        assert conn.execute(ROWCOUNT).fetchall() == [(len(page),)]
        assert len(srv.charges(user)) == 1
        got = conn.execute(TWICE).fetchall()
        assert len(srv.charges(user)) == 2
        released = conn.execute(COUNTS).fetchall()
        assert [tuple(r) for r in got] == sorted((s, n, n) for s, n in released if n > 3000)
        assert len(srv.charges(user)) == 2
        rows = conn.execute(SERIES).fetchall()
        assert len(srv.charges(user)) == 4  # exactly two releases more
        top = {k for k, _ in conn.execute(TOP).fetchall()}
        assert rows and {r[0] for r in rows} <= top and len(srv.charges(user)) == 4
        with pytest.raises(Exception) as err:
            conn.execute(f"SELECT nope FROM ({COUNTS}) t")
        assert "DP124" in str(err.value) and len(srv.charges(user)) == 4
    srv.check_ledger()


def test_an_empty_released_answer_is_an_empty_relation_of_the_planned_types(con):
    """No group released (a private key, no row): the outer query still runs, on no row, with the
    plan's types (an empty answer's key column has DuckDB type NULL)."""
    inner = "SELECT county, COUNT(*) AS n FROM establishments WHERE state = 'ZZ' GROUP BY county"
    assert con.execute(f"SELECT COUNT(*), MAX(county) || 'x' FROM ({inner}) t").fetchall() == [(0, None)]
    assert [c.query for c in _charges(con)] == [inner]


def test_connection_explain_prices_both_forms(con):
    """``Connection.explain`` (the prompt's confirmation, ``dpsql explain --json``): the subquery's
    cost for SQL over its answer, the sum for a series limit (its subquery 0 once released)."""
    assert con.explain(ROWCOUNT).rho == Fraction(1, 10)
    assert con.explain(SERIES).rho == Fraction(2, 10)
    con.execute(TOP)
    assert con.explain(SERIES).rho == Fraction(1, 10)
    assert [c.query for c in _charges(con)] == [TOP]
    with pytest.raises(DpsqlError) as err:
        con.explain(f"SELECT nope FROM ({COUNTS}) t")
    assert err.value.code == "DP124"


#: Superset 6's table chart with server pagination (models/helpers.py: the rowcount wraps the
#: chart's query with the chart's row limit, no offset) and its time series with a series limit
SUPERSET_PAGE = ("SELECT state AS state, count(*) AS count FROM establishments GROUP BY state "
                 "ORDER BY count DESC LIMIT 10 OFFSET 0")
SUPERSET_ROWCOUNT = ("SELECT COUNT(*) AS rowcount FROM (SELECT state AS state, count(*) AS count FROM establishments "
                     "GROUP BY state ORDER BY count DESC LIMIT 1000) AS rowcount_qry")
SUPERSET_SERIES = (
    "SELECT DATE_TRUNC('year', opened) AS opened, naics2 AS naics2, sum(payann) AS \"SUM(payann)\" "
    "FROM establishments JOIN (SELECT naics2 AS naics2__, sum(payann) AS mme_inner__ FROM establishments "
    "WHERE opened >= '2000-01-01 00:00:00.000000' AND opened < '2020-01-01 00:00:00.000000' GROUP BY naics2 "
    "ORDER BY sum(payann) DESC LIMIT 5) AS series_limit ON naics2 = naics2__ "
    "WHERE opened >= '2000-01-01 00:00:00.000000' AND opened < '2020-01-01 00:00:00.000000' "
    "GROUP BY DATE_TRUNC('year', opened), naics2 ORDER BY \"SUM(payann)\" DESC LIMIT 10000")


def test_superset_6_sql_through_psycopg2(dpsql_server):
    """Superset 6's own texts through its driver (psycopg2, the simple protocol): the page and the
    row count are one release (the count's inner is the page's statement with another LIMIT:
    pipeline/reuse.py), charged once and free when the chart is refreshed; the series limit
    (SUM(payann) in both, the same WHERE) is one release, its ranking read off the released cells,
    free on refresh; nothing is refused after a charge."""
    psycopg2 = pytest.importorskip("psycopg2")
    srv, user = dpsql_server, "superset_6"
    srv.add_user(user, cli=False)
    con = psycopg2.connect(srv.dsn(user))
    con.autocommit = True
    try:
        cur = con.cursor()
        for _ in range(2):  # the chart, then a refresh
            cur.execute(SUPERSET_PAGE)
            assert len(cur.fetchall()) == 10
            cur.execute(SUPERSET_ROWCOUNT)
            assert cur.fetchall() == [(51,)]  # the released states: the public keyset, every one
            assert len(srv.charges(user)) == 1
        for _ in range(2):
            cur.execute(SUPERSET_SERIES)
            rows = cur.fetchall()
            assert len(srv.charges(user)) == 2
        assert rows and len({r[1] for r in rows}) == 5  # the five sectors of the released cells' top 5, by year
        assert any("series limit read from the released cells" in n for n in con.notices)
    finally:
        con.close()


#: a virtual dataset of an aggregate (SQL Lab, "Save as dataset") and the query a Table chart in raw
#: records mode sends over it, naming the ± columns Superset synced from the answer's description
VIRTUAL = "SELECT state, AVG(age) AS avg_age, COUNT(*) AS persons FROM persons GROUP BY state"
RAW_RECORDS = ("SELECT state AS state, avg_age AS avg_age, avg_age_moe95 AS avg_age_moe95, persons AS persons, "
               f"persons_moe95 AS persons_moe95 FROM ({VIRTUAL}) AS virtual_table LIMIT 1000")


def _by_state(cur) -> dict[str, dict[str, object]]:
    names = [d[0] for d in cur.description]
    return {row[0]: dict(zip(names, row)) for row in cur.fetchall()}


@pytest.mark.parametrize("mode", ["on", "all"])
def test_the_inner_answers_error_columns_are_columns_of_the_derived_table(con, mode):
    """With error columns on, the derived table has the inner answer's ± columns, the same names
    and values the inner shows alone (run again here: the same release, free); one charge."""
    con.execute(f"SET dpsql.error_columns = {mode}")
    star = con.execute(f"SELECT * FROM ({VIRTUAL}) AS t")
    star_names = [d[0] for d in star.description]
    star_rows = star.fetchall()
    outer = con.execute(RAW_RECORDS)
    assert [d[0] for d in outer.description] == ["state", "avg_age", "avg_age_moe95", "persons", "persons_moe95"]
    got = _by_state(outer)
    inner = con.execute(VIRTUAL)
    inner_names = [d[0] for d in inner.description]
    inner_rows = inner.fetchall()
    assert len(_charges(con)) == 1 and _charges(con)[0].query == VIRTUAL  # one release, its own text
    expected = {"on": ["state", "avg_age", "persons", "avg_age_moe95", "persons_moe95"],
                "all": ["state", "avg_age", "persons", "avg_age_moe95", "avg_age_sigma", "persons_moe95",
                        "persons_sigma"]}[mode]
    assert inner_names == expected and star_names == inner_names and star_rows == inner_rows
    want = {r[0]: dict(zip(inner_names, r)) for r in inner_rows}
    assert set(got) == set(want) and len(got) > 40
    for state, row in got.items():
        assert row == {k: want[state][k] for k in row}  # each ± under its own name, row by row
        assert row["persons_moe95"] > 0 and row["avg_age_moe95"] > 0  # margins, not copies of values


def test_error_columns_of_a_reused_inner_answer(con):
    """The inner released with error columns off, then read with them on: the stored answer keeps
    its per-row errors (pipeline/reuse.py), so the derived table has them, still one charge."""
    plain = con.execute(VIRTUAL).fetchall()
    con.execute("SET dpsql.error_columns = on")
    got = _by_state(con.execute(RAW_RECORDS))
    inner = _by_state(con.execute(VIRTUAL))
    assert len(_charges(con)) == 1
    assert {r[0]: (r[1], r[2]) for r in plain} == {s: (r["avg_age"], r["persons"]) for s, r in got.items()}
    assert all(row == {k: inner[s][k] for k in row} for s, row in got.items())


def test_error_columns_are_unknown_columns_when_they_are_off(con):
    """Off (the default, or set off again after a release with them on): naming a ± column is an
    unknown column of the derived table, refused in phase 1 with nothing (more) charged."""
    with pytest.raises(DpsqlError) as err:
        con.execute(RAW_RECORDS)
    assert err.value.code == "DP124" and _charges(con) == []
    con.execute("SET dpsql.error_columns = on")
    con.execute(RAW_RECORDS)
    con.execute("SET dpsql.error_columns = off")
    with pytest.raises(DpsqlError) as err:
        con.execute(RAW_RECORDS)
    assert err.value.code == "DP124" and len(_charges(con)) == 1
    assert [d[0] for d in con.execute(f"SELECT * FROM ({VIRTUAL}) t").description] == ["state", "avg_age", "persons"]


def test_superset_raw_records_over_a_virtual_dataset_through_psycopg2(dpsql_server):
    """Over the wire, as Superset sends it (psycopg2, libpq ``options`` turning error columns on,
    as a BI tool configured by URL does): the ± columns of the virtual dataset are the inner's,
    one charge; without error columns the same chart query is refused, nothing charged."""
    psycopg2 = pytest.importorskip("psycopg2")
    srv, user = dpsql_server, "superset_moe"
    srv.add_user(user, cli=False)
    off = psycopg2.connect(srv.dsn(user))
    off.autocommit = True
    try:
        with pytest.raises(psycopg2.Error) as err:
            off.cursor().execute(RAW_RECORDS)
        assert "DP124" in str(err.value) and srv.charges(user) == []
    finally:
        off.close()
    con = psycopg2.connect(srv.dsn(user), options="-c dpsql.error_columns=on")
    con.autocommit = True
    try:
        cur = con.cursor()
        cur.execute(RAW_RECORDS)
        got = _by_state(cur)
        cur.execute(RAW_RECORDS)  # a refresh of the chart
        assert _by_state(cur) == got
        cur.execute(VIRTUAL)
        inner = _by_state(cur)
        assert len(srv.charges(user)) == 1
        assert set(got) == set(inner) and all(row == {k: inner[s][k] for k in row} for s, row in got.items())
        assert all(row["avg_age_moe95"] > 0 and row["persons_moe95"] > 0 for row in got.values())
    finally:
        con.close()
    srv.check_ledger()


@pytest.mark.parametrize("inner", [
    "SELECT state, MEDIAN(age) AS med, COUNT(age) AS n FROM persons GROUP BY state",
    "SELECT state, SUM(payann) / SUM(employees) AS r, MEDIAN(employees) AS m FROM establishments GROUP BY state",
], ids=["quantile_rank_interval", "derived_ratio"])
def test_every_error_column_kind_is_a_column_of_the_derived_table(demo, inner):
    """σ, a quantile's rank interval (possibly NULL), a derived ratio's ±: ``SELECT *`` over the
    subquery shows exactly the columns and values the subquery shows alone (run after it: free)."""
    with dpsql.connect(*demo, error_columns="all", _random_source=seeded_random(21)) as c:
        star = c.execute(f"SELECT * FROM ({inner}) AS t ORDER BY 1")
        got = ([d[0] for d in star.description], star.fetchall())
        alone = c.execute(f"{inner} ORDER BY 1")
        assert got == ([d[0] for d in alone.description], alone.fetchall())
        assert len(c.session.ledger.charges) == 1
        assert any(n.endswith("_rank_hi") for n in got[0]) and any(n.endswith("_sigma") for n in got[0])
