"""Read-only descriptors on ledger files: one per file per process, shared by its Ledgers; and
the lock the process's charges to one file take in turn (:func:`write_lock`).

A :class:`~dpsql.ledger.book.Ledger` reads its file's header through such a descriptor before every
use, to notice garbage written over the file (docs/privacy.md, "The ledger"). The descriptor
stays open while any Ledger of the process uses the file: closing a descriptor drops every
POSIX lock the process holds on the file, SQLite's included, and another process could then
take the ledger for unused and delete its WAL.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

# (st_dev, st_ino) of a ledger file -> [a read-only descriptor on it, how many Ledgers use it].
_HEADER_FDS: dict[tuple[int, int], list[int]] = {}
_HEADER_FDS_LOCK = threading.Lock()
# (st_dev, st_ino) -> the lock the process's charges to that file take in turn (write_lock).
_WRITE_LOCKS: dict[tuple[int, int], threading.Lock] = {}


def hold_fd(path: Path, identity: tuple[int, int]) -> None:
    """Keep a descriptor on the file ``identity`` (opened at ``path``) for reading its header."""
    with _HEADER_FDS_LOCK:
        if identity in _HEADER_FDS:
            _HEADER_FDS[identity][1] += 1
            return
        fd = os.open(path, os.O_RDONLY)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != identity:
            # The file at ``path`` changed since SQLite opened it. Keep the descriptor anyway: closing
            # it would release SQLite's locks on that file, should the two be one.
            raise OSError(f"{path} was replaced while it was being opened")
        _HEADER_FDS[identity] = [fd, 1]
        _WRITE_LOCKS[identity] = threading.Lock()


def release_fd(identity: tuple[int, int]) -> None:
    """Called after the Ledger's own SQLite connection is closed: the last user closes the fd."""
    with _HEADER_FDS_LOCK:
        held = _HEADER_FDS.get(identity)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            os.close(held[0])
            del _HEADER_FDS[identity]
            del _WRITE_LOCKS[identity]


def header_fd(identity: tuple[int, int]) -> int:
    with _HEADER_FDS_LOCK:
        return _HEADER_FDS[identity][0]


def write_lock(identity: tuple[int, int]) -> threading.Lock:
    """The lock a charge holds around its SQLite write transaction, one per file per process.
    Ledgers of one process (a server's sessions, each with its own SQLite connection) then
    take turns on a lock that wakes the next waiter at once, instead of SQLite's busy handler,
    which sleeps up to 100 ms between tries and lets newcomers overtake a waiting charge
    (seconds of delay for some of 50 concurrent clients). Other processes still wait in the
    busy handler: the write lock of SQLite itself is what serialises charges across processes."""
    with _HEADER_FDS_LOCK:
        return _WRITE_LOCKS[identity]
