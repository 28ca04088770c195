"""What a connection needs of its server, the error that ends a connection, and the one that
stops a statement.

:class:`Host` is the part of :class:`dpsql.faces.server.server.Server` a
:class:`~dpsql.faces.server.connection.Connection` uses, so the two modules do not import each
other.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Fatal(Exception):
    """End the connection after sending this FATAL error."""

    def __init__(self, sqlstate: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.fields = {"S": "FATAL", "V": "FATAL", "C": sqlstate, "M": message, "H": hint}


class Interrupted(Exception):
    """A statement stopped by an interrupt (a cancel request, the statement timeout, a client
    gone): the worker thread's KeyboardInterrupt as an ordinary exception, with its fixed text.
    A KeyboardInterrupt must never reach the event loop: asyncio re-raises it from the loop,
    and the whole server stops (``Server.in_thread`` converts it in the worker)."""


class Host(Protocol):
    """What a connection needs of its server (:class:`dpsql.faces.server.server.Server`)."""

    served: Any  # Served: the session factory, the catalog twin, the users
    tls: ssl.SSLContext | None
    require_tls: bool
    trust: bool
    secret: bytes
    auth_timeout: float
    idle_timeout: float
    statement_timeout: float

    def next_pid(self) -> int: ...
    async def admit(self, conn: Any, address: str) -> str: ...
    def register(self, conn: Any) -> bool: ...
    def unregister(self, conn: Any) -> None: ...
    async def login_failed(self, user: str, address: str) -> None: ...
    def cancel(self, pid: int, secret: int) -> None: ...
    def log(self, user: str, kind: str, sql: str) -> None: ...
    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T: ...
    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]: ...
