"""The PostgreSQL frontend/backend protocol, version 3.0: reading and writing its messages.

Only framing and encoding live here (what the bytes are), never what a message means to dpsql
(:mod:`dpsql.faces.server.connection`). The subset is the one a server needs: the startup
packets (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest), the typed frontend messages
and every backend message dpsql sends. Reference: PostgreSQL's "Frontend/Backend Protocol",
chapter 55 ("Message Formats"). docs/server.md says why this is a small codec of our own
rather than a library.

Every length is checked before anything is read or allocated: a message longer than
:data:`MAX_MESSAGE`, a length field below its minimum, or a payload that ends inside a field
raises :class:`ProtocolViolation`, and the connection is closed with a clean error.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable

PROTOCOL_3 = 196608  # 3.0
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

#: The longest frontend message accepted (a query text, a Bind with its parameters).
MAX_MESSAGE = 4 * 1024 * 1024
MAX_STARTUP = 10_000


class ProtocolViolation(Exception):
    """The client broke the protocol (SQLSTATE 08P01): the connection is closed."""


class Payload:
    """A cursor over one message's payload; every read checks the bounds."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolViolation("a message ended inside one of its fields")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack("!h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack("!i", self._take(4))[0]

    def byte(self) -> bytes:
        return self._take(1)

    def bytes(self, n: int) -> bytes:
        return self._take(n)

    def rest(self) -> bytes:
        return self._take(len(self.data) - self.pos)

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolViolation("a string field is not terminated")
        raw = self.data[self.pos:end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolViolation("a string field is not valid UTF-8") from None

    def value(self) -> bytes | None:
        """A length-prefixed value (-1: NULL), as in Bind."""
        n = self.int32()
        return None if n == -1 else self._take(n)

    def done(self) -> None:
        if self.pos != len(self.data):
            raise ProtocolViolation("a message has bytes after its last field")


async def read_startup(reader: asyncio.StreamReader) -> tuple[int, Payload]:
    """The first packet of a connection (no type byte): (request code, rest of the payload)."""
    head = await reader.readexactly(4)
    (length,) = struct.unpack("!i", head)
    if length < 8 or length > MAX_STARTUP:
        raise ProtocolViolation(f"invalid startup packet length {length}")
    body = Payload(await reader.readexactly(length - 4))
    return body.int32(), body


def startup_parameters(body: Payload) -> dict[str, str]:
    """The name/value pairs of a StartupMessage, after its protocol version."""
    params: dict[str, str] = {}
    while True:
        name = body.cstring()
        if not name:
            return params
        params[name] = body.cstring()


async def read_message(reader: asyncio.StreamReader) -> tuple[bytes, Payload]:
    """One typed frontend message: (type byte, payload)."""
    head = await reader.readexactly(5)
    kind, length = head[:1], struct.unpack("!i", head[1:])[0]
    if length < 4 or length - 4 > MAX_MESSAGE:
        raise ProtocolViolation(f"invalid length {length} of a message of type {kind!r}")
    return kind, Payload(await reader.readexactly(length - 4))


def buffered(reader: asyncio.StreamReader) -> bool:
    """Whether a whole message already waits in ``reader``'s buffer (a client sends a query's
    Parse, Bind, Describe, Execute and Sync at once): reading it cannot block."""
    buf = getattr(reader, "_buffer", None)
    return buf is not None and len(buf) >= 5 and len(buf) >= 1 + int.from_bytes(buf[1:5], "big")


# ---------------------------------------------------------------------------- backend messages
def message(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode("utf-8").replace(b"\0", b"") + b"\0"


def auth_ok() -> bytes:
    return message(b"R", struct.pack("!i", 0))


def auth_sasl(mechanisms: Iterable[str]) -> bytes:
    return message(b"R", struct.pack("!i", 10) + b"".join(cstr(m) for m in mechanisms) + b"\0")


def auth_sasl_continue(data: bytes) -> bytes:
    return message(b"R", struct.pack("!i", 11) + data)


def auth_sasl_final(data: bytes) -> bytes:
    return message(b"R", struct.pack("!i", 12) + data)


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", cstr(name) + cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return message(b"K", struct.pack("!ii", pid, secret))


def ready_for_query(status: str) -> bytes:
    return message(b"Z", status.encode("ascii"))


def row_description(fields: Iterable[tuple[str, int, int, int]]) -> bytes:
    """fields: (name, type oid, type size, format code) per column."""
    fields = list(fields)
    body = struct.pack("!h", len(fields))
    for name, oid, size, fmt in fields:
        body += cstr(name) + struct.pack("!ihihih", 0, 0, oid, size, -1, fmt)
    return message(b"T", body)


def command_complete(tag: str) -> bytes:
    return message(b"C", cstr(tag))


def _fields(fields: dict[str, str]) -> bytes:
    return b"".join(code.encode("ascii") + cstr(value) for code, value in fields.items() if value) + b"\0"


def error_response(fields: dict[str, str]) -> bytes:
    """fields by PostgreSQL's one-letter codes: S severity, V (untranslated), C SQLSTATE, M
    message, D detail, H hint, P position (1-based, characters)."""
    return message(b"E", _fields(fields))


def notice_response(fields: dict[str, str]) -> bytes:
    return message(b"N", _fields(fields))


def parameter_description(oids: Iterable[int]) -> bytes:
    oids = list(oids)
    return message(b"t", struct.pack("!h", len(oids)) + b"".join(struct.pack("!i", o) for o in oids))


PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
PORTAL_SUSPENDED = message(b"s")
EMPTY_QUERY = message(b"I")
