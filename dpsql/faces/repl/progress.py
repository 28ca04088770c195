"""Run a query in a worker thread: a spinner after a second, and Ctrl-C that cancels it.

The main thread keeps Python's SIGINT handling: Ctrl-C raises KeyboardInterrupt there while it
waits, and it asks the engine to stop (``Engine.interrupt``: DuckDB aborts the running query,
or the engine's next query if the worker has not started it yet, which the engine turns into
KeyboardInterrupt in the worker). Work that has passed the engine (noise, charge, finish) takes
milliseconds and completes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def run_interruptible(work: Callable[[], Any], interrupt: Callable[[], None], *, stream: TextIO | None = None,
                      delay: float = 1.0, tick: float = 0.1) -> Any:
    """Return ``work()`` run in a thread; on Ctrl-C call ``interrupt()`` and keep waiting.

    Raises whatever ``work`` raised (KeyboardInterrupt when the engine was interrupted). When
    ``stream`` is given, a spinner with the elapsed time is drawn on it after ``delay`` seconds.
    """
    box: dict[str, Any] = {}
    # An Event, not Thread.join: a KeyboardInterrupt inside join() can leave the thread looking
    # finished while it still runs (CPython issue 90882).
    done = threading.Event()
    # The work begins only once this thread waits in the loop below, where a Ctrl-C is turned
    # into interrupt(). Thread.start() itself waits for the new thread, which can run a while
    # first: a Ctrl-C there escaped while the query ran on (and was charged) in the background.
    go = threading.Event()

    def target() -> None:
        if not go.wait(60) or box.get("skip"):
            return  # the caller was interrupted before the work began: it never runs
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=target, name="dpsql-query", daemon=True)
    start = time.monotonic()
    try:
        worker.start()
    except KeyboardInterrupt:
        box["skip"] = True
        go.set()
        raise
    cancelling = drawn = False
    while not done.is_set():
        try:
            go.set()
            done.wait(tick)
            elapsed = time.monotonic() - start
            if stream is not None and elapsed >= delay and not done.is_set():
                frame = FRAMES[int(elapsed / tick) % len(FRAMES)]
                what = "cancelling…" if cancelling else "running… Ctrl-C cancels"
                stream.write(f"\r{frame} {elapsed:5.1f}s {what}\x1b[K")
                stream.flush()
                drawn = True
        except KeyboardInterrupt:
            cancelling = True
            interrupt()
    if drawn and stream is not None:
        stream.write("\r\x1b[K")
        stream.flush()
    if "error" in box:
        raise box["error"]
    return box["value"]
