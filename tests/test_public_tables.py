"""Public tables are public: queries that read only tables the policy declares public are
answered exactly and at zero charge (dpsql/intercept/public_tables.py), through every face; any
statement that could read a private table goes on to the private pipeline. The corpus cases are
in grammar_tests/public_tables*.sql; these tests drive the faces and the second wall (the
database the answers run on holds no private table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pandas as pd
import pytest
import sqlalchemy as sa

import dpsql
from dpsql.backends import CatalogQueryError
from dpsql.backends.duckdb import LOCKDOWN
from dpsql.intercept.public_tables import NOTE, answer_public_query


def _file(demo) -> duckdb.DuckDBPyConnection:
    """The demo file, opened as the engine opens it (DuckDB shares one instance per configuration)."""
    return duckdb.connect(str(demo[0]), read_only=True, config=dict(LOCKDOWN))


def exact(demo, sql: str, parameters=None) -> list[tuple]:
    """The rows of ``sql`` read straight from the demo file (the test's own view of the truth)."""
    with _file(demo) as c:
        return c.execute(sql, parameters).fetchall()


def exact_names(demo, sql: str) -> list[str]:
    with _file(demo) as c:
        return [d[0] for d in c.execute(sql).description]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM states",
    "SELECT DISTINCT region FROM states ORDER BY region",
    "SELECT naics2, title FROM demo.main.naics_sectors WHERE naics2 BETWEEN '40' AND '50'",  # the file's catalog
    "SELECT region, COUNT(*) AS n FROM states GROUP BY region ORDER BY n DESC",
    "SELECT s.name, n.title FROM states s, naics_sectors n WHERE s.code = 'CA' AND n.naics2 = '52'",
])
def test_public_queries_are_exact_and_free(con, demo, sql):
    before = con.session.ledger.spent
    cur = con.execute(sql)
    assert cur.fetchall() == exact(demo, sql)
    assert cur.receipt.rho == 0 and cur.receipt.charge_id is None and NOTE in cur.receipt.notes
    assert [d[0] for d in cur.description] == exact_names(demo, sql)
    assert con.session.ledger.spent == before and con.session.ledger.history() == []


def test_public_query_with_parameters(con, demo):
    sql = "SELECT code, name FROM states WHERE region = ? AND code > ? ORDER BY code"
    assert con.execute(sql, ["West", "N"]).fetchall() == exact(demo, sql, ["West", "N"])
    assert con.session.ledger.spent == 0


def test_errors_of_public_queries_are_shown_as_they_are(con):
    with pytest.raises(dpsql.ProgrammingError) as err:
        con.execute("SELECT population FROM states")
    assert err.value.code == "DP120" and "population" in str(err.value)


def test_explaining_a_public_query_says_it_is_exact_and_free(con, demo):
    """`dpsql explain` and SQL EXPLAIN (and `\\explain`, tests/test_repl.py) of a query of public tables only say how it is
    answered (they used to refuse it as 'SELECT * would return private rows')."""
    sql = "SELECT region, COUNT(*) FROM states GROUP BY region"
    rows = [r[0] for r in con.execute("EXPLAIN " + sql).fetchall()]
    assert rows[0].startswith("public tables only: answered exactly") and rows[-1] == sql + ";"
    p = subprocess.run([sys.executable, "-m", "dpsql", "explain", sql, "--db", str(demo[0]), "--policy", str(demo[1])],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, DPSQL_HOME=str(demo[0].parent)))
    assert p.returncode == 0 and p.stdout.startswith("public tables only: answered exactly"), p.stderr
    assert con.session.ledger.spent == 0


def test_a_public_answer_has_a_row_cap(con):
    """The 51 states four times over would be 6.8 million rows held in memory: refused with the
    cap named; under it, every row comes back."""
    from dpsql.backends.duckdb_local import MAX_PUBLIC_ROWS

    with pytest.raises(dpsql.ProgrammingError, match=f"more than {MAX_PUBLIC_ROWS:,} rows") as err:
        con.execute("SELECT a.code FROM states a, states b, states c, states d")
    assert err.value.code == "DP120"
    assert len(con.execute("SELECT a.code, b.code FROM states a, states b").fetchall()) == 51 * 51
    assert con.session.ledger.spent == 0


def test_the_public_database_holds_no_private_table(con):
    db = con.session.public_database()
    names, _, rows = db.run("SELECT table_name FROM duckdb_tables() ORDER BY 1")
    assert [r[0] for r in rows] == sorted(con.session.policy.public_tables)
    for table in con.session.policy.tables:
        with pytest.raises(CatalogQueryError):
            db.run(f"SELECT * FROM {table}")
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", f"ATTACH '{con.session.database}' AS private",
                "SET enable_external_access = true", "INSTALL httpfs"):
        with pytest.raises(CatalogQueryError):
            db.run(sql)


def test_a_public_answer_that_fooled_the_proof_would_still_find_no_private_table(con):
    """The second wall alone: run, on the public database, the SQL of an attack the proof
    refuses (a CTE seen from outside its subquery)."""
    with pytest.raises(CatalogQueryError):
        con.session.public_database().run(
            "SELECT * FROM (WITH establishments AS (SELECT * FROM states) SELECT * FROM establishments) a, "
            "establishments")


@pytest.mark.parametrize("sql", [
    "SELECT * FROM states WHERE code IN (SELECT state FROM establishments)",
    "WITH states AS (SELECT * FROM establishments) SELECT * FROM states",
    "SELECT * FROM main.establishments",
    "SELECT * FROM states, read_csv('x.csv')",
])
def test_anything_that_could_read_a_private_table_goes_to_the_pipeline(con, sql):
    assert answer_public_query(con.session, sql) is None
    with pytest.raises(dpsql.ProgrammingError):
        con.execute(sql)
    assert con.session.ledger.spent == 0


def test_the_planner_still_refuses_a_public_table_alone(session):
    """Only the intercept answers public tables; the private pipeline keeps refusing them (DP208),
    so nothing that reaches it is answered without noise."""
    with pytest.raises(dpsql.DpsqlError) as err:
        session.plan("SELECT region, COUNT(*) FROM states GROUP BY region")
    assert err.value.code == "DP208"


def test_a_policy_without_public_tables_answers_nothing_here(con):
    from dataclasses import replace

    session = con.session
    saved = session.policy
    session.policy = replace(saved, public_tables={})
    try:
        assert answer_public_query(session, "SELECT * FROM states") is None
    finally:
        session.policy = saved


def test_pandas_reads_a_public_table_through_sqlalchemy(demo):
    engine = sa.create_engine(sa.engine.URL.create("dpsql", database=str(demo[0]), query={"policy": str(demo[1])}))
    try:
        df = pd.read_sql("SELECT code, name, region FROM states ORDER BY code", engine)
        assert list(df.columns) == ["code", "name", "region"] and len(df) == 51 and df.code.iloc[0] == "AK"
        df = pd.read_sql("SELECT name FROM states WHERE region = ?", engine, params=("West",))
        assert len(df) == len(exact(demo, "SELECT name FROM states WHERE region = 'West'"))
        from dpsql.faces.sqlalchemy import budget

        assert budget(engine)["spent"] == "0"
    finally:
        engine.dispose()


def test_the_command_line_answers_a_public_table(demo):
    env = dict(os.environ, DPSQL_HOME=str(demo[0].parent))
    p = subprocess.run([sys.executable, "-m", "dpsql", "query", "SELECT DISTINCT region FROM states ORDER BY 1",
                        "--db", str(demo[0]), "--policy", str(demo[1]), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["rows"] == [["Midwest"], ["Northeast"], ["South"], ["West"]]
    assert out["receipt"]["rho"] == "0" and out["receipt"]["notes"] == [NOTE]


def test_keysets_for_describe(session, demo):
    from dpsql.intercept.catalog import keyset

    assert keyset(session, "establishments", "state") == session.policy.tables["establishments"].keys["state"].keyset
    assert len(keyset(session, "Establishments", "NAICS2")) == 24
    assert keyset(session, "states", "region") == ("Midwest", "Northeast", "South", "West")
    assert keyset(session, "states", "code") == tuple(r[0] for r in exact(demo, "SELECT code FROM states ORDER BY 1"))
    for table, column in [("establishments", "county"), ("establishments", "payann"), ("establishments", "id"),
                          ("states", "population"), ("nope", "x")]:
        assert keyset(session, table, column) is None
    assert session.ledger.spent == 0
