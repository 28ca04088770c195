"""Joins to public tables and GROUP BY expressions of keys (docs/sql.md).

The exact values a joined query computes inside the engine are those of the analyst's own SQL
run on DuckDB; the released cells are exactly the public domain (the public table's values or
the expression's image over the keysets); a join costs what the query without it costs; a
public table whose key is not unique is refused when the session opens.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import DatabaseFileError, PolicyFileError, QueryRefused
from dpsql.policy.loader import load_policy
from dpsql.sql.rewrite import exact_sql, reference_sql
from dpsql.testing import seeded_random
import table_rows

JOINED = [
    "SELECT s.region, COUNT(*), SUM(payann) FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.region",
    "SELECT n.title, COUNT(*), SUM(employees) FROM establishments e LEFT JOIN naics_sectors n USING (naics2) "
    "WHERE e.employees > 5 GROUP BY n.title",
    "SELECT s.division, n.sector, SUM(payqtr1) FROM establishments e JOIN states s ON s.code = e.state "
    "JOIN naics_sectors n ON e.naics2 = n.naics2 WHERE s.region = 'South' GROUP BY s.division, n.sector",
    "SELECT COUNT(n.title), COUNT(*) FROM establishments e LEFT JOIN naics_sectors n ON e.naics2 = n.naics2 "
    "WHERE n.title LIKE '%Trade'",
    "SELECT SUBSTR(naics2, 1, 1), COUNT(*), SUM(payann) FROM establishments GROUP BY SUBSTR(naics2, 1, 1)",
    "SELECT LOWER(s.name), COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY LOWER(s.name)",
]


@pytest.mark.parametrize("sql", JOINED)
def test_exact_values_are_those_of_the_analysts_own_query(session, sql):
    """No measure is top-coded in the demo policy, so the engine's exact per-group values (before
    noise) equal the analyst's SQL run directly on DuckDB, and the split reference agrees."""
    plan = session.plan(sql)
    schema = session.schema["establishments"]
    got = sorted(session.engine.run(exact_sql(plan, schema)), key=repr)
    assert got == sorted(session.engine.run(sql), key=repr)
    assert got == sorted(session.engine.run(reference_sql(plan, schema)), key=repr)


def test_every_public_value_is_released_even_when_no_row_has_it(con):
    """WHERE keeps Vermont only; the four Census regions still come back (three as noise on zero)."""
    cur = con.cursor()
    cur.execute("SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
                "WHERE e.state = 'VT' GROUP BY s.region ORDER BY 1")
    assert [r[0] for r in cur.fetchall()] == ["Midwest", "Northeast", "South", "West"]


def test_columns_of_one_public_table_are_grouped_by_the_combinations_it_holds(con, session):
    cur = con.cursor()
    cur.execute("SELECT region, division, COUNT(*) FROM establishments JOIN states ON state = code GROUP BY 1, 2")
    pairs = sorted((r[0], r[1]) for r in cur.fetchall())
    assert pairs == sorted(session.engine.run("SELECT DISTINCT region, division FROM states"))
    assert len(pairs) == 9  # not 4 regions x 9 divisions


def test_a_public_expression_key_returns_its_image_over_the_keyset(con, session):
    cur = con.cursor()
    cur.execute("SELECT SUBSTR(naics2, 1, 1) AS d, COUNT(*) FROM establishments GROUP BY d ORDER BY d")
    keyset = session.policy.tables["establishments"].keys["naics2"].keyset
    assert [r[0] for r in cur.fetchall()] == sorted({k[0] for k in keyset})
    cur.execute("SELECT CASE WHEN state IN ('CA', 'OR', 'WA') THEN 'west coast' ELSE 'other' END AS coast, COUNT(*) "
                "FROM establishments WHERE state = 'VT' OR payann < 0 GROUP BY coast ORDER BY coast")
    assert [r[0] for r in cur.fetchall()] == ["other", "west coast"]  # west coast: no row, noise on zero
    assert cur.receipt.selection is None and cur.receipt.delta == 0
    # the WHERE on the key alone narrows its image to the states it admits (sql/narrow.py): VT is 'other'
    cur.execute("SELECT CASE WHEN state IN ('CA', 'OR', 'WA') THEN 'west coast' ELSE 'other' END AS coast, COUNT(*) "
                "FROM establishments WHERE state = 'VT' GROUP BY coast ORDER BY coast")
    assert [r[0] for r in cur.fetchall()] == ["other"]


def test_an_expression_of_a_private_key_goes_through_partition_selection(con):
    cur = con.cursor()
    cur.execute("SELECT SUBSTR(naics, 1, 3) AS n3, COUNT(*) FROM establishments GROUP BY n3")
    rows = cur.fetchall()
    assert cur.receipt.selection is not None and cur.receipt.delta > 0
    assert cur.receipt.selection["keys"] == ["SUBSTRING(naics, 1, 3)"]
    assert 0 < len(rows) <= 92 and all(len(r[0]) == 3 for r in rows)


def test_an_expression_that_fails_on_some_rows_does_not_fail_the_query(con):
    """LN of zero or of a negative number raises in DuckDB; in a GROUP BY key it runs inside
    TRY(), so such rows fall in the NULL group and the query's success does not depend on them."""
    cur = con.cursor()
    cur.execute("SELECT LN(CAST(naics2 AS INTEGER) - 11) AS x, COUNT(*) FROM establishments GROUP BY x")
    assert len(cur.fetchall()) == 24


def test_a_join_costs_what_the_query_without_it_costs(demo):
    with dpsql.connect(*demo, _random_source=seeded_random(5)) as c:
        cur = c.cursor()
        cur.execute("SELECT state, COUNT(*), SUM(payann) FROM establishments GROUP BY state")
        plain = cur.receipt
        cur.execute("SELECT s.region, COUNT(*), SUM(payann) FROM establishments e "
                    "JOIN states s ON e.state = s.code GROUP BY s.region")
        joined = cur.receipt
    assert joined.rho == plain.rho and joined.delta == plain.delta == 0
    assert joined.policy_terms == plain.policy_terms
    assert [n.sigma for n in joined.noise] == [n.sigma for n in plain.noise]


def test_explain_names_the_joined_tables_and_keyset_sizes(session):
    ex = session.explain("SELECT s.region, n.title, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
                         "LEFT JOIN naics_sectors n USING (naics2) GROUP BY s.region, n.title")
    # 20 titles and the NULL of a LEFT JOIN's unmatched row (issue 32)
    assert ex.public_keys == {"states.region": 4, "naics_sectors.title": 21}
    assert any("states (INNER JOIN on its key code)" in n and "naics_sectors (LEFT JOIN" in n for n in ex.notes)
    assert '"__j1_region"' in ex.exact_sql and "FROM \"states\"" in ex.exact_sql


# ---------------------------------------------------------------------- policies of public tables
def _database(tmp_path: Path, lookup_rows: list[tuple], extra: str = "") -> Path:
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, k VARCHAR, amount BIGINT NOT NULL)")
    con.execute("INSERT INTO p SELECT i, ['a', 'b', 'c', 'z'][1 + i % 4], i FROM range(400) t(i)")
    con.execute("CREATE TABLE lookup (code VARCHAR, grp VARCHAR)")
    table_rows.insert(con, "lookup", lookup_rows)
    con.execute("CREATE TABLE groups (grp VARCHAR PRIMARY KEY, label VARCHAR)")
    con.execute("INSERT INTO groups VALUES ('g1', 'first'), ('g2', 'second'), ('g3', NULL)")
    if extra:
        con.execute(extra)
    con.close()
    return db


def _policy(tmp_path: Path, public: str = '[public_tables.lookup]\nkey = "code"\n') -> Path:
    path = tmp_path / "t.policy.toml"
    path.write_text('[budget]\ntotal_rho = 100\n[tables.p]\nprivacy_unit = "id"\n'
                    '[tables.p.measures]\namount = { threshold = 50 }\n[tables.p.keys]\nk = {}\n' + public)
    return path


LOOKUP = [("a", "g1"), ("b", "g1"), ("c", "g2")]


def test_a_public_table_whose_key_repeats_is_refused_at_connect(tmp_path):
    db = _database(tmp_path, LOOKUP + [("a", "g2")])  # 'a' twice: a row with k = 'a' would count twice
    with pytest.raises(PolicyFileError, match="public_tables.lookup.key.*repeated or NULL"):
        dpsql.connect(db, _policy(tmp_path))


def test_a_public_table_with_a_null_key_is_refused_at_connect(tmp_path):
    db = _database(tmp_path, LOOKUP + [(None, "g3")])
    with pytest.raises(PolicyFileError, match="repeated or NULL"):
        dpsql.connect(db, _policy(tmp_path))


def test_a_missing_public_table_or_key_column_is_refused_at_connect(tmp_path):
    db = _database(tmp_path, LOOKUP)
    with pytest.raises(DatabaseFileError, match="public table 'nope'"):
        dpsql.connect(db, _policy(tmp_path, '[public_tables.nope]\nkey = "code"\n'))
    with pytest.raises(PolicyFileError, match="public_tables.lookup.key.*'kode'"):
        dpsql.connect(db, _policy(tmp_path, '[public_tables.lookup]\nkey = "kode"\n'))


@pytest.mark.parametrize("text, field", [
    ('[public_tables.lookup]\n', "public_tables.lookup.key"),
    ('[public_tables.lookup]\nkey = "code"\ncolumns = 1\n', "public_tables.lookup.columns"),
    ('[public_tables.p]\nkey = "id"\n', "public_tables.p"),
    ('[public_tables."bad name"]\nkey = "code"\n', "public_tables.bad name"),
])
def test_bad_public_table_declarations_name_the_field(tmp_path, text, field):
    with pytest.raises(PolicyFileError, match=field):
        load_policy(_policy(tmp_path, text))


def test_public_tables_join_in_a_chain_and_null_public_values_are_a_group(tmp_path):
    """p.k -> lookup.code, then lookup.grp -> groups.grp. groups.label is NULL for g3: the NULL
    group, as in SQL (a public value: issue 32).
    Rows with k = 'z' meet no lookup row: dropped by the inner join, NULL under a LEFT JOIN."""
    db = _database(tmp_path, LOOKUP)
    policy = _policy(tmp_path, '[public_tables.lookup]\nkey = "code"\n[public_tables.groups]\nkey = "grp"\n')
    sql = ("SELECT g.label, COUNT(*), SUM(amount) FROM p JOIN lookup l ON p.k = l.code "
           "JOIN groups g ON l.grp = g.grp GROUP BY g.label ORDER BY g.label")
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as c:
        s = c.session
        plan = s.plan(sql)
        assert sorted(s.engine.run(exact_sql(plan, s.schema["p"])), key=repr) == sorted(s.engine.run(sql), key=repr)
        cur = c.cursor()
        cur.execute(sql)
        assert [r[0] for r in cur.fetchall()] == ["first", "second", None]
        with pytest.raises(QueryRefused) as err:  # groups cannot join before lookup
            cur.execute("SELECT COUNT(*) FROM p JOIN groups g ON l.grp = g.grp JOIN lookup l ON p.k = l.code")
        assert err.value.code == "DP203"


def test_a_public_table_can_be_reopened_after_the_uniqueness_check(tmp_path):
    """The key check is cached per file like the unit check: a second session opens fine."""
    db = _database(tmp_path, LOOKUP)
    policy = _policy(tmp_path)
    for _ in range(2):
        with dpsql.connect(db, policy) as c:
            cur = c.cursor()
            cur.execute("SELECT l.grp, COUNT(*) FROM p LEFT JOIN lookup l ON p.k = l.code GROUP BY l.grp")
            assert sorted(r[0] or "" for r in cur.fetchall()) == ["", "g1", "g2"]  # NULL: unmatched rows


def test_public_tables_are_listed_with_the_private_ones(demo):
    """Public tables show in the catalog the interfaces read (\\tables, SHOW TABLES)."""
    with dpsql.connect(*demo) as c:
        cur = c.cursor()
        cur.execute("SHOW TABLES")
        names = {r[0] for r in cur.fetchall()}
    assert {"states", "naics_sectors", "establishments"} <= names
