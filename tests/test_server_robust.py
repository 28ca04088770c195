"""``dpsql serve`` as a service: limits, timeouts, cancels, disconnects, kill -9, malformed
traffic, identity and the budget wall, against a real server subprocess on loopback
(tests/server_harness.py) with the real drivers (psycopg 3, asyncpg) and raw sockets.

The slow statement is real DuckDB work on the demo data: 190 LIKE patterns over a
concatenation take about 3 s on one thread (``--threads 1``) and plan in about 0.1 s;
:data:`SLOW_TO_PLAN` adds an IN list of 11,000 values, which takes about 1.4 s to plan. No
timing is asserted: the delays only choose which phase a cancel lands in, with wide margins.
"""

from __future__ import annotations

import asyncio
import subprocess
import random
import shutil
import socket
import struct
import threading
import time
import zlib
from fractions import Fraction
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from server_harness import (  # noqa: E402
    DpsqlServer,
    cstr,
    error_fields,
    errors_in,
    eventually,
    frame,
    policy_with_budget,
    startup_packet,
)

#: a statement that keeps DuckDB busy for seconds (see the module docstring)
SLOW = "SELECT COUNT(*) FROM establishments WHERE " + " OR ".join(
    f"county || naics LIKE '%{i}%{i + 1}%{i + 2}%9%'" for i in range(190))
#: the same work behind a long plan (an IN list of 11,000 values)
SLOW_TO_PLAN = SLOW + " AND county NOT IN (" + ",".join(f"'{i:05d}'" for i in range(11_000)) + ")"
#: a cheap charged query: 51 states, a public keyset
BY_STATE = "SELECT state, COUNT(*) FROM establishments GROUP BY state"


@pytest.fixture(scope="module")
def srv(demo_files, tmp_path_factory):
    """The server most tests share; DuckDB on one thread so that :data:`SLOW` is slow."""
    work = tmp_path_factory.mktemp("robust")
    policy = shutil.copyfile(demo_files[1], work / "demo.policy.toml")
    with DpsqlServer.start(work, demo_files[0], policy, "--threads", "1", users=("alice", "bob")) as server:
        yield server


@pytest.fixture(scope="module")
def limited(demo_files, tmp_path_factory):
    """A server with a connection limit of 2, a 2 s idle timeout and a 0.5 s statement timeout."""
    work = tmp_path_factory.mktemp("limited")
    policy = shutil.copyfile(demo_files[1], work / "demo.policy.toml")
    with DpsqlServer.start(work, demo_files[0], policy, "--threads", "1", "--max-connections", "2",
                           "--idle-timeout", "2", "--statement-timeout", "0.5", users=("alice",)) as server:
        yield server


@pytest.fixture(scope="module")
def observer(srv):
    """A client of ``srv`` that stays connected through the tests of malformed traffic."""
    conn = srv.connect(new_user(srv, "watcher"))
    conn.execute("SET dpsql.rho = 0.0001")
    yield conn
    conn.close()


def still_served(conn) -> bool:
    """The server still answers a charged query on a connection opened before."""
    return len(conn.execute(BY_STATE).fetchall()) == 51


@pytest.fixture(autouse=True)
def no_server_tracebacks(request):
    """Whatever a test throws at a server, the server never hits an unhandled exception."""
    servers = [request.getfixturevalue(name) for name in ("srv", "limited") if name in request.fixturenames]
    before = {id(s): len(s.stderr) for s in servers}
    yield
    for s in servers:
        new = s.stderr[before[id(s)]:]
        assert "Traceback" not in new and "Exception" not in new, new
        assert s.alive, s.stderr


def serving(server: DpsqlServer, user: str = "alice") -> bool:
    """The server answers a charged query (at a tiny rho) to a fresh client."""
    with server.connect(user) as conn:
        conn.execute("SET dpsql.rho = 0.0001")
        return len(conn.execute(BY_STATE).fetchall()) == 51


def new_user(server: DpsqlServer, name: str) -> str:
    """``name``, added to the server's users unless it is one already."""
    if name not in server.passwords:
        server.add_user(name, cli=False)
    return name


# ---------------------------------------------------------------------------- limits and timeouts
def test_a_connection_over_the_limit_gets_53300_and_the_server_is_fine(limited):
    first, second = limited.connect("alice"), limited.connect("alice")
    try:
        with limited.raw() as raw:  # an analyst's slot is taken after the password, not before
            kind, _ = raw.startup("alice")
            assert kind == b"R"
            kind, body = raw.authenticate("alice", "pw-alice")[-1]
            assert kind == b"E" and error_fields(body)["C"] == "53300" and error_fields(body)["S"] == "FATAL"
            assert raw.closed_by_server()
        with pytest.raises(psycopg.OperationalError, match="too many clients"):
            limited.connect("alice")
        assert first.execute("SELECT 1").fetchone() == (1,)
        second.close()
        third = eventually(lambda: limited.connect("alice"))  # the slot frees once the server sees the close
        assert len(third.execute(BY_STATE).fetchall()) == 51
        third.close()
    finally:
        first.close()
        second.close()


def test_clients_still_logging_in_take_no_analyst_slot_and_at_most_the_limit_get_in(limited):
    """Six clients send their startup packets before any has finished logging in: all of them
    may try their password (strangers logging in hold a login slot, never an analyst's), and at
    most two get in; the others are told 53300 after their password."""
    eventually(lambda: serving(limited))
    raws = [limited.raw() for _ in range(6)]
    try:
        firsts = [raw.startup("alice") for raw in raws]
        assert [kind for kind, _ in firsts] == [b"R"] * 6
        ends = [raw.authenticate("alice", "pw-alice")[-1] for raw in raws]
        admitted = [kind for kind, _ in ends if kind == b"Z"]
        refused = [error_fields(body)["C"] for kind, body in ends if kind == b"E"]
        assert 1 <= len(admitted) <= 2 and refused == ["53300"] * (6 - len(admitted))
    finally:
        for raw in raws:
            raw.close()


def test_an_idle_connection_is_closed_with_57P05(limited):
    eventually(lambda: serving(limited))
    with limited.login("alice") as raw:
        kind, body = raw.read()  # nothing sent: the server speaks first, after the idle timeout
        assert kind == b"E" and error_fields(body)["C"] == "57P05" and error_fields(body)["S"] == "FATAL"
        assert raw.closed_by_server()


def test_the_statement_timeout_cancels_with_57014_and_the_connection_goes_on(limited):
    eventually(lambda: serving(limited))
    user = new_user(limited, "timed")
    with limited.connect(user) as conn:
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout") as caught:
            conn.execute(SLOW)
        charged = len(limited.charges(user))
        assert charged == (0 if "nothing was charged" in str(caught.value) else 1)
        assert "COUNT" not in str(caught.value) and caught.value.diag.sqlstate == "57014"
        assert len(conn.execute(BY_STATE).fetchall()) == 51
        assert len(limited.charges(user)) == charged + 1
    limited.check_ledger()


#: a catalog statement (no private table) that would keep DuckDB busy for minutes
ENDLESS_CATALOG = "SELECT count(*) FROM range(100000000000)"


def test_the_statement_timeout_stops_a_catalog_statement_too(limited):
    eventually(lambda: serving(limited))
    with limited.connect("alice") as conn:
        for prepare in (False, True):  # executed; described (planned) first
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout.*public information only"):
                conn.execute(ENDLESS_CATALOG, prepare=prepare)
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_catalog_statement_has_bounded_memory(srv):
    with srv.connect("alice") as conn:
        with pytest.raises(psycopg.Error, match="Out of Memory"):
            conn.execute("SELECT length(list(i)::VARCHAR) FROM range(300000000) t(i)")
        assert conn.execute("SELECT 1").fetchone() == (1,)


# ---------------------------------------------------------------------------- cancel requests
def _cancelled(server: DpsqlServer, user: str, sql: str, after: float) -> str:
    """Run ``sql`` and send a CancelRequest ``after`` seconds later; the error's text. The
    connection answers a query afterwards."""
    with server.connect(user) as conn:
        timer = threading.Timer(after, conn.cancel_safe)
        timer.start()
        try:
            with pytest.raises(psycopg.errors.QueryCanceled) as caught:
                conn.execute(sql)
        finally:
            timer.cancel()
        charged = len(server.charges(user))
        assert len(conn.execute(BY_STATE).fetchall()) == 51
        assert len(server.charges(user)) == charged + 1
    return str(caught.value)


def test_a_cancel_stops_a_catalog_statement(srv):
    with srv.connect("alice") as conn:
        timer = threading.Timer(0.5, conn.cancel_safe)
        timer.start()
        with pytest.raises(psycopg.errors.QueryCanceled, match="user request.*public information only"):
            conn.execute(ENDLESS_CATALOG)
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_cancel_before_the_data_is_read_charges_nothing(srv):
    user = new_user(srv, "early")
    message = _cancelled(srv, user, SLOW_TO_PLAN, 0.3)  # lands while the 1.4 s plan is made
    assert "canceling statement due to user request" in message and "nothing was charged" in message
    assert [rho for _, rho in srv.charges(user)] == [Fraction(1, 10)]  # the query after it only


def test_a_cancel_after_the_data_was_read_is_charged_and_returns_nothing(srv):
    """A cancel 1 s in lands in the 3 s of DuckDB work once the 0.1 s plan is made. On a
    machine so loaded that the plan took longer, that cancel is one before the data was read
    (free, as the test above shows): the next try waits twice as long."""
    user = new_user(srv, "late")
    for tries, after in enumerate((1.0, 2.0, 4.0), start=1):
        message = _cancelled(srv, user, SLOW, after)
        if "nothing was charged" not in message:
            break
    assert "user request" in message and "was charged and nothing was released" in message
    assert len(srv.charges(user)) == tries + 1  # the cancelled query, and the one after each try
    srv.check_ledger()


def test_asyncpg_timeout_cancels_and_the_connection_goes_on(srv):
    asyncpg = pytest.importorskip("asyncpg")
    user = new_user(srv, "asyncer")

    async def run() -> int:
        conn = await asyncpg.connect(host=srv.host, port=srv.port, user=user, password="pw-asyncer", database="x")
        try:
            with pytest.raises(asyncio.TimeoutError):
                await conn.fetch(SLOW, timeout=1.0)  # asyncpg sends a CancelRequest on its timeout
            return len(await conn.fetch(BY_STATE))
        finally:
            await conn.close()

    assert asyncio.run(run()) == 51
    charges = srv.charges(user)
    assert len(charges) in (1, 2)  # the cancelled query is charged only if DuckDB had started it
    srv.check_ledger()


def test_a_client_that_disconnects_mid_query(start_server):
    """The server notices a client gone mid-query and stops the query: charged when DuckDB had
    started, free when still planning. One connection at most, so a second login succeeds
    exactly when the server has finished with the first."""
    srv = start_server("--threads", "1", "--max-connections", "1", users=())
    new_user(srv, "leaver")
    # at work (a client gone 0.8 s in, or later on a machine so loaded that the plan was not made
    # by then, which leaves for free); then still planning
    for sql, waits, charges in ((SLOW, (0.8, 1.6, 3.2), 1), (SLOW_TO_PLAN, (0.2,), 1)):
        for wait in waits:
            with eventually(lambda: srv.login("leaver")) as raw:
                raw.send(frame(b"Q", cstr(sql)))
                time.sleep(wait)
            eventually(lambda: srv.login("leaver"), timeout=30).close()  # the abandoned query is over
            if len(srv.charges("leaver")) == charges:
                break
        assert len(srv.charges("leaver")) == charges
    srv.check_ledger()
    assert eventually(lambda: serving(srv, "leaver"))
    assert "Traceback" not in srv.stderr


# ---------------------------------------------------------------------------- kill -9
def test_kill_9_during_a_stream_of_queries_loses_no_charge(start_server):
    srv = start_server("--threads", "1", users=("kim",))
    answers = [0] * 4
    stop = threading.Event()

    def client(i: int) -> None:
        try:
            with srv.connect("kim") as conn:
                conn.execute("SET dpsql.rho = 0.001")
                conn.execute("SET dpsql.reuse = off")  # a stream of fresh, charged releases (pipeline/reuse.py)
                while not stop.is_set():
                    conn.execute("SELECT COUNT(*) FROM establishments WHERE state = 'CA'").fetchall()
                    answers[i] += 1  # counted only once the rows are in the client's hands
        except psycopg.OperationalError:
            pass  # the server died under us

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(answers))]
    for t in threads:
        t.start()
    eventually(lambda: sum(answers) >= 40, timeout=60)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    received, charged = sum(answers), len(srv.charges("kim"))
    srv.check_ledger()
    assert received <= charged <= received + len(answers)  # at most one charged answer in flight per client

    srv.launch()  # restarted on the same state folder: the ledger goes on
    with srv.connect("kim") as conn:
        conn.execute("SET dpsql.rho = 0.001")
        conn.execute("SELECT COUNT(*) FROM establishments").fetchall()
    assert len(srv.charges("kim")) == charged + 1
    assert srv.spent("kim") == Fraction(charged + 1, 1000)
    srv.check_ledger()

    with srv.login("kim") as raw:  # stopped (SIGTERM) while DuckDB works: stopped, charged, said
        raw.send(frame(b"Q", cstr(SLOW)))
        time.sleep(1.0)
        assert srv.stop() == 0
        kind, body = raw.read()
        assert kind == b"E" and error_fields(body)["C"] == "57P01"
    assert len(srv.charges("kim")) == charged + 2
    assert "Traceback" not in srv.stderr and "exception" not in srv.stderr.lower()


# ---------------------------------------------------------------------------- malformed traffic
def _closed_with(raw, sqlstate: str | None) -> None:
    """The server answers with a FATAL ``sqlstate`` (or, None: possibly nothing) and closes."""
    try:
        kind, body = raw.read()
    except (EOFError, ConnectionResetError):
        assert sqlstate is None
        return
    assert kind == b"E", kind
    fields = error_fields(body)
    assert fields["S"] == "FATAL" and (sqlstate is None or fields["C"] == sqlstate), fields
    assert raw.closed_by_server()


@pytest.mark.parametrize("packet, sqlstate", [
    (struct.pack("!i", 3), "08P01"),                                    # a length below the minimum
    (struct.pack("!i", -8), "08P01"),                                   # a negative length
    (struct.pack("!i", 0x7FFFFFFF) + b"\0" * 64, "08P01"),              # 2 GiB announced: refused unread
    (struct.pack("!ii", 12, 0x00020000) + b"\0\0\0\0", "0A000"),        # protocol 2.0
    (startup_packet({"database": "x"}), "28000"),                       # no user name
    (startup_packet({"user": "alice"})[:-1] + b"x", "08P01"),           # the parameter list is not terminated
    (startup_packet({"user": "al\xe9"}).replace(b"al\xc3\xa9", b"al\xe9\xe9"), "08P01"),  # not UTF-8
    (struct.pack("!iiii", 16, 80877102, 10001, 12345), None),           # a CancelRequest nobody made
], ids=["short", "negative", "huge", "v2", "no-user", "unterminated", "bad-utf8", "stray-cancel"])
def test_a_bad_startup_packet_is_refused_cleanly(srv, observer, packet, sqlstate):
    with srv.raw() as raw:
        raw.send(packet)
        _closed_with(raw, sqlstate)
    assert still_served(observer)


@pytest.mark.parametrize("sent", [
    struct.pack("!i", 100) + b"\0" * 10,                                # a startup packet cut short
    b"\0\0",                                                            # a length cut short
])
def test_a_truncated_startup_then_close_leaves_the_server_fine(srv, observer, sent):
    with srv.raw() as raw:
        raw.send(sent)
        raw.sock.shutdown(socket.SHUT_WR)
        assert raw.closed_by_server()
    assert still_served(observer)


@pytest.mark.parametrize("sent, sqlstate", [
    (b"Q" + struct.pack("!i", 0x7FFFFFFF), "08P01"),                    # a 2 GiB query: refused unread
    (b"Q" + struct.pack("!i", 2), "08P01"),                             # a length below the minimum
    (b"\xff" * 64, "08P01"),                                            # garbage
    (frame(b"Q", "SELECT '\xe9'".encode("latin-1") + b"\0"), "08P01"),  # a query that is not UTF-8
    (frame(b"Q", b"SELECT 1"), "08P01"),                                # a string without its terminator
    (frame(b"E", cstr("") + struct.pack("!i", 0) + b"extra"), "08P01"), # bytes after the last field
], ids=["huge", "short", "garbage", "bad-utf8", "unterminated", "trailing"])
def test_a_malformed_message_after_login_closes_the_connection_cleanly(srv, observer, sent, sqlstate):
    with srv.login("alice") as raw:
        raw.send(sent)
        _closed_with(raw, sqlstate)
    assert still_served(observer)


def test_a_message_cut_short_then_close(srv):
    with srv.login("alice") as raw:
        raw.send(b"Q" + struct.pack("!i", 200) + b"SELECT state, COUNT(*) FROM estab")
        raw.sock.shutdown(socket.SHUT_WR)
        assert raw.closed_by_server()
    assert serving(srv)


def test_an_unknown_message_type_is_an_error_and_the_connection_goes_on(srv):
    with srv.login("alice") as raw:
        raw.send(frame(b"z", b"whatever") + frame(b"F", b"\0\0\0\0") + frame(b"S"))
        got = raw.read_until(b"Z")
        assert [e["C"] for e in errors_in(got)] == ["08P01"]  # the rest is skipped until Sync
        answer = raw.query("SELECT 42")
        assert not errors_in(answer) and any(kind == b"D" for kind, _ in answer)


def _parse(name: str, sql: str, oids: tuple[int, ...] = ()) -> bytes:
    return frame(b"P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids)) + b"".join(struct.pack("!i", o) for o in oids))


def _bind(statement: str, values: list[bytes | None], formats: tuple[int, ...] = ()) -> bytes:
    body = cstr("") + cstr(statement) + struct.pack("!h", len(formats)) + b"".join(struct.pack("!h", f) for f in formats)
    body += struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
    return frame(b"B", body + struct.pack("!h", 0))


EXECUTE = frame(b"E", cstr("") + struct.pack("!i", 0))
SYNC = frame(b"S")


def test_extended_protocol_mistakes_are_errors_and_the_connection_goes_on(srv):
    user = new_user(srv, "binder")
    with srv.login(user) as raw:
        raw.send(_parse("s1", "SELECT COUNT(*) FROM establishments WHERE state = $1") + SYNC)
        assert not errors_in(raw.read_until(b"Z"))
        for values in ([], [b"CA", b"NY"]):  # too few and too many parameter values
            raw.send(_bind("s1", values) + EXECUTE + SYNC)
            assert [e["C"] for e in errors_in(raw.read_until(b"Z"))] == ["08P01"]
        for wrong in (_bind("nope", []), frame(b"E", cstr("nope") + struct.pack("!i", 0)),
                      frame(b"D", b"Snope\0"), _parse("s1", "SELECT 1"), _parse("", "SELECT 1; SELECT 2"),
                      _parse("", "SELECT COUNT(*) FROM establishments WHERE employees > $99999999")):
            raw.send(wrong + SYNC)
            assert len(errors_in(raw.read_until(b"Z"))) == 1
        raw.send(_bind("s1", [b"CA"]) + EXECUTE + SYNC)
        got = raw.read_until(b"Z")
        assert not errors_in(got) and [kind for kind, _ in got].count(b"D") == 1
    assert len(srv.charges(user)) == 1  # only the query that ran


def test_replies_are_written_at_sync_or_flush(srv):
    """Replies to an extended query's messages are held until Sync, as PostgreSQL's are; a Flush
    sends what is held without ending the query."""
    with srv.login(new_user(srv, "flusher")) as raw:
        raw.send(_parse("", "SELECT 42 AS x") + _bind("", []) + frame(b"H"))
        assert [raw.read()[0], raw.read()[0]] == [b"1", b"2"]  # ParseComplete, BindComplete: no Sync yet
        raw.send(frame(b"D", b"P\0") + EXECUTE + SYNC)
        got = raw.read_until(b"Z")
        assert [kind for kind, _ in got] == [b"T", b"D", b"C", b"Z"] and b"42" in got[1][1]


def test_a_shape_is_remembered_per_text_and_parameter_types(srv):
    """Describe plans a text once per connection and parameter types: the same text with other
    parameter types is described afresh, and a repeated private query is released once (the repeat
    shows the same release, charged nothing: pipeline/reuse.py)."""
    user = new_user(srv, "shaper")

    def described(oid: int) -> int:
        raw.send(_parse("", "SELECT $1 AS x", (oid,)) + frame(b"D", b"S\0") + SYNC)
        got = raw.read_until(b"Z")
        body = next(body for kind, body in got if kind == b"T")
        name_end = body.index(b"\0", 2)  # after the column count and the name: table oid, attnum, type oid
        return struct.unpack("!i", body[name_end + 7:name_end + 11])[0]

    with srv.login(user) as raw:
        assert [described(23), described(25), described(23)] == [23, 25, 23]
        for _ in range(2):
            raw.send(_parse("", BY_STATE) + _bind("", []) + frame(b"D", b"P\0") + EXECUTE + SYNC)
            got = raw.read_until(b"Z")
            assert not errors_in(got) and [kind for kind, _ in got].count(b"D") == 51
    assert len(srv.charges(user)) == 1


@pytest.mark.parametrize("value, fmt", [
    (b"1e999999999", 0),                                                # a text numeric of a billion digits
    (b"Infinity", 0), (b"sNaN", 0), (b"-1e-999999999", 0),
    (struct.pack("!hhHh", 1, 32767, 0, 0) + struct.pack("!H", 9999), 1),  # binary numeric, weight 32767
    (struct.pack("!hhHh", 16000, 16000, 0, 0) + b"\x27\x0f" * 16000, 1),  # 64,000 digits
    (struct.pack("!hhHh", 2, 0, 0, 0) + struct.pack("!H", 1), 1),         # fewer digits than announced
], ids=["text-1e999999999", "text-inf", "text-snan", "text-tiny", "bin-weight", "bin-long", "bin-short"])
def test_absurd_numeric_parameters_are_answered_at_once(srv, observer, value, fmt):
    """A NUMERIC parameter is read without building a billion-digit integer (which once stalled
    the whole server): a clean error or an answer, and the connection goes on."""
    with srv.login(new_user(srv, "numbers"), timeout=15) as raw:
        raw.send(_parse("n", "SELECT COUNT(*) FROM establishments WHERE employees > $1", (1700,)) + SYNC)
        raw.read_until(b"Z")
        raw.send(_bind("n", [value], (fmt,)) + EXECUTE + SYNC)
        for e in errors_in(raw.read_until(b"Z")):
            assert e["C"] != "XX000", e  # a refusal or a bad value, never an internal failure
        assert not errors_in(raw.query("SELECT 1"))
    assert still_served(observer)


def test_a_bind_whose_counts_overrun_the_message_closes_cleanly(srv):
    with srv.login("alice") as raw:
        raw.send(_parse("s", "SELECT COUNT(*) FROM establishments WHERE state = $1") + SYNC)
        raw.read_until(b"Z")
        raw.send(frame(b"B", cstr("") + cstr("s") + struct.pack("!hh", 0, 3) + struct.pack("!i", 2) + b"CA"))
        _closed_with(raw, "08P01")
    assert serving(srv)


def test_authentication_mistakes_are_refused_cleanly(srv):
    with srv.raw() as raw:  # a query instead of the password
        raw.startup("alice")
        raw.send(frame(b"Q", cstr("SELECT 1")))
        _closed_with(raw, "08P01")
    with srv.raw() as raw:  # a mechanism not offered
        raw.startup("alice")
        raw.send(frame(b"p", cstr("SCRAM-SHA-1") + struct.pack("!i", 4) + b"n,,x"))
        _closed_with(raw, "28000")
    with srv.raw() as raw:  # garbage in the SCRAM exchange
        raw.startup("alice")
        raw.send(frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", 6) + b"\xff\xfe,,r="))
        _closed_with(raw, "28P01")
    with srv.raw() as raw:  # a wrong password
        raw.startup("alice")
        got = raw.authenticate("alice", "not-her-password")
        assert [e["C"] for e in errors_in(got)] == ["28P01"]
    assert serving(srv)


def test_random_messages_after_login_never_harm_the_server(srv):
    """A fixed-seed fuzz loop: well-framed messages of every type with random or mutated bodies,
    each batch followed by Sync and a marker query; then raw garbage and a half-close. The
    server answers the marker or closes the connection, and never hangs or crashes."""
    rng = random.Random(20240614)
    user = new_user(srv, "fuzzer")
    valid = [_parse("", "SELECT state, COUNT(*) FROM establishments WHERE state = $1"), _bind("", [b"CA"]),
             frame(b"D", b"P\0"), EXECUTE, frame(b"C", b"S\0"), frame(b"H"), frame(b"Q", cstr("SELECT 1"))]
    raw = srv.login(user)
    try:
        for i in range(60):
            batch = []
            for _ in range(rng.randint(1, 4)):
                if rng.random() < 0.5:
                    body = bytearray(rng.choice(valid)[5:])
                    for _ in range(rng.randint(1, 3)):
                        if body and rng.random() < 0.7:
                            body[rng.randrange(len(body))] = rng.randrange(256)
                        else:
                            del body[rng.randrange(len(body) + 1):]
                    kind = rng.choice(b"PBDECHQ")
                else:
                    body = bytearray(rng.randbytes(rng.randint(0, 24)))
                    kind = rng.choice(b"PBDECHSQFdcfpz\x00\xff")
                batch.append(frame(bytes([kind]), bytes(body)))
            marker = f"marker-{i}"
            raw.send(b"".join(batch) + SYNC + frame(b"Q", cstr(f"ROLLBACK; SELECT '{marker}'")))
            try:
                while True:
                    kind, body = raw.read()
                    if kind == b"D" and marker.encode() in body:
                        assert raw.read_until(b"Z")
                        break
            except (EOFError, ConnectionResetError):  # the server closed this one: a fresh connection
                raw.close()
                raw = srv.login(user)
        raw.send(bytes(rng.randbytes(4096)))
        raw.sock.shutdown(socket.SHUT_WR)
        assert raw.closed_by_server()
    finally:
        raw.close()
    assert serving(srv)


# ---------------------------------------------------------------------------- identity
def _receipts(conn) -> list[str]:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    return notices


@pytest.mark.parametrize("statement", [
    "SET session_authorization = 'ivy'", "SET SESSION AUTHORIZATION 'ivy'", "SET SESSION AUTHORIZATION ivy",
    "SET LOCAL session_authorization TO ivy", "SET ROLE ivy", "SET role = 'ivy'", "SET \"session_authorization\" = ivy",
    "SET dpsql.analyst = 'ivy'", "SET dpsql.user = 'ivy'", "SET dpsql.ledger.book = '/tmp/elsewhere.sqlite'",
    "RESET ALL", "RESET session_authorization", "DISCARD ALL", "RESET dpsql.all", "RESET dpsql.rho",
    "SELECT set_config('session_authorization', 'ivy', false)", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
])
def test_no_statement_changes_the_analyst_or_resets_the_budget(srv, statement):
    ida, ivy = new_user(srv, f"ida{zlib.crc32(statement.encode())}"), new_user(srv, "ivy")
    with srv.connect(ida) as conn:
        conn.execute(BY_STATE).fetchall()
        for prepare in (False, True):  # the simple and the extended protocol
            try:
                conn.execute(statement, prepare=prepare)
            except psycopg.Error as exc:
                identity = any(w in statement.lower() for w in ("authorization", "role")) and "set_config" not in statement
                assert not identity or exc.diag.sqlstate == "42501", (statement, exc.diag.sqlstate)
            notices = _receipts(conn)
            conn.execute("SET dpsql.reuse = off")  # a fresh, charged release each time (pipeline/reuse.py)
            conn.execute(BY_STATE).fetchall()
            assert conn.execute("SHOW session_authorization").fetchone() == (ida,)
        assert "budget spent 0.3 of 10" in notices[-1]
    assert [a for a, _ in srv.charges(ida)] == [ida] * 3 and srv.charges(ivy) == []
    assert not (srv.workdir / "elsewhere.sqlite").exists()


def test_startup_parameters_cannot_choose_the_analyst_or_the_ledger(srv, tmp_path):
    user = new_user(srv, "ines")
    new_user(srv, "ivo")
    other_db = tmp_path / "other.duckdb"
    with pytest.raises(psycopg.OperationalError, match="DP119"):  # dpsql's options are applied, and no analyst is one
        srv.connect(user, options="-c dpsql.analyst=ivo")
    for params in ({"options": "-c session_authorization=ivo -c role=ivo"},
                   {"dbname": "ivo"}, {"dbname": str(other_db)}, {"dbname": str(tmp_path / "ivo.ledger.sqlite")},
                   {"application_name": "ivo"}):
        with srv.connect(user, **params) as conn:
            conn.execute("SET dpsql.reuse = off")  # a fresh, charged release each time (pipeline/reuse.py)
            conn.execute(BY_STATE).fetchall()
            assert conn.execute("SHOW session_authorization").fetchone() == (user,)
    with srv.raw() as raw:  # parameters libpq would not send
        raw.login(user, "pw-ines", session_authorization="ivo", role="ivo", **{"dpsql.analyst": "ivo"})
        assert not errors_in(raw.query("SET dpsql.reuse = off"))
        assert not errors_in(raw.query(BY_STATE))
    assert len(srv.charges(user)) == 6 and srv.charges("ivo") == []
    assert list(tmp_path.iterdir()) == []  # no file appeared where a client pointed


@pytest.mark.parametrize("login", ["ivo", "INES", "ines ", " ines", "ines\t"])
def test_another_name_with_a_password_is_refused(srv, login):
    new_user(srv, "ines")
    new_user(srv, "ivo")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        srv.connect(login, password="pw-ines")


# ---------------------------------------------------------------------------- the budget wall
def test_fifty_clients_racing_for_a_small_budget_never_overspend_it(start_server, demo_files, tmp_path):
    """A budget of exactly ten answers (total rho 0.5, 0.05 a query) and 50 connections of one
    analyst over two server processes sharing one ledger, all firing at once: exactly ten
    answers, every other query refused with a budget code, and the ledger at 0.5. Another
    analyst on the same servers still has the whole budget."""
    policy = policy_with_budget(demo_files[1], tmp_path / "small.policy.toml", total_rho="0.5", default_rho="0.05")
    one = start_server(users=(), policy=policy)
    two = start_server(users=(), policy=policy, state=one.state)
    for name in ("racer", "calm"):  # one user file for both
        new_user(one, name)
    two.passwords.update(one.passwords)
    go = threading.Barrier(50, timeout=120)
    outcomes: list[tuple[str, str]] = []

    def fire(server: DpsqlServer) -> None:
        # each query a fresh, charged release (pipeline/reuse.py): the race is for the budget
        with server.connect("racer", options="-c dpsql.reuse=off") as conn:  # the logins overlap; the queries start together
            go.wait()
            for _ in range(2):
                try:
                    outcomes.append(("answer", str(len(conn.execute(BY_STATE).fetchall()))))
                except psycopg.Error as exc:
                    outcomes.append((exc.diag.sqlstate or "", exc.diag.message_primary or ""))

    threads = [threading.Thread(target=fire, args=(one if i % 2 else two,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    answers = [o for o in outcomes if o[0] == "answer"]
    refusals = [o for o in outcomes if o[0] != "answer"]
    assert len(outcomes) == 100
    assert answers == [("answer", "51")] * 10
    assert all(code == "53400" and message.startswith("DP30") for code, message in refusals), set(refusals)
    assert one.spent("racer") == Fraction(1, 2) and len(one.charges("racer")) == 10
    one.check_ledger()
    for server in (one, two):
        with server.connect("calm", options="-c dpsql.reuse=off") as conn:  # two fresh releases, not one reused
            assert len(conn.execute(BY_STATE).fetchall()) == 51
    assert one.spent("calm") == Fraction(1, 10)


# ---------------------------------------------------------------------------- the shared fixture
def test_the_shared_fixture_serves_the_demo_to_its_users(dpsql_server):
    """tests/server_harness.py's ``dpsql_server``, as other server tests use it."""
    with dpsql_server.connect("alice") as conn:
        assert len(conn.execute(BY_STATE).fetchall()) == 51
    assert dpsql_server.spent("alice") == Fraction(1, 10) and dpsql_server.charges("bob") == []
    if shutil.which("psql"):
        import subprocess

        out = subprocess.run(["psql", dpsql_server.dsn("bob"), "-AtXc", "SELECT COUNT(*) FROM establishments"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip().lstrip("-").isdigit(), out
        assert dpsql_server.spent("bob") == Fraction(1, 10)
    dpsql_server.check_ledger()


def test_the_catalog_names_no_server_folder(dpsql_server):
    """A client may read duckdb_settings() from the public catalog twin: it shows no path of the
    server (its working folder's temporary directory, its user's home)."""
    out = subprocess.run(["psql", dpsql_server.dsn("alice"), "-AtXc",
                          "SELECT name || '=' || value FROM duckdb_settings() ORDER BY name"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    settings = out.stdout
    assert "secret_directory=" in settings  # the query did read them
    for folder in {str(Path.home()), str(Path.cwd()), str(dpsql_server.workdir), str(dpsql_server.home)} - {"/"}:
        assert folder not in settings, folder
