"""Values between DuckDB's types and PostgreSQL's wire formats.

A result column's DuckDB type name becomes a PostgreSQL type OID (what RowDescription
announces), each value is written in the text format (what psql and JDBC read) or the binary
one (what asyncpg asks for), and parameter values sent by a client are read back into Python
values by their type OID and format. Formats: PostgreSQL's ``*send``/``*recv`` functions
(src/backend/utils/adt), summarised in docs/server.md.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Iterable, Sequence
from decimal import Decimal, localcontext
from typing import Any

from dpsql.faces.server.wire import ProtocolViolation

BOOL, BYTEA, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 19, 20, 21, 23, 25, 26
FLOAT4, FLOAT8, UNKNOWN, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, NUMERIC = 700, 701, 705, 1043, 1082, 1083, 1114, 1184, 1700

#: type oid -> its size on the wire (RowDescription's typlen; -1: variable)
SIZES = {BOOL: 1, INT2: 2, INT4: 4, INT8: 8, OID: 4, FLOAT4: 4, FLOAT8: 8, DATE: 4, TIME: 8, TIMESTAMP: 8,
         TIMESTAMPTZ: 8, NAME: 64}
NAMES = {BOOL: "boolean", BYTEA: "bytea", NAME: "name", INT8: "bigint", INT2: "smallint", INT4: "integer",
         TEXT: "text", OID: "oid", FLOAT4: "real", FLOAT8: "double precision", VARCHAR: "character varying",
         DATE: "date", TIME: "time", TIMESTAMP: "timestamp", TIMESTAMPTZ: "timestamptz", NUMERIC: "numeric",
         UNKNOWN: "unknown"}

_BY_DUCKDB = {
    "BOOLEAN": BOOL, "TINYINT": INT2, "SMALLINT": INT2, "UTINYINT": INT2, "INTEGER": INT4, "USMALLINT": INT4,
    "BIGINT": INT8, "UINTEGER": INT8, "UBIGINT": NUMERIC, "HUGEINT": NUMERIC, "UHUGEINT": NUMERIC,
    "FLOAT": FLOAT4, "REAL": FLOAT4, "DOUBLE": FLOAT8, "VARCHAR": TEXT, "DATE": DATE, "TIME": TIME,
    "TIMESTAMP": TIMESTAMP, "TIMESTAMP WITH TIME ZONE": TIMESTAMPTZ, "BLOB": BYTEA, "UUID": TEXT,
    "OID": OID,  # not a DuckDB type: the catalog's name for its UINTEGER OID columns (answers.py)
}
_EPOCH = dt.date(2000, 1, 1)
_EPOCH_TS = dt.datetime(2000, 1, 1)


#: element type oid -> its array type oid (a DuckDB list of these is announced as the array)
ARRAYS = {BOOL: 1000, INT2: 1005, INT4: 1007, TEXT: 1009, INT8: 1016, OID: 1028, FLOAT4: 1021, FLOAT8: 1022, NUMERIC: 1231,
          DATE: 1182, TIMESTAMP: 1115, TIMESTAMPTZ: 1185}
ELEMENTS = {array: element for element, array in ARRAYS.items()}  # array type oid -> its element's
_ELEMENT = ELEMENTS


def oid_of(duckdb_type: str) -> int:
    """The PostgreSQL type announced for a DuckDB result type (text for anything unusual)."""
    name = duckdb_type.upper()
    if name.endswith("[]") and "[" not in name[:-2]:  # a one-dimensional list: PostgreSQL's array of it
        return ARRAYS.get(oid_of(name[:-2]), TEXT)
    if name.startswith("DECIMAL") or name.startswith("NUMERIC"):
        return NUMERIC
    return _BY_DUCKDB.get(name, TEXT)


def size_of(oid: int) -> int:
    return SIZES.get(oid, -1)


# ---------------------------------------------------------------------------- results
def encode(value: Any, oid: int, binary: bool) -> bytes | None:
    """One value of a result column of type ``oid``, in the text or binary format."""
    if not binary:  # the usual cells first, as :func:`_text` writes them (every row of every answer)
        kind = type(value)
        if kind is str:
            return value.encode("utf-8")
        if kind is int:
            return str(value).encode("ascii")
        if kind is float and oid not in _INTEGERS and math.isfinite(value):
            return repr(value).encode("ascii")
    if value is None:
        return None
    if binary:
        return _binary(value, oid)
    return _text(value, oid).encode("utf-8")


_INTEGERS = frozenset((INT2, INT4, INT8))


def data_rows(rows: Iterable[Sequence[Any]], oids: list[int], formats: list[int]) -> bytes:
    """The DataRow messages of ``rows`` (columns of types ``oids``, formats 0 text / 1 binary):
    :func:`encode` of each value, in one pass (every row of every answer goes through here)."""
    binary = [f == 1 for f in formats]
    out = []
    for row in rows:
        parts, n = [b""], 0
        for value, oid, b in zip(row, oids, binary):
            n += 1
            kind = type(value)  # the usual text cells inline, exactly as :func:`encode` writes them
            if b or value is None:
                data = encode(value, oid, b)
                if data is None:
                    parts.append(_NULL)
                    continue
            elif kind is str:
                data = value.encode("utf-8")
            elif kind is int:
                data = b"%d" % value
            elif kind is float and oid not in _INTEGERS and math.isfinite(value):
                data = b"%r" % value
            else:
                data = _text(value, oid).encode("utf-8")
            parts += (_INT32(len(data)), data)
        parts[0] = struct.pack("!h", n)
        body = b"".join(parts)
        out += (b"D", _INT32(len(body) + 4), body)
    return b"".join(out)


_INT32 = struct.Struct("!i").pack
_NULL = _INT32(-1)


def _text(value: Any, oid: int) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if oid in (INT2, INT4, INT8) and value.is_integer():
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return "{" + ",".join(_array_item(v) for v in value) + "}"
    return str(value)


def _array_item(value: Any) -> str:
    """One element of PostgreSQL's array text: quoted when it holds a delimiter, NULL unquoted."""
    if value is None:
        return "NULL"
    text = _text(value, TEXT)
    if text == "" or text.upper() == "NULL" or any(c in text for c in ',{}"\\ \t\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _binary(value: Any, oid: int) -> bytes:
    if oid in _ELEMENT and isinstance(value, (list, tuple)):
        return _array_send(value, _ELEMENT[oid])
    if oid == BOOL:
        return b"\x01" if value else b"\x00"
    if oid == INT2:
        return struct.pack("!h", int(value))
    if oid == INT4:
        return struct.pack("!i", int(value))
    if oid == OID:
        return struct.pack("!I", int(value))
    if oid == INT8:
        return struct.pack("!q", int(value))
    if oid == FLOAT4:
        return struct.pack("!f", float(value))
    if oid == FLOAT8:
        return struct.pack("!d", float(value))
    if oid == NUMERIC:
        return _numeric_send(Decimal(value) if not isinstance(value, float) else Decimal(repr(value)))
    if oid == DATE:
        return struct.pack("!i", (value - _EPOCH).days)
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        naive = value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = naive - _EPOCH_TS
        return struct.pack("!q", (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if oid == TIME:
        return struct.pack("!q", ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)
    if oid == BYTEA and isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return _text(value, oid).encode("utf-8")


def _array_send(values: list[Any] | tuple[Any, ...], element: int) -> bytes:
    """PostgreSQL's array_send of a one-dimensional array: dimensions, null flag, element type,
    (length, lower bound 1), then each element as its length and binary value (-1: NULL)."""
    if not values:
        return struct.pack("!iii", 0, 0, element)
    out = [struct.pack("!iiiii", 1, int(any(v is None for v in values)), element, len(values), 1)]
    for v in values:
        if v is None:
            out.append(struct.pack("!i", -1))
        else:
            item = _binary(v, element)
            out.append(struct.pack("!i", len(item)) + item)
    return b"".join(out)


def _numeric_send(d: Decimal) -> bytes:
    """PostgreSQL's numeric_send: base-10000 digits with a weight, a sign and a display scale."""
    if d.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    sign = 0x4000 if d.is_signed() and d != 0 else 0
    exponent = d.as_tuple().exponent
    dscale = max(0, -exponent) if isinstance(exponent, int) else 0
    with localcontext() as ctx:
        ctx.prec = len(d.as_tuple().digits) + abs(exponent if isinstance(exponent, int) else 0) + 8
        whole, _, frac = format(abs(d), "f").partition(".")
    whole = whole.lstrip("0")
    whole = "0" * (-len(whole) % 4) + whole
    frac = frac + "0" * (-len(frac) % 4)
    groups = [int(whole[i:i + 4]) for i in range(0, len(whole), 4)] + [int(frac[i:i + 4]) for i in range(0, len(frac), 4)]
    weight = len(whole) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    return struct.pack("!hhHh", len(groups), weight, sign, dscale) + b"".join(struct.pack("!H", g) for g in groups)


# ---------------------------------------------------------------------------- parameters
def decode(raw: bytes | None, oid: int, binary: bool) -> Any:
    """A parameter value sent by the client, as the Python value dpsql binds (numbers, text,
    booleans; dates and times as ISO text)."""
    if raw is None:
        return None
    if oid in ELEMENTS:
        return _decode_array(raw, ELEMENTS[oid], binary)
    if binary:
        return _decode_binary(raw, oid)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolViolation("a parameter value is not valid UTF-8") from None
    try:
        if oid in (INT2, INT4, INT8, OID):
            return int(text)
        if oid in (FLOAT4, FLOAT8):
            return float(text)
        if oid == NUMERIC:
            number = Decimal(text)
            return _number(number) if "." not in text else float(number)
        if oid == BOOL:
            return text.strip().lower() in ("t", "true", "1", "yes", "on", "y")
    except (ValueError, ArithmeticError):  # ArithmeticError: decimal's InvalidOperation
        raise ParameterError(f"the parameter value {text[:40]!r} is not a valid {NAMES.get(oid, oid)}") from None
    return text


def _decode_array(raw: bytes, element: int, binary: bool) -> list[Any]:
    """A one-dimensional array parameter (array_recv, or the text form ``{1,2}``) as a list."""
    if not binary:
        text = raw.decode("utf-8", "replace").strip()
        if not (text.startswith("{") and text.endswith("}")):
            raise ParameterError(f"the parameter value {text[:40]!r} is not an array")
        items = [i.strip() for i in text[1:-1].split(",")] if text[1:-1].strip() else []
        return [None if i.upper() == "NULL" else decode(i.strip('"').encode("utf-8"), element, False) for i in items]
    try:
        ndim, _, _ = struct.unpack("!iii", raw[:12])
        if ndim == 0:
            return []
        if ndim != 1:
            raise ParameterError("dpsql reads one-dimensional array parameters only")
        count, _ = struct.unpack("!ii", raw[12:20])
        out, at = [], 20
        for _ in range(count):
            (length,) = struct.unpack("!i", raw[at:at + 4])
            at += 4
            out.append(None if length < 0 else _decode_binary(raw[at:at + length], element))
            at += max(length, 0)
        return out
    except struct.error:
        raise ParameterError("a binary array parameter is truncated") from None


class ParameterError(Exception):
    """A parameter value that does not read as its declared type (SQLSTATE 22P02)."""


def _decode_binary(raw: bytes, oid: int) -> Any:
    fmt = {INT2: "!h", INT4: "!i", OID: "!I", INT8: "!q", FLOAT4: "!f", FLOAT8: "!d"}.get(oid)
    try:
        if fmt is not None:
            return struct.unpack(fmt, raw)[0]
        if oid == BOOL:
            return raw != b"\x00"
        if oid == DATE:
            return (_EPOCH + dt.timedelta(days=struct.unpack("!i", raw)[0])).isoformat()
        if oid in (TIMESTAMP, TIMESTAMPTZ):
            return (_EPOCH_TS + dt.timedelta(microseconds=struct.unpack("!q", raw)[0])).isoformat(sep=" ")
        if oid == NUMERIC:
            return _number(_numeric_recv(raw))
    except (struct.error, OverflowError, ValueError):
        raise ParameterError(f"a binary parameter of type {NAMES.get(oid, oid)} is malformed") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolViolation("a parameter value is not valid UTF-8") from None


def _numeric_recv(raw: bytes) -> Decimal:
    """PostgreSQL's numeric_recv: base-10000 digits, a weight, a sign (NaN and ±Infinity too).
    Built from its digit string, in time linear in its length whatever the weight."""
    ndigits, weight, sign, _dscale = struct.unpack("!hhHh", raw[:8])
    special = {0xC000: "NaN", 0xD000: "Infinity", 0xF000: "-Infinity"}
    if sign in special:
        return Decimal(special[sign])
    if sign not in (0, 0x4000) or ndigits < 0 or len(raw) != 8 + 2 * ndigits:
        raise ValueError("a malformed binary numeric")
    groups = struct.unpack(f"!{ndigits}H", raw[8:])
    if any(g > 9999 for g in groups):
        raise ValueError("a binary numeric digit above 9999")
    digits = "".join(f"{g:04d}" for g in groups) or "0"
    return Decimal(f"{'-' if sign == 0x4000 else ''}{digits}E{4 * (weight - ndigits + 1)}")


def _number(d: Decimal) -> int | float:
    """An integral NUMERIC of at most 40 digits as an int (HUGEINT holds 39), any other as a
    float: a parameter never becomes a Python int of a billion digits, which
    ``int(Decimal("1e999999999"))`` would compute for minutes. ValueError for a signalling NaN."""
    if d.is_finite() and d.adjusted() < 40 and d == d.to_integral_value():
        return int(d)
    return float(d)
