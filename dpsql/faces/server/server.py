"""``dpsql serve``: the service that owns the data, the policy, the ledger and the users.

:class:`Served` is what is served (one database under one policy, its public catalog twin,
the ledger and the user file in the server's state folder); :class:`Server` accepts
connections with asyncio, each one a :class:`~dpsql.faces.server.connection.Connection`,
within a connection limit, with idle, authentication and statement timeouts, and routes
cancel requests. Work that touches DuckDB runs in a thread pool, so one slow query never
stalls the others.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import signal
import ssl
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from dpsql.faces.server import wire
from dpsql.faces.server.connection import Connection
from dpsql.faces.server.host import Interrupted
from dpsql.faces.server.pgcatalog import PgCatalog, policy_comments
from dpsql.faces.server.users import UserStore
from dpsql.home import home
from dpsql.intercept.catalog import column_role, table_comment
from dpsql.session import Session

T = TypeVar("T")

def state_folder(database: str | Path | None) -> Path:
    """The server's own folder (users, ledger): DPSQL_HOME/server for the demo, else
    ``<database>.dpsql-server/`` beside the database file."""
    if database is None:
        return home() / "server"
    path = Path(database)
    return path.with_name(path.stem + ".dpsql-server")


class Served:
    """One database under one policy, as the server serves it to every analyst."""

    def __init__(self, database: str | Path | None, policy: str | Path | None, state: Path | None = None, *,
                 threads: int | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.state = Path(state) if state is not None else state_folder(database)
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.users = UserStore(self.state)
        self.threads = threads
        probe = Session(database, policy, threads=threads, analyst="(dpsql serve)", ledger=self.state / "ledger.sqlite")
        try:
            pol = probe.policy
            self.ledger = pol.budget.ledger or self.state / "ledger.sqlite"
            self.database, self.policy_path = probe.database, pol.path
            self.schema = probe.schema
            self.private_tables = {t.lower() for t in pol.tables}
            for table in sorted(pol.tables):  # the data owner's unit check, once, before anyone connects
                if progress:
                    progress(f"checking that {table}.{pol.tables[table].privacy_unit} is one row per unit")
                probe.check_unit_column(table)
            self.name = Path(self.database).stem
            twin = probe.engine.public_catalog([*pol.tables, *pol.public_tables], list(pol.public_tables), self.name)
            tables = sorted([*pol.tables, *pol.public_tables])
            comments = policy_comments(tables, functools.partial(table_comment, probe),
                                       functools.partial(column_role, probe), self.schema)
            self.catalog = PgCatalog.build(twin, self.name, {t.lower() for t in pol.public_tables}, comments)
        finally:
            probe.close()

    def open_session(self, analyst: str) -> Session:
        """A session for an authenticated analyst, charging the server's ledger."""
        return Session(self.database, self.policy_path, analyst=analyst, ledger=self.ledger, threads=self.threads)

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
                 statement_timeout: float = 0.0, auth_timeout: float = 30.0, log: Path | None = None) -> None:
        self.served, self.tls, self.require_tls, self.trust = served, tls, require_tls, trust
        self.max_connections, self.idle_timeout = max_connections, idle_timeout
        self.statement_timeout, self.auth_timeout = statement_timeout, auth_timeout
        self.secret = secrets.token_bytes(32)  # mock-authentication salts of unknown users
        self.pool = ThreadPoolExecutor(max_workers=min(max_connections, 64) + 2, thread_name_prefix="dpsql-serve")
        self.connections: dict[int, Connection] = {}
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

    def full(self) -> bool:
        return len(self.connections) >= self.max_connections

    def register(self, conn: Connection) -> None:
        self.connections[conn.pid] = conn

    def unregister(self, conn: Connection) -> None:
        self.connections.pop(conn.pid, None)

    def cancel(self, pid: int, secret: int) -> None:
        conn = self.connections.get(pid)
        if conn is not None and secrets.compare_digest(conn.secret.to_bytes(4, "big"), (secret & 0xFFFFFFFF).to_bytes(4, "big")):
            conn.cancel()

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread; a KeyboardInterrupt there (an interrupted statement)
        comes back as :class:`~dpsql.faces.server.host.Interrupted`."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, functools.partial(_uninterrupted, fn, *args))

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
