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
        resolved = str(Path(path).resolve())
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return resolved, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def data_identity(path: Path | str) -> tuple[object, ...] | None:
    """What a reader of the data file sees, as identity: the file's (:func:`file_identity`) and
    its write-ahead log's (None when there is none); None when the file itself has none. A
    DuckDB reader replays ``<file>.wal``, so rows may change while the main file does not."""
    ident = file_identity(path)
    return None if ident is None else (*ident, file_identity(f"{path}.wal"))


def _identity(path: Path, table: str, unit: str) -> list[object] | None:
    ident = data_identity(path)
    if ident is None:
        return None  # check each time
    wal = ident[-1]
    return [*ident[:-1], list(wal) if wal is not None else None, table.lower(), unit.lower()]


def passed(path: Path, table: str, unit: str) -> bool:
    """Whether this very file (unchanged since) passed the check for ``table`` and ``unit``."""
    key = _identity(path, table, unit)
    return key is not None and key in RECORDS


def remember(path: Path, table: str, unit: str) -> None:
    """Record a pass (:meth:`dpsql.records.store.Records.add`)."""
    key = _identity(path, table, unit)
    if key is not None:
        RECORDS.add(key)
