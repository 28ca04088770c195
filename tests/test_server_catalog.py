"""The catalog ``dpsql serve`` answers PostgreSQL clients with (docs/server.md, "What the catalog
answers"): from the schema and the policy alone, at no charge, never from a private row.

* every statement of every replay fixture (tests/fixtures/pgwire: captured from psql 15, pgjdbc,
  psycopg 3, asyncpg and SQLAlchemy by scripts/capture_pgwire.py; written from Metabase's and
  DBeaver's sources) answers, with the content its tool needs, through the answers layer and
  over the wire of a real ``dpsql serve``, and the ledger does not move;
* the real clients (psql, a Java program on pgjdbc, psycopg, asyncpg, SQLAlchemy's inspector)
  see the tables, their columns and types, the primary keys and the policy's comments;
* the catalog of a database whose private rows differ is the same, answer for answer, and its
  statistics of private tables are zero or absent.

psql and the JDBC jar come from Debian (scripts/test-deps.sh); without them these tests skip,
and fail under CI=true.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import pgwire_catalog as clients  # noqa: E402

from dpsql.faces.server.answers import StatementError, answer  # noqa: E402
from dpsql.faces.server.pgsession import PgSettings  # noqa: E402
from dpsql.faces.server.server import Served  # noqa: E402
from dpsql.faces.server.statements import route  # noqa: E402

USER, PASSWORD = "alice", "pw-alice"
FIXTURES = clients.fixtures()


def need(tool: str) -> None:
    why = clients.missing(tool)
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


def charges(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM charges").fetchone()[0]


def cells(rows: list[tuple[Any, ...]]) -> str:
    return "\n".join(" | ".join(str(v) for v in row) for row in rows)


@pytest.fixture(scope="module")
def served(demo_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Served:
    s = Served(demo_files[0], demo_files[1], tmp_path_factory.mktemp("catalog_state"))
    yield s
    s.catalog.close()


@pytest.fixture(scope="module")
def session(served: Served):
    s = served.open_session(USER)
    yield s
    s.close()


def run(served: Served, session: Any, sql: str, params: list[Any] | None = None, pg: PgSettings | None = None):
    return answer(sql, params or [], session, served.catalog, pg or PgSettings(USER), served.private_tables)


# ---------------------------------------------------------------------------------- fixtures, in process
@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_answers_from_the_catalog(path: Path, served: Served, session: Any) -> None:
    fixture = clients.load_fixture(path)
    assert fixture.statements, f"{path.name} holds no statement"
    before = charges(served.ledger)
    pg = PgSettings(USER)
    seen = []
    for sql, params in fixture.statements:
        way = route(sql, served.private_tables)
        assert way in ("session", "catalog"), f"{path.name}: reaches the private pipeline: {sql[:200]}"
        try:
            got = run(served, session, sql, params, pg)
        except StatementError as exc:
            raise AssertionError(f"{path.name}: {exc.fields['M']}\n{sql}") from None
        seen.append(cells(got.rows))
        assert not got.notice, "a catalog answer carries no receipt"
    text = "\n".join(seen)
    for word in fixture.expect:
        assert word in text, f"{path.name}: no answer mentions {word!r}"
    assert charges(served.ledger) == before


def test_psql_describes_a_private_table(served: Served, session: Any) -> None:
    """\\d establishments: its columns in order, their PostgreSQL types, NOT NULL, and the
    policy's role of each column as its comment (\\d+)."""
    fixture = clients.load_fixture(clients.FIXTURES / "psql15_dplus_table.sql")
    columns = next(r for sql, _ in fixture.statements if "a.attname" in sql
                   for r in [run(served, session, sql).rows])
    assert [(c[0], c[1]) for c in columns] == [
        ("id", "bigint"), ("firm_id", "bigint"), ("state", "text"), ("county", "text"), ("naics", "text"),
        ("naics2", "text"), ("employees", "bigint"), ("payann", "bigint"), ("payqtr1", "bigint"), ("opened", "date")]
    assert all(c[3] is True for c in columns)  # attnotnull
    assert "privacy unit" in cells(columns) and "split threshold T = 100" in cells(columns)


def test_the_compat_objects_are_out_of_sight(served: Served, session: Any) -> None:
    listed = run(served, session, "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                                  "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'v') ORDER BY 1").rows
    assert [r[0] for r in listed] == sorted(["devices", "establishments", "naics_sectors", "paper_table1",
                                             "paper_table2", "persons", "states"])
    tables = run(served, session, "SELECT table_schema, table_name FROM information_schema.tables ORDER BY 2").rows
    assert {r[0] for r in tables} == {"main"} and len(tables) == 7


@pytest.mark.parametrize("sql, expected", [
    ("SELECT version()", [("version", "PostgreSQL 15.0")]),
    ("SELECT current_schema(), current_user, session_user", [("current_schema", "main"), ("current_user", USER),
                                                              ("session_user", USER)]),
    ("SELECT current_database(), current_setting('server_version_num')", [("current_database", "demo"),
                                                                          ("current_setting", "150000")]),
    ("SELECT 'establishments'::regclass::oid", [("oid", "16386")]),
    ("SELECT 'main.establishments'::regclass", [("regclass", "main.establishments")]),
    ("SELECT c.oid::regclass FROM pg_class c WHERE c.relname = 'states'", [("oid", "states")]),
    ("SELECT 'integer'::regtype::oid, 'pg_catalog.pg_class'::regclass::oid", [("oid", "23"), ("oid", "1259")]),
    ("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'states'::regclass AND attnum = 1",
     [("format_type", "text")]),
    ("SELECT relname FROM pg_class WHERE relname OPERATOR(pg_catalog.~) '^(stat)' COLLATE pg_catalog.default",
     [("relname", "states")]),
    ("SELECT format('%I.%I', 'main', 'My Table')", [("format", 'main."My Table"')]),
    ("SELECT 'x' = ANY('{a,x}'::text[]), 23 = ANY('{23,25}'::oid[])", [("?column?", "True"), ("?column?", "True")]),
    ("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'states'::regclass",
     [("pg_get_constraintdef", "PRIMARY KEY (code)")]),
    ("SELECT 1", [("?column?", "1")]),
])
def test_postgresql_spellings(sql: str, expected: list[tuple[str, str]], served: Served, session: Any) -> None:
    got = run(served, session, sql)
    assert got.columns == [name for name, _ in expected]
    for (_, value), cell in zip(expected, got.rows[0]):
        assert value in str(cell)


@pytest.mark.parametrize("sql, sqlstate", [
    ("SELECT 'nosuch'::regclass", "42P01"),
    ("SELECT 'nosuch'::regtype", "42704"),
    ("SELECT current_setting('no.such')", "42704"),
    ("WITH x AS (SELECT 1) DELETE FROM dpsql_catalog.pg.pg_class", None),
    ("WITH x AS (SELECT 1) INSERT INTO dpsql_catalog.pg.pg_class (oid) SELECT 1", None),
])
def test_refusals(sql: str, sqlstate: str | None, served: Served, session: Any) -> None:
    with pytest.raises(StatementError) as caught:
        run(served, session, sql)
    if sqlstate:
        assert caught.value.fields["C"] == sqlstate
    assert run(served, session, "SELECT count(*) FROM pg_class WHERE relkind = 'r'").rows == [(7,)]


# ---------------------------------------------------------------------------------- privacy
#: catalog statements whose answer could say something of the data if anything did
STATISTICS = [
    "SELECT relname, reltuples, relpages, relallvisible FROM pg_class WHERE relkind = 'r' ORDER BY 1",
    "SELECT * FROM pg_stat_user_tables ORDER BY relname",
    "SELECT * FROM pg_stat_all_tables ORDER BY relname",
    "SELECT * FROM pg_statio_user_tables ORDER BY relname",
    "SELECT * FROM pg_stat_database",
    "SELECT * FROM pg_stats",
    "SELECT * FROM pg_statistic",
    "SELECT c.relname, pg_relation_size(c.oid), pg_total_relation_size(c.oid), pg_table_size(c.oid), "
    "pg_indexes_size(c.oid), pg_stat_get_live_tuples(c.oid), pg_stat_get_numscans(c.oid) FROM pg_class c ORDER BY 1",
    "SELECT pg_database_size(current_database()), pg_size_pretty(pg_database_size('demo'))",
    "SELECT table_name, estimated_size, column_count FROM duckdb_tables() ORDER BY 1",
    "SELECT * FROM pragma_storage_info('establishments')",
    "SELECT count(*) FROM duckdb_columns()",
]


@pytest.fixture(scope="module")
def other(demo_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Served:
    """The demo database with other private rows (a third deleted, the measures changed) and the
    same public tables: a neighbour many times over."""
    folder = tmp_path_factory.mktemp("other_rows")
    database, policy = folder / "demo.duckdb", folder / "demo.policy.toml"
    shutil.copyfile(demo_files[0], database)
    shutil.copyfile(demo_files[1], policy)
    con = duckdb.connect(str(database))
    con.execute("DELETE FROM establishments WHERE id % 3 = 0")
    con.execute("UPDATE establishments SET payann = payann * 7 + 1, employees = employees + 5")
    con.execute("DELETE FROM devices WHERE user_id % 2 = 0")
    con.execute("DELETE FROM paper_table1 WHERE id > 3")
    con.execute("CHECKPOINT")
    con.close()
    s = Served(database, policy, folder / "state")
    yield s
    s.catalog.close()


def test_the_catalog_does_not_depend_on_private_rows(served: Served, session: Any, other: Served) -> None:
    """Every fixture statement and every statistics probe answers the same on a database whose
    private rows differ: the catalog is a function of the schema and the policy alone."""
    theirs = other.open_session(USER)
    try:
        statements = [(sql, params) for path in FIXTURES for sql, params in clients.load_fixture(path).statements]
        statements += [(sql, []) for sql in STATISTICS]
        for sql, params in statements:
            if route(sql, served.private_tables) != "catalog":
                continue
            mine, their = run(served, session, sql, params), run(other, theirs, sql, params)
            assert (mine.columns, mine.types, mine.rows) == (their.columns, their.types, their.rows), sql
    finally:
        theirs.close()


def test_statistics_of_private_tables_are_zero(served: Served, session: Any) -> None:
    private = {"devices", "establishments", "paper_table1", "paper_table2", "persons"}
    for name, reltuples, relpages, _ in run(served, session, STATISTICS[0]).rows:
        assert relpages == 0
        assert reltuples == 0 or name not in private
    for row in run(served, session, STATISTICS[1]).rows:
        assert all(v in (0, None) for v in row[3:]), row
    assert run(served, session, STATISTICS[5]).rows == [] and run(served, session, STATISTICS[6]).rows == []
    for row in run(served, session, STATISTICS[7]).rows:
        assert row[1:] == (0, 0, 0, 0, 0, 0), row
    sizes = {r[0]: r[1] for r in run(served, session, STATISTICS[9]).rows}
    assert all(sizes[t] == 0 for t in private) and sizes["states"] == 51  # public rows are public
    assert route("SELECT count(*) FROM establishments", served.private_tables) == "private"


# ---------------------------------------------------------------------------------- a real dpsql serve
@pytest.fixture(scope="module")
def server(demo_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """``dpsql serve`` of the demo database on a free loopback port, with user alice."""
    state = tmp_path_factory.mktemp("serve_state")
    base = [sys.executable, "-m", "dpsql"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([*base, "user", "add", USER, str(demo_files[0]), "--state", str(state)], input=PASSWORD + "\n",
                   text=True, check=True, env=env, capture_output=True)
    proc = subprocess.Popen([*base, "serve", str(demo_files[0]), "--policy", str(demo_files[1]), "--state", str(state),
                             "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while port is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise AssertionError("dpsql serve stopped before listening")
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        port = int(found.group(1)) if found else None
    assert port, "dpsql serve did not start listening"
    yield port, state / "ledger.sqlite"
    proc.terminate()
    proc.wait(timeout=30)


def _text(value: Any) -> bytes:
    if isinstance(value, list):
        return ("{" + ",".join(str(v) for v in value) + "}").encode()
    return str(value).encode()


def test_fixtures_replay_over_the_wire(server: tuple[int, Path]) -> None:
    """Each fixture statement through the extended protocol of a real server (psycopg's libpq
    binding, values as text): an answer, never an error, and not one charge."""
    import psycopg
    from psycopg import pq

    port, ledger = server
    before = charges(ledger)
    with psycopg.connect(host="127.0.0.1", port=port, user=USER, password=PASSWORD, dbname="demo",
                         autocommit=True) as conn:
        for path in FIXTURES:
            for sql, params in clients.load_fixture(path).statements:
                result = conn.pgconn.exec_params(sql.encode(), [_text(v) for v in params])
                assert result.status in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK), (
                    f"{path.name}: {(result.error_message or b'').decode()}\n{sql}")
                if sql.split()[0].upper() in ("BEGIN", "START"):
                    conn.pgconn.exec_(b"COMMIT")
    assert charges(ledger) == before


@pytest.mark.parametrize("name", list(clients.PSQL_COMMANDS))
def test_psql(name: str, server: tuple[int, Path]) -> None:
    need("psql")
    port, ledger = server
    before = charges(ledger)
    commands, words = clients.PSQL_COMMANDS[name]
    out = ""
    for command in commands:
        done = clients.psql(port, USER, PASSWORD, command)
        assert done.returncode == 0 and "ERROR" not in done.stderr, f"psql -c {command!r}: {done.stderr}"
        out += done.stdout
    for word in words:
        if name not in ("psql15_misc",):
            assert word in out, f"psql {commands}: no {word!r} in\n{out}"
    if name == "psql15_d_table":
        assert re.search(r"payann\s*\|\s*bigint\s*\|\s*\|\s*not null", out), out
        assert 'Table "main.establishments"' in out
    assert charges(ledger) == before


def test_psql_conninfo_and_version(server: tuple[int, Path]) -> None:
    need("psql")
    port, _ = server
    done = clients.psql(port, USER, PASSWORD, "\\conninfo")
    assert f'as user "{USER}"' in done.stdout and done.returncode == 0
    done = clients.psql(port, USER, PASSWORD, "SELECT version()")
    assert done.stdout.splitlines()[0].strip() == "version" and "dpsql" in done.stdout


def test_jdbc_database_metadata(server: tuple[int, Path], tmp_path: Path) -> None:
    for tool in ("javac", "java", "jdbc"):
        need(tool)
    port, _ = server
    done = clients.jdbc_probe(port, USER, PASSWORD, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines["getDatabaseProductName"] == "PostgreSQL"
    assert lines["getDatabaseMajorVersion"] == "15" and lines["getUserName"] == USER
    assert lines["getCatalog"] == "demo" and lines["getSchema"] == "main"
    assert lines["getCatalogs"].startswith("1 rows | TABLE_CAT=demo")
    assert lines["getSchemas(main)"].startswith("1 rows | TABLE_SCHEM=main")
    assert lines["getTables(main,TABLE)"].startswith("7 rows") and "REMARKS=dpsql:" in lines["getTables(main,TABLE)"]
    assert lines["getColumns(establishments)"].startswith("10 rows | ") and "TYPE_NAME=int8" in lines["getColumns(establishments)"]
    assert lines["getColumns(all)"].startswith("44 rows")
    assert "COLUMN_NAME=code" in lines["getPrimaryKeys(states)"] and "PK_NAME=states_pkey" in lines["getPrimaryKeys(states)"]
    assert lines["getPrimaryKeys(establishments)"].startswith("0 rows")
    assert "INDEX_NAME=states_pkey" in lines["getIndexInfo(states)"] and "CARDINALITY=0" in lines["getIndexInfo(states)"]
    assert int(lines["getTypeInfo"].split()[0]) > 40
    assert "PRIVILEGE=SELECT" in lines["getTablePrivileges"]
    assert lines["version()"].startswith("1 rows | version=PostgreSQL 15.0")
    assert lines["aggregate"].startswith("24 rows")


def test_psycopg_asyncpg_sqlalchemy(server: tuple[int, Path]) -> None:
    port, _ = server
    got = clients.psycopg_session(port, USER, PASSWORD)
    assert got["tables"] == ["devices", "establishments", "naics_sectors", "paper_table1", "paper_table2", "persons", "states"]
    assert ("payann", "bigint", "NO") in got["columns"] and got["who"][:2] == ("main", USER)
    assert got["int8"] == (20, 1016)
    got = clients.asyncpg_session(port, USER, PASSWORD)
    assert "establishments" in got["tables"] and ("state", "text") in got["columns"] and got["pkey"] == [1]
    got = clients.sqlalchemy_inspector(port, USER, PASSWORD)
    assert got["schemas"] == ["information_schema", "main"] and got["tables"] == got["default_tables"]
    assert [c["name"] for c in got["columns"]][:3] == ["id", "firm_id", "state"]
    assert got["pk"]["constrained_columns"] == ["code"] and got["pk"]["name"] == "states_pkey"
    assert got["comment"]["text"].startswith("dpsql: one row per id")
    assert got["reflected"] == ["code", "name", "fips", "region", "division"]
    assert got["has_table"] and len(got["read_sql"]) == 24
