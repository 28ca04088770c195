"""``?`` parameters of SQL over released answers and of a series limit (issue 32; docs/sql.md,
"SQL over released answers"): the values are bound as literals before phase 1, as a plain query's
are; a value inside the subquery is part of its release (another value, another release), one in
the outer query only changes the post-processing (free).

Oracles: "charged" is the ledger's charges (their count and SQL text), never the receipt under
test; the outer values are recomputed in plain Python over the subquery's released rows, fetched
again by running the subquery alone with the literal written by hand (the same release, shown
again for free: the ledger proves it is the same)."""

from __future__ import annotations

import pytest

from dpsql.errors import DpsqlError

INNER = "SELECT state, COUNT(*) AS n FROM establishments WHERE naics2 = {} GROUP BY state"
OUTER = "SELECT COUNT(*) AS big FROM ({}) t WHERE n > {}"
SERIES = ("SELECT naics2, state, COUNT(*) AS c FROM establishments JOIN (SELECT naics2 AS k__, COUNT(*) AS m "
          "FROM establishments WHERE employees > {} GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 3) AS s "
          "ON naics2 = k__ WHERE employees > {} GROUP BY naics2, state")


def _charges(con) -> list:
    return con.session.ledger.charges


def test_a_parameter_in_the_subquery_is_bound_before_its_release(con):
    (big,), = con.execute(OUTER.format(INNER.format("?"), "?"), ["54", 40]).fetchall()
    charges = _charges(con)
    assert len(charges) == 1 and "'54'" in charges[0].query and "?" not in charges[0].query
    released = con.execute(INNER.format("'54'")).fetchall()  # the same release, shown again
    assert len(_charges(con)) == 1
    assert big == sum(1 for _, n in released if n > 40)


def test_another_value_in_the_subquery_is_another_release_and_the_same_value_is_reused(con):
    sql = OUTER.format(INNER.format("?"), "?")
    con.execute(sql, ["54", 0]).fetchall()
    con.execute(sql, ["54", 10**9]).fetchall()  # the outer value only: post-processing, free
    assert len(_charges(con)) == 1
    con.execute(sql, ["23", 0]).fetchall()
    charges = _charges(con)
    assert len(charges) == 2 and "'23'" in charges[1].query


def test_a_series_limit_with_parameters_is_answered(con):
    rows = con.execute(SERIES.format("?", "?"), [5, 5]).fetchall()
    assert len(_charges(con)) == 1  # one release: the ranking read off its cells
    assert rows and len({r[0] for r in rows}) == 3
    literal = con.execute(SERIES.format(5, 5)).fetchall()  # the same statement written with literals
    assert len(_charges(con)) == 1 and sorted(literal) == sorted(rows)


@pytest.mark.parametrize("values", [["54"], ["54", 1, 2]])
def test_a_wrong_number_of_values_is_refused_before_any_charge(con, values):
    with pytest.raises(DpsqlError) as err:
        con.execute(OUTER.format(INNER.format("?"), "?"), values)
    assert err.value.code == "DP118" and _charges(con) == []


def test_explain_with_parameters_prices_the_subquery(con):
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + OUTER.format(INNER.format("?"), "?"), ["54", 1]).fetchall())
    assert "SQL over a released answer" in plan and "'54'" in plan and _charges(con) == []


def test_through_dpsql_serve_with_server_side_binding(dpsql_server):
    """psycopg 3 sends the values apart from the text ($1, $2: Parse, Bind, Describe, Execute): the
    Describe of the outer query runs nothing, the Execute releases the subquery once."""
    srv, user = dpsql_server, "over_answers_params"
    srv.add_user(user, cli=False)
    with srv.connect(user) as conn:
        sql = OUTER.format(INNER.format("%s"), "%s")
        cur = conn.cursor()
        cur.execute(sql, ["54", 40], prepare=True)
        assert cur.description[0].name == "big"
        (big,), = cur.fetchall()
        assert len(srv.charges(user)) == 1
        released = conn.execute(INNER.format("'54'")).fetchall()
        assert len(srv.charges(user)) == 1 and big == sum(1 for _, n in released if n > 40)
        cur.execute(sql, ["54", 0], prepare=True)
        assert cur.fetchall() == [(len(released),)] and len(srv.charges(user)) == 1
        rows = conn.execute(SERIES.format("%s", "%s"), [5, 5]).fetchall()
        assert rows and len({r[0] for r in rows}) == 3 and len(srv.charges(user)) == 2
    srv.check_ledger()
