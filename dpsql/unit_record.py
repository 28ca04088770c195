"""The record of passed unit checks: which data files were found to hold one row per privacy
unit, kept in dpsql's per-user folder (:func:`dpsql.home.home`) so that a new process does not
scan the file again (at 100M rows the scan took 30 s and 4.4 GiB).

A record names the file by its identity — resolved path, device and inode, size, modification
and change times (``st_ctime_ns`` cannot be set back by a user, unlike the modification time) —
plus the table and the unit column. Any write to the file changes its identity, so a changed
file is checked again. Only passes are kept; a failure is checked (and refused) every time.

Trust: whoever can write this folder could add a record for a file that fails the check. Embedded
(``dpsql.connect``, the CLI), that is the user who can read the data file anyway; under ``dpsql
serve`` the folder is the server account's (docs/server.md, "The security model"). A lost or
unreadable record only means the check runs again. This module imports nothing of dpsql but home.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dpsql.home import home

#: records kept (the oldest are dropped first)
MAX_RECORDS = 512
FILE_NAME = "unit_checks.json"


def file_identity(path: Path | str) -> tuple[str, int, int, int, int, int] | None:
    """A file's identity — resolved path, device, inode, size, modification and change times —
    or None when it cannot be read. Any write to the file changes it."""
    try:
        st = os.stat(path)
        resolved = str(Path(path).resolve())
    except OSError:
        return None
    return resolved, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _identity(path: Path, table: str, unit: str) -> list[str | int] | None:
    ident = file_identity(path)
    if ident is None or not Path(path).is_file():
        return None  # a folder of Parquet files, a remote source: no single identity, check each time
    return [*ident, table.lower(), unit.lower()]


def _load(where: Path) -> list[list[str | int]]:
    try:
        doc = json.loads(where.read_text(encoding="utf-8"))
        return [r for r in doc.get("records", []) if isinstance(r, list)]
    except (OSError, ValueError, AttributeError):
        return []


def passed(path: Path, table: str, unit: str) -> bool:
    """Whether this very file (unchanged since) passed the check for ``table`` and ``unit``."""
    key = _identity(path, table, unit)
    return key is not None and key in _load(home() / FILE_NAME)


def remember(path: Path, table: str, unit: str) -> None:
    """Record a pass; written whole (a temporary file renamed into place). Failing to write
    changes nothing but the next process's work."""
    key = _identity(path, table, unit)
    if key is None:
        return
    where = home() / FILE_NAME
    records = [r for r in _load(where) if r != key][-(MAX_RECORDS - 1):] + [key]
    tmp = where.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"version": 1, "records": records}), encoding="utf-8")
        os.replace(tmp, where)
    except OSError:
        tmp.unlink(missing_ok=True)
