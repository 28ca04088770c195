"""Pages of one release (issue 33; docs/privacy.md, "Pages of one release"): ORDER BY, LIMIT and
OFFSET run on the noisy cells after the charge, so every ORDER BY / LIMIT / OFFSET variant of a
statement, and Superset's ``rowcount_qry`` over its page query, is post-processing of ONE release.

Oracles: "charged" is the ledger's own list of charges; the rows of each variant are computed here
in plain Python from the noisy cells the ledger's ``answers`` table holds for that release (its
JSON read with sqlite3), ordered with Python's stable sort and sliced — never through the finish
code under test."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

import dpsql
from dpsql.ledger.book import ledger_path
from dpsql.testing import seeded_random

BASE = "SELECT naics2, COUNT(*) AS n, SUM(payann) AS payroll FROM establishments GROUP BY naics2"


def _charges(con: Any) -> list[Any]:
    return con.session.ledger.charges


def _cells(con: Any, charge_id: int) -> dict[str, list[Any]]:
    """The noisy cells the ledger keeps for the release paid by ``charge_id``, read with sqlite3."""
    with sqlite3.connect(ledger_path(con.session.policy)) as db:
        (text,), = db.execute("SELECT answer FROM answers WHERE charge_id = ?", (charge_id,)).fetchall()
    out = {}
    for name, col in json.loads(text)["cells"].items():
        values = col[2] if col[0] == "array" else col[1]
        out[name] = [values["repeat"]] * values["n"] if isinstance(values, dict) else values
    return out


def _full(con: Any, charge_id: int) -> list[tuple[Any, ...]]:
    """BASE's rows over the stored cells, in the order of the release: (naics2, COUNT, SUM)."""
    c = _cells(con, charge_id)
    return list(zip(c["naics2"], c["__p0"], c["__p1"]))


def test_pages_orders_and_the_row_count_are_one_release(con):
    page1 = con.execute(BASE + " ORDER BY n DESC LIMIT 5")
    first = page1.receipt.charge_id
    assert first is not None and len(_charges(con)) == 1
    full = _full(con, first)
    assert len(full) > 12  # enough groups for three pages

    by_n = sorted(full, key=lambda r: r[1], reverse=True)  # stable: ties in the release's order
    assert page1.fetchall() == by_n[:5]
    page2 = con.execute(BASE + " ORDER BY n DESC LIMIT 5 OFFSET 5")
    assert page2.fetchall() == by_n[5:10]
    assert con.execute(BASE + " ORDER BY 2 DESC LIMIT 5 OFFSET 10").fetchall() == by_n[10:15]  # an ordinal
    assert con.execute(BASE + " ORDER BY COUNT(*) DESC OFFSET 3").fetchall() == by_n[3:]  # the aggregate itself
    by_payroll = sorted(full, key=lambda r: r[2])
    assert con.execute(BASE + " ORDER BY payroll LIMIT 4").fetchall() == by_payroll[:4]  # an alias, ascending
    by_key = sorted(full, key=lambda r: r[0], reverse=True)
    assert con.execute(BASE + " ORDER BY naics2 DESC LIMIT 3").fetchall() == by_key[:3]  # a key
    assert con.execute(BASE).fetchall() == full  # the statement without them: every row, in the release's order
    rowcount = con.execute(f"SELECT COUNT(*) AS rowcount FROM ({BASE} LIMIT 50000) AS rowcount_qry")
    assert rowcount.fetchall() == [(len(full),)]

    assert len(_charges(con)) == 1 and con.session.ledger.spent == _charges(con)[0].rho  # one charge in all
    assert page2.receipt.rho == 0 and page2.receipt.reused["charge_id"] == first  # says when it was charged
    assert page2.receipt.notes[0].startswith("reused: released at ")


def test_ties_are_ordered_as_the_release_made_them_on_every_page(con):
    """An ORDER BY that leaves almost every row tied: each page is the slice of one order (the
    release's, for tied rows), so the pages together show every row exactly once."""
    tied = BASE + " ORDER BY n > 1000 DESC"
    pages = [con.execute(f"{tied} LIMIT 4 OFFSET {k}").fetchall() for k in range(0, 40, 4)]
    full = _full(con, _charges(con)[0].id)
    assert [r for page in pages for r in page] == sorted(full, key=lambda r: r[1] > 1000, reverse=True)
    assert len(_charges(con)) == 1


def test_a_fresh_release_shows_what_its_pages_then_show(con):
    con.execute("SET dpsql.reuse = off")
    fresh = con.execute(BASE + " ORDER BY payroll DESC LIMIT 6").fetchall()
    con.execute("RESET dpsql.reuse")
    again = con.execute(BASE + " ORDER BY payroll DESC LIMIT 6")
    assert again.fetchall() == fresh and again.receipt.rho == 0
    assert len(_charges(con)) == 1
    assert fresh == sorted(_full(con, _charges(con)[0].id), key=lambda r: r[2], reverse=True)[:6]


def test_having_quantiles_and_error_columns_page_one_release(con):
    sql = ("SELECT naics2, COUNT(*) AS n, MEDIAN(payann) AS med FROM establishments GROUP BY naics2 "
           "HAVING COUNT(*) > 500")
    con.execute("SET dpsql.error_columns = on")
    whole = con.execute(sql)
    rows = whole.fetchall()
    names = [d[0] for d in whole.description]
    assert names[:3] == ["naics2", "n", "med"] and "n_moe95" in names
    assert all(r[1] > 500 for r in rows)
    by_med = sorted(rows, key=lambda r: r[2], reverse=True)  # rows carry their own ± columns along
    assert con.execute(sql + " ORDER BY med DESC LIMIT 3").fetchall() == by_med[:3]
    assert con.execute(sql + " ORDER BY med DESC LIMIT 3 OFFSET 3").fetchall() == by_med[3:6]
    assert len(_charges(con)) == 1
    con.execute(sql.replace("> 500", "> 600"))  # another HAVING: another statement
    assert len(_charges(con)) == 2


def test_an_aggregate_only_the_order_by_reads_is_another_release(con):
    """ORDER BY COUNT(*) when the SELECT list has no COUNT needs a noisy count the first release
    never made: its plan has another primitive, so it is charged (and then paged for free)."""
    con.execute("SELECT naics2, SUM(payann) AS p FROM establishments GROUP BY naics2")
    con.execute("SELECT naics2, SUM(payann) AS p FROM establishments GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 3")
    assert len(_charges(con)) == 2
    con.execute("SELECT naics2, SUM(payann) AS p FROM establishments GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 3 OFFSET 3")
    assert len(_charges(con)) == 2


@pytest.mark.parametrize("other", [
    BASE.replace("GROUP BY", "WHERE employees > 5 GROUP BY"),  # another WHERE
    BASE.replace("naics2", "state"),  # another grouping
    BASE.replace("SUM(payann)", "SUM(employees)"),  # another aggregate
])
def test_a_page_of_another_statement_is_charged(con, other):
    """The key leaves out ORDER BY / LIMIT / OFFSET only: a page of another statement is a new
    release (mutation ``reuse_key_holds_only_the_finish``)."""
    con.execute(BASE + " ORDER BY n DESC LIMIT 5")
    page = con.execute(other + " ORDER BY n DESC LIMIT 5")
    assert page.receipt.rho > 0 and len(_charges(con)) == 2


def test_pages_are_one_release_in_a_new_process(demo):
    """The release is kept in the ledger: a new connection pages it for free."""
    with dpsql.connect(*demo, _random_source=seeded_random(7)) as c:
        first = c.execute(BASE + " ORDER BY n DESC LIMIT 5").fetchall()
    with dpsql.connect(*demo, _random_source=seeded_random(8)) as c:
        assert c.execute(BASE + " ORDER BY n DESC LIMIT 10").fetchall()[:5] == first
        assert len(_charges(c)) == 1
