"""The catalog of a data file, remembered across processes: a new session does not read it again.

Opening a session reads the file's catalog three times over: its columns and types, its
constraints, and its tables' DDL (the schema, NOT NULL and CHECK constraints, and the empty
twin's identity, :attr:`dpsql.backends.base.Engine.check_identity`). That is ~10-15 ms of a
fresh ``dpsql query`` on the demo file (issue 15, docs/performance.md "A fresh process"); the
catalog of an unchanged file is the same every time. So it is kept in dpsql's folder under the
SHA-256 of this record's version, DuckDB's version and the file's identity (resolved path,
device, inode, size, modification and change times, and its write-ahead log's:
:func:`dpsql.records.unit.data_identity`; any write to the file changes it, and the change time
cannot be set back), and adopted by the
next session on the same unchanged file. Within a process the record last read or written for
a key is kept in memory as well (:data:`_SEEN`): a wire server opening a session per connection
does not read the JSON again (issue 34); the key still holds the file's identity as it is now.

Only DuckDB files have one: Parquet views and Spark read their catalogs each time. A missing or
damaged record is a miss: the catalog is read, as without a record.

What a forged record could cost: the catalog is public (the schema, not a row), and dpsql's
guarantees hold whatever it says. Wrong types or a wrong NOT NULL can make a query refused that
would run, or fail when it runs (charged, with fixed text: the backstop of ``Session.execute``);
a wrong CHECK changes only post-processing (clamping, notes); a wrong DDL makes the empty twin
check the query against another schema (as a forged twin-check record: budget, not privacy).
Whoever can write the folder can also write the other records and the ledger
(docs/server.md, "The security model").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from dpsql.backends import Engine
from dpsql.records.store import Documents
from dpsql.records.unit import data_identity

#: bump when what a record holds changes
VERSION = 1
#: the records, one file each in dpsql's folder (the least recently written of 256 dropped first)
DOCUMENTS = Documents("catalogs", 256)
#: key -> the catalog this process recorded or adopted under it (a few files per process)
_SEEN: dict[str, dict[str, Any]] = {}


def key(engine_version: str, path: Path) -> str | None:
    """The record's key for the file at ``path`` as it is now, or None when it has no identity."""
    ident = data_identity(path)  # with the WAL's: a DDL may wait there for its checkpoint
    if ident is None:
        return None
    return hashlib.sha256(repr((VERSION, engine_version, ident)).encode()).hexdigest()


def use(engine: Engine) -> None:
    """Give ``engine`` its file's recorded catalog, or record the catalog it reads."""
    k = key(engine.engine_version, engine.path)
    if k is None:
        return
    doc = _SEEN.get(k) or DOCUMENTS.get(k)
    if doc is not None and doc.get("version") == VERSION:
        try:
            engine.adopt_catalog(doc["catalog"])
            _keep(k, doc)
            return
        except (ValueError, TypeError, KeyError):
            pass  # damaged: read the catalog
    catalog = engine.catalog()
    if catalog is not None:
        doc = {"version": VERSION, "catalog": catalog}
        DOCUMENTS.put(k, doc)
        _keep(k, doc)


def _keep(k: str, doc: dict[str, Any]) -> None:
    if len(_SEEN) >= 16:
        _SEEN.clear()
    _SEEN[k] = doc
