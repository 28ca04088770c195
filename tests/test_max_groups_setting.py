"""``SET dpsql.max_groups = k`` (issue 31: "a query may ask for less"; docs/sql.md, "Asking for a
smaller κ"; dpsql/sql/session_cap.py): each following query on a table with many rows per
unit keeps at most min(k, the policy's κ of its grouping) of a unit's groups.

The visits of ``test_many_rows`` (policy κ = 3, a heavy unit in all ten regions) and its oracle:
plain Python over the rows at the κ the test expects, with DuckDB's HASH read by a plain query —
never read from dpsql.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.testing import seeded_random
from test_many_rows import K, KAPPA, QUERY, _check, _database, _hashes, _oracle, _rows, _salt
from test_many_rows_kappa_by import TABLE as BY_TABLE

ASK = QUERY.format(where="")


def _run(db, policy, statements: list[str], sql: str = ASK, seed: int = 11):
    """The answer, receipt and EXPLAIN text of ``sql`` after ``statements`` on a fresh connection."""
    con = dpsql.connect(db, policy, _random_source=seeded_random(seed))
    try:
        cur = con.cursor()
        for st in ["SET dpsql.reuse = off", *statements]:
            cur.execute(st)
        explained = str(cur.execute("EXPLAIN " + sql).fetchall())
        cur.execute(sql)
        return cur.fetchall(), cur.receipt, explained
    finally:
        con.close()


@pytest.mark.parametrize("k", [1, 2])
def test_a_smaller_kappa_bounds_each_unit_at_it(tmp_path, k):
    rows = _rows()
    db, policy = _database(tmp_path, rows)
    answer, receipt, text = _run(db, policy, [f"SET dpsql.max_groups = {k}"])
    oracle = _oracle(rows, _hashes(db, _salt(11)), kappa=k)
    _check(answer, oracle)
    assert answer != [(g, *v) for g, v in _oracle(rows, _hashes(db, _salt(11))).items()]  # κ = 3 differs here
    assert {t["max_groups"] for t in receipt.policy_terms} == {k}
    assert {t.get("max_groups_from") for t in receipt.policy_terms} == {"SET dpsql.max_groups"}
    split = next(t for t in receipt.policy_terms if t["scale"] != "1")
    assert Fraction(split["unit_bound_exact"]) == k * K**2 * Fraction(split["rho_exact"])
    assert f"at most {k} groups (SET dpsql.max_groups)" in text


@pytest.mark.parametrize("k", [3, 4, 1000, 999_999_999])
def test_a_kappa_at_or_above_the_policys_changes_nothing(tmp_path, k):
    """Never more than the policy's κ: SET dpsql.max_groups = 1000 answers at κ = 3."""
    rows = _rows()
    db, policy = _database(tmp_path, rows)
    answer, receipt, text = _run(db, policy, [f"SET dpsql.max_groups = {k}"])
    _check(answer, _oracle(rows, _hashes(db, _salt(11)), kappa=KAPPA))
    assert {t["max_groups"] for t in receipt.policy_terms} == {KAPPA}
    assert all("max_groups_from" not in t for t in receipt.policy_terms)
    assert answer == _run(db, policy, [])[0]


def test_the_cap_takes_the_least_of_it_and_the_groupings_kappa(tmp_path):
    """With max_groups_by region = 2: a cap of 1 lowers it, a cap of 2 or more leaves the declared set's."""
    rows = _rows()
    db, policy = _database(tmp_path, rows, table=BY_TABLE)
    for k, kappa, src in [(1, 1, ("max_groups_from", "SET dpsql.max_groups")), (2, 2, ("max_groups_by", "region")),
                          (5, 2, ("max_groups_by", "region"))]:
        answer, receipt, _ = _run(db, policy, [f"SET dpsql.max_groups = {k}"])
        _check(answer, _oracle(rows, _hashes(db, _salt(11)), kappa=kappa))
        assert {t["max_groups"] for t in receipt.policy_terms} == {kappa}
        assert {t.get(src[0]) for t in receipt.policy_terms} == {src[1]}


def test_reset_returns_to_the_policys_kappa_and_no_plan_or_answer_crosses_over(tmp_path):
    """The plan cache, the recorded plans and the answer reuse are keyed by the cap: after RESET
    the same text is planned and released at the policy's κ, and a release made under a cap is not
    shown again without it (nor the other way round), while the same cap finds its own again."""
    rows = _rows()
    db, policy = _database(tmp_path, rows)
    con = dpsql.connect(db, policy, _random_source=seeded_random(11))
    cur = con.cursor()
    try:
        spent = []

        def ask(*statements: str) -> list[tuple]:
            for st in statements:
                cur.execute(st)
            before = con.session.ledger.summary()["spent"]
            cur.execute(ASK)
            out = cur.fetchall()
            spent.append(before != con.session.ledger.summary()["spent"])
            return out

        first = ask()  # κ = 3, charged
        capped = ask("SET dpsql.max_groups = 1")
        assert cur.execute("SHOW dpsql.max_groups").fetchall() == [("dpsql.max_groups", "1")]
        again = ask("RESET dpsql.max_groups")
        assert cur.execute("SHOW dpsql.max_groups").fetchall() == [("dpsql.max_groups", "policy")]
        capped_again = ask("SET dpsql.max_groups = 1")
        all_reset = ask("RESET dpsql.all")
        assert spent == [True, True, False, False, False]  # each κ's release once, then shown again
        assert again == first == all_reset and capped_again == capped != first
        assert {t["max_groups"] for t in con.explain(ASK).policy_terms} == {KAPPA}
    finally:
        con.close()


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "'abc'", "1e3", "''", "9999999999", "NULL"])
def test_anything_but_a_whole_number_of_groups_is_refused(tmp_path, value):
    db, policy = _database(tmp_path, _rows())
    con = dpsql.connect(db, policy)
    try:
        with pytest.raises(QueryRefused) as e:
            con.cursor().execute(f"SET dpsql.max_groups = {value}")
        assert e.value.code == "DP119" and "whole number" in str(e.value)
        assert con.cursor().execute("SHOW dpsql.max_groups").fetchall() == [("dpsql.max_groups", "policy")]
    finally:
        con.close()


def test_a_table_with_one_row_per_unit_is_unchanged(tmp_path):
    """The demo's establishments (one row per unit): the setting changes neither plan nor answer."""
    con = dpsql.connect(_random_source=seeded_random(3))
    try:
        sql = "SELECT state, COUNT(*) FROM establishments GROUP BY state"
        before = con.explain(sql)
        con.execute("SET dpsql.max_groups = 1")
        after = con.explain(sql)
        assert before.exact_sql == after.exact_sql and before.policy_terms == after.policy_terms
    finally:
        con.close()


def test_over_the_wire_in_sql_and_in_the_startup_options(start_server, tmp_path):
    """A real ``dpsql serve`` and psycopg 3: SET dpsql.max_groups in SQL, and ``options=-c
    dpsql.max_groups=1`` for a BI tool that only takes a URL; each answer is the oracle's at its κ
    (the server's own noise: ρ = 1e12, so it rounds to nothing)."""
    rows = _rows()
    db, policy = _database(tmp_path, rows)
    srv = start_server(users=("carol",), policy=policy, database=db)
    sql = "SELECT region, COUNT(DISTINCT pid) FROM visits GROUP BY region ORDER BY region"
    with srv.connect("carol") as conn:
        conn.execute("SET dpsql.reuse = off")
        wide = conn.execute(sql).fetchall()
        conn.execute("SET dpsql.max_groups = 1")
        assert conn.execute("SHOW dpsql.max_groups").fetchall() == [("dpsql.max_groups", "1")]
        narrow = conn.execute(sql).fetchall()
    with srv.connect("carol", options="-c dpsql.max_groups=1") as conn:
        assert conn.execute("SHOW dpsql.max_groups").fetchall() == [("dpsql.max_groups", "1")]
    units = len({r[0] for r in rows if r[0] is not None})
    assert sum(n for _, n in narrow) == units  # each unit counted in one region
    assert sum(n for _, n in wide) > units  # at κ = 3 many are in several
