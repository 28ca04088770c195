"""``dpsql serve``: the service that owns the data, the policy, the ledger and the users.

:class:`Served` is what is served (one database under one policy, its public catalog twin,
the ledger and the user file in the server's state folder); :class:`Server` accepts
connections with asyncio, each one a :class:`~dpsql.faces.server.connection.Connection`:
first in a login slot (a few per client address, within a short authentication timeout, a
backoff after wrong passwords), then in an analyst's slot under the connection limit, with idle
and statement timeouts; and routes cancel requests. Work that touches DuckDB runs in a thread pool, so one slow query never
stalls the others.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import signal
from collections import Counter
import ssl
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from dpsql.faces.server import wire
from dpsql.faces.server.connection import Connection
from dpsql.faces.server.host import Interrupted
from dpsql.faces.server.pgcatalog import PgCatalog, policy_comments
from dpsql.faces.server.state import LedgerGuard, server_secret, state_folder
from dpsql.faces.server.throttle import LoginThrottle
from dpsql.faces.server.users import UserStore
from dpsql.errors import LedgerError
from dpsql.intercept.catalog import column_role, table_comment
from dpsql.session import Session

T = TypeVar("T")

#: seconds a client has for its whole startup and password exchange (PostgreSQL: 60)
AUTH_TIMEOUT = 5.0
#: seconds a statement may run before it is cancelled (57014); ``--statement-timeout 0``: no limit
STATEMENT_TIMEOUT = 300.0
#: connections that may be logging in at once, in all and from one address
MAX_LOGINS, MAX_LOGINS_PER_ADDRESS = 64, 8
#: connections that may wait for a login slot, per slot
QUEUED_PER_LOGIN = 4


class Served:
    """One database under one policy, as the server serves it to every analyst."""

    def __init__(self, database: str | Path | None, policy: str | Path | None, state: Path | None = None, *,
                 threads: int | None = None, memory_limit: int | None = None, adopt_ledger: bool = False,
                 progress: Callable[[str], None] | None = None) -> None:
        self.state = Path(state) if state is not None else state_folder(database)
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.users = UserStore(self.state)
        self.secret = server_secret(self.state)  # mock-authentication salts of unknown users, stable across restarts
        self.threads, self.memory_limit = threads, memory_limit
        say_ = progress or (lambda _: None)
        with tempfile.TemporaryDirectory(prefix="dpsql-serve-") as scratch:
            # The probe reads the policy, so it cannot charge the ledger the policy names before
            # that ledger is checked (opening it would create a missing one): a scratch ledger.
            probe = Session(database, policy, threads=threads, memory_limit=memory_limit, analyst="(dpsql serve)",
                            ledger=Path(scratch) / "probe.sqlite")
            try:
                pol = probe.policy
                self.ledger = pol.budget.ledger or self.state / "ledger.sqlite"
                self.database, self.policy_path = probe.database, pol.path
                self.schema = probe.schema
                self.private_tables = {t.lower() for t in pol.tables}
                self.guard = LedgerGuard(self.state, self.ledger)
                if adopt_ledger or self.guard.fresh():
                    say_(f"LEDGER: {self.guard.adopt(self._create_ledger)} (state folder {self.state})")
                self.guard.verify()  # before anyone connects: a server does not start on a ledger it does not know
                for table in sorted(pol.tables):  # the data owner's unit check, once, before anyone connects
                    say_(f"checking that {table}.{pol.tables[table].privacy_unit} is one row per unit")
                    probe.check_unit_column(table)
                self.name = Path(self.database).stem
                twin = probe.engine.public_catalog([*pol.tables, *pol.public_tables], list(pol.public_tables), self.name)
                tables = sorted([*pol.tables, *pol.public_tables])
                comments = policy_comments(tables, functools.partial(table_comment, probe),
                                           functools.partial(column_role, probe), self.schema)
                self.catalog = PgCatalog.build(twin, self.name, {t.lower() for t in pol.public_tables}, comments)
            finally:
                probe.close()

    def _create_ledger(self, path: Path) -> None:
        made = Session(self.database, self.policy_path, threads=self.threads, memory_limit=self.memory_limit,
                       analyst="(dpsql serve)", ledger=path)
        made.ledger.close(keep=False)  # no SQLite connection left open: adoption reads the header with open()/close()
        made.close()

    def check_ledger(self) -> None:
        """Refuse (DP404, said loudly in the server's log) unless the ledger is the adopted one."""
        try:
            self.guard.verify()
        except LedgerError as exc:
            say(f"dpsql serve: LEDGER REFUSED: {exc.message}. {exc.hint}")
            raise

    def open_session(self, analyst: str) -> Session:
        """A session for an authenticated analyst, charging the server's ledger, which must be the
        one the state folder adopted before the session opens it (else opening would create a
        missing one) and after (else one put there meanwhile would be used)."""
        self.check_ledger()  # first: opening would create a missing ledger
        session = Session(self.database, self.policy_path, analyst=analyst, ledger=self.ledger, threads=self.threads,
                          memory_limit=self.memory_limit)
        try:
            self.check_ledger()
        except BaseException:
            session.close()
            raise
        return session

    def column_type(self, column: str) -> str | None:
        """The DuckDB type of a column of a served table (the first table having it)."""
        for table in sorted(self.schema):
            if column.lower() in self.schema[table]:
                return self.schema[table][column.lower()]
        return None


class Server:
    """The listening service (see the module docstring)."""

    def __init__(self, served: Served, *, tls: ssl.SSLContext | None = None, require_tls: bool = False,
                 trust: bool = False, max_connections: int = 100, idle_timeout: float = 3600.0,
                 statement_timeout: float = STATEMENT_TIMEOUT, auth_timeout: float = AUTH_TIMEOUT,
                 max_logins: int = MAX_LOGINS, max_logins_per_address: int = MAX_LOGINS_PER_ADDRESS,
                 log: Path | None = None) -> None:
        self.served, self.tls, self.require_tls, self.trust = served, tls, require_tls, trust
        self.max_connections, self.idle_timeout = max_connections, idle_timeout
        self.statement_timeout, self.auth_timeout = statement_timeout, auth_timeout
        self.max_logins, self.max_logins_per_address = max_logins, max_logins_per_address
        self.secret = served.secret  # mock-authentication salts of unknown users (the state folder's)
        # A long-running service imports numpy once (~0.1 s), which a one-shot process avoids: a
        # small answer's error bars then take one pass in arrays instead of a Python loop per row
        # (pipeline/finish.py: ~1 ms of CPU per answer of the demo query, issue 34).
        import numpy  # noqa: F401
        self.pool = ThreadPoolExecutor(max_workers=min(max_connections, 64) + 2, thread_name_prefix="dpsql-serve")
        self.connections: dict[int, Connection] = {}  # authenticated: the analysts' slots
        self.logging_in: dict[int, str] = {}  # pid -> client address, until authenticated
        self._per_address: Counter[str] = Counter()
        self._queued = 0  # connections waiting for a login slot
        self.throttle = LoginThrottle()
        self._pid = 10000
        self._tasks: set[asyncio.Task[Any]] = set()
        self._log = open(log, "a", encoding="utf-8") if log is not None else None  # noqa: SIM115 - open while serving

    def log(self, user: str, kind: str, sql: str) -> None:
        """Record a statement's text (``--log-statements``): what clients send, never a row."""
        if self._log is not None:
            self._log.write(json.dumps({"user": user, "kind": kind, "sql": sql}) + "\n")
            self._log.flush()

    def next_pid(self) -> int:
        self._pid += 1
        return self._pid

    async def admit(self, conn: Connection, address: str) -> str:
        """Take a login slot for a new connection, waiting (at most half the authentication
        timeout) while none is free for it, so a burst of one machine's connections (a pool) gets
        in a few at a time; the refusal's text when no slot comes. Waiting holds no slot, and at
        most :data:`QUEUED_PER_LOGIN` times ``max_logins`` connections wait at once."""
        loop = asyncio.get_running_loop()
        deadline, waiting = loop.time() + self.auth_timeout / 2, False
        try:
            while (crowded := self._per_address[address] >= self.max_logins_per_address) \
                    or len(self.logging_in) >= self.max_logins:
                if not waiting and self._queued >= QUEUED_PER_LOGIN * self.max_logins or loop.time() >= deadline:
                    return ("sorry, too many connections from this address are logging in at once" if crowded
                            else "sorry, too many clients are logging in at once")
                if not waiting:
                    self._queued, waiting = self._queued + 1, True
                await asyncio.sleep(0.02)
        finally:
            if waiting:
                self._queued -= 1
        self.logging_in[conn.pid] = address
        self._per_address[address] += 1
        return ""

    def _logged_in(self, conn: Connection) -> None:
        address = self.logging_in.pop(conn.pid, None)
        if address is not None:
            self._per_address[address] -= 1
            if self._per_address[address] <= 0:
                del self._per_address[address]

    def register(self, conn: Connection) -> bool:
        """Move an authenticated connection to an analyst's slot; False when all are taken."""
        self._logged_in(conn)
        if len(self.connections) >= self.max_connections:
            return False
        self.connections[conn.pid] = conn
        return True

    def unregister(self, conn: Connection) -> None:
        self._logged_in(conn)
        self.connections.pop(conn.pid, None)

    async def login_failed(self, user: str, address: str) -> None:
        """A wrong password (or unknown user): wait the backoff (:mod:`dpsql.faces.server.throttle`)."""
        failures, delay = self.throttle.failed(user, address)
        say(f"dpsql serve: failed login for user {user!r} from {address or 'a local socket'} "
            f"({failures} recent failures{f'; answered after {delay:g} s' if delay else ''})")
        if delay:
            await asyncio.sleep(delay)

    def cancel(self, pid: int, secret: int) -> None:
        conn = self.connections.get(pid)
        if conn is not None and secrets.compare_digest(conn.secret.to_bytes(4, "big"), (secret & 0xFFFFFFFF).to_bytes(4, "big")):
            conn.cancel()

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread; a KeyboardInterrupt there (an interrupted statement)
        comes back as :class:`~dpsql.faces.server.host.Interrupted`."""
        return await self.submit(fn, *args)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """:meth:`in_thread` as a future, submitted now (a statement's: no task to wrap it)."""
        return asyncio.get_running_loop().run_in_executor(self.pool, functools.partial(_uninterrupted, fn, *args))

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await Connection(self, reader, writer).serve()
        finally:
            self._tasks.discard(task)

    async def run(self, host: str, port: int, started: Callable[[str, int], None] | None = None) -> None:
        """Listen until SIGINT or SIGTERM; then close every connection and the catalog."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # not the main thread (tests), or no signals
                pass
        listener = await asyncio.start_server(self._client, host, port, limit=wire.MAX_MESSAGE + 64)
        bound = listener.sockets[0].getsockname()
        if started:
            started(bound[0], bound[1])
        try:
            async with listener:
                await stop.wait()
        finally:
            listener.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.served.catalog.close()
            if self._log is not None:
                self._log.close()


def _uninterrupted(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    except KeyboardInterrupt as exc:  # fixed text (dpsql.session); never let it reach the event loop
        raise Interrupted(str(exc)) from None


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
