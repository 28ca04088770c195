"""``dpsql serve`` as a wall (issue 29, part B), on a real server subprocess (tests/server_harness.py):

* the state folder knows its ledger: a deleted, replaced or foreign ledger stops every charged
  answer and the server's start until ``--adopt-ledger``, and is never recreated empty;
* unknown users' made-up SCRAM salts look like real ones (length) and stay the same across restarts;
* failed logins are answered after a backoff; clients logging in never take an analyst's slot
  and have a short deadline; a default statement timeout; no server path in an analyst's message;
* a server-wide memory limit: a query over it fails charged, with fixed text, and the session goes on;
* ordinary input (a non-ASCII identifier, deep nesting) never ends a session.
No timing is asserted except lower bounds the server's own waits guarantee.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from server_harness import DpsqlServer, RawClient, cstr, error_fields, eventually, frame, server_env  # noqa: E402

BY_STATE = "SELECT state, COUNT(*) FROM establishments GROUP BY state"
DEEP = "SELECT " + "(" * 60 + "1" + ")" * 60
DEEPER = "SELECT " + "(" * 3000 + "1" + ")" * 3000


@pytest.fixture(scope="module")
def srv(demo_files, tmp_path_factory):
    work = tmp_path_factory.mktemp("wall")
    policy = shutil.copyfile(demo_files[1], work / "demo.policy.toml")
    with DpsqlServer.start(work, demo_files[0], policy, users=("alice", "bob")) as server:
        yield server


def _salt(server: DpsqlServer, user: str) -> bytes:
    """The salt the server offers ``user`` in its SCRAM server-first message."""
    with server.raw() as raw:
        kind, _ = raw.startup(user)
        assert kind == b"R"
        first = b"n,,n=,r=abcdefghijklmnop"
        raw.send(frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first))
        kind, body = raw.read()
        assert kind == b"R" and struct.unpack("!i", body[:4])[0] == 11
        attrs = dict(part.split("=", 1) for part in body[4:].decode().split(","))
        return base64.b64decode(attrs["s"])


def _alive(conn) -> bool:
    return conn.execute("SELECT 1").fetchone() == (1,)


# ---------------------------------------------------------------------------- finding 11
def test_non_ascii_words_and_deep_nesting_never_end_the_session(srv):
    with srv.connect("alice") as conn:
        row = conn.execute("SELECT COUNT(*) AS compté FROM establishments").fetchone()
        assert conn.pgconn.transaction_status is not None and isinstance(row[0], int)
        assert [d.name for d in conn.execute("SELECT COUNT(*) AS compté FROM establishments").description] == ["compté"]
        for sql in ("SELECT é", "SELECT Straße FROM establishments", "SELECT 1 AS ü; SELECT ы", DEEP, DEEPER,
                    "SELECT COUNT(*) FROM establishments WHERE " + "(" * 500 + "payann > 1" + ")" * 500):
            try:
                conn.execute(sql).fetchall()
            except psycopg.errors.OperationalError:
                raise
            except psycopg.Error as exc:  # an ERROR: the session stays
                assert exc.diag.severity == "ERROR", (sql[:40], exc.diag.severity)
            assert _alive(conn), sql[:40]


def test_the_same_inputs_embedded_give_dpsql_errors_or_answers(demo):
    """A guard: the DB-API and the REPL already answered these with a result or a DpsqlError."""
    import dpsql
    from repl_harness import ENTER, drive

    inputs = ("SELECT COUNT(*) AS compté FROM establishments", "SELECT é", DEEP, DEEPER)
    with dpsql.connect(str(demo[0]), policy=str(demo[1])) as conn:
        cur = conn.cursor()
        for sql in inputs:
            try:
                cur.execute(sql)
                cur.fetchall()
            except dpsql.DpsqlError:
                pass
        out, err, rc = drive(conn, "".join(f"{sql};{ENTER}" for sql in inputs) + f"SELECT COUNT(*) AS n FROM states;{ENTER}")
        assert rc == 0 and "compté" in out and "Traceback" not in out + err and "DP121" in err, err


# ---------------------------------------------------------------------------- finding 8
def test_unknown_users_salts_are_as_long_as_real_ones_and_survive_a_restart(srv):
    real, unknown = _salt(srv, "alice"), _salt(srv, "nobody-here")
    assert len(real) == len(unknown) == 32
    assert _salt(srv, "nobody-here") == unknown  # stable within the process, as before
    srv.stop()
    srv.launch()
    assert _salt(srv, "alice") == real
    assert _salt(srv, "nobody-here") == unknown  # the secret is the state folder's, not the process's
    assert _salt(srv, "somebody-else") != unknown


# ---------------------------------------------------------------------------- finding 7
def _refused_without_path(server: DpsqlServer, user: str) -> None:
    with pytest.raises(psycopg.Error) as caught:
        with server.connect(user) as conn:
            conn.execute(BY_STATE).fetchall()
    _says_dp404_without_path(server, caught.value)


def _says_dp404_without_path(server: DpsqlServer, exc: Exception) -> None:
    text = f"{exc} {exc.diag.message_primary} {exc.diag.message_hint}"  # type: ignore[attr-defined]
    assert "DP404" in text, text
    for secret in (str(server.state), str(server.workdir), "ledger.sqlite"):
        assert secret not in text, text


def _start_fails(server: DpsqlServer, *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "dpsql", "serve", str(server.database), "--policy", str(server.policy),
                          "--state", str(server.state), "--port", "0", *args], env=server_env(server.home),
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode != 0, run.stderr
    return run.stderr


def test_a_deleted_ledger_is_never_recreated_and_stops_the_server_until_adopted(start_server):
    srv = start_server()
    with srv.connect("bob") as conn:
        assert len(conn.execute(BY_STATE).fetchall()) == 51
        for f in srv.state.glob("ledger.sqlite*"):
            f.unlink()
        with pytest.raises(psycopg.Error, match="DP404") as caught:  # the open connection refuses too
            conn.execute(BY_STATE).fetchall()
        _says_dp404_without_path(srv, caught.value)
    _refused_without_path(srv, "bob")
    _refused_without_path(srv, "alice")
    assert not srv.ledger_path.exists()  # not recreated by a new connection
    assert "LEDGER REFUSED" in srv.stderr and "--adopt-ledger" in srv.stderr
    srv.stop()
    assert "--adopt-ledger" in _start_fails(srv)
    assert not srv.ledger_path.exists()
    srv.args.append("--adopt-ledger")  # the operator acts: a fresh, empty ledger, said loudly
    srv.launch()
    assert "LEDGER: created and adopted a new, empty ledger" in srv.stderr
    with srv.connect("bob") as conn:
        assert len(conn.execute(BY_STATE).fetchall()) == 51
    assert len(srv.charges("bob")) == 1


#: each statement a fresh, charged release, not an answer released before (pipeline/reuse.py)
FRESH = "-c dpsql.reuse=off"


def test_a_replaced_or_foreign_ledger_is_refused_until_adopted(start_server, tmp_path):
    srv = start_server()
    other = start_server()  # another server's ledger, with a charge of its own
    with other.connect("bob", options=FRESH) as conn:
        conn.execute(BY_STATE).fetchall()
    other.stop()
    with srv.connect("bob", options=FRESH) as conn:
        conn.execute(BY_STATE).fetchall()
    srv.stop()
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(srv.ledger_path, backup)  # a copy of this very ledger, with its token
    srv.launch()
    with srv.connect("bob", options=FRESH) as conn:
        conn.execute(BY_STATE).fetchall()
        assert len(srv.charges("bob")) == 2
        os.replace(backup, srv.ledger_path)  # rolled back to one charge: another file, the same token
        with pytest.raises(psycopg.Error, match="DP404") as caught:
            conn.execute(BY_STATE).fetchall()
        _says_dp404_without_path(srv, caught.value)
    _refused_without_path(srv, "bob")
    srv.stop()
    assert "replaced" in _start_fails(srv)
    # the operator takes the restored copy as the ledger
    srv.args.append("--adopt-ledger")
    srv.launch()
    assert "LEDGER: adopted the existing ledger" in srv.stderr
    srv.args.remove("--adopt-ledger")
    adopted = len(srv.charges("bob"))  # (SQLite replays the log the live server left beside the file)
    with srv.connect("bob", options=FRESH) as conn:
        conn.execute(BY_STATE).fetchall()
        assert len(srv.charges("bob")) == adopted + 1
        # another server's ledger written over this one in place (the same inode): only its token tells
        with open(other.ledger_path, "rb") as src, open(srv.ledger_path, "r+b") as dst:
            dst.write(src.read())
        with pytest.raises(psycopg.Error, match="DP404"):
            conn.execute(BY_STATE).fetchall()
    _refused_without_path(srv, "bob")
    srv.stop()
    for f in srv.state.glob("ledger.sqlite-*"):
        f.unlink()
    shutil.copyfile(other.ledger_path, srv.ledger_path)  # in place again, now with no log beside it
    assert "another ledger" in _start_fails(srv)
    srv.args.append("--adopt-ledger")
    srv.launch()
    with srv.connect("bob", options=FRESH) as conn:
        conn.execute(BY_STATE).fetchall()
    assert len(srv.charges("bob")) == 2  # the adopted foreign ledger's one charge, and this one


# ---------------------------------------------------------------------------- finding 9
def test_failed_logins_are_answered_after_a_growing_backoff(srv):
    started = []
    for _ in range(6):
        with srv.raw(timeout=30) as raw:
            raw.startup("alice")
            started.append(time.monotonic())
            kind, body = raw.authenticate("alice", "wrong password")[-1]
            assert kind == b"E" and error_fields(body)["C"] == "28P01"
    waited = time.monotonic() - started[-1]
    assert waited >= 1.0  # the sixth failure: 0.25 s doubled twice after three free ones (a lower bound)
    assert "answered after 1 s" in srv.stderr and "failed login for user 'alice'" in srv.stderr
    with srv.connect("alice") as conn:  # her own password still gets in at once
        assert _alive(conn)


def _raw_from(server: DpsqlServer, source: str) -> RawClient:
    """A raw client connecting from the loopback address ``source`` (127.0.0.2 is another client)."""
    raw = RawClient.__new__(RawClient)
    raw.sock = socket.create_connection((server.host, server.port), timeout=10, source_address=(source, 0))
    raw.buffer = b""
    return raw


def test_strangers_logging_in_never_lock_analysts_out(start_server):
    srv = start_server("--max-connections", "2", "--auth-timeout", "3", "--max-logins-per-address", "3")
    strangers = [_raw_from(srv, "127.0.0.1") for _ in range(3)]
    try:
        for raw in strangers:  # each sends its startup packet, then nothing: it waits in a login slot
            kind, _ = raw.startup("alice")
            assert kind == b"R"
        with srv.raw() as fourth:  # this address has no login slot left: it waits for one, and none comes
            kind, body = fourth.startup("alice")
            assert kind == b"E" and error_fields(body)["C"] == "53300"
            assert "from this address" in error_fields(body)["M"]
        analysts = []
        for _ in range(2):  # both analysts' slots are free: strangers never hold one
            raw = _raw_from(srv, "127.0.0.2")
            analysts.append(raw)
            kind, _ = raw.startup("alice")
            assert kind == b"R"
            assert raw.authenticate("alice", "pw-alice")[-1][0] == b"Z"
        for raw in strangers:  # the short authentication deadline closes them
            kind, body = raw.read()
            assert kind == b"E" and error_fields(body)["C"] == "08006"
            assert raw.closed_by_server()
        for raw in analysts:
            assert raw.query("SELECT 1")[-1][0] == b"Z"
            raw.close()
    finally:
        for raw in strangers:
            raw.close()


def test_a_statement_timeout_is_on_by_default_and_stops_an_endless_catalog_query(srv, start_server):
    with srv.connect("alice") as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("5min",)
        conn.execute("RESET ALL")
        assert conn.execute("SHOW statement_timeout").fetchone() == ("5min",)  # the server's, not PostgreSQL's 0
    short = start_server("--statement-timeout", "1")
    with short.connect("alice") as conn:
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r").fetchall()
        assert _alive(conn)


# ---------------------------------------------------------------------------- finding 10 (the server's part)
def test_a_query_over_the_servers_memory_limit_is_charged_and_fails_with_fixed_text(start_server):
    srv = start_server()  # records the unit checks, so the small server below starts without them
    srv.stop()
    srv.args += ["--memory-limit", "1MiB", "--threads", "1"]
    srv.launch()
    assert "memory limit 1 MiB" in srv.stderr
    with srv.connect("bob") as conn:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(BY_STATE).fetchall()
        assert caught.value.diag.message_primary.startswith("DP901: the query failed after private rows were read")
        assert _alive(conn)
    assert len(srv.charges("bob")) == 1  # the exact query had started: charged, nothing released


def test_the_login_backoff_in_numbers():
    """The schedule (closed form: 0 for three failures, then 0.25 s doubling up to 8 s), the
    worse of name and address, forgetting, bounded memory."""
    from dpsql.faces.server.throttle import LoginThrottle

    t = LoginThrottle()
    delays = [t.failed("alice", "10.0.0.1", now=float(i))[1] for i in range(12)]
    assert delays == [0, 0, 0, 0.25, 0.5, 1, 2, 4, 8, 8, 8, 8]
    assert t.failed("bob", "10.0.0.1", now=12.0) == (13, 8)  # a new name from a busy address
    assert t.failed("alice", "10.9.9.9", now=13.0) == (13, 8)  # a busy name from a new address
    assert t.failed("alice", "10.0.0.1", now=14.0) == (14, 8)
    assert t.failed("carol", "10.0.0.2", now=14.0 + 600) == (1, 0)
    assert t.failed("dave", "10.0.0.1", now=14.0 + 600) == (1, 0)  # forgotten after 10 idle minutes
    small = LoginThrottle(capacity=100)
    for i in range(1000):
        small.failed(f"user{i}", f"10.1.{i // 256}.{i % 256}", now=0.0)
    assert len(small) == 100
