"""What a process worked out, remembered for the next ones, in dpsql's per-user folder
(:func:`dpsql.home.home`).

:class:`Records` keeps passed checks: one small JSON file of keys (lists of strings and
integers). Only passes are kept: a key that is absent means "check again", so a lost, unreadable
or half-written file costs only the work the record saved. :class:`Documents` keeps one JSON
document per key (a plan, a catalog), each in a file of its own named by the key's SHA-256, so a
process reads only the one it needs; a missing or damaged one is a miss. The file is written whole, a temporary file renamed into place, so a
reader never sees a partial one; two processes adding at once may drop one of the two keys (the
check then runs again in a later process), never keep a key that nobody added: each writer (a
process, or a thread of a wire server) writes a temporary file of its own.

Trust: whoever can write the folder can add a key. Embedded (``dpsql.connect``, the CLI) that is
the user running dpsql; under ``dpsql serve`` the folder is the server account's (docs/server.md,
"The security model"). Each store says what a forged key could cost. This module imports nothing
of dpsql but home.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpsql.home import home

Key = Sequence[object]  # JSON values: str, int, None, lists of them


class Records:
    """The keys kept in ``home() / file_name``, at most ``size`` of them (the oldest dropped first)."""

    def __init__(self, file_name: str, size: int) -> None:
        self.file_name = file_name
        self.size = size

    @property
    def path(self) -> Path:
        return home() / self.file_name

    def _load(self, where: Path) -> list[list[str | int]]:
        try:
            doc = json.loads(where.read_text(encoding="utf-8"))
            return [r for r in doc.get("records", []) if isinstance(r, list)]
        except (OSError, ValueError, AttributeError):
            return []

    def __contains__(self, key: Key) -> bool:
        return list(key) in self._load(self.path)

    def add(self, key: Key) -> None:
        """Remember ``key``. Failing to write changes nothing but a later process's work."""
        where, key = self.path, list(key)
        records = [r for r in self._load(where) if r != key][-(self.size - 1):] + [key]
        _write_whole(where, {"version": 1, "records": records})


class Documents:
    """JSON documents kept in the folder ``home() / folder``, one file per key (a SHA-256 hex
    digest), at most ``size`` of them (the least recently written dropped first)."""

    def __init__(self, folder: str, size: int) -> None:
        self.folder = folder
        self.size = size

    def path(self, key: str) -> Path:
        return home() / self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The document kept under ``key``, or None (none, unreadable, or not a JSON object)."""
        try:
            doc = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def put(self, key: str, doc: dict[str, Any]) -> None:
        """Keep ``doc`` under ``key``, written whole (a temporary file renamed into place).
        Failing to write changes nothing but a later process's work. Past ``size`` documents the
        oldest go until an eighth of ``size`` is free, so the stat and sort of every document
        happen once every ``size // 8`` puts, not on each (1.9 ms a put at 1,024 plans)."""
        where = self.path(key)
        if not _write_whole(where, doc):
            return
        try:
            entries = [e for e in os.scandir(where.parent) if e.name.endswith(".json")]
            if len(entries) > self.size:
                entries.sort(key=lambda e: e.stat().st_mtime_ns)
                for e in entries[:len(entries) - (self.size - self.size // 8)]:
                    Path(e.path).unlink(missing_ok=True)
        except OSError:
            pass


def _write_whole(where: Path, doc: Any) -> bool:
    """Write ``doc`` as JSON to ``where`` whole: a temporary file of this writer (a process, or a
    thread of a wire server) renamed into place, so a reader never sees a partial file and two
    writers never share one. False when it could not be written."""
    tmp = where.with_name(f".{where.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, where)
        return True
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
