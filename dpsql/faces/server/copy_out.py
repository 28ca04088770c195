"""``COPY (SELECT …) TO STDOUT``: how psql's ``\\copy (SELECT …) TO 'f.csv' CSV HEADER`` reaches a
server. The inner SELECT is answered as any statement (the private pipeline, charged once, or the
public catalog, free); its rows then travel in PostgreSQL's COPY-out messages (CopyOutResponse,
one CopyData a row, CopyDone), in the text or CSV format. Only those two formats and HEADER are
read; any other COPY option (a delimiter, a NULL string, binary) is refused before the query runs,
never guessed. Other COPY forms stay refused by the pipeline (DP102)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from dpsql.faces.server import pgtypes, wire
from dpsql.faces.server.answers import StatementError

_COPY_OUT = re.compile(r"^\s*COPY\s*\((?P<query>.*)\)\s*TO\s+STDOUT\b(?P<options>.*?)\s*;?\s*$", re.I | re.S)
_QUERY = re.compile(r"^\s*\(*\s*(SELECT|WITH)\b", re.I)
_WORDS = {"WITH", "FORMAT", "CSV", "TEXT", "HEADER", "TRUE", "ON", "1", "FALSE", "OFF", "0"}


@dataclass(frozen=True)
class CopyOut:
    query: str
    csv: bool
    header: bool


def parse(sql: str) -> CopyOut | None:
    """The COPY-out request ``sql`` makes, or None when it is not ``COPY (…) TO STDOUT``;
    StatementError (0A000) for what dpsql does not read: an option, or a statement that is not a
    query (so the answer always has rows to copy)."""
    m = _COPY_OUT.match(sql)
    if m is None:
        return None
    if not _QUERY.match(m.group("query")):
        raise StatementError("0A000", "COPY (...) TO STDOUT copies the rows of a SELECT")
    words = re.findall(r"[A-Za-z_0-9]+|\S", m.group("options"))
    bad = [w for w in words if w not in "(),=" and w.upper() not in _WORDS]
    if bad:
        raise StatementError("0A000", f"COPY option {bad[0]!r} is not supported: dpsql writes text or CSV, with HEADER")
    upper = [w.upper() for w in words]
    csv = "CSV" in upper
    header = "HEADER" in upper and not any(upper[i + 1] in ("FALSE", "OFF", "0")
                                           for i, w in enumerate(upper[:-1]) if w == "HEADER")
    if header and not csv:
        raise StatementError("0A000", "COPY HEADER is available only in CSV mode (as in PostgreSQL)")
    return CopyOut(m.group("query"), csv, header)


def _text_field(value: bytes | None) -> bytes:
    if value is None:
        return b"\\N"
    return value.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n").replace(b"\r", b"\\r")


def _csv_field(value: bytes | None) -> bytes:
    if value is None:
        return b""
    if value == b"" or any(c in value for c in (b",", b'"', b"\n", b"\r")):
        return b'"' + value.replace(b'"', b'""') + b'"'
    return value


def messages(request: CopyOut, columns: list[str], types: list[str], rows: list[tuple[Any, ...]]) -> list[bytes]:
    """CopyOutResponse, the rows as CopyData, CopyDone and the command tag ``COPY n``."""
    oids = [pgtypes.oid_of(t) for t in types]
    field, sep = (_csv_field, b",") if request.csv else (_text_field, b"\t")
    out = [wire.message(b"H", struct.pack("!bh", 0, len(columns)) + struct.pack(f"!{len(columns)}h", *[0] * len(columns)))]
    if request.header:
        out.append(wire.message(b"d", sep.join(field(c.encode("utf-8")) for c in columns) + b"\n"))
    out += [wire.message(b"d", sep.join(field(pgtypes.encode(v, o, False)) for v, o in zip(row, oids)) + b"\n")
            for row in rows]
    return out + [wire.message(b"c"), wire.command_complete(f"COPY {len(rows)}")]
