"""Real clients against a real ``dpsql serve`` on loopback (issue 14, "Done when"): psql,
psycopg 3, asyncpg, SQLAlchemy's ``postgresql+psycopg`` dialect with pandas, and pgjdbc from a
small Java program compiled here. Each connects with a password, lists the tables, describes
one, runs an aggregate query and gets noisy rows, gets a refusal with its code, and a wrong
password is refused. The ledger in the server's state folder shows one charge per executed
query and none for anything else.

psql and the JDBC jar come from Debian (scripts/test-deps.sh, called by the README's test
command); without them these tests fail under CI and are skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

import server_clients_harness as harness

PASSWORD = "alice-Pw-1"
QUERY = "SELECT state, COUNT(*) AS n, SUM(payann) AS payroll FROM establishments WHERE employees > {p} GROUP BY state ORDER BY state"
JDBC_JAR = Path("/usr/share/java/postgresql.jar")


def _need(what: str, present: bool) -> None:
    if not present:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is missing: scripts/test-deps.sh installs it (the README's test command runs it)")
        pytest.skip(f"{what} is not installed (scripts/test-deps.sh installs it)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve-home")
    harness.add_user(home, "alice", PASSWORD)
    served = harness.start(home)
    yield served
    served.stop()


def charges(served: harness.Served, analyst: str) -> int:
    with sqlite3.connect(served.home / "server" / "ledger.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM charges WHERE analyst = ?", (analyst,)).fetchone()[0]


def test_psql(server):
    _need("psql", shutil.which("psql") is not None)
    env = {**os.environ, "PGPASSWORD": PASSWORD, "PGSSLMODE": "disable", "PGCONNECT_TIMEOUT": "20"}
    base = ["psql", "-h", server.host, "-p", str(server.port), "-U", "alice", "-X", "-v", "ON_ERROR_STOP=1"]

    def psql(command: str, **kw) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, "-c", command], env=env, capture_output=True, text=True, timeout=60, **kw)

    before = charges(server, "alice")
    tables = psql("\\dt")
    assert tables.returncode == 0, tables.stderr
    assert "establishments" in tables.stdout and "states" in tables.stdout
    described = psql("\\d establishments")
    assert described.returncode == 0, described.stderr
    assert "payann" in described.stdout and "state" in described.stdout
    explained = psql("EXPLAIN " + QUERY.format(p=5))
    assert explained.returncode == 0, explained.stderr
    assert "QUERY PLAN" in explained.stdout and "rho for this query: 0.1" in explained.stdout
    assert charges(server, "alice") == before  # the catalog and EXPLAIN are free

    answer = psql(QUERY.format(p=5))
    assert answer.returncode == 0, answer.stderr
    assert "NOTICE:  dpsql:" in answer.stderr and "charged rho=" in answer.stderr  # the receipt
    rows = [line for line in answer.stdout.splitlines() if line.startswith(" CA ")]
    assert len(rows) == 1 and int(rows[0].split("|")[1]) > 0
    assert charges(server, "alice") == before + 1

    refused = psql("SELECT id, payann FROM establishments")
    assert refused.returncode != 0 and "ERROR:  DP201:" in refused.stderr and "HINT:" in refused.stderr
    assert charges(server, "alice") == before + 1

    wrong = subprocess.run([*base, "-c", "SELECT 1"], env={**env, "PGPASSWORD": "nope"}, capture_output=True,
                           text=True, timeout=60)
    assert wrong.returncode != 0 and 'password authentication failed for user "alice"' in wrong.stderr


def test_psycopg(server):
    import psycopg

    before = charges(server, "alice")
    with psycopg.connect(server.dsn("alice", PASSWORD)) as con:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
        assert {"establishments", "states"} <= tables
        columns = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                   "WHERE table_name = %s", ["establishments"]).fetchall())
        assert "payann" in columns
        # each client's own statement (another parameter value): a repeat would be reused, free (pipeline/reuse.py)
        cur = con.execute(QUERY.format(p="%s"), [6], prepare=True)  # extended protocol, named statement
        assert [d.name for d in cur.description] == ["state", "n", "payroll"]
        rows = cur.fetchall()
        assert len(rows) == 51 and all(isinstance(n, int) for _, n, _ in rows)
        assert any(n > 0 for _, n, _ in rows)
        plan = con.execute("EXPLAIN " + QUERY.format(p="%s"), [5]).fetchall()  # extended protocol
        assert any("rho for this query" in line for line, in plan)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="DP201"):
            con.execute("SELECT id FROM establishments")
        con.rollback()
    assert charges(server, "alice") == before + 1  # Parse/Describe/Bind charged nothing; Execute once
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(server.dsn("alice", "wrong"))


def test_value_lists_and_spreads_over_the_wire(server):
    """Issue 32 through a real server and psycopg (extended protocol, as a BI tool filling a
    filter's value list sends it): SELECT DISTINCT of a public key is the keyset, free — no
    ledger row; of a private key, one charge; a VARIANCE comes back as a DOUBLE column."""
    import psycopg

    before = charges(server, "alice")
    with psycopg.connect(server.dsn("alice", PASSWORD)) as con:
        cur = con.execute("SELECT DISTINCT state FROM establishments WHERE employees > %s ORDER BY state", [5])
        states = [r[0] for r in cur.fetchall()]
        assert len(states) == 51 and states == sorted(states) and "CA" in states
        assert charges(server, "alice") == before  # public keyset: nothing read, nothing recorded
        counties = con.execute("SELECT county FROM establishments GROUP BY county").fetchall()
        assert counties and charges(server, "alice") == before + 1
        cur = con.execute("SELECT naics2, VARIANCE(payann) AS v, STDDEV(payann) FROM establishments GROUP BY naics2")
        rows = cur.fetchall()
        assert [d.name for d in cur.description][:2] == ["naics2", "v"] and len(rows) == 24
        assert all(v is None or (isinstance(v, float) and v >= 0) for _, v, _ in rows)
    assert charges(server, "alice") == before + 2


def test_asyncpg(server):
    import asyncpg

    async def run() -> None:
        con = await asyncpg.connect(host=server.host, port=server.port, user="alice", password=PASSWORD,
                                    database="demo", ssl=False)
        try:
            tables = {r["table_name"] for r in await con.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", "main")}
            assert {"establishments", "states"} <= tables
            cols = await con.fetch("SELECT column_name FROM information_schema.columns WHERE table_name = $1",
                                   "establishments")
            assert "employees" in {r["column_name"] for r in cols}
            before = charges(server, "alice")
            rows = await con.fetch(QUERY.format(p="$1"), 7)  # binary results; a value of its own (pipeline/reuse.py)
            assert len(rows) == 51 and isinstance(rows[0]["n"], int) and isinstance(rows[0]["payroll"], int)
            assert charges(server, "alice") == before + 1
            with pytest.raises(asyncpg.PostgresError, match="DP201") as err:
                await con.fetch("SELECT id FROM establishments")
            assert err.value.sqlstate == "42501"
        finally:
            await con.close()
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(host=server.host, port=server.port, user="alice", password="wrong", ssl=False)

    asyncio.run(run())


def test_sqlalchemy_and_pandas(server):
    import pandas as pd
    import sqlalchemy as sa

    engine = sa.create_engine(f"postgresql+psycopg://alice:{PASSWORD}@{server.host}:{server.port}/demo?sslmode=disable")
    try:
        inspector = sa.inspect(engine)
        assert {"establishments", "states"} <= set(inspector.get_table_names())
        assert "payann" in {c["name"] for c in inspector.get_columns("establishments")}
        before = charges(server, "alice")
        frame = pd.read_sql(QUERY.format(p="%(p)s"), engine, params={"p": 8})  # a value of its own (pipeline/reuse.py)
        assert list(frame.columns) == ["state", "n", "payroll"] and len(frame) == 51
        assert charges(server, "alice") == before + 1
        # pandas >= 3 wraps the driver's error in its own DatabaseError; the message keeps the code
        with pytest.raises((sa.exc.ProgrammingError, pd.errors.DatabaseError), match="DP201"):
            pd.read_sql("SELECT id FROM establishments", engine)
    finally:
        engine.dispose()
    bad = sa.create_engine(f"postgresql+psycopg://alice:wrong@{server.host}:{server.port}/demo?sslmode=disable")
    with pytest.raises(sa.exc.OperationalError, match="password authentication failed"):
        bad.connect()


JAVA = r"""
import java.sql.*;
import java.util.*;

public class DpsqlJdbc {
    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://" + a[0] + ":" + a[1] + "/demo?sslmode=disable";
        try (Connection c = DriverManager.getConnection(url, "alice", a[2])) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
            try (ResultSet rs = md.getTables(null, null, "%", new String[] {"TABLE"})) {
                while (rs.next()) System.out.println("table " + rs.getString("TABLE_NAME"));
            }
            try (ResultSet rs = md.getColumns(null, null, "establishments", "%")) {
                while (rs.next()) System.out.println("column " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME"));
            }
            try (PreparedStatement ps = c.prepareStatement(a[3])) {
                ps.setInt(1, 9);  // a value of its own: a repeat would be reused (pipeline/reuse.py)
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) System.out.println("row " + rs.getString(1) + " " + rs.getLong(2));
                }
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT id FROM establishments");
            } catch (SQLException e) {
                System.out.println("refused " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
            }
        }
        try {
            DriverManager.getConnection(url, "alice", "wrong");
        } catch (SQLException e) {
            System.out.println("wrong " + e.getSQLState() + " " + e.getMessage());
        }
    }
}
"""


def test_jdbc(server, tmp_path):
    _need("javac", shutil.which("javac") is not None)
    _need(f"the PostgreSQL JDBC driver ({JDBC_JAR})", JDBC_JAR.exists())
    (tmp_path / "DpsqlJdbc.java").write_text(JAVA)
    subprocess.run(["javac", "-cp", str(JDBC_JAR), "DpsqlJdbc.java"], cwd=tmp_path, check=True, timeout=120)
    before = charges(server, "alice")
    out = subprocess.run(["java", "-cp", f"{JDBC_JAR}:{tmp_path}", "DpsqlJdbc", server.host, str(server.port), PASSWORD,
                          QUERY.format(p="?")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "table establishments" in lines and "table states" in lines
    assert any(line.startswith("column payann ") for line in lines), out.stdout + out.stderr
    rows = [line for line in lines if line.startswith("row ")]
    assert len(rows) == 51 and any(int(r.split()[2]) > 0 for r in rows)
    assert any(line.startswith("refused 42501 ERROR: DP201") for line in lines), out.stdout
    assert any(line.startswith("wrong 28P01") for line in lines), out.stdout
    assert charges(server, "alice") == before + 1


def test_show_budget_over_the_wire(server):
    """psycopg asks what is left without spending (issue 33): SHOW dpsql.budget answers from the
    server's ledger for this analyst, charges nothing itself, follows a charged query exactly, and
    names no server path."""
    import psycopg
    from fractions import Fraction

    before_charges = charges(server, "alice")
    with psycopg.connect(server.dsn("alice", PASSWORD), autocommit=True) as con:
        before = dict(con.execute("SHOW dpsql.budget").fetchall())
        con.execute("SET dpsql.rho = 0.25")
        con.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state").fetchall()
        after = dict(con.execute("SHOW dpsql.budget").fetchall())
    assert charges(server, "alice") == before_charges + 1  # the query; neither SHOW
    spent = Fraction(after["dpsql.budget.spent"]) - Fraction(before["dpsql.budget.spent"])
    left = Fraction(before["dpsql.budget.remaining"]) - Fraction(after["dpsql.budget.remaining"])
    assert spent == left == Fraction(1, 4)
    assert not any("/" in v for v in after.values())


def test_dpsql_settings_in_the_startup_options(server):
    """A BI tool that only takes a URL sets dpsql's options there (issue 33: they were silently
    ignored): options=-c dpsql.error_columns=on adds the _moe95 columns, -c dpsql.rho=0.25 is what
    the next query costs, and a bad value refuses the connection with the setting's own code."""
    import psycopg
    from fractions import Fraction

    options = r"-c dpsql.error_columns=on --dpsql.rho=0.25 -c search_path=public"
    with psycopg.connect(server.dsn("alice", PASSWORD), options=options, autocommit=True) as con:
        before = dict(con.execute("SHOW dpsql.budget").fetchall())
        assert con.execute("SHOW dpsql.rho").fetchall() == [("dpsql.rho", "0.25")]
        cur = con.execute("SELECT state, COUNT(*) AS n FROM establishments GROUP BY state")
        assert [d.name for d in cur.description] == ["state", "n", "n_moe95"]
        after = dict(con.execute("SHOW dpsql.budget").fetchall())
    assert Fraction(after["dpsql.budget.spent"]) - Fraction(before["dpsql.budget.spent"]) == Fraction(1, 4)
    with pytest.raises(psycopg.OperationalError, match="DP119|DP302"):
        psycopg.connect(server.dsn("alice", PASSWORD), options="-c dpsql.error_columns=maybe")


def test_startup_options_are_read_as_libpq_writes_them():
    from dpsql.faces.server.startup_options import dpsql_options

    assert dpsql_options(r"-c dpsql.rho=0.5 -cdpsql.MOE=10 --dpsql.weights=SUM(payann)=2,\ COUNT(units)=1 "
                         r"-c statement_timeout=5s -c  search_path=x --dpsql.nothing") == [
        ("rho", "0.5"), ("moe", "10"), ("weights", "SUM(payann)=2, COUNT(units)=1")]
    assert dpsql_options("") == [] and dpsql_options("-c") == []


def test_psql_copy_to_a_file(server, tmp_path):
    """psql's \\copy (SELECT ...) TO 'f.csv' CSV HEADER (issue 33: refused, leaving an empty file):
    the SELECT is answered and charged once, the file holds its header and rows; a public query
    copies free; a COPY option dpsql does not read is refused before anything runs."""
    _need("psql", shutil.which("psql") is not None)
    env = {**os.environ, "PGPASSWORD": PASSWORD, "PGSSLMODE": "disable", "PGCONNECT_TIMEOUT": "20"}
    base = ["psql", "-h", server.host, "-p", str(server.port), "-U", "alice", "-X", "-v", "ON_ERROR_STOP=1"]

    def psql(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, "-c", command], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)

    before = charges(server, "alice")
    done = psql("\\copy (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) TO 'n.csv' CSV HEADER")
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "n.csv").read_text().splitlines()
    assert lines[0] == "state,n" and len(lines) == 52 and all(len(x.split(",")) == 2 for x in lines[1:])
    assert charges(server, "alice") == before + 1
    public = psql("\\copy (SELECT code, name FROM states ORDER BY code) TO 'states.txt'")
    assert public.returncode == 0, public.stderr
    first = (tmp_path / "states.txt").read_text().splitlines()[0].split("\t")
    assert len(first) == 2 and first[0] == "AK"
    assert charges(server, "alice") == before + 1
    odd = psql("\\copy (SELECT state, COUNT(*) FROM establishments GROUP BY state) TO 'x.csv' WITH (FORMAT csv, DELIMITER ';')")
    assert odd.returncode != 0 and "not supported" in odd.stderr
    assert charges(server, "alice") == before + 1


def test_copy_out_fields_escape_as_postgresql_writes_them():
    from dpsql.faces.server.answers import StatementError
    from dpsql.faces.server.copy_out import _csv_field, _text_field, parse

    assert _text_field(None) == b"\\N" and _text_field(b"a\tb\\c\nd") == b"a\\tb\\\\c\\nd"
    assert _csv_field(None) == b"" and _csv_field(b"") == b'""' and _csv_field(b'say "hi", x') == b'"say ""hi"", x"'
    req = parse("COPY ( SELECT 1 ) TO STDOUT WITH (FORMAT csv, HEADER true);")
    assert req is not None and req.query.strip() == "SELECT 1" and req.csv and req.header
    assert parse("COPY (SELECT 1) TO STDOUT").csv is False and parse("SELECT 1") is None
    assert parse("COPY (SELECT 1) TO STDOUT CSV HEADER false").header is False
    for bad in ("COPY (SELECT 1) TO STDOUT (FORMAT binary)", "COPY (SELECT 1) TO STDOUT CSV NULL 'x'",
                "COPY (SELECT 1) TO STDOUT HEADER", "COPY (SET x = 1) TO STDOUT"):
        with pytest.raises(StatementError):
            parse(bad)
