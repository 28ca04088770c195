"""Superset's "group others" of a series limit (issue 32; dpsql/intercept/series_others.py, docs/bi.md
"Group others", docs/privacy.md "The Others row of a series limit"): the LEFT JOIN and the CASE
``WHEN series_limit.k__ IS NOT NULL THEN k ELSE 'Others' END`` answered from released cells — the
top n keys' cells as released, one Others row per value of the other keys adding up the released
cells of all other keys.

Oracles: "charged" is the ledger (its charges and their SQL), never the receipt under test; the
ranking, the Others sums and their σ are recomputed here in plain Python over the release's rows
and σ, fetched again by sending the charged statement's text alone (the same release, shown again
free)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import DpsqlError
from dpsql.testing import seeded_random
from server_harness import policy_with_budget

WHERE = "opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD')"
CASE = "CASE WHEN (series_limit.naics2__ IS NOT NULL) THEN naics2 ELSE 'Others' END"
TOP = (f"SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM main.establishments WHERE {WHERE} GROUP BY naics2 "
       "ORDER BY COUNT(*) DESC LIMIT 5")


def others_sql(metric: str = 'COUNT(*) AS "COUNT(*)"', top: str = TOP, extra: str = "") -> str:
    """Superset 6's monthly series by naics2, series limit 5, "group others" on (models/helpers.py:
    the join a LEFT JOIN, the series column a CASE in SELECT and GROUP BY, no ORDER BY / LIMIT)."""
    return (f"SELECT DATE_TRUNC('MONTH', opened) AS opened, {CASE} AS naics2, {metric} FROM main.establishments "
            f"LEFT OUTER JOIN ({top}) AS series_limit ON naics2 = naics2__ WHERE {WHERE} "
            f"GROUP BY DATE_TRUNC('MONTH', opened), {CASE}{extra}")


def _charges(con) -> list:
    return con.session.ledger.charges


def _top(rows: list[tuple], n: int) -> set:
    """The top-n naics2 of released (month, naics2, count) rows, written out here: the sum per key
    of its 2015 cells (the WHERE's months; other months hold noise only), ties by key ascending."""
    totals: dict = {}
    for month, key, value in rows:
        if key is not None and month is not None and month.year == 2015:
            totals[key] = totals.get(key, 0) + value
    return {k for k, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:n]}


def _expected(rows: list[tuple], top: set) -> list[tuple]:
    """The answer the SQL defines, computed over the released cells: top keys as they are, every
    other key's cells (NULL too: the LEFT JOIN matches nothing) added up per month under 'Others'."""
    out = [r for r in rows if r[1] in top]
    sums: dict = {}
    for month, key, value in rows:
        if key not in top:
            sums[month] = sums.get(month, 0) + value
    return sorted(out + [(m, "Others", v) for m, v in sums.items()], key=repr)


def test_one_release_the_top_keys_as_released_and_the_others_added_up(con):
    cur = con.execute(others_sql())
    got = cur.fetchall()
    charges = _charges(con)
    assert len(charges) == 1 and "JOIN" not in charges[0].query.upper() and "CASE" not in charges[0].query.upper()
    assert cur.receipt.rho == Fraction(1, 10) == charges[0].rho
    released = con.execute(charges[0].query)  # the one release, shown again free
    rows = released.fetchall()
    assert len(_charges(con)) == 1
    top = _top(rows, 5)
    assert len(top) == 5 and sorted(got, key=repr) == _expected(rows, top)
    # σ of an Others cell: the root of the sum of its cells' σ² (independent noise), from the release's σ
    sigma = dict(zip(((r[0], r[1]) for r in rows), released.receipt.columns["COUNT(*)"].sigma))
    for row, s in zip(got, cur.receipt.columns["COUNT(*)"].sigma):
        if row[1] == "Others":
            cells = [sigma[(r[0], r[1])] for r in rows if r[0] == row[0] and r[1] not in top]
            assert s == pytest.approx(math.sqrt(sum(x * x for x in cells)), rel=1e-12) and len(cells) > 1
        else:
            assert s == sigma[(row[0], row[1])]
    assert any(n.startswith("group others:") and "charged 0" in n for n in cur.receipt.notes)


def test_a_refresh_is_free_and_the_plain_series_limit_is_the_same_release(con):
    con.execute(others_sql()).fetchall()
    con.execute(others_sql()).fetchall()
    plain = others_sql().replace("LEFT OUTER JOIN", "JOIN").replace(CASE, "naics2")
    rows = con.execute(plain).fetchall()  # Superset's chart with "group others" off: the same release
    assert len(_charges(con)) == 1 and rows and "Others" not in {r[1] for r in rows}


def test_two_releases_when_separate_the_ranking_from_the_subquerys_release(con):
    con.execute("SET dpsql.series_limit = 'separate'")
    cur = con.execute(others_sql())
    got = cur.fetchall()
    charges = _charges(con)
    assert [c.query for c in charges][0] == TOP and len(charges) == 2
    assert cur.receipt.rho == Fraction(2, 10)
    top = {r[0] for r in con.execute(TOP).fetchall()}  # release 1, shown again
    rows = con.execute(charges[1].query).fetchall()  # release 2, shown again
    assert len(_charges(con)) == 2 and sorted(got, key=repr) == _expected(rows, top)


def test_a_sum_of_a_measure_is_added_up_too(con):
    ranked_by_pay = TOP.replace("COUNT(*) AS mme", "SUM(payann) AS mme").replace("BY COUNT(*)", "BY SUM(payann)")
    got = con.execute(others_sql("SUM(payann) AS pay", top=ranked_by_pay)).fetchall()
    charges = _charges(con)
    assert len(charges) == 1  # ranked by the metric the chart shows: one release
    rows = con.execute(charges[0].query).fetchall()
    assert sorted(got, key=repr) == _expected(rows, _top(rows, 5))


@pytest.mark.parametrize("sql, code", [
    (others_sql('AVG(employees) AS a', top=TOP.replace("COUNT(*) AS mme", "AVG(employees) AS mme")
                .replace("BY COUNT(*)", "BY AVG(employees)")), "DP133"),
    (others_sql('COUNT(DISTINCT county) AS c'), "DP133"),
    (others_sql(extra=" HAVING COUNT(*) > 3"), "DP133"),
    (others_sql().replace(f"{CASE} AS naics2", "naics2 AS naics2"), "DP126"),  # LEFT JOIN without the CASE in SELECT
    (others_sql().replace("ELSE 'Others' END AS", "ELSE 'Rest' END AS"), "DP126"),  # two labels
    (others_sql().replace("THEN naics2 ELSE 'Others' END AS", "THEN state ELSE 'Others' END AS"), "DP126"),
])
def test_refused_in_phase_1_with_nothing_charged(con, sql, code):
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code == code and _charges(con) == []


def test_a_series_column_that_is_not_text_is_refused(con):
    sql = ("SELECT state, CASE WHEN (s.age__ IS NOT NULL) THEN age ELSE 'Others' END AS age, COUNT(*) AS n FROM persons "
           "LEFT JOIN (SELECT age AS age__, COUNT(*) AS m FROM persons GROUP BY age ORDER BY m DESC LIMIT 3) AS s "
           "ON age = age__ GROUP BY state, CASE WHEN (s.age__ IS NOT NULL) THEN age ELSE 'Others' END")
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code in ("DP133", "DP120") and _charges(con) == []


def test_explain_is_free(con):
    text = "\n".join(r[0] for r in con.execute("EXPLAIN " + others_sql()).fetchall())
    assert "series limit" in text and _charges(con) == []


def test_the_ranking_and_the_others_are_from_noisy_cells_not_exact_counts(demo):
    """At a tiny ρ the noise of 2015's monthly cells swamps their counts: the kept sectors are the
    released cells' top 5 (recomputed here, with the Others sums), which exact counts would not give."""
    with dpsql.connect(*demo, rho=0.0001, _random_source=seeded_random(7)) as c:
        got = c.execute(others_sql()).fetchall()
        rows = c.execute(_charges(c)[0].query).fetchall()
    assert sorted(got, key=repr) == _expected(rows, _top(rows, 5))


def test_two_releases_check_the_budget_of_both_first(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "small.toml", total_rho="1.0")
    with dpsql.connect(demo[0], policy, rho=0.6, _random_source=seeded_random(3)) as c:
        c.execute("SET dpsql.series_limit = 'separate'")
        with pytest.raises(DpsqlError) as err:
            c.execute(others_sql())  # 0.6 + 0.6 > 1: refused whole, nothing charged
        assert err.value.code == "DP301" and _charges(c) == []


def test_error_columns_of_an_others_row_add_as_sigma_does(con):
    """SET dpsql.error_columns = on: the Others row's ``_moe95`` is the root of the sum of its cells'
    released ``_moe95`` squared, recomputed from the release shown again."""
    con.execute("SET dpsql.error_columns = on")
    cur = con.execute(others_sql('SUM(payann) AS pay, COUNT(*) AS n'))
    got = cur.fetchall()
    assert [d[0] for d in cur.description] == ["opened", "naics2", "pay", "n", "pay_moe95", "n_moe95"]
    rows = con.execute(_charges(con)[0].query).fetchall()
    assert len(_charges(con)) == 1
    top = _top([(r[0], r[1], r[3]) for r in rows], 5)
    for row in got:
        if row[1] != "Others":
            continue
        cells = [r for r in rows if r[0] == row[0] and r[1] not in top]
        assert row[2] == sum(r[2] for r in cells) and row[3] == sum(r[3] for r in cells)
        assert row[4] == pytest.approx(math.sqrt(sum(r[4] ** 2 for r in cells)), rel=1e-12)
        assert row[5] == pytest.approx(math.sqrt(sum(r[5] ** 2 for r in cells)), rel=1e-12)
