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

**Bounded** (issue 31): the store keeps at most ``budget.answers_kept`` answers and
``budget.answers_mib`` of them *per analyst*, the analyst's least recently used pruned first, in
the transaction that keeps a new one (nothing half-written on a crash). ``used`` is a counter of
the analyst's own keeps and reuses (a reuse writes it only when due, :func:`_slack`), and ``size``
the stored answer's bytes, a function of the charged noisy release alone — so whether an answer
was pruned depends on no private row, and on nothing another analyst did: one analyst's many
statements never push out another's answers (which would charge them again, from their budget).
A pruned answer only means the next such statement is a fresh release, charged like any other
(docs/privacy.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpsql.errors import LedgerError
from dpsql.ledger import fds as ledger_fds
from dpsql.ledger.book import Ledger
from dpsql.policy.model import Budget

_DEFAULT = Budget(Fraction(1, 10), Fraction(1))  # the bound's defaults, for callers without a policy

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,         -- SHA-256 of all the release depends on (pipeline/reuse.py)
    charge_id INTEGER NOT NULL,   -- the charge that paid for it (charges.id)
    answer TEXT NOT NULL,         -- the released (noisy) answer: JSON text, or bytes (a large one)
    used INTEGER NOT NULL DEFAULT 0,  -- when last kept or reused: a counter, the highest the newest
    size INTEGER NOT NULL DEFAULT 0,  -- the answer's bytes
    analyst TEXT NOT NULL DEFAULT ''  -- whose: the charge's analyst (each analyst's answers are bounded apart)
);
"""
#: added to a store written before the bound (issue 31): its answers count as used in the order kept
_MIGRATE = ("ALTER TABLE answers ADD COLUMN used INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE answers ADD COLUMN size INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE answers ADD COLUMN analyst TEXT NOT NULL DEFAULT ''",
            "UPDATE answers SET used = rowid, size = length(answer), "
            "analyst = COALESCE((SELECT c.analyst FROM charges c WHERE c.id = answers.charge_id), '')")
#: an analyst's counts, bytes and newest use without a table scan
_INDEX = "CREATE INDEX IF NOT EXISTS answers_by_analyst ON answers (analyst, used, size)"
_NEXT = "(SELECT COALESCE(MAX(used), 0) + 1 FROM answers WHERE analyst = ?)"  # the analyst's next use


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
            if not _current(db):  # a store written before the bound, or a new one: in one write transaction
                db.execute("BEGIN IMMEDIATE")  # one process adds the columns, the others then see them
                try:
                    have = {r[1] for r in db.execute("PRAGMA table_info(answers)")}
                    if "analyst" not in have:
                        for statement in _MIGRATE:
                            if not any(f"COLUMN {c} " in statement for c in have):
                                db.execute(statement)
                    db.execute("DROP INDEX IF EXISTS answers_used")  # the bound's first form, over all analysts
                    db.execute(_INDEX)
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
        ledger._answers_ready = True  # type: ignore[attr-defined]


def _current(db: Any) -> bool:
    """Whether the store already has the bound's columns and index (no write transaction needed)."""
    return ("analyst" in {r[1] for r in db.execute("PRAGMA table_info(answers)")}
            and db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'answers_by_analyst'")
            .fetchone() is not None)


def held(ledger: Ledger) -> tuple[int, int]:
    """(how many answers the ledger keeps for reuse for its analyst, their bytes)."""
    _ready(ledger)
    with ledger._use() as db:
        n, size = db.execute("SELECT COUNT(*), TOTAL(size) FROM answers WHERE analyst = ?", (ledger.analyst,)).fetchone()
    return int(n), int(size)


def find(ledger: Ledger, key: str | None, wanted: bool = True, used: Budget | None = None) -> Released | None:
    """The answer released under ``key`` to this ledger's analyst, or None (also when there is
    no key, or no reuse is ``wanted``: ``SET dpsql.reuse = off``). ``used``: the policy's budget
    when the answer is about to be shown (not when a caller only asks whether it would be): it is
    then marked used (:func:`_touch`) unless it was, lately enough for its bound."""
    if key is None or not wanted:
        return None
    _ready(ledger)
    with ledger._use() as db:
        row = db.execute("SELECT c.id, c.time, c.rho, c.delta, a.answer, "
                         "(SELECT MAX(used) FROM answers WHERE analyst = c.analyst) - a.used, a.size "
                         "FROM answers a JOIN charges c ON c.id = a.charge_id "
                         "WHERE a.key = ? AND c.analyst = ?", (key, ledger.analyst)).fetchone()
    if row is None:
        return None
    if used is not None and row[5] >= _slack(used, row[6]):
        _touch(ledger, key)
    answer = row[4] if isinstance(row[4], bytes) else str(row[4])
    return Released(int(row[0]), float(row[1]), Fraction(row[2]), Fraction(row[3]), answer)


def _slack(budget: Budget, size: int) -> int:
    """How many keeps and uses since an answer was last marked used leave it unmarked: an eighth
    of the answers like it the store can hold (at least 1). A dashboard's answers are then written
    once in many reuses (a write costs ~0.1 ms of a ~0.4 ms reuse, measured), and the least recently
    used goes first to within that eighth."""
    room = min(budget.answers_kept, budget.answers_bytes // max(1, size))
    return max(1, room // 8)


def _touch(ledger: Ledger, key: str) -> None:
    """Make the answer under ``key`` the most recently used (pruned last). Not a charge: committed
    without an fsync of its own (the next charge's commit syncs it); lost, it only changes the
    order of pruning."""
    try:
        with ledger._use() as db, ledger_fds.write_lock(ledger._opened[0]):  # type: ignore[arg-type]
            db.execute("PRAGMA synchronous=NORMAL")
            try:
                db.execute(f"UPDATE answers SET used = {_NEXT} WHERE key = ?", (ledger.analyst, key))
            finally:
                db.execute("PRAGMA synchronous=FULL")
    except LedgerError:
        pass


def kept(ledger: Ledger, key: str | None, answer: Callable[[], str | bytes | None],
         budget: Budget | None = None) -> Callable[[Any, int], None] | None:
    """The write that keeps the answer ``answer`` makes (made now, before the charge: noisy
    values only, and nothing leaves until the charge commits) under ``key``, for
    :meth:`Ledger.charge`'s ``keep``: run inside the charge's own transaction, right after its
    charge, with that charge's id — one commit and one fsync for both (dpsql/ledger/group.py). A
    fresh release of the same statement replaces the one before (the newest release is the one
    reused), and the least recently used answers past ``budget``'s ``answers_kept`` and
    ``answers_bytes`` are pruned in the same transaction (:func:`prune`). None when there is
    nothing to keep (no key, an answer not storable, a store that cannot be made ready): the
    next such statement is then charged again.

    The write runs in a SAVEPOINT: if SQLite refuses it, it is rolled back alone and the charge
    commits without it (the answer is shown; only its reuse is lost)."""
    budget = budget or _DEFAULT
    text = answer() if key is not None else None
    if text is None:  # no key, or not storable (pipeline/reuse.py)
        return None
    try:
        _ready(ledger)
    except LedgerError:
        return None
    size = len(text.encode() if isinstance(text, str) else text)

    def write(db: Any, charge_id: int) -> None:
        db.execute("SAVEPOINT kept")
        try:
            db.execute(f"INSERT OR REPLACE INTO answers (key, charge_id, answer, used, size, analyst) "
                       f"VALUES (?, ?, ?, {_NEXT}, ?, ?)", (key, charge_id, text, ledger.analyst, size, ledger.analyst))
            prune(db, ledger.analyst, budget.answers_kept, budget.answers_bytes)
        except sqlite3.Error:
            db.execute("ROLLBACK TO kept")  # the answer and its pruning together, or neither
        db.execute("RELEASE kept")

    return write


def prune(db: Any, analyst: str, most: int, most_bytes: int) -> None:
    """Delete ``analyst``'s least recently used answers until at most ``most`` are kept, of at most
    ``most_bytes`` together (inside the caller's transaction). What it reads — how many answers the
    analyst has, their sizes and their order of use — is the ledger's own record of what it released
    to that analyst: no private row, and nothing of another analyst's, decides what is pruned."""
    n, size = db.execute("SELECT COUNT(*), TOTAL(size) FROM answers WHERE analyst = ?", (analyst,)).fetchone()
    n, size = int(n), int(size)
    if n <= most and size <= most_bytes:
        return
    doomed, oldest = [], db.execute("SELECT key, size FROM answers WHERE analyst = ? ORDER BY used, rowid", (analyst,))
    for key, bytes_ in oldest:
        if n <= most and size <= most_bytes:
            break
        doomed.append(key)
        n, size = n - 1, size - int(bytes_)
    oldest.close()
    db.executemany("DELETE FROM answers WHERE key = ?", [(k,) for k in doomed])
