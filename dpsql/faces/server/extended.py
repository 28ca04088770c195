"""The extended query protocol of one connection: Parse, Bind, Describe, Execute and Close
(PostgreSQL protocol 3.0, "Extended Query"), which JDBC, psycopg and asyncpg use.

A prepared statement keeps its text and its parameters' type OIDs (those the client left
unspecified inferred from the schema, :mod:`dpsql.faces.server.params`); a portal keeps the
bound values, and the answer once executed, so a portal executed in parts runs once and is
charged once. A Describe plans the statement and charges nothing; the shape it finds is kept
per text on the connection.
:class:`~dpsql.faces.server.connection.Connection` mixes this in and supplies the running of
statements (``_run``, ``_in_worker``) and the sending of messages.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from dpsql.faces.server import pgtypes, wire
from dpsql.faces.server.answers import Answer, StatementError, describe
from dpsql.faces.server.host import Host
from dpsql.faces.server.params import infer_types, placeholder_value
from dpsql.faces.server.pgsession import PgSettings
from dpsql.faces.server.statements import Scans, parameter_numbers, split

#: the most parameters a statement may have (a Bind counts them in 16 bits, as PostgreSQL does)
MAX_PARAMETERS = 65535
#: answer shapes (Describe) remembered per connection
SHAPES_KEPT = 256


@dataclass
class Prepared:
    sql: str
    oids: list[int]


@dataclass
class Portal:
    statement: Prepared
    values: list[Any]
    formats: list[int]
    answer: Answer | None = None
    sent: int = 0
    oids: list[int] = field(default_factory=list)


class ExtendedProtocol:
    """The extended protocol's messages, for :class:`~dpsql.faces.server.connection.Connection`."""

    server: Host
    pg: PgSettings
    statements: dict[str, Prepared]
    portals: dict[str, Portal]
    scans: Scans
    shapes: OrderedDict[tuple[str, tuple[int, ...]], tuple[list[str], list[str]] | None]  # least recent first

    async def _hold(self, *messages: bytes) -> None:
        raise NotImplementedError

    async def _run(self, sql: str, values: list[Any], offset: int = 0) -> Answer:
        raise NotImplementedError

    async def _in_worker(self, fn: Any, sql: str, values: list[Any], offset: int = 0) -> Any:
        raise NotImplementedError

    async def _rows(self, rows: list[tuple[Any, ...]], oids: list[int], formats: list[int]) -> bytes:
        raise NotImplementedError

    async def _parse(self, body: wire.Payload) -> None:
        name, sql = body.cstring(), body.cstring()
        oids = [body.int32() for _ in range(body.int16())]
        body.done()
        self.server.log(self.pg.user, "parse", sql)
        if name and name in self.statements:
            raise StatementError("42P05", f'prepared statement "{name}" already exists')
        statements = self.scans.get("split", sql, lambda: tuple(split(sql)))
        if len(statements) > 1:
            raise StatementError("42601", "cannot insert multiple commands into a prepared statement")
        sql = statements[0] if statements else ""
        count = self.scans.get("last $n", sql, lambda: max(parameter_numbers(sql), default=0))
        if count > MAX_PARAMETERS:
            raise StatementError("42P02", f"there is no parameter ${count}: a statement has at most {MAX_PARAMETERS}")
        given = oids + [0] * (count - len(oids))
        inferred = await self.server.in_thread(infer_types, sql, given, self.server.served.column_type) if 0 in given else given
        self.statements[name] = Prepared(sql, inferred)
        await self._hold(wire.PARSE_COMPLETE)

    async def _bind(self, body: wire.Payload) -> None:
        portal, name = body.cstring(), body.cstring()
        formats = [body.int16() for _ in range(body.int16())]
        raw = [body.value() for _ in range(body.int16())]
        results = [body.int16() for _ in range(body.int16())]
        body.done()
        stmt = self._statement(name)
        if len(raw) != len(stmt.oids):
            raise StatementError("08P01", f"bind message supplies {len(raw)} parameters, but prepared statement "
                                          f'"{name}" requires {len(stmt.oids)}')
        fmt = (formats * len(raw)) if len(formats) == 1 else formats + [0] * (len(raw) - len(formats))
        try:
            values = [pgtypes.decode(v, o, f == 1) for v, o, f in zip(raw, stmt.oids, fmt)]
        except pgtypes.ParameterError as exc:
            raise StatementError("22P02", str(exc)) from None
        self.portals[portal] = Portal(stmt, values, results)
        await self._hold(wire.BIND_COMPLETE)

    def _statement(self, name: str) -> Prepared:
        if name not in self.statements:
            raise StatementError("26000", f'prepared statement "{name}" does not exist')
        return self.statements[name]

    async def _describe_columns(self, stmt: Prepared, values: list[Any] | None) -> tuple[list[str], list[str]] | None:
        """The answer's (names, types), or None for no rows: planned once per text and parameter
        types on this connection (the shape of an answer never depends on a parameter's value),
        so a client that sends the same query again (psycopg: Parse, Bind, Describe, Execute
        every time) does not pay the plan twice per query."""
        key = (stmt.sql, tuple(stmt.oids))
        if key in self.shapes:
            self.shapes.move_to_end(key)
            return self.shapes[key]
        dummy = values if values is not None else [placeholder_value(o) for o in stmt.oids]
        cols = await self._in_worker(describe, stmt.sql, dummy) if stmt.sql else None
        self.shapes[key] = cols
        if len(self.shapes) > SHAPES_KEPT:
            self.shapes.popitem(last=False)
        return cols

    async def _describe(self, body: wire.Payload) -> None:
        what, name = body.byte(), body.cstring()
        if what == b"S":
            stmt = self._statement(name)
            cols = await self._describe_columns(stmt, None)
            out = [wire.parameter_description(stmt.oids)]
            formats: list[int] = []
        else:
            if name not in self.portals:
                raise StatementError("34000", f'portal "{name}" does not exist')
            portal = self.portals[name]
            cols = await self._describe_columns(portal.statement, portal.values)
            out, formats = [], portal.formats
        if cols is None:
            await self._hold(*out, wire.NO_DATA)
            return
        oids = [pgtypes.oid_of(t) for t in cols[1]]
        fmt = _formats(formats, len(oids))
        if what == b"P":
            self.portals[name].oids = oids
        await self._hold(*out, wire.row_description((n, o, pgtypes.size_of(o), f) for n, o, f in zip(cols[0], oids, fmt)))

    async def _execute(self, body: wire.Payload) -> None:
        name, limit = body.cstring(), body.int32()
        body.done()
        if name not in self.portals:
            raise StatementError("34000", f'portal "{name}" does not exist')
        portal = self.portals[name]
        if not portal.statement.sql:
            await self._hold(wire.EMPTY_QUERY)
            return
        if portal.answer is None:
            portal.answer = await self._run(portal.statement.sql, portal.values)
        ans = portal.answer
        out = [wire.parameter_status(k, v) for k, v in ans.report.items()]
        if ans.notice and portal.sent == 0:
            out.append(wire.notice_response({"S": "NOTICE", "V": "NOTICE", "C": "00000", "M": ans.notice}))
        if ans.columns is not None:
            oids = portal.oids or [pgtypes.oid_of(t) for t in ans.types]
            end = len(ans.rows) if limit <= 0 else min(len(ans.rows), portal.sent + limit)
            out.append(await self._rows(ans.rows[portal.sent:end], oids, _formats(portal.formats, len(oids))))
            portal.sent = end
            if end < len(ans.rows):
                await self._hold(*out, wire.PORTAL_SUSPENDED)
                return
        await self._hold(*out, wire.command_complete(ans.tag))


def _formats(codes: list[int], n: int) -> list[int]:
    if not codes:
        return [0] * n
    if len(codes) == 1:
        return codes * n
    return codes[:n] + [0] * (n - len(codes))
