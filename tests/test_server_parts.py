"""The wire server's parts, each against an independent reference: statement splitting and
routing, parameter numbering, value encodings (psycopg's own binary loaders), the SCRAM
exchange (scramp's client), the user file, per-analyst budgets, and Describe's column types
against the types of the executed answers over the whole accepted grammar corpus."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from scramp import ScramClient

from dpsql.errors import DpsqlError
from dpsql.faces.server import pgtypes
from dpsql.faces.server.scram import ScramError, ScramServer
from dpsql.faces.server.statements import Scans, route, split, to_qmark
from dpsql.faces.server.users import UserStore, UserStoreError
from dpsql.session import Session
from dpsql.testing import seeded_random

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "grammar_tests"))
from corpus import load_cases  # noqa: E402

PRIVATE = {"establishments", "devices", "paper_table1", "paper_table2", "persons"}


def test_split_keeps_semicolons_inside_quotes_comments_and_dollar_strings():
    text = "SELECT 'a;b' AS x; -- c;d\nSELECT \"e;f\" FROM t; /* g; */ SELECT $$h;i$$ ;;"
    assert split(text) == ["SELECT 'a;b' AS x", "-- c;d\nSELECT \"e;f\" FROM t", "/* g; */ SELECT $$h;i$$"]
    assert split(" ; ;") == []


def test_parameters_become_qmarks_in_order_of_appearance():
    assert to_qmark("SELECT $2, '$1', $1 FROM t WHERE x = $10") == ("SELECT ?, '$1', ? FROM t WHERE x = ?", [2, 1, 10])


@pytest.mark.parametrize("sql, way", [
    ("SELECT state, COUNT(*) FROM establishments GROUP BY state", "private"),
    ('SELECT COUNT(*) FROM "Establishments"', "private"),
    ("SELECT COUNT(*) FROM main.establishments", "private"),
    ("WITH x AS (SELECT * FROM devices) SELECT COUNT(*) FROM x", "private"),
    ("SELECT * FROM states", "catalog"),
    ("SELECT relname FROM pg_catalog.pg_class WHERE relname ~ '^(establishments)$'", "catalog"),
    ("SELECT version()", "catalog"),
    ("SET application_name = 'x'", "session"),
    ("SET dpsql.rho = 0.5", "private"),
    ("SHOW dpsql.rho", "private"),
    ("BEGIN", "session"),
    ("CREATE TABLE x (a INT)", "private"),
    ("COPY establishments TO '/tmp/x.csv'", "private"),
    ("EXPLAIN SELECT 1", "private"),
])
def test_routing(sql, way):
    assert route(sql, PRIVATE) == way


def test_a_connections_scans_are_the_scans_of_each_text_and_its_own():
    """The memo of a connection's texts (statements.Scans) gives what each scan gives, each under
    its own kind; it forgets the least recent past KEPT, never keeps a text past LONGEST, and one
    connection's memo is not another's."""
    texts = ["SELECT state, COUNT(*) FROM establishments GROUP BY state; SELECT 1",
             "SELECT * FROM states WHERE x = $2 AND y = $1", "SET dpsql.rho = 0.5", "BEGIN", "SELECT version()"]
    scans, calls = Scans(), []

    def counted(kind, sql, scan):
        return scans.get(kind, sql, lambda: (calls.append((kind, sql)), scan())[1])

    for _ in range(2):
        for sql in texts:
            assert counted("split", sql, lambda: tuple(split(sql))) == tuple(split(sql))
            assert counted("route", sql, lambda: route(sql, PRIVATE)) == route(sql, PRIVATE)
            assert counted("qmark", sql, lambda: to_qmark(sql)) == to_qmark(sql)
    assert len(calls) == 3 * len(texts)  # the second round scanned nothing
    assert Scans().get("route", texts[0], lambda: "fresh") == "fresh"  # another connection's memo
    long_text = "SELECT 1" + " " * Scans.LONGEST
    for _ in range(2):
        counted("split", long_text, lambda: tuple(split(long_text)))
    assert calls.count(("split", long_text)) == 2
    for i in range(Scans.KEPT):
        scans.get("split", f"SELECT {i}", lambda: ())
    assert scans.get("route", texts[0], lambda: "forgotten") == "forgotten"


def test_a_name_in_a_string_does_not_make_a_statement_private():
    """psql's \\d NAME puts the name in a regex literal: that is a catalog query."""
    assert route("SELECT c.oid FROM pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(devices)$'", PRIVATE) == "catalog"


@pytest.mark.parametrize("value, oid, loader", [
    (12345678901, pgtypes.INT8, "int8"), (-7, pgtypes.INT4, "int4"), (3, pgtypes.INT2, "int2"),
    (2.5, pgtypes.FLOAT8, "float8"), (True, pgtypes.BOOL, "bool"), ("Zürich", pgtypes.TEXT, "text"),
    (dt.date(2024, 2, 29), pgtypes.DATE, "date"), (dt.datetime(1999, 12, 31, 23, 59, 58, 123456), pgtypes.TIMESTAMP, "timestamp"),
    (Decimal("-98765432109876543210.0123"), pgtypes.NUMERIC, "numeric"), (Decimal("0.0001"), pgtypes.NUMERIC, "numeric"),
    (Decimal("100000000"), pgtypes.NUMERIC, "numeric"), (Decimal("0"), pgtypes.NUMERIC, "numeric"),
])
def test_binary_values_read_back_by_psycopg(value, oid, loader):
    """The binary encodings, read by psycopg's own loaders (an independent implementation)."""
    from psycopg import adapters
    from psycopg.pq import Format

    load = adapters.get_loader(adapters.types[loader].oid, Format.BINARY)(adapters.types[loader].oid)
    assert load.load(pgtypes.encode(value, oid, binary=True)) == value
    text = adapters.get_loader(adapters.types[loader].oid, Format.TEXT)(adapters.types[loader].oid)
    assert text.load(pgtypes.encode(value, oid, binary=False)) == value


def _data_rows_read(data: bytes) -> list[list[bytes | None]]:
    """DataRow messages read as the protocol's chapter 55 lays them out, written here apart from
    the server's code: 'D', length (itself included), a 16-bit count, each value's 32-bit length
    (-1: NULL) and bytes."""
    rows, at = [], 0
    while at < len(data):
        assert data[at:at + 1] == b"D"
        end = at + 1 + int.from_bytes(data[at + 1:at + 5], "big")
        count, at = int.from_bytes(data[at + 5:at + 7], "big"), at + 7
        row: list[bytes | None] = []
        for _ in range(count):
            n, at = int.from_bytes(data[at:at + 4], "big", signed=True), at + 4
            row.append(None if n == -1 else data[at:at + n])
            at += max(n, 0)
        assert at == end
        rows.append(row)
    return rows


def test_answer_rows_are_data_rows_psycopg_reads_back():
    """The rows of an answer in one pass (text and binary columns, the cells every answer has —
    text, whole numbers, floats — and the rarer ones: a float in an integer column, NaN, ±inf,
    NULL, booleans, decimals), read by psycopg's own loaders."""
    from psycopg import adapters
    from psycopg.pq import Format

    oids = [pgtypes.TEXT, pgtypes.INT8, pgtypes.FLOAT8, pgtypes.INT8, pgtypes.FLOAT8, pgtypes.BOOL, pgtypes.NUMERIC,
            pgtypes.FLOAT8]
    loaders = ["text", "int8", "float8", "int8", "float8", "bool", "numeric", "float8"]
    rows = [("Zürich", 12345678901, 0.1, 3.0, float("nan"), True, Decimal("-1.50"), 2.5),
            ("", -7, -1e300, None, float("inf"), False, None, float("-inf")),
            (None, 0, 12.0, -2.0, None, None, Decimal("0"), 1e-7)]
    for formats in ([0] * 8, [1] * 8, [0, 1, 0, 1, 1, 0, 1, 0]):
        got = _data_rows_read(pgtypes.data_rows(rows, oids, formats))
        assert len(got) == len(rows)
        for row, cells in zip(rows, got):
            for value, cell, name, fmt in zip(row, cells, loaders, formats):
                if value is None:
                    assert cell is None
                    continue
                oid = adapters.types[name].oid
                back = adapters.get_loader(oid, Format.BINARY if fmt else Format.TEXT)(oid).load(cell)
                assert back == value or (value != value and back != back), (value, cell, fmt)


def test_parameters_are_read_by_their_type():
    assert pgtypes.decode(b"42", pgtypes.INT4, False) == 42
    assert pgtypes.decode((42).to_bytes(8, "big"), pgtypes.INT8, True) == 42
    assert pgtypes.decode(b"CA", pgtypes.TEXT, False) == "CA"
    assert pgtypes.decode(None, pgtypes.TEXT, False) is None
    with pytest.raises(pgtypes.ParameterError):
        pgtypes.decode(b"4x", pgtypes.INT4, False)


def _exchange(server: ScramServer, user: str, password: str) -> str:
    client = ScramClient(["SCRAM-SHA-256"], user, password)
    first = client.get_client_first().replace(f"n={user}", "n=", 1)  # libpq sends an empty name
    client.set_server_first(server.first(first))
    # The client signs what it sent; rebuild its bare message as sent (empty name).
    client.client_first_bare = client.client_first_bare.replace(f"n={user}", "n=", 1)
    final = client.get_client_final()
    server_final = server.final(final)
    client.set_server_final(server_final)  # the client checks the server's signature
    return server_final


def test_scram_accepts_the_password_and_proves_the_server(tmp_path):
    store = UserStore(tmp_path)
    store.add("alice", "correct horse")
    assert _exchange(ScramServer(*store.auth_info("alice", b"k")), "alice", "correct horse").startswith("v=")


def test_scram_refuses_a_wrong_password_and_an_unknown_user_alike(tmp_path):
    store = UserStore(tmp_path)
    store.add("alice", "correct horse")
    with pytest.raises(ScramError):
        _exchange(ScramServer(*store.auth_info("alice", b"k")), "alice", "battery staple")
    with pytest.raises(ScramError):
        _exchange(ScramServer(*store.auth_info("mallory", b"k")), "mallory", "anything")
    # The made-up verifier of an unknown user is stable (same salt every time: no enumeration).
    assert store.auth_info("mallory", b"k")[0] == store.auth_info("mallory", b"k")[0]


def test_user_file_holds_no_password_and_only_its_owner_reads_it(tmp_path):
    store = UserStore(tmp_path / "state")
    store.add("alice", "s3cret-pass")
    text = store.path.read_text()
    assert "s3cret-pass" not in text and "SCRAM-SHA-256$4096:" in text
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    with pytest.raises(UserStoreError, match="exists"):
        store.add("alice", "other")
    store.add("alice", "other", replace=True)
    assert store.names() == ["alice"]
    store.remove("alice")
    assert store.names() == []
    with pytest.raises(UserStoreError):
        store.add("bad name;", "x")
    assert not list((tmp_path / "state").glob(".users.*"))  # no temporary file left behind


def test_the_policy_gives_an_analyst_their_own_walls(demo_files, tmp_path):
    policy = tmp_path / "demo.policy.toml"
    policy.write_text(Path(demo_files[1]).read_text().replace(
        "[noise]", "[budget.analysts]\nalice = { total_rho = 0.25 }\n\n[noise]"))
    ledger = tmp_path / "ledger.sqlite"
    alice = Session(demo_files[0], policy, analyst="alice", ledger=ledger, random_source=seeded_random(1))
    bob = Session(demo_files[0], policy, analyst="bob", ledger=ledger, random_source=seeded_random(2))
    try:
        assert alice.ledger.total_rho == Fraction(1, 4) and bob.ledger.total_rho == Fraction(10)
        q = "SELECT state, COUNT(*) FROM establishments GROUP BY state"
        alice.execute(q, rho=0.2)
        with pytest.raises(DpsqlError) as err:
            alice.execute(q, rho=0.1)
        assert err.value.code.startswith("DP3")
        bob.execute(q, rho=0.2)  # bob's wall is the default
        assert ledger.exists() and not (tmp_path / "demo.policy.ledger.sqlite").exists()
    finally:
        alice.close()
        bob.close()


@pytest.fixture(scope="module")
def corpus_session(demo_files, tmp_path_factory):
    policy = tmp_path_factory.mktemp("describe") / "demo.policy.toml"
    shutil.copyfile(demo_files[1], policy)
    text = policy.read_text().replace("total_rho = 10.0", "total_rho = 100000.0")
    policy.write_text(text)
    s = Session(demo_files[0], policy, random_source=seeded_random(7))
    yield s
    s.close()


# Queries of public tables only are answered exactly before the pipeline (intercept.public_tables;
# on the wire, by the catalog twin), so Session.describe is not their Describe.
ACCEPTED = [c for c in load_cases() if c.expected is not None and "?" not in c.sql
            and not c.file.startswith("public_tables")]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_describe_announces_the_types_the_answer_has(corpus_session, case):
    """A wire client decodes rows by the types Describe announced (asyncpg in binary), so they
    must be the executed answer's wire types, for every accepted query of the corpus. (An
    all-NULL key column executes as DuckDB's NULL type where Describe says VARCHAR: both are
    text on the wire.)"""
    names, types = corpus_session.describe(case.sql)
    result = corpus_session.execute(case.sql, rho=0.01)
    assert names == list(result.columns), case.id
    assert [pgtypes.oid_of(t) for t in types] == [pgtypes.oid_of(t) for t in result.types], (case.id, types, result.types)
