"""The server's catalog is inserted one statement a table (``duckdb_local.literal_rows``), not
one a row: the same tables, column types and rows, in the same order, as ``executemany``
binding each row's values (the oracle: the same build with the literal form turned off)."""

from __future__ import annotations

import math

import duckdb
import pytest

from dpsql.backends import duckdb_local
from dpsql.backends.duckdb_local import DuckDBCatalog, literal_rows
from dpsql.faces.server.pgcatalog import build as catalog_build


def _built(monkeypatch, one_statement: bool) -> dict[str, tuple[list, list]]:
    con = duckdb.connect(":memory:")
    con.execute("ATTACH ':memory:' AS twin")
    for table in ('establishments (id BIGINT, state VARCHAR, pay DECIMAL(18, 2), opened DATE)',
                  'naics_codes (code VARCHAR, "it''s" INTEGER)', '"state\'s" (name VARCHAR)'):
        con.execute(f"CREATE TABLE twin.{table}")
    with monkeypatch.context() as m:
        if not one_statement:
            m.setattr(duckdb_local, "literal_rows", lambda sql, rows: None)
        catalog_build.build(DuckDBCatalog(con, "twin"), "it's demo", {"naics_codes", "state's"},
                            {("establishments", ""): "a table's comment", ("establishments", "id"): "the unit"})
    db = catalog_build.DATABASE
    tables = [r[0] for r in con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
                                        "ORDER BY 1, 2", [db]).fetchall()]
    out = {}
    for schema, table in con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
                                     "ORDER BY 1, 2", [db]).fetchall():
        types = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ? AND "
                            "schema_name = ? AND table_name = ? ORDER BY column_index", [db, schema, table]).fetchall()
        out[f"{schema}.{table}"] = (types, con.execute(f'SELECT * FROM {db}."{schema}"."{table}"').fetchall())
    con.close()
    assert tables
    return out


def test_the_catalog_inserted_one_statement_a_table_equals_a_row_at_a_time(monkeypatch):
    one, each = _built(monkeypatch, True), _built(monkeypatch, False)
    assert sorted(one) == sorted(each)
    for name in each:
        assert one[name] == each[name], name  # types, and rows in order
    assert sum(len(rows) for _, rows in each.values()) > 300  # pg_type, pg_proc, ... were filled
    assert any("a table's comment" in map(str, row) for _, rows in each.values() for row in rows)


def test_literal_rows_quotes_text_and_falls_back_on_anything_else():
    sql = "INSERT INTO t VALUES (?, ?, 0, ?)"
    got = literal_rows(sql, [(1, "it's", ["a", "b'c"]), (None, True, [])])
    assert got == "INSERT INTO t VALUES (1, 'it''s', 0, ['a', 'b''c']), (NULL, true, 0, [])"
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a BIGINT, b VARCHAR, z INTEGER, c VARCHAR[])")
    con.execute(literal_rows(sql, [(2**62, "x\\n", ["é"]), (-1, "", [])]))
    assert con.execute("SELECT * FROM t").fetchall() == [(2**62, "x\\n", 0, ["é"]), (-1, "", 0, [])]
    for rows in ([(1.5, "a", [])], [(math.inf, "a", [])], [(1, b"bytes", [])], [(1, "a", [1])], [(1, "a")]):
        assert (literal_rows(sql, rows) is None) == (rows[0][0] != 1.5), rows
    assert literal_rows("INSERT INTO t VALUES (?, 'x')", [(1,)]) is None  # a quote in the template
    assert literal_rows("CREATE TABLE t (a INT)", [(1,)]) is None


@pytest.mark.parametrize("value", [float("nan"), -math.inf])
def test_a_float_without_a_literal_takes_executemany(value):
    assert literal_rows("INSERT INTO t VALUES (?)", [(value,)]) is None
