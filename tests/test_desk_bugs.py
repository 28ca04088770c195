"""Regression tests of the bugs a new user hit (issue 19, "The analyst's desk"): each test is the
user's own steps, run for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

import dpsql

COUNT_BY_SECTOR = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"


# --------------------------------------------------------------------------- many connections


def test_many_connections_to_the_demo_in_one_process(demo):
    """The demo builder's freshness check opened the file with other settings than the engine
    holding it: the second connect() raised a raw duckdb.ConnectionException."""
    first = dpsql.connect()
    try:
        second = dpsql.connect()
        third = dpsql.connect(*demo)  # the same file by its path
        try:
            for con in (first, second, third):
                assert len(con.execute(COUNT_BY_SECTOR).fetchall()) == 24
        finally:
            second.close()
            third.close()
        assert len(first.execute(COUNT_BY_SECTOR).fetchall()) == 24  # closing the others left it open
    finally:
        first.close()


def test_pooled_sqlalchemy_connections_to_the_demo(demo):
    engine = sa.create_engine("dpsql://")
    try:
        with engine.connect() as a, engine.connect() as b:  # two pooled DB-API connections at once
            assert a.connection.dbapi_connection is not b.connection.dbapi_connection
            for conn in (a, b):
                assert len(conn.execute(sa.text(COUNT_BY_SECTOR)).fetchall()) == 24
    finally:
        engine.dispose()


def test_another_threads_setting_on_an_open_file_is_a_dpsql_error(demo):
    with dpsql.connect(*demo) as con:
        with pytest.raises(dpsql.OperationalError) as err:
            dpsql.connect(*demo, threads=1)
        assert err.value.code == "DP402" and "threads" in str(err.value)
        assert con.execute(COUNT_BY_SECTOR).fetchall()


# --------------------------------------------------------------------------- the first error first


def test_a_missing_database_is_reported_before_its_policy(tmp_path):
    for path in ("/nope.duckdb", tmp_path / "none.duckdb"):
        with pytest.raises(dpsql.OperationalError) as err:
            dpsql.connect(path)
        assert err.value.code == "DP402" and "does not exist" in str(err.value)


# --------------------------------------------------------------------------- the command line


def _cli(*args: str, home: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    env = dict(os.environ, DPSQL_HOME=home, COLUMNS="100")
    return subprocess.Popen([sys.executable, "-m", "dpsql", *args], stdout=stdout, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.mark.parametrize("command", ["query", "explain", "ledger", "policy", "convert", "demo"])
def test_subcommand_help_has_one_clean_usage_line(demo, command):
    p = _cli(command, "--help", home=str(demo[0].parent))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.startswith(f"usage: dpsql {command} [-h]"), out.splitlines()[:3]
    usage = out.split("\n\n")[0]
    assert "COMMAND ..." not in usage
    # query and explain take the database as the prompt does (after the SQL); the others do not
    assert ("sql [DATABASE]" in usage) == (command in ("query", "explain")), usage


@pytest.mark.parametrize("args", [
    ("ledger", "--json"), ("ledger",), ("--help",), ("query", "--help"),
    ("query", COUNT_BY_SECTOR, "--json"), ("query", COUNT_BY_SECTOR),
    ("explain", COUNT_BY_SECTOR), ("convert", "--rho", "0.5", "--delta", "1e-6", "--json"),
])
def test_a_reader_that_goes_away_stops_the_command_quietly(demo, args):
    """`dpsql ledger --json | head -1`: the reader closes the pipe before dpsql writes."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte is written
    try:
        p = _cli(*args, "--db", str(demo[0]), "--policy", str(demo[1]), home=str(demo[0].parent), stdout=write) \
            if args[0] in ("ledger", "query", "explain") and "--help" not in args else \
            _cli(*args, home=str(demo[0].parent), stdout=write)
    finally:
        os.close(write)
    _, err = p.communicate(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err and "DP900" not in err, err
    # argparse itself ignores a failed write of --help (status 0); dpsql's own output: 141, as SIGPIPE
    assert p.returncode == (0 if "--help" in args else 141)


def _charges(demo) -> int:
    p = _cli("ledger", "--json", "--db", str(demo[0]), "--policy", str(demo[1]), home=str(demo[0].parent))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return len(json.loads(out)["charges"])


def test_a_reader_that_goes_away_stops_the_piped_prompt(demo):
    """`dpsql < queries.sql | head`: the prompt stops at the first answer it cannot write, quietly,
    and runs (and charges) none of the queries after it."""
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.Popen([sys.executable, "-m", "dpsql", str(demo[0]), "--policy", str(demo[1])],
                             stdin=subprocess.PIPE, stdout=write, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, DPSQL_HOME=str(demo[0].parent)))
    finally:
        os.close(write)
    before = _charges(demo)
    _, err = p.communicate(COUNT_BY_SECTOR + ";\n" + COUNT_BY_SECTOR + ";\n", timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err and "DP900" not in err, err
    assert p.returncode == 141
    assert _charges(demo) == before + 1  # the first query ran; the second never did


# --------------------------------------------------------------------------- messages in the user's words


@pytest.mark.parametrize("sql", [
    "SELECT naics2, COUNT(*) FROM establishments WHERE state = %s GROUP BY naics2",
    "SELECT naics2, COUNT(*) FROM establishments WHERE state IN (%s, %s) GROUP BY naics2",
    "SELECT naics2, COUNT(*) FROM establishments WHERE state = %(state)s GROUP BY naics2",
])
def test_format_parameters_say_to_use_qmark(con, sql):
    with pytest.raises(dpsql.ProgrammingError) as err:
        con.execute(sql, ["CA", "NY"][:sql.count("%")])
    assert err.value.code == "DP118"
    text = str(err.value)
    assert "?" in err.value.hint and "qmark" in err.value.hint
    assert "Required keyword" not in text and "sqlglot" not in text and "Mod" not in text
    assert err.value.column == sql.index("%") + 1
    assert con.session.ledger.spent == 0


@pytest.mark.parametrize("sql, written, internal", [
    ("SELECT DATE_TRUNC('minute', first_seen), COUNT(*) FROM devices GROUP BY 1", "DATE_TRUNC", "TIMESTAMP_TRUNC"),
    ("SELECT strftime(first_seen, '%M'), COUNT(*) FROM devices GROUP BY 1", "strftime", "TIME_TO_STR"),
    ("SELECT time_bucket(INTERVAL 1 DAY, opened), COUNT(*) FROM establishments GROUP BY 1", "time_bucket", "DATE_BIN"),
    ("SELECT COUNT(*) FROM establishments WHERE epoch_ms(payann) > 0", "epoch_ms", "UNIX_TO_TIME"),
    ("SELECT approx_count_distinct(payann) FROM establishments", "approx_count_distinct", "APPROX_DISTINCT"),
    ("SELECT COUNT(*) FROM establishments WHERE list_value(1, 2) IS NOT NULL", "list_value", "ARRAY"),
])
def test_refusals_name_functions_as_written(con, sql, written, internal):
    with pytest.raises(dpsql.DpsqlError) as err:
        con.execute(sql)
    assert err.value.code in ("DP109", "DP110", "DP114")
    assert written in err.value.message and internal not in err.value.message
