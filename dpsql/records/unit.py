"""The record of passed unit checks: which data files were found to hold one row per privacy
unit, kept in dpsql's per-user folder (:func:`dpsql.home.home`) so that a new process does not
scan the file again (at 100M rows the scan took 30 s and 4.4 GiB).

A record names the file by its identity — resolved path, device and inode, size, modification
and change times (``st_ctime_ns`` cannot be set back by a user, unlike the modification time) —
and that of its write-ahead log ``<file>.wal`` (or its absence), plus the table and the unit
column. Any write to the file changes its identity, so a changed file is checked again. The WAL
counts: a DuckDB writer that inserts and dies before a checkpoint leaves the main file as it was
and its rows in the WAL, which the next reader replays (issue 29: 7 rows became 8 under a
recorded pass, answered with sensitivity 1 over a unit of two rows). Only passes are kept; a failure is checked (and refused) every time.

Trust: whoever can write this folder could add a record for a file that fails the check. Embedded
(``dpsql.connect``, the CLI), that is the user who can read the data file anyway; under ``dpsql
serve`` the folder is the server account's (docs/server.md, "The security model"). A lost or
unreadable record only means the check runs again (:mod:`dpsql.records.store`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from dpsql.records.store import Records

#: the passes, kept in dpsql's per-user folder (the oldest of 512 dropped first)
RECORDS = Records("unit_checks.json", 512)


def file_identity(path: Path | str) -> tuple[str, int, int, int, int, int] | None:
    """A file's identity — resolved path, device, inode, size, modification and change times —
    or None when it cannot be read or is not one file (a folder of Parquet files, a remote
    source: no single identity). Any write to the file changes it."""
    try:
        st = os.stat(path)
        kept = _RESOLVED.get(str(path))
        if kept is not None and kept[:2] == (st.st_dev, st.st_ino):  # the very file the name led to before
            resolved = kept[2]
        else:
            resolved = str(Path(path).resolve())
            if len(_RESOLVED) >= 256:
                _RESOLVED.clear()
            _RESOLVED[str(path)] = (st.st_dev, st.st_ino, resolved)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return resolved, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


#: a name as given -> (device, inode, resolved path): resolving walks every component of the path
#: (a system call each), and the data file's identity is taken on every query. Reused only while
#: the name still leads to the same device and inode; another file behind it is resolved again.
_RESOLVED: dict[str, tuple[int, int, str]] = {}


def data_identity(path: Path | str) -> tuple[object, ...] | None:
    """What a reader of the data file sees, as identity: the file's (:func:`file_identity`) and
    its write-ahead log's (None when there is none); None when the file itself has none. A
    DuckDB reader replays ``<file>.wal``, so rows may change while the main file does not."""
    ident = file_identity(path)
    return None if ident is None else (*ident, file_identity(f"{path}.wal"))


#: the most files a folder of Parquet may hold for its identity to be taken (each is stat'ed)
MAX_FOLDER_FILES = 100_000


def folder_identity(path: Path | str) -> str | None:
    """A folder's identity, as a reader of every file under it sees it (Spark and DuckDB read a
    folder of Parquet files, partition sub-folders included): the folder's resolved path and the
    :func:`file_identity` of every regular file below it, in order of their paths; None when it is
    not a folder, cannot be walked, or holds more than :data:`MAX_FOLDER_FILES` files. Any file
    written, added, removed or renamed below it changes it (a file's change time moves on rename).
    Kept as the SHA-256 of that list: a record stays small however many files the folder holds."""
    root = Path(path)
    try:
        if not stat.S_ISDIR(os.stat(root).st_mode):
            return None
        found: list[object] = [str(root.resolve())]
        for dirpath, dirnames, filenames in os.walk(root, onerror=_raise, followlinks=True):
            dirnames.sort()
            for name in sorted(filenames):
                ident = file_identity(os.path.join(dirpath, name))
                if ident is None:  # a broken link, a socket: not one file
                    return None
                found.append(list(ident))
                if len(found) > MAX_FOLDER_FILES:
                    return None
    except OSError:
        return None
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()


def _raise(exc: OSError) -> None:
    raise exc


def _identity(path: Path, table: str, unit: str) -> list[object] | None:
    ident = data_identity(path)
    if ident is None:
        folder = folder_identity(path)  # a folder of Parquet files (Spark's usual input)
        return None if folder is None else ["folder", folder, table.lower(), unit.lower()]
    wal = ident[-1]
    return [*ident[:-1], list(wal) if wal is not None else None, table.lower(), unit.lower()]


def identity(path: Path, table: str, unit: str) -> list[object] | None:
    """The key of a check of ``table``'s ``unit`` in this file or folder as it is now (None: it
    has no identity, so it is checked each time). Taken before the scan, and given to
    :func:`remember` after it: a file written during the scan is not recorded as passed."""
    return _identity(path, table, unit)


def passed(path: Path, table: str, unit: str) -> bool:
    """Whether this very file (unchanged since) passed the check for ``table`` and ``unit``."""
    key = _identity(path, table, unit)
    return key is not None and key in RECORDS


def remember(path: Path, table: str, unit: str, before: list[object] | None = None) -> None:
    """Record a pass (:meth:`dpsql.records.store.Records.add`); with ``before`` (its
    :func:`identity` when the scan began), only if the file is still that one."""
    key = _identity(path, table, unit)
    if key is not None and (before is None or key == before):
        RECORDS.add(key)
