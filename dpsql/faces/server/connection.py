"""One client connection: startup, SCRAM-SHA-256 authentication, then the simple and the
extended query protocols (PostgreSQL protocol 3.0, chapter 55 of its documentation).

The analyst is the authenticated user name and nothing else: the session is opened for it
after the SCRAM exchange, and no statement can change it. Each executed query is one call of
the private pipeline, so it is charged once (a Describe charges nothing; a portal executed in
parts runs once). Cancel requests and the statement timeout interrupt the engine: a query
stopped before DuckDB started it costs nothing, one stopped later is charged and returns
nothing (dpsql.session). The event loop never blocks on DuckDB: statements run in worker
threads.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpsql.errors import DpsqlError
from dpsql.faces.server import pgtypes, wire
from dpsql.faces.server.host import Fatal, Host
from dpsql.faces.server.answers import Answer, StatementError, answer, describe, from_dpsql
from dpsql.faces.server.params import infer_types, placeholder_value
from dpsql.faces.server.scram import ScramError, ScramServer
from dpsql.faces.server.pgsession import REPORTED, PgSettings
from dpsql.faces.server.statements import parameter_numbers, split
from dpsql.faces.server.wire import ProtocolViolation

if TYPE_CHECKING:
    from dpsql.session import Session


@dataclass
class Prepared:
    sql: str
    oids: list[int]
    described: tuple[list[str], list[str]] | None = None


@dataclass
class Portal:
    statement: Prepared
    values: list[Any]
    formats: list[int]
    answer: Answer | None = None
    sent: int = 0
    oids: list[int] = field(default_factory=list)


class Connection:
    def __init__(self, server: Host, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server, self.reader, self.writer = server, reader, writer
        self.pid = server.next_pid()
        self.secret = secrets.randbits(31)
        self.session: Session | None = None
        self.pg: PgSettings | None = None
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.running = False
        self.cancelled = False

    # ------------------------------------------------------------------ life
    async def serve(self) -> None:
        try:
            if await self._startup():
                self.server.register(self)
                await self._loop()
        except Fatal as exc:
            await self._send(wire.error_response(exc.fields))
        except ProtocolViolation as exc:
            await self._send(wire.error_response({"S": "FATAL", "V": "FATAL", "C": "08P01",
                                                  "M": f"protocol violation: {exc}"}))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the server is stopping
        finally:
            self.server.unregister(self)
            if self.session is not None:
                session, self.session = self.session, None
                await self.server.in_thread(session.close)
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - already closed
                pass

    async def _send(self, *messages: bytes) -> None:
        self.writer.write(b"".join(messages))
        await self.writer.drain()

    def cancel(self) -> None:
        """A CancelRequest for this connection: interrupt the running statement, if any."""
        if self.running and self.session is not None:
            self.cancelled = True
            self.session.engine.interrupt()

    # ------------------------------------------------------------------ startup
    async def _startup(self) -> bool:
        tls = False
        for _ in range(3):
            code, body = await asyncio.wait_for(wire.read_startup(self.reader), self.server.auth_timeout)
            if code == wire.SSL_REQUEST and not tls:
                if self.server.tls is None:
                    await self._send(b"N")
                    continue
                await self._send(b"S")
                await self.writer.start_tls(self.server.tls)
                tls = True
                continue
            if code == wire.GSSENC_REQUEST:
                await self._send(b"N")
                continue
            if code == wire.CANCEL_REQUEST:
                self.server.cancel(body.int32(), body.int32())
                return False
            if code >> 16 != 3:
                raise Fatal("0A000", f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: dpsql speaks 3.0")
            params = wire.startup_parameters(body)
            if self.server.full():
                raise Fatal("53300", "sorry, too many clients already")
            break
        else:
            raise ProtocolViolation("too many startup requests")
        user = params.get("user", "")
        if not user:
            raise Fatal("28000", "no user name given", "connect with a user name (psql -U NAME).")
        if self.server.tls is not None and self.server.require_tls and not tls:
            raise Fatal("28000", "this server accepts only TLS connections", "connect with sslmode=require.")
        await self._authenticate(user)
        self.pg = PgSettings(user, {"application_name": params.get("application_name", "")})
        try:
            self.session = await self.server.in_thread(self.server.served.open_session, user)
        except DpsqlError as exc:
            raise Fatal("58000", f"{exc.code}: {exc.message}", exc.hint or "") from None
        out = [wire.auth_ok()] if not self._authenticated_by_scram else []
        out += [wire.parameter_status(k, self.pg.values[k]) for k in REPORTED if k in self.pg.values]
        out.append(wire.backend_key_data(self.pid, self.secret))
        if self.server.trust:
            out.append(wire.notice_response({"S": "WARNING", "V": "WARNING", "C": "01000", "M": (
                "this dpsql server does not authenticate anyone (--insecure-no-auth): any client can take any "
                "analyst's name and budget; use it only for a local demo")}))
        await self._send(*out, wire.ready_for_query("I"))
        return True

    _authenticated_by_scram = False

    async def _authenticate(self, user: str) -> None:
        if self.server.trust:
            return
        scram = ScramServer(*self.server.served.users.auth_info(user, self.server.secret))
        await self._send(wire.auth_sasl(["SCRAM-SHA-256"]))
        try:
            kind, body = await asyncio.wait_for(wire.read_message(self.reader), self.server.auth_timeout)
            if kind != b"p":
                raise ProtocolViolation("expected a SASLInitialResponse")
            if body.cstring() != "SCRAM-SHA-256":
                raise Fatal("28000", "dpsql offers SCRAM-SHA-256 only")
            first = body.value()
            await self._send(wire.auth_sasl_continue(scram.first((first or b"").decode("utf-8")).encode("utf-8")))
            kind, body = await asyncio.wait_for(wire.read_message(self.reader), self.server.auth_timeout)
            if kind != b"p":
                raise ProtocolViolation("expected a SASLResponse")
            final = scram.final(body.rest().decode("utf-8"))
        except (ScramError, UnicodeDecodeError):
            raise Fatal("28P01", f'password authentication failed for user "{user}"') from None
        await self._send(wire.auth_sasl_final(final.encode("utf-8")), wire.auth_ok())
        self._authenticated_by_scram = True

    # ------------------------------------------------------------------ the message loop
    async def _loop(self) -> None:
        skipping = False  # after an error in the extended protocol: discard until Sync
        while True:
            try:
                kind, body = await asyncio.wait_for(wire.read_message(self.reader), self.server.idle_timeout)
            except asyncio.TimeoutError:
                raise Fatal("57P05", "terminating connection due to idle-session timeout") from None
            if kind == b"X":
                return
            if kind == b"Q":
                await self._simple(body.cstring())
                continue
            if kind == b"S":
                skipping = False
                self.portals.pop("", None)
                await self._send(wire.ready_for_query(self.pg.status))
                continue
            if skipping:
                continue
            try:
                if kind == b"P":
                    await self._parse(body)
                elif kind == b"B":
                    await self._bind(body)
                elif kind == b"D":
                    await self._describe(body)
                elif kind == b"E":
                    await self._execute(body)
                elif kind == b"C":
                    what, name = body.byte(), body.cstring()
                    (self.statements if what == b"S" else self.portals).pop(name, None)
                    await self._send(wire.CLOSE_COMPLETE)
                elif kind == b"H":
                    await self.writer.drain()
                elif kind in (b"d", b"c", b"f"):
                    continue  # COPY data outside a COPY: ignored, as PostgreSQL does
                else:
                    raise StatementError("08P01", f"dpsql does not accept the message type {kind!r}")
            except StatementError as exc:
                skipping = True
                if self.pg.status == "T":
                    self.pg.status = "E"
                await self._send(wire.error_response(exc.fields))

    # ------------------------------------------------------------------ simple protocol
    async def _simple(self, text: str) -> None:
        self.server.log(self.pg.user, "query", text)
        statements = split(text)
        if not statements:
            await self._send(wire.EMPTY_QUERY, wire.ready_for_query(self.pg.status))
            return
        offset = 0
        for sql in statements:
            offset = text.find(sql, offset)
            try:
                ans = await self._run(sql, [], offset)
            except StatementError as exc:
                if self.pg.status == "T":
                    self.pg.status = "E"
                await self._send(wire.error_response(exc.fields))
                break
            out = [wire.parameter_status(k, v) for k, v in ans.report.items()]
            if ans.notice:
                out.append(wire.notice_response({"S": "NOTICE", "V": "NOTICE", "C": "00000", "M": ans.notice}))
            if ans.columns is not None:
                oids = [pgtypes.oid_of(t) for t in ans.types]
                out.append(wire.row_description((n, o, pgtypes.size_of(o), 0) for n, o in zip(ans.columns, oids)))
                out.append(await self._rows(ans.rows, oids, [0] * len(oids)))
            out.append(wire.command_complete(ans.tag))
            await self._send(*out)
        await self._send(wire.ready_for_query(self.pg.status))

    async def _rows(self, rows: list[tuple[Any, ...]], oids: list[int], formats: list[int]) -> bytes:
        def encode() -> bytes:
            return b"".join(wire.data_row(pgtypes.encode(v, o, f == 1) for v, o, f in zip(row, oids, formats))
                            for row in rows)
        return encode() if len(rows) < 2000 else await self.server.in_thread(encode)

    async def _run(self, sql: str, values: list[Any], offset: int = 0) -> Answer:
        """Answer one statement in a worker thread, honouring cancel requests and the timeout."""
        assert self.session is not None and self.pg is not None
        if self.pg.status == "E" and sql.split()[0].lower() not in ("rollback", "abort", "commit", "end"):
            raise StatementError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
        served = self.server.served
        self.running, self.cancelled = True, False
        task = asyncio.ensure_future(self.server.in_thread(
            answer, sql, values, self.session, served.catalog, self.pg, served.private_tables))
        try:
            timeout = self.server.statement_timeout or None
            try:
                return await asyncio.wait_for(asyncio.shield(task), timeout)
            except asyncio.TimeoutError:
                self.cancelled = True
                self.session.engine.interrupt()
                return await task
        except StatementError:
            raise
        except DpsqlError as exc:
            raise from_dpsql(exc, sql, offset) from None
        except KeyboardInterrupt as exc:
            why = "statement timeout" if not self.cancelled or self.server.statement_timeout else "user request"
            raise StatementError("57014", f"canceling statement due to {why}: {exc}") from None
        finally:
            self.running = False
            self.session.engine.clear_interrupt()

    # ------------------------------------------------------------------ extended protocol
    async def _parse(self, body: wire.Payload) -> None:
        name, sql = body.cstring(), body.cstring()
        oids = [body.int32() for _ in range(body.int16())]
        body.done()
        self.server.log(self.pg.user, "parse", sql)
        if name and name in self.statements:
            raise StatementError("42P05", f'prepared statement "{name}" already exists')
        statements = split(sql)
        if len(statements) > 1:
            raise StatementError("42601", "cannot insert multiple commands into a prepared statement")
        sql = statements[0] if statements else ""
        count = max(parameter_numbers(sql), default=0)
        given = oids + [0] * (count - len(oids))
        inferred = await self.server.in_thread(infer_types, sql, given, self.server.served.column_type) if 0 in given else given
        self.statements[name] = Prepared(sql, inferred)
        await self._send(wire.PARSE_COMPLETE)

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
        await self._send(wire.BIND_COMPLETE)

    def _statement(self, name: str) -> Prepared:
        if name not in self.statements:
            raise StatementError("26000", f'prepared statement "{name}" does not exist')
        return self.statements[name]

    async def _describe_columns(self, stmt: Prepared, values: list[Any] | None) -> tuple[list[str], list[str]] | None:
        if values is None and stmt.described is not None:
            return stmt.described
        dummy = values if values is not None else [placeholder_value(o) for o in stmt.oids]
        served = self.server.served
        try:
            cols = await self.server.in_thread(describe, stmt.sql, dummy, self.session, served.catalog, self.pg,
                                               served.private_tables) if stmt.sql else None
        except DpsqlError as exc:
            raise from_dpsql(exc, stmt.sql, 0) from None
        if values is None:
            stmt.described = cols
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
            await self._send(*out, wire.NO_DATA)
            return
        oids = [pgtypes.oid_of(t) for t in cols[1]]
        fmt = _formats(formats, len(oids))
        if what == b"P":
            self.portals[name].oids = oids
        await self._send(*out, wire.row_description((n, o, pgtypes.size_of(o), f) for n, o, f in zip(cols[0], oids, fmt)))

    async def _execute(self, body: wire.Payload) -> None:
        name, limit = body.cstring(), body.int32()
        body.done()
        if name not in self.portals:
            raise StatementError("34000", f'portal "{name}" does not exist')
        portal = self.portals[name]
        if not portal.statement.sql:
            await self._send(wire.EMPTY_QUERY)
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
                await self._send(*out, wire.PORTAL_SUSPENDED)
                return
        await self._send(*out, wire.command_complete(ans.tag))


def _formats(codes: list[int], n: int) -> list[int]:
    if not codes:
        return [0] * n
    if len(codes) == 1:
        return codes * n
    return codes[:n] + [0] * (n - len(codes))
