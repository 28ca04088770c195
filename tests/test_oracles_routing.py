"""Where a statement goes (issue 35): the wire server's routing (dpsql/faces/server/statements.py)
and the public-tables path (dpsql/intercept/public_tables.py). Routing to the catalog twin or to
the public database is only safe because neither holds a private row; it is only *right* when
what goes there reads nothing private. For the class:

* any text that names a private table — parseable by sqlglot or not, quoted, in any case — goes
  to the private pipeline (the word test, which does not depend on sqlglot reading it);
* a text that sqlglot reads as more than one statement never goes to the twin whole;
* ``FROM 'states'`` is DuckDB's file path, not the public table ``states``: the public path does
  not answer it (``"states"`` and ``states`` it does).
"""

from __future__ import annotations

import pytest
import sqlglot

import dpsql
from dpsql.faces.server.statements import route
from dpsql.intercept.probes import parsed
from dpsql.intercept.public_tables import answer_public_query, reads_only_public

PRIVATE = {"establishments", "devices", "persons", "paper_table1", "paper_table2"}


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM establishments",
    "SELECT COUNT(*) FROM establishments WHERE",                  # sqlglot cannot parse these
    "SELECT * FROM establishments WHERE id = ANY(ARRAY[1",
    "SELECT * FROM establishments e WINDOW w AS (",
    "SELECT * FROM devices ORDER BY ??",
    'SELECT * FROM "establishments"', "SELECT 1 FROM Establishments", "SELECT 1 FROM main.persons",
    "WITH x AS (SELECT * FROM persons) SELECT * FROM x", "TABLE establishments",
    "SELECT (SELECT COUNT(*) FROM paper_table1)", "VALUES ((SELECT 1 FROM paper_table2))",
])
def test_a_text_naming_a_private_table_goes_to_the_pipeline(sql):
    assert route(sql, PRIVATE) == "private"


@pytest.mark.parametrize("sql", [
    "SELECT 1; SELECT 2",
    "SELECT * FROM pg_class; SELECT * FROM pg_type",
    "SELECT version(); SELECT current_user",
])
def test_more_than_one_statement_never_goes_to_the_twin_whole(sql):
    assert route(sql, PRIVATE) == "private"


@pytest.mark.parametrize("sql", ["SELECT * FROM pg_class", "SELECT version()", "SELECT 1",
                                 "SELECT name FROM states"])
def test_statements_reading_nothing_private_go_to_the_twin(sql):
    """The other side: the test above can fail (not everything is sent to the pipeline)."""
    assert route(sql, PRIVATE) == "catalog"


@pytest.mark.parametrize("sql,public", [
    ("SELECT * FROM 'states'", False),
    ("SELECT * FROM 'naics_sectors'", False),
    ("SELECT s.code FROM 'states' AS s", False),
    ('SELECT * FROM "states"', True),
    ("SELECT * FROM states", True),
    ("SELECT * FROM main.naics_sectors", True),
])
def test_a_quoted_file_path_is_not_the_public_table_of_its_name(con, sql, public):
    tree = parsed(sql, con.session.analyst)
    assert tree is not None
    assert reads_only_public(tree, sql, con.session) is public
    answered = answer_public_query(con.session, sql)
    assert (answered is not None) is public


def test_a_quoted_file_path_is_refused_by_the_pipeline_not_run_on_the_public_database(con):
    """``FROM 'states'`` goes on to the private pipeline, which refuses it before reading (a
    DP1xx code, nothing charged); it is never run on the public database (DP120, its message)."""
    before = con.session.ledger.spent
    with pytest.raises(dpsql.Error) as err:
        con.execute("SELECT * FROM 'states'")
    assert getattr(err.value, "code", "") != "DP120" and con.session.ledger.spent == before
    assert sqlglot.parse_one("SELECT * FROM 'states'", read="duckdb") is not None  # it does parse
