"""A large released answer is kept in the compact stored form (issue 34, dpsql/pipeline/stored.py)
and reused exactly as released; a stored answer that is not exactly what the writer writes is
never shown: the statement is released afresh and charged, without an error.

Oracles: the rows, types, σ and margins of the first (charged) release, and a second reader of
the stored bytes written here with ``struct`` and ``json`` from the format's description (not the
reader under test); "charged" is the ledger's own list of charges."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path
from typing import Any

import duckdb
import pytest

import dpsql
from dpsql.ledger.book import ledger_path
from dpsql.pipeline import stored
from dpsql.testing import seeded_random

POLICY = """
[budget]
default_rho = 0.5
total_rho = 1e15
total_delta = 0.5
[selection]
epsilon = 1
delta = 1e-5
[tables.t]
privacy_unit = "id"
[tables.t.measures]
v = {{ threshold = 100 }}
lat = {{ threshold = 50, granularity = 0.1 }}
[tables.t.keys]
kpub = {{ keyset = {keyset} }}
kpriv = {{}}
ktext = {{}}
"""
CELLS = 1500  # public cells: at least stored.LARGE

QUERIES = {
    "public keyset, integer and float values": "SELECT kpub, COUNT(*) AS n, SUM(v) AS s, SUM(lat) AS l FROM t GROUP BY kpub",
    "selection on an integer key": "SELECT kpriv, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY kpriv",
    "selection on a text key (kept as JSON)": "SELECT ktext, COUNT(*) AS n FROM t GROUP BY ktext",
    "a finish through DuckDB (ORDER BY a noisy value)": "SELECT kpub, COUNT(*) AS n FROM t GROUP BY kpub ORDER BY n DESC LIMIT 1200",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("stored")
    db, policy = d / "s.duckdb", d / "s.policy.toml"
    con = duckdb.connect(str(db))
    con.execute(f"""CREATE TABLE t AS SELECT i AS id,
                    CAST(HASH(i, 1) % {CELLS} AS BIGINT) AS kpub,
                    CAST(i // 20 AS BIGINT) AS kpriv,
                    'g' || CAST(i // 20 AS VARCHAR) AS ktext,
                    CAST(HASH(i, 2) % 200 AS BIGINT) AS v,
                    CAST(HASH(i, 3) % 500 AS DOUBLE) / 10 AS lat
                    FROM range(30000) r(i)""")  # 1,500 private groups of 20 units: nearly all kept
    for c in ("kpub", "kpriv", "ktext"):
        con.execute(f"ALTER TABLE t ALTER COLUMN {c} SET NOT NULL")
    con.close()
    policy.write_text(POLICY.format(keyset=list(range(CELLS))))
    return db, policy


@pytest.fixture()
def con(files: tuple[Path, Path], tmp_path: Path) -> Any:
    policy = tmp_path / "s.policy.toml"  # a ledger of its own beside it
    policy.write_text(files[1].read_text())
    c = dpsql.connect(str(files[0]), str(policy), _random_source=seeded_random(7))
    yield c
    c.close()


def _blob(con: Any, charge_id: int) -> Any:
    with sqlite3.connect(ledger_path(con.session.policy)) as db:
        (blob,), = db.execute("SELECT answer FROM answers WHERE charge_id = ?", (charge_id,)).fetchall()
    return blob


def _put(con: Any, charge_id: int, blob: bytes) -> None:
    with sqlite3.connect(ledger_path(con.session.policy)) as db:
        db.execute("UPDATE answers SET answer = ? WHERE charge_id = ?", (blob, charge_id))


def _read(blob: bytes) -> dict[str, list[Any]]:
    """The cells of a stored answer, read from the format's description with struct and json."""
    assert blob[:11] == b"dpsql-cells"
    start = blob.index(b"\x00v1\x00") + 4
    (size,) = struct.unpack("<Q", blob[start:start + 8])
    header = json.loads(blob[start + 8:start + 8 + size].decode())
    at, out = start + 8 + size, {}
    for name, col in header["cells"].items():
        if col[0] != "bytes":
            values = col[2] if col[0] == "array" else col[1]
            out[name] = [values["repeat"]] * values["n"] if isinstance(values, dict) else values
            continue
        _, form, dtype, n, how, *words = col
        if how == "range":
            out[name] = list(range(n))
        elif how is not None:
            out[name] = [how] * n
        else:
            code = {"<i2": "h", "<i4": "i", "<i8": "q", "<f8": "d"}[words[0]]
            out[name] = list(struct.unpack_from(f"<{n}{code}", blob, at))
            at += struct.calcsize(code) * n
    assert at == len(blob)
    return out


def _typed(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple((type(v), v) for v in r) for r in rows]


@pytest.mark.parametrize("sql", list(QUERIES.values()), ids=list(QUERIES))
def test_a_large_answer_is_stored_compactly_and_reused_exactly(con, sql):
    first = con.execute(sql)
    rows = first.fetchall()
    charge = first.receipt.charge_id
    assert charge is not None and len(rows) >= 1000
    blob = _blob(con, charge)
    assert isinstance(blob, bytes) and blob.startswith(stored.MAGIC)  # not JSON text
    cells = _read(blob)
    if "ORDER BY" not in sql:  # a projection: the rows are the cells, in order
        assert [r[0] for r in rows] == cells[next(iter(cells))]
        assert [r[1] for r in rows] == cells["__p0"]
        if " l " in sql + " ":
            assert [r[3] for r in rows] == cells["__p2"]
            assert all(type(r[3]) is float for r in rows)
    again = con.execute(sql)
    assert again.receipt.rho == 0 and len(con.session.ledger.charges) == 1
    assert _typed(again.fetchall()) == _typed(rows)
    for name, e in first.receipt.columns.items():
        got = again.receipt.columns[name]
        assert got.sigma == e.sigma and got.moe95 == e.moe95 and len(got.sigma) == len(rows)


def _header(blob: bytes) -> tuple[dict[str, Any], bytes]:
    start = len(stored.MAGIC)
    (size,) = struct.unpack("<Q", blob[start:start + 8])
    return json.loads(blob[start + 8:start + 8 + size]), blob[start + 8 + size:]


def _with_header(doc: dict[str, Any], words: bytes) -> bytes:
    text = json.dumps(doc).encode()
    return stored.MAGIC + struct.pack("<Q", len(text)) + text + words


def _edit(change: Any) -> Any:
    def tamper(blob: bytes) -> bytes:
        doc, words = _header(blob)
        cols = doc["cells"]
        words = change(cols, words) or words
        return _with_header(doc, words)
    return tamper


def _shorter_column(cols: dict[str, Any], words: bytes) -> bytes:
    """The first column stored as words loses its last cell (and its word): one column shorter."""
    offset = 0
    for col in cols.values():
        if col[0] == "bytes" and col[4] is None:
            width = int(col[5][2:])
            col[3] -= 1
            offset += width * col[3]
            return words[:offset] + words[offset + width:]
        if col[0] == "bytes":
            continue
    raise AssertionError("no column of words")


def _first(cols: dict[str, Any], pick: Any) -> list[Any]:
    return next(c for c in cols.values() if c[0] == "bytes" and pick(c))


TAMPERED = {
    "a byte less": lambda b: b[:-1],
    "a byte more": lambda b: b + b"\x00",
    "another magic": lambda b: b"x" + b[1:],
    "header past the end": lambda b: b[:len(stored.MAGIC)] + struct.pack("<Q", len(b)) + b[len(stored.MAGIC) + 8:],
    "an object dtype": _edit(lambda cols, w: _first(cols, lambda c: c[4] is None).__setitem__(2, "|O")),
    "a 4-byte dtype": _edit(lambda cols, w: _first(cols, lambda c: c[4] is None).__setitem__(2, "<i4")),
    "words of another type": _edit(lambda cols, w: _first(cols, lambda c: c[4] is None).__setitem__(5, "<u2")),
    "words wider than the column": _edit(
        lambda cols, w: _first(cols, lambda c: c[4] is None and c[2] == "<f8").__setitem__(5, "<i8")),
    "one column shorter": _edit(_shorter_column),
    "a repeated float in an integer column": _edit(
        lambda cols, w: cols.__setitem__("__row", ["bytes", "array", "<i8", cols["__row"][3], 1.5])),
    "a count past the bytes": _edit(lambda cols, w: _first(cols, lambda c: c[4] is None).__setitem__(3, 10**12)),
    "a negative count": _edit(lambda cols, w: _first(cols, lambda c: c[4] is None).__setitem__(3, -1)),
    "a range past the largest answer": _edit(
        lambda cols, w: cols.__setitem__("__row", ["bytes", "array", "<i8", 10**13, "range"])),
}


@pytest.mark.parametrize("tamper", list(TAMPERED.values()), ids=list(TAMPERED))
def test_a_tampered_stored_answer_is_released_afresh(con, tamper):
    sql = QUERIES["public keyset, integer and float values"]
    first = con.execute(sql)
    rows = first.fetchall()
    charge = first.receipt.charge_id
    blob = tamper(_blob(con, charge))
    _put(con, charge, blob)
    if tamper is not TAMPERED["one column shorter"]:  # that one is whole bytes; reuse.reused refuses it
        with pytest.raises(ValueError):
            stored.unpack(blob)
    again = con.execute(sql)  # no exception: a fresh release, charged
    fresh = again.fetchall()
    assert again.receipt.rho > 0 and len(con.session.ledger.charges) == 2
    assert len(fresh) == len(rows) and fresh != rows


@pytest.mark.parametrize("lo,hi", [(-2**15, 2**15 - 1), (-2**15 - 1, 0), (0, 2**31 - 1), (0, 2**31), (-2**63, 2**63 - 1)])
def test_integer_columns_come_back_exactly_at_every_width(lo, hi):
    import numpy as np

    values = np.array([lo, hi, lo + 1, hi - 1, 0 if lo <= 0 <= hi else lo] * 300, dtype=np.int64)
    as_list = [int(x) for x in values]
    payload: list[bytes] = []
    doc = {"cells": {"a": stored.column(values, payload), "k": stored.column(as_list, payload)}}
    got_doc, got = stored.unpack(stored.pack(doc, payload))
    assert got["a"].dtype == np.int64 and got["a"].tolist() == as_list
    assert got["k"] == as_list and all(type(x) is int for x in got["k"])
    width = {(-2**15, 2**15 - 1): 2, (-2**15 - 1, 0): 4, (0, 2**31 - 1): 4}.get((lo, hi), 8)
    assert got_doc["cells"]["a"][5] == f"<i{width}"  # the narrowest words that hold the column


def test_a_small_answers_forged_repeat_count_is_released_afresh(con):
    sql = "SELECT COUNT(*) AS n FROM t"  # one cell: JSON text, its σ stored as one value repeated
    first = con.execute(sql)
    first.fetchall()
    charge = first.receipt.charge_id
    doc = json.loads(_blob(con, charge))
    doc["cells"]["__row"] = ["array", "int64", {"repeat": 1, "n": 10**13}]
    with sqlite3.connect(ledger_path(con.session.policy)) as db:
        db.execute("UPDATE answers SET answer = ? WHERE charge_id = ?", (json.dumps(doc), charge))
    again = con.execute(sql)  # no MemoryError: a fresh release, charged
    assert len(again.fetchall()) == 1 and again.receipt.rho > 0 and len(con.session.ledger.charges) == 2
