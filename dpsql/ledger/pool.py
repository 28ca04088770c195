"""SQLite connections to ledger files that a closed :class:`~dpsql.ledger.book.Ledger` left open,
for the next Ledger of the process on the very same files (issue 34).

Opening a ledger was a new SQLite connection and four statements (WAL mode, ``synchronous``, the
schema, its columns): each opens and maps the file, its ``-wal`` and ``-shm`` — 1-6 ms of a new
session, for a wire server or a BI tool that opens one per query. A closed Ledger now gives its
connection here (nothing pending: every charge committed or rolled back) and a new Ledger takes
it when the files at its path are still the ones that connection opened (device and inode of
the file and of both companions, as :meth:`Ledger._verify <dpsql.ledger.book.Ledger._verify>`
checks before every use), in the same process (a connection never crosses a ``fork``). The
connection keeps ``synchronous=FULL`` and WAL mode, and the read-only descriptor on the file
(:mod:`dpsql.ledger.fds`) stays held while it is kept, so SQLite's locks stay as they were.
Every check a Ledger makes before a use and after a charge still runs on a kept connection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any

from dpsql.ledger import fds as ledger_fds

Identity = tuple[Any, ...]  # (main, -wal, -shm): (st_dev, st_ino) or None each
#: idle connections kept per ledger (a wire server's sessions come and go; more are closed)
PER_FILE = 8
#: idle connections kept in all, over every ledger file: each holds ~4 descriptors, and a process
#: that opens many ledgers (a test run, a notebook over many data sets) must not pile them up
#: past 1,024, where select()-based code (prompt_toolkit's input) fails; the oldest file's go first
MAX_IDLE = 16
_IDLE: dict[Identity, list[tuple[int, sqlite3.Connection]]] = {}
_LOCK = threading.Lock()


def take(identity: Identity) -> sqlite3.Connection | None:
    """An idle connection that opened the files of ``identity`` in this process, or None."""
    with _LOCK:
        idle = _IDLE.get(identity)
        while idle:
            pid, db = idle.pop()
            if pid == os.getpid():
                return db
    return None


def give(identity: Identity, db: sqlite3.Connection) -> None:
    """Keep ``db`` (no transaction open) for a later Ledger on the same files; beyond
    :data:`PER_FILE` it is closed and its descriptor hold released."""
    evicted: list[tuple[Identity, sqlite3.Connection]] = []
    with _LOCK:
        idle = _IDLE.pop(identity, [])
        _IDLE[identity] = idle  # the most recently used file last
        kept = len(idle) < PER_FILE and not db.in_transaction
        if kept:
            idle.append((os.getpid(), db))
        for empty in [k for k, v in _IDLE.items() if not v]:  # every connection taken: nothing kept
            del _IDLE[empty]
        while sum(map(len, _IDLE.values())) > MAX_IDLE:
            oldest = next(iter(_IDLE))
            _, old_db = _IDLE[oldest].pop(0)
            evicted.append((oldest, old_db))
            if not _IDLE[oldest]:
                del _IDLE[oldest]
    for old_identity, old_db in evicted:
        close(old_identity, old_db)
    if not kept:
        close(identity, db)


def close(identity: Identity, db: sqlite3.Connection) -> None:
    try:
        db.close()
    except sqlite3.Error:
        pass  # nothing is pending: every charge committed or rolled back
    ledger_fds.release_fd(identity[0])


def drop_all() -> None:
    """Close every idle connection (tests that need a ledger released by the process)."""
    with _LOCK:
        kept = [(identity, db) for identity, idle in _IDLE.items() for pid, db in idle if pid == os.getpid()]
        _IDLE.clear()
    for identity, db in kept:
        close(identity, db)
