"""The sticky interrupt of an engine's connection (:meth:`dpsql.backends.base.Engine.interrupt`):
one request cancels exactly one run, even one that has not started yet. Knows nothing of
DuckDB beyond a connection's ``interrupt()`` method.
"""

from __future__ import annotations

import threading
from typing import Any

from dpsql.backends.base import InterruptedBeforeStart


class StickyInterrupt:
    """The interrupt state of one connection (:meth:`Engine.interrupt`); one run at a time, as
    a DB-API connection is not shared between threads (``threadsafety = 1``).

    DuckDB's ``interrupt()`` only stops a query that has started, and the worker thread that
    runs it may be anywhere between the pending check and DuckDB starting the query. So a
    request during a run is repeated every few milliseconds until that run has ended; the
    repeats stop, under the lock, as soon as the run is over, so they never reach the next one
    (and an interrupt of an idle DuckDB connection is forgotten when its next query starts).
    """

    REPEAT = 0.005  # seconds between repeated interrupts of a query that has not started yet

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = False
        self._running: threading.Event | None = None  # set once the current run has ended
        self._repeating: threading.Event | None = None  # the run a repeating thread serves

    def start(self) -> threading.Event:
        with self._lock:
            if self._pending:
                self._pending = False
                raise InterruptedBeforeStart
            self._running = threading.Event()
            return self._running

    def end(self, finished: threading.Event) -> None:
        with self._lock:
            finished.set()
            if self._running is finished:
                self._running = None

    @property
    def running(self) -> bool:
        with self._lock:
            return self._running is not None

    def consume(self) -> None:
        with self._lock:
            self._pending = False

    def clear(self) -> bool:
        with self._lock:
            pending, self._pending = self._pending, False
            return pending

    def request(self, con: Any) -> None:
        with self._lock:
            self._pending = True
            running = self._running
            if running is None or self._repeating is running:
                return
            self._repeating = running
        threading.Thread(target=self._repeat, args=(con, running), name="dpsql-interrupt", daemon=True).start()

    def _repeat(self, con: Any, running: threading.Event) -> None:
        while True:
            with self._lock:
                if running.is_set() or not self._pending:
                    if self._repeating is running:
                        self._repeating = None
                    return
                con.interrupt()
            running.wait(self.REPEAT)
