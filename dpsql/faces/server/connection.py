"""One client connection: startup, SCRAM-SHA-256 authentication, then the simple and the
extended query protocols (PostgreSQL protocol 3.0, chapter 55 of its documentation; the
extended protocol's messages are :mod:`dpsql.faces.server.extended`).

The analyst is the authenticated user name and nothing else: the session is opened for it
after the SCRAM exchange, and no statement can change it. Each executed query is one call of
the private pipeline, so it is charged once (a Describe charges nothing; a portal executed in
parts runs once). Cancel requests and the statement timeout interrupt the engine: a query
stopped before DuckDB started it costs nothing, one stopped later is charged and returns
nothing (dpsql.session); so does a client that disconnects while its statement runs. The
event loop never blocks on DuckDB: statements run in worker threads. Until it has authenticated,
a connection holds one of the server's slots for clients logging in (a few per address), not
one of the analysts' (the connection limit), and has a few seconds for all of its startup and
password exchange; a wrong password is answered after the server's backoff.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections import OrderedDict
import sys
import traceback
from typing import TYPE_CHECKING, Any

from dpsql.errors import DpsqlError
from dpsql.faces.server import copy_out, pgtypes, wire
from dpsql.faces.server.host import Fatal, Host, Interrupted
from dpsql.faces.server.answers import Answer, StatementError, answer, for_analyst, from_dpsql
from dpsql.faces.server.extended import ExtendedProtocol, Portal, Prepared
from dpsql.faces.server.scram import ScramError, ScramServer
from dpsql.faces.server.pgsession import REPORTED, PgSettings
from dpsql.faces.server.startup_options import apply_options
from dpsql.faces.server.statements import Scans, split
from dpsql.faces.server.wire import ProtocolViolation

if TYPE_CHECKING:
    from dpsql.session import Session

#: how often a running statement checks the statement timeout and whether its client is still there
CHECK_EVERY = 0.1
#: bytes of extended-protocol replies held before they are written anyway (else until Sync or Flush)
HOLD_AT = 65536


class Connection(ExtendedProtocol):
    """One client, from its startup packet to its last message (see the module docstring)."""

    def __init__(self, server: Host, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server, self.reader, self.writer = server, reader, writer
        self.pid = server.next_pid()
        self.secret = secrets.randbits(31)
        self.session: Session | None = None
        self.pg: PgSettings | None = None
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.shapes: OrderedDict[tuple[str, tuple[int, ...]], tuple[list[str], list[str]] | None] = OrderedDict()
        self.catalog = server.served.catalog.view()  # the public catalog twin; interrupts reach ours only
        self.statement: asyncio.Future[Answer] | None = None  # the statement running in a worker
        self.cancelled = ""  # why it was interrupted, if it was
        self.scans = Scans()  # this connection's texts, scanned once (statements.Scans)
        self.held: list[bytes] = []  # extended-protocol replies not yet written (:meth:`_hold`)
        self.held_bytes = 0

    # ------------------------------------------------------------------ life
    async def serve(self) -> None:
        try:
            if await self._startup():
                await self._loop()
        except Fatal as exc:
            await self._farewell(exc.fields)
        except ProtocolViolation as exc:
            await self._farewell({"C": "08P01", "M": f"protocol violation: {exc}"})
        except asyncio.TimeoutError:  # the startup packet or the password did not come in time
            await self._farewell({"C": "08006", "M": "canceling authentication due to timeout"})
        except asyncio.CancelledError:  # the server is stopping
            await self._farewell({"C": "57P01", "M": "terminating connection due to administrator command"})
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except Exception:  # noqa: BLE001 - a bug here must end this connection only, and say so
            print("dpsql serve: internal error on a connection (please report):", file=sys.stderr)
            traceback.print_exc()
            await self._farewell({"C": "XX000", "M": "internal error in dpsql serve; the connection is closed"})
        finally:
            await self._close()

    async def _farewell(self, fields: dict[str, str]) -> None:
        """A FATAL error before closing; a client already gone does not hear it."""
        try:
            await self._send(wire.error_response({"S": "FATAL", "V": "FATAL", **fields}))
        except ConnectionError:
            pass

    async def _close(self) -> None:
        """Stop a statement still running (the server is stopping), close the session, free the slot."""
        try:
            if self.statement is not None:
                if not self.statement.done():
                    self._interrupt("server shutdown")
                    await asyncio.wait({self.statement})
                self.statement.exception()  # retrieved: nobody is left to hear of it
            if self.session is not None:
                session, self.session = self.session, None
                await self.server.in_thread(session.close)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping twice: the process ends anyway
            pass
        finally:
            self.server.unregister(self)
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - already closed
                pass

    async def _send(self, *messages: bytes) -> None:
        """Write ``messages`` after any held replies, and wait while the client's buffer is full."""
        if self.held:
            messages, self.held, self.held_bytes = (*self.held, *messages), [], 0
        self.writer.write(b"".join(messages))
        await self.writer.drain()

    async def _hold(self, *messages: bytes) -> None:
        """Replies to Parse, Bind, Describe, Execute and Close, written at the next Sync or Flush
        (or :meth:`_send`, or once ``HOLD_AT`` bytes wait), as PostgreSQL's backend does: one write
        per query instead of five (a client wanting a reply before its Sync sends Flush, as the
        protocol requires)."""
        self.held.extend(messages)
        self.held_bytes += sum(len(m) for m in messages)
        if self.held_bytes >= HOLD_AT:
            await self._send()

    def cancel(self) -> None:
        """A CancelRequest for this connection: interrupt the running statement, if any."""
        self._interrupt("user request")

    def _interrupt(self, reason: str) -> None:
        """Stop the running statement: the engine's interrupt is sticky (one stops the next run if
        none runs yet); the catalog's is not, so :meth:`_wait` repeats it."""
        if self.statement is not None and not self.statement.done():
            self.cancelled = self.cancelled or reason
            if self.session is not None:
                self.session.engine.interrupt()
            self.catalog.interrupt()

    def _client_gone(self) -> bool:
        """Whether the client closed its end (EOF, or a reset) while a statement runs. asyncio
        records EOF even with unread messages buffered (a pipelined Sync), hence ``_eof``."""
        return self.reader.exception() is not None or bool(getattr(self.reader, "_eof", False))

    # ------------------------------------------------------------------ startup
    async def _startup(self) -> bool:
        """Startup and authentication, within one deadline for all of it and in a slot of those
        still logging in (so strangers never hold an analyst's slot); then the session."""
        addr = self.writer.get_extra_info("peername")
        peer = str(addr[0]) if isinstance(addr, tuple) and addr else ""
        refusal = await self.server.admit(self, peer)
        if refusal:
            raise Fatal("53300", refusal)
        got = await asyncio.wait_for(self._handshake(), self.server.auth_timeout)
        if got is None:
            return False  # a cancel request
        user, params, failed = got
        if failed:  # answered after the backoff, holding this connection's slot: no faster retries
            await self.server.login_failed(user, peer)
            raise Fatal("28P01", f'password authentication failed for user "{user}"')
        if not self.server.register(self):
            raise Fatal("53300", "sorry, too many clients already")
        self.pg = PgSettings(user, {"application_name": params.get("application_name", ""),
                                    "statement_timeout": _duration(self.server.statement_timeout)})
        try:
            self.session = await self.server.in_thread(self.server.served.open_session, user)
        except DpsqlError as exc:
            raise Fatal("58000", *for_analyst(exc)) from None
        try:  # the user's own defaults (dpsql user add --set), then -c dpsql.<name>=<value> in the
            # startup options (a URL-only BI tool's settings), which override them
            defaults = self.server.served.users.options(user)
            await self.server.in_thread(apply_options, self.session, f"{defaults} {params.get('options', '')}")
        except DpsqlError as exc:
            raise Fatal("22023", *for_analyst(exc)) from None
        out = [wire.auth_ok()] if not self._authenticated_by_scram else []
        out += [wire.parameter_status(k, self.pg.values[k]) for k in REPORTED if k in self.pg.values]
        out.append(wire.backend_key_data(self.pid, self.secret))
        if self.server.trust:
            out.append(wire.notice_response({"S": "WARNING", "V": "WARNING", "C": "01000", "M": (
                "this dpsql server does not authenticate anyone (--insecure-no-auth): any client can take any "
                "analyst's name and budget; use it only for a local demo")}))
        await self._send(*out, wire.ready_for_query("I"))
        return True

    async def _handshake(self) -> tuple[str, dict[str, str], bool] | None:
        """The startup packet(s) and the password exchange: (user, startup parameters, whether
        the password was wrong), or None for a cancel request."""
        tls = False
        for _ in range(3):
            code, body = await wire.read_startup(self.reader)
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
                return None
            if code >> 16 != 3:
                raise Fatal("0A000", f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: dpsql speaks 3.0")
            params = wire.startup_parameters(body)
            break
        else:
            raise ProtocolViolation("too many startup requests")
        user = params.get("user", "")
        if not user:
            raise Fatal("28000", "no user name given", "connect with a user name (psql -U NAME).")
        if self.server.tls is not None and self.server.require_tls and not tls:
            raise Fatal("28000", "this server accepts only TLS connections", "connect with sslmode=require.")
        return user, params, not await self._authenticate(user)

    _authenticated_by_scram = False

    async def _authenticate(self, user: str) -> bool:
        """The SCRAM-SHA-256 exchange; whether the client proved the password."""
        if self.server.trust:
            return True
        scram = ScramServer(*self.server.served.users.auth_info(user, self.server.secret))
        await self._send(wire.auth_sasl(["SCRAM-SHA-256"]))
        try:
            kind, body = await wire.read_message(self.reader)
            if kind != b"p":
                raise ProtocolViolation("expected a SASLInitialResponse")
            if body.cstring() != "SCRAM-SHA-256":
                raise Fatal("28000", "dpsql offers SCRAM-SHA-256 only")
            first = body.value()
            await self._send(wire.auth_sasl_continue(scram.first((first or b"").decode("utf-8")).encode("utf-8")))
            kind, body = await wire.read_message(self.reader)
            if kind != b"p":
                raise ProtocolViolation("expected a SASLResponse")
            final = scram.final(body.rest().decode("utf-8"))
        except (ScramError, UnicodeDecodeError):
            return False
        await self._send(wire.auth_sasl_final(final.encode("utf-8")), wire.auth_ok())
        self._authenticated_by_scram = True
        return True

    # ------------------------------------------------------------------ the message loop
    async def _loop(self) -> None:
        skipping = False  # after an error in the extended protocol: discard until Sync
        while True:
            if wire.buffered(self.reader):  # the rest of a query's messages came with its first: no wait
                kind, body = await wire.read_message(self.reader)
            else:
                try:
                    # a deadline on this task, not wait_for's task and timer per message
                    async with asyncio.timeout(self.server.idle_timeout):
                        kind, body = await wire.read_message(self.reader)
                except TimeoutError:
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
                    await self._hold(wire.CLOSE_COMPLETE)
                elif kind == b"H":
                    await self._send()
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
        statements = self.scans.get("split", text, lambda: tuple(split(text)))
        if not statements:
            await self._send(wire.EMPTY_QUERY, wire.ready_for_query(self.pg.status))
            return
        offset = 0
        for sql in statements:
            offset = text.find(sql, offset)
            try:
                copy = copy_out.parse(sql)  # psql's \copy (SELECT ...) TO: the SELECT, answered as any
                ans = await self._run(copy.query if copy else sql, [], offset)
            except StatementError as exc:
                if self.pg.status == "T":
                    self.pg.status = "E"
                await self._send(wire.error_response(exc.fields))
                break
            out = [wire.parameter_status(k, v) for k, v in ans.report.items()]
            if ans.notice:
                out.append(wire.notice_response({"S": "NOTICE", "V": "NOTICE", "C": "00000", "M": ans.notice}))
            if copy is not None:
                out += await self.server.in_thread(copy_out.messages, copy, ans.columns or [], ans.types, ans.rows)
                await self._hold(*out)
                continue
            if ans.columns is not None:
                oids = [pgtypes.oid_of(t) for t in ans.types]
                out.append(wire.row_description((n, o, pgtypes.size_of(o), 0) for n, o in zip(ans.columns, oids)))
                out.append(await self._rows(ans.rows, oids, [0] * len(oids)))
            out.append(wire.command_complete(ans.tag))
            await self._hold(*out)  # written with ReadyForQuery (or an error), as PostgreSQL does
        await self._send(wire.ready_for_query(self.pg.status))

    async def _rows(self, rows: list[tuple[Any, ...]], oids: list[int], formats: list[int]) -> bytes:
        if len(rows) < 2000:
            return pgtypes.data_rows(rows, oids, formats)
        return await self.server.in_thread(pgtypes.data_rows, rows, oids, formats)

    async def _run(self, sql: str, values: list[Any], offset: int = 0) -> Answer:
        """Answer one statement in a worker thread, honouring cancel requests and the timeout."""
        assert self.session is not None and self.pg is not None
        if self.pg.status == "E" and sql.split()[0].lower() not in ("rollback", "abort", "commit", "end"):
            raise StatementError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
        return await self._in_worker(functools.partial(answer, guard=self.server.served.check_ledger, scans=self.scans),
                                     sql, values, offset)

    async def _in_worker(self, fn: Any, sql: str, values: list[Any], offset: int = 0) -> Any:
        """``fn`` (:func:`answer` or :func:`describe`) of one statement in a worker thread, stopped
        by a cancel request, the statement timeout or the client's going; errors as ErrorResponses."""
        self.cancelled = ""
        task = self.statement = self.server.submit(
            fn, sql, values, self.session, self.catalog, self.pg, self.server.served.private_tables)
        try:
            await self._wait(task)
            return task.result()
        except StatementError:
            raise
        except DpsqlError as exc:
            raise from_dpsql(exc, sql, offset) from None
        except Interrupted as exc:
            raise StatementError("57014", f"canceling statement due to {self.cancelled or 'user request'}: {exc}") from None
        except Exception:  # noqa: BLE001 - a bug ends this statement only, never the session
            print("dpsql serve: internal error in a statement (please report):", file=sys.stderr)
            traceback.print_exc()
            raise StatementError("XX000", "internal error in dpsql serve; the statement failed and nothing was "
                                          "charged for it here", "the server's log has the details.") from None
        finally:
            if task.done():  # else the server is stopping, and _close waits for it
                self.statement = None
                if self.session is not None:
                    self.session.engine.clear_interrupt()

    async def _wait(self, task: asyncio.Future[Answer]) -> None:
        """Until ``task`` is done; interrupts it at the statement timeout or when the client has gone."""
        loop = asyncio.get_running_loop()
        limit = self.server.statement_timeout
        deadline = loop.time() + limit if limit else None
        while not task.done():
            step = CHECK_EVERY if deadline is None else max(0.0, min(CHECK_EVERY, deadline - loop.time()))
            await asyncio.wait({task}, timeout=step)
            if task.done():
                break
            if self.cancelled:
                self.catalog.interrupt()  # a catalog statement that had not started yet
            elif deadline is not None and loop.time() >= deadline:
                self._interrupt("statement timeout")
            elif self._client_gone():
                self._interrupt("client disconnect")


def _duration(seconds: float) -> str:
    """A number of seconds as PostgreSQL shows a duration setting (``5min``, ``2s``, ``0``)."""
    ms = round(seconds * 1000)
    return "0" if ms <= 0 else f"{ms // 60000}min" if ms % 60000 == 0 else f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
