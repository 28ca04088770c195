"""A series limit read from one release (issue 33; dpsql/intercept/series_derived.py, docs/bi.md
"A series limit read from one release"): when the subquery's ranking is an additive aggregate of
the outer query's cells over the same rows, the outer query is released once without its join and
the ranking is summed from its noisy cells; otherwise two releases, as before.

Oracles: "charged" is the ledger (its charges and their SQL), never the receipt under test; the
ranking and the kept rows are recomputed here in plain Python over the one release's rows, fetched
again by sending the charged statement's text alone (the same release, shown again free)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import DpsqlError
from dpsql.intercept.series_derived import top_keys
from dpsql.testing import seeded_random
from server_harness import policy_with_budget

WHERE = "opened >= DATE '2015-01-01' AND opened < DATE '2016-01-01'"
TOP = (f"SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM establishments WHERE {WHERE} GROUP BY naics2 "
       "ORDER BY COUNT(*) DESC LIMIT 5")
#: Superset's monthly series of COUNT(*) by naics2 with a series limit of 5 (its shape, on the demo data)
SERIES = (f"SELECT DATE_TRUNC('month', opened) AS month, naics2 AS naics2, COUNT(*) AS \"COUNT(*)\" FROM establishments "
          f"JOIN ({TOP}) AS series_limit ON naics2 = naics2__ WHERE {WHERE} "
          "GROUP BY DATE_TRUNC('month', opened), naics2 ORDER BY \"COUNT(*)\" DESC LIMIT 40")


def _charges(c) -> list:
    return c.session.ledger.charges


def _in_2015(row: tuple) -> bool:
    """SERIES's WHERE keeps 2015: a month cell of another year holds no row, only noise."""
    return row[0] is not None and row[0].year == 2015


def _oracle(rows: list[tuple], key: int, metric: int, n: int, descending: bool = True, only=None) -> list:
    """The top-n keys of released rows, written out here: totals per key in a dict (over the rows
    ``only`` keeps), then a sort by (total, key) — ties by key ascending — with NULL keys left out."""
    totals: dict = {}
    for r in rows:
        if r[key] is not None and (only is None or only(r)):
            totals[r[key]] = totals.get(r[key], 0) + r[metric]
    pairs = sorted(totals.items(), key=lambda kv: ((-kv[1] if descending else kv[1]), kv[0]))
    return [k for k, _ in pairs[:n]]


def test_one_release_and_the_rows_of_the_top_keys_read_off_its_cells(con):
    cur = con.execute(SERIES)
    got = cur.fetchall()
    charges = _charges(con)
    assert len(charges) == 1 and "JOIN" not in charges[0].query.upper() and "LIMIT" not in charges[0].query.upper()
    assert cur.receipt.rho == Fraction(1, 10) == charges[0].rho
    released = con.execute(charges[0].query).fetchall()  # the one release, shown again free
    assert len(_charges(con)) == 1
    top = _oracle(released, key=1, metric=2, n=5, only=_in_2015)
    expected = [r for r in released if r[1] in top][:40]  # released in the outer ORDER BY; then its LIMIT
    assert got == expected and len(got) == 40 and len({r[1] for r in got}) <= 5
    assert [r[2] for r in got] == sorted((r[2] for r in got), reverse=True)  # the outer ORDER BY held
    assert any(n.startswith("series limit read from the released cells") for n in cur.receipt.notes)
    con.execute(SERIES)  # a reload: the same release, shown again
    assert len(_charges(con)) == 1


def test_the_ranking_is_from_noisy_cells_not_exact_counts(demo):
    """At a tiny ρ the noise of 2015's twelve monthly cells swamps their counts: the kept sectors
    are the released cells' top 5 (recomputed here), which the exact counts' top 5 would not give."""
    with dpsql.connect(*demo, rho=0.0001, _random_source=seeded_random(7)) as c:
        cur = c.cursor()
        cur.execute(SERIES.replace("LIMIT 40", ""))
        got = cur.fetchall()
        base = _charges(c)[0].query
        cur.execute(base)
        released = cur.fetchall()
    top = _oracle(released, key=1, metric=2, n=5, only=_in_2015)
    assert sorted({r[1] for r in got}) == sorted(top)
    assert got == [r for r in released if r[1] in top]


def test_an_ascending_series_limit_keeps_the_smallest_totals(con):
    sql = SERIES.replace("ORDER BY COUNT(*) DESC LIMIT 5", "ORDER BY mme_inner__ ASC LIMIT 3").replace(" LIMIT 40", "")
    got = con.execute(sql).fetchall()
    base = _charges(con)[0].query
    released = con.execute(base).fetchall()
    top = _oracle(released, key=1, metric=2, n=3, descending=False, only=_in_2015)
    assert got == [r for r in released if r[1] in top] and len(_charges(con)) == 1


def test_a_sum_ranking_over_a_finer_grouping(con):
    """SUM(payann) ranked by state, the outer grouped by state and naics2; ordinal ORDER BY."""
    inner = "SELECT state AS s__, SUM(payann) AS m FROM establishments GROUP BY state ORDER BY 2 DESC LIMIT 4"
    sql = (f"SELECT naics2, state, SUM(payann) AS pay FROM establishments JOIN ({inner}) AS sl ON state = s__ "
           "GROUP BY naics2, state ORDER BY naics2, state")
    got = con.execute(sql).fetchall()
    charges = _charges(con)
    assert len(charges) == 1
    released = con.execute(charges[0].query).fetchall()
    top = _oracle(released, key=1, metric=2, n=4)
    assert got == [r for r in released if r[1] in top] and len({r[1] for r in got}) == 4


@pytest.mark.parametrize("where, unit, kept", [
    # the months of 2015 only, whatever the WHERE's spelling (month starts from 2014-11 to 2016-02)
    ("opened >= DATE '2015-01-01' AND opened < DATE '2016-01-01'", "month", ["2015-01", "2015-12"]),
    ("opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD')", "month",
     ["2015-01", "2015-12"]),
    ("'2016-01-01 00:00:00.000000' > opened AND '2015-01-01 00:00:00.000000' <= opened", "month", ["2015-01", "2015-12"]),
    # a bound inside a bucket keeps it; <= keeps the bucket starting on the bound, > drops nothing before it
    ("opened BETWEEN '2015-01-15' AND '2016-01-01'", "month", ["2015-01", "2016-01"]),
    ("opened > '2014-12-31' AND opened <= CAST('2015-12-31' AS DATE)", "month", ["2014-12", "2015-12"]),
    ("opened >= '2015-06-01'", "year", ["2014-11", "2016-02"]),  # year buckets: 2015 and 2016 both hold June on
    # three-month buckets: the one starting 2014-12-01 reaches February 2015; other conjuncts bound nothing
    ("opened >= '2015-02-01' AND employees > 3", "quarter", ["2014-12", "2016-02"]),
])
def test_time_buckets_the_where_leaves_empty(where, unit, kept):
    """Which month-start cells the ranking sums (the first and last kept), from the WHERE's date
    bounds on the DATE_TRUNC key's column: worked out by hand for each spelling."""
    import datetime as dt

    from dpsql.intercept.series_derived import derivable, empty_by_where
    from dpsql.sql.parse import parse

    outer = parse(f"SELECT DATE_TRUNC('{unit}', opened) AS t, naics2, COUNT(*) AS n FROM establishments WHERE {where} "
                  "GROUP BY 1, 2")
    inner = (f"SELECT naics2 AS k__, COUNT(*) AS m FROM establishments WHERE {where} GROUP BY naics2 "
             "ORDER BY m DESC LIMIT 2")
    one = derivable(inner, outer, ((parse("SELECT naics2").expressions[0], "k__"),))
    starts = [dt.datetime(2014 + (m // 12), m % 12 + 1, 1) for m in range(10, 26)]  # 2014-11 … 2016-02
    live = [s.strftime("%Y-%m") for s in starts if not empty_by_where((s, "x", 1), one.windows)]
    assert [live[0], live[-1]] == kept and live == sorted(live)
    assert one.windows and empty_by_where((None, "x", 1), one.windows) is False  # a NULL key's cell: always summed


@pytest.mark.parametrize("rows, descending, n, expected", [
    ([("a", 1, 5), ("b", 1, 5), ("c", 1, 7)], True, 2, [("c",), ("a",)]),  # a tie: key ascending
    ([("b", 1, 2), ("a", 1, 2), ("b", 2, 1)], False, 1, [("a",)]),  # a 2, b 3: ascending keeps a
    ([(None, 1, 99), ("x", 1, 1), ("y", 1, None)], True, 5, [("x",), ("y",)]),  # NULL key never; NULL total last
    ([("p", 1, 3), ("q", 1, -1), ("q", 2, 5)], True, None, [("q",), ("p",)]),  # no LIMIT: every key, 4 > 3
])
def test_top_keys_ties_directions_and_nulls(rows, descending, n, expected):
    assert top_keys(rows, (0,), 2, descending, n) == expected


#: shapes whose ranking cannot be read off the outer answer: two releases, as before
NOT_DERIVED = {
    "avg_metric": SERIES.replace("COUNT(*) AS mme_inner__", "AVG(employees) AS mme_inner__")
                        .replace("ORDER BY COUNT(*) DESC LIMIT 5", "ORDER BY mme_inner__ DESC LIMIT 5"),
    "other_where": SERIES.replace(f"WHERE {WHERE} GROUP BY naics2", "WHERE state = 'CA' GROUP BY naics2"),
    "inner_having": SERIES.replace("GROUP BY naics2 ORDER", "GROUP BY naics2 HAVING COUNT(*) > 2 ORDER"),
    "metric_not_in_outer": SERIES.replace("COUNT(*) AS \"COUNT(*)\"", "SUM(payann) AS pay")
                                 .replace("ORDER BY \"COUNT(*)\" DESC", "ORDER BY pay DESC"),
    "keys_not_nested": ("SELECT DATE_TRUNC('month', opened) AS month, COUNT(*) AS n FROM establishments "
                        f"JOIN ({TOP}) AS series_limit ON naics2 = naics2__ WHERE {WHERE} GROUP BY 1"),
}


@pytest.mark.parametrize("name", NOT_DERIVED)
def test_two_releases_when_the_ranking_is_not_derivable(con, name):
    sql = NOT_DERIVED[name]
    assert con.explain(sql).rho == Fraction(2, 10)
    cur = con.execute(sql)
    cur.fetchall()
    assert len(_charges(con)) == 2 and "IN (" in _charges(con)[1].query
    assert any(n.startswith("release 2 of 2") for n in cur.receipt.notes)


def test_the_setting_separate_keeps_two_releases_and_derived_is_the_default(con):
    assert con.execute("SHOW dpsql.series_limit").fetchall() == [("dpsql.series_limit", "derived")]
    con.execute("SET dpsql.series_limit = 'separate'")
    con.execute(SERIES).fetchall()
    assert len(_charges(con)) == 2
    con.execute("RESET dpsql.series_limit")
    con.execute(SERIES).fetchall()
    assert len(_charges(con)) == 3  # the one release, a statement not released before
    with pytest.raises(DpsqlError) as err:
        con.execute("SET dpsql.series_limit = 'both'")
    assert err.value.code == "DP119"


def test_explain_states_one_release_and_charges_nothing(con):
    text = "\n".join(r[0] for r in con.execute(f"EXPLAIN {SERIES}").fetchall())
    assert "a series limit read from one release: rho=0.1" in text and "release 2 of 2" not in text
    assert con.explain(SERIES).rho == Fraction(1, 10)
    assert _charges(con) == []


def test_half_the_budget_answers_what_two_releases_could_not(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "small.toml", total_rho="1.0")
    with dpsql.connect(demo[0], policy, rho=0.6, _random_source=seeded_random(3)) as c:
        c.cursor().execute(SERIES)  # 0.6 of 1: covered as one release
        assert [ch.rho for ch in _charges(c)] == [Fraction(6, 10)]
    with dpsql.connect(demo[0], policy_with_budget(demo[1], tmp_path / "small2.toml", total_rho="1.0"), rho=0.6,
                       _random_source=seeded_random(3)) as c:
        c.cursor().execute("SET dpsql.series_limit = 'separate'")
        with pytest.raises(DpsqlError) as err:
            c.cursor().execute(SERIES)  # 0.6 + 0.6 > 1: refused whole
        assert err.value.code == "DP301" and _charges(c) == []


def test_a_refused_subquery_is_refused_in_the_derived_form_too(con):
    sql = SERIES.replace("GROUP BY naics2 ORDER", "GROUP BY naics2, payann ORDER")
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code.startswith("DP") and _charges(con) == []


def test_through_dpsql_serve_with_psycopg2(dpsql_server):
    """The same over the wire with Superset's driver: one charge, free on reload, the rows the
    released cells' top keys."""
    psycopg2 = pytest.importorskip("psycopg2")
    srv, user = dpsql_server, "series_derived"
    srv.add_user(user, cli=False)
    con = psycopg2.connect(srv.dsn(user))
    con.autocommit = True
    try:
        cur = con.cursor()
        cur.execute(SERIES)
        got = cur.fetchall()
        assert len(srv.charges(user)) == 1
        assert any("series limit read from the released cells" in n for n in con.notices)
        base = SERIES.split(" JOIN ")[0] + " WHERE " + SERIES.split(" WHERE ", 2)[-1].replace(" LIMIT 40", "")
        cur.execute(base)  # the one release, as its own statement (the charged text): shown again, free
        released = cur.fetchall()
        assert len(srv.charges(user)) == 1
        top = _oracle(released, key=1, metric=2, n=5, only=_in_2015)
        assert got == [r for r in released if r[1] in top][:40]
        cur.execute(SERIES)
        assert cur.fetchall() == got and len(srv.charges(user)) == 1
    finally:
        con.close()
    srv.check_ledger()


#: a SQL Lab virtual dataset (a plain row-level SELECT of one private table) as Superset wraps it
VIRTUAL = "(SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0\n) AS virtual_table"
VIRTUAL_SERIES = SERIES.replace("FROM establishments", f"FROM {VIRTUAL}")


def test_a_series_limit_over_a_virtual_dataset_is_one_release(con):
    cur = con.execute(VIRTUAL_SERIES)
    got = cur.fetchall()
    charges = _charges(con)
    assert len(charges) == 1 and "virtual_table" in charges[0].query and "JOIN" not in charges[0].query.upper()
    released = con.execute(charges[0].query).fetchall()
    assert len(_charges(con)) == 1
    top = _oracle(released, key=1, metric=2, n=5, only=_in_2015)
    assert got == [r for r in released if r[1] in top][:40] and got


def test_a_series_limit_over_a_virtual_dataset_as_two_releases(con):
    con.execute("SET dpsql.series_limit = 'separate'")
    got = con.execute(VIRTUAL_SERIES).fetchall()
    charges = _charges(con)
    assert len(charges) == 2 and "mme_inner__" in charges[0].query and "IN (" in charges[1].query
    top = {k for k, _ in con.execute(charges[0].query).fetchall()}  # release 1, shown again free
    assert got and {r[1] for r in got} <= top and len(_charges(con)) == 2


@pytest.mark.parametrize("virtual", [
    "(SELECT naics2, employees * 2 AS e, opened FROM establishments) AS virtual_table",  # an expression
    "(SELECT naics2, opened FROM establishments LIMIT 100) AS virtual_table",  # a LIMIT
    "(SELECT e.naics2, e.opened FROM establishments e JOIN states s ON e.state = s.state) AS virtual_table",  # a join
], ids=["expression", "limit", "join"])
def test_a_virtual_dataset_that_is_not_a_plain_select_is_refused_in_phase_1(con, virtual):
    with pytest.raises(DpsqlError) as err:
        con.execute(SERIES.replace("FROM establishments", f"FROM {virtual}"))
    assert err.value.code == "DP126" and _charges(con) == []


def test_separate_as_a_connection_option_over_the_wire(dpsql_server):
    """A BI tool that only takes a URL asks for two releases with libpq's options."""
    psycopg2 = pytest.importorskip("psycopg2")
    srv, user = dpsql_server, "series_separate"
    srv.add_user(user, cli=False)
    con = psycopg2.connect(srv.dsn(user), options="-c dpsql.series_limit=separate")
    con.autocommit = True
    try:
        cur = con.cursor()
        cur.execute("SHOW dpsql.series_limit")
        assert cur.fetchall() == [("dpsql.series_limit", "separate")]
        cur.execute(SERIES)
        assert cur.fetchall() and len(srv.charges(user)) == 2
    finally:
        con.close()


@pytest.mark.parametrize("name", ["series_limit", "series_limit_virtual"])
def test_the_captured_superset_sql_through_psycopg2(dpsql_server, name):
    """Superset's own captured statements (tests/fixtures/pgwire/superset/), through its driver:
    one charge, free on reload, and the rows those of the top 5 sectors of the one release's 2015
    cells — the release fetched again here by the chart's query without its join and LIMIT,
    written with sqlglot in the test (the same release, shown again free)."""
    import sqlglot

    from test_server_superset import FIXTURES, load

    psycopg2 = pytest.importorskip("psycopg2")
    (path,) = [p for p in FIXTURES if p.stem == name]
    charges, [(sql, params, refused)] = load(path)
    assert charges == 1 and not params and refused is None
    plain = sqlglot.parse_one(sql, read="postgres")
    plain.set("joins", None)
    plain.set("limit", None)
    srv, user = dpsql_server, "captured_" + name[-7:]
    srv.add_user(user, cli=False)
    con = psycopg2.connect(srv.dsn(user))
    con.autocommit = True
    try:
        cur = con.cursor()
        cur.execute(sql)
        got = cur.fetchall()
        assert len(srv.charges(user)) == 1
        cur.execute(plain.sql(dialect="postgres"))
        released = cur.fetchall()
        cur.execute(sql)
        assert cur.fetchall() == got and len(srv.charges(user)) == 1
    finally:
        con.close()
    top = _oracle(released, key=1, metric=2, n=5, only=_in_2015)
    assert got == [r for r in released if r[1] in top][:10000] and len({r[1] for r in got}) == 5


def test_the_receipts_errors_stay_aligned_with_the_rows_shown(con):
    """The answer keeps a subset of the release's rows; the receipt's per-row σ and MOE follow
    them. AVG's σ differs from row to row (its noisy count divides it), so a σ left at the
    release's row positions would not match: each row's σ is looked up in the release itself."""
    inner = ("SELECT naics2 AS n__, COUNT(*) AS m FROM establishments GROUP BY naics2 "
             "ORDER BY COUNT(*) DESC LIMIT 6")
    sql = (f"SELECT state, naics2, COUNT(*) AS n, AVG(employees) AS a FROM establishments "
           f"JOIN ({inner}) AS sl ON naics2 = n__ GROUP BY state, naics2 ORDER BY a DESC LIMIT 30 OFFSET 3")
    cur = con.execute(sql)
    got, errors = cur.fetchall(), cur.receipt.columns["a"]
    charges = _charges(con)
    assert len(charges) == 1 and any(n.startswith("series limit read from the released cells") for n in cur.receipt.notes)
    base = con.execute(charges[0].query)
    released, base_errors = base.fetchall(), base.receipt.columns["a"]
    assert len(_charges(con)) == 1 and len(base_errors.sigma) == len(released) > 30
    by_row = {r[:2]: (s, m) for r, s, m in zip(released, base_errors.sigma, base_errors.moe95)}
    assert len(errors.sigma) == len(errors.moe95) == len(got) == 30
    assert [by_row[r[:2]] for r in got] == list(zip(errors.sigma, errors.moe95))
    assert len(set(errors.sigma)) > 10  # σ varies by row: a misalignment would show
