"""Released answers, kept beside the charges that paid for them: a repeated statement is
answered with the release already paid for, not re-bought (issue 33; docs/privacy.md,
"A released answer is reused, not re-bought").

One table, ``answers``, in the ledger's own SQLite file, so a reuse survives a restart and the
wire server and embedded sessions of one policy follow the same rule. A row holds a key (the
SHA-256 of everything the release depends on, :func:`dpsql.pipeline.reuse.key`), the id of the
charge that paid for the release, and the answer as it was released (noisy rows, public once
released; never anything exact), as text or bytes this module does not read. An answer is found only
through a charge of the same analyst: the receipt's time and ρ are the ledger's own record of
that charge, never the stored text's.

A lost or unreadable row only means the next such statement is charged again; every
``sqlite3`` error is the ledger's :class:`~dpsql.errors.LedgerError`, through
:meth:`dpsql.ledger.book.Ledger._use`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from dpsql.errors import LedgerError
from dpsql.ledger import fds as ledger_fds
from dpsql.ledger.book import Ledger

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,         -- SHA-256 of all the release depends on (pipeline/reuse.py)
    charge_id INTEGER NOT NULL,   -- the charge that paid for it (charges.id)
    answer TEXT NOT NULL          -- the released (noisy) answer: JSON text, or bytes (a large one)
);
"""


@dataclass(frozen=True)
class Released:
    """An answer released before, and the charge that paid for it."""

    charge_id: int
    time: float
    rho: Fraction
    delta: Fraction
    answer: str | bytes


def _ready(ledger: Ledger) -> None:
    if not getattr(ledger, "_answers_ready", False):
        assert ledger._opened[0] is not None
        with ledger._use() as db, ledger_fds.write_lock(ledger._opened[0]):
            db.executescript(SCHEMA)
        ledger._answers_ready = True  # type: ignore[attr-defined]


def find(ledger: Ledger, key: str | None, wanted: bool = True) -> Released | None:
    """The answer released under ``key`` to this ledger's analyst, or None (also when there is
    no key, or no reuse is ``wanted``: ``SET dpsql.reuse = off``)."""
    if key is None or not wanted:
        return None
    _ready(ledger)
    with ledger._use() as db:
        row = db.execute("SELECT c.id, c.time, c.rho, c.delta, a.answer FROM answers a JOIN charges c ON c.id = a.charge_id "
                         "WHERE a.key = ? AND c.analyst = ?", (key, ledger.analyst)).fetchone()
    if row is None:
        return None
    answer = row[4] if isinstance(row[4], bytes) else str(row[4])
    return Released(int(row[0]), float(row[1]), Fraction(row[2]), Fraction(row[3]), answer)


def keep(ledger: Ledger, key: str | None, charge_id: int, answer: Callable[[], str | bytes | None]) -> None:
    """Remember the answer charge ``charge_id`` released under ``key`` (none without a key), made
    by ``answer`` only then; a fresh release of the same statement replaces the one before (the
    newest release is the one reused)."""
    text = answer() if key is not None else None
    if text is None:  # no key, or not storable (pipeline/reuse.py): the next such statement is charged again
        return
    try:
        _ready(ledger)
        assert ledger._opened[0] is not None
        with ledger._use() as db, ledger_fds.write_lock(ledger._opened[0]):  # in turn with the charges
            # Not a charge: committed without an fsync of its own (~5 ms of every answer on this disk,
            # issue 34). The next commit with synchronous=FULL (every charge's) syncs it too; a crash
            # before that may lose it, and the next such statement is then charged again.
            db.execute("PRAGMA synchronous=NORMAL")
            try:
                db.execute("INSERT OR REPLACE INTO answers (key, charge_id, answer) VALUES (?, ?, ?)",
                           (key, charge_id, text))
            finally:
                db.execute("PRAGMA synchronous=FULL")  # and Ledger.charge sets it again before each charge
    except LedgerError:
        pass  # the charge is durable and the answer is shown; only its reuse is lost
