"""Charges that arrive together commit together (issue 34): one transaction and one fsync for
the charges a process's sessions make on one ledger while the commit before them is on its way
to disk.

A charge's commit waits for the disk (WAL, ``synchronous=FULL``): ~5 ms on this machine, while
the process's other sessions, each with its answer ready, waited in turn for the same lock. Now
the first charge to find no commit under way leads: it takes every charge queued on the same
files (the ledger's identity, :attr:`Ledger._opened <dpsql.ledger.book.Ledger>`), and writes them
in their order of arrival in one ``BEGIN IMMEDIATE`` transaction on its own connection — each
checked against the running totals the charges before it in the batch left, with its own
ledger's caps, refused alone if they cannot cover it — and commits once. Charges that arrive
meanwhile queue for the next leader. Nothing about durability changes: every caller returns
(and its session releases rows) only after the COMMIT holding its charge returned; a crash
before that commit records none of the batch and none of its answers has left; a failed commit
is every caller's :class:`~dpsql.errors.LedgerError`. A lone charge is a batch of one: the same
statements as before.

A charge may bring the answer it pays for, to keep for reuse (``keep``, made by
:func:`dpsql.ledger.answers.kept`): written in the same transaction right after its charge, so
one commit and one fsync hold both (a second transaction of its own cost the server CPU per
answer: docs/performance.md, "Fifth step"), and an answer is never kept without the charge that
paid for it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpsql.ledger import fds as ledger_fds

Identity = tuple[Any, ...]


class Pending:
    """One charge waiting for its commit: the ledger that asked (its analyst, its caps), the
    charge, the write that keeps its answer (or None), and its outcome once committed — the
    charge's id, or the exception to raise."""

    __slots__ = ("ledger", "charge", "keep", "outcome", "after")

    def __init__(self, ledger: Any, charge: Any, keep: Callable[[Any, int], None] | None = None) -> None:
        self.ledger, self.charge, self.keep, self.outcome = ledger, charge, keep, None
        self.after: tuple[Fraction, ...] = ()  # once recorded: the totals its transaction wrote (ρ, δ; all analysts')


class _Queue:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.waiting: list[Pending] = []
        self.busy = False


_QUEUES: dict[Identity, _Queue] = {}
_QUEUES_LOCK = threading.Lock()


def charge(identity: Identity, pending: Pending, write: Callable[[list[Pending]], None]) -> Any:
    """Queue ``pending`` on the files ``identity``; lead a batch when no commit is under way
    (``write`` commits the batch and sets each outcome, or raises having set none). Returns
    ``pending``'s outcome once its batch committed, or raises its exception."""
    with _QUEUES_LOCK:
        queue = _QUEUES.get(identity)
        if queue is None:  # not a new Condition per charge, as setdefault(identity, _Queue()) made
            queue = _QUEUES[identity] = _Queue()
    with queue.cond:
        queue.waiting.append(pending)
        while pending.outcome is None and queue.busy:
            queue.cond.wait()
        batch = None
        if pending.outcome is None:  # nobody took it: lead
            queue.busy = True
            batch, queue.waiting = queue.waiting, []
    if batch is not None:
        try:
            write(batch)
        except BaseException as exc:
            for p in batch:  # none of the batch is recorded: each caller releases nothing
                p.outcome = exc if p is pending else p.ledger._broken(f"could not record its charge ({exc})")
        finally:
            with queue.cond:
                queue.busy = False
                queue.cond.notify_all()
    if isinstance(pending.outcome, BaseException):
        raise pending.outcome
    return pending.outcome


def _text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def commit(leader: Any, batch: list[Pending]) -> None:
    """Write ``batch`` (charges of Ledgers on these very files) in one transaction on the leading
    ledger ``leader``'s connection; set each one's outcome (its id, or its refusal) once the COMMIT
    returned. Raises, having set no outcome, when the transaction fails."""
    assert leader._opened[0] is not None
    outcomes: list[Any] = []
    after: list[tuple[Fraction, ...]] = []
    with leader._use() as db, ledger_fds.write_lock(leader._opened[0]):  # in turn with answers._touch
        db.execute("PRAGMA synchronous=FULL")  # whatever ran before (answers._touch commits without fsync)
        db.execute("BEGIN IMMEDIATE")  # the write lock: one transaction at a time across processes
        try:
            for p in batch:
                charge, analyst = p.charge, p.ledger.analyst
                s = leader._read_spent(db, analyst)
                refusal = p.ledger._refusal(charge.rho, charge.delta, s)
                if refusal is not None:
                    outcomes.append(refusal)
                    after.append(())
                    continue
                cur = db.execute(
                    "INSERT INTO charges (time, analyst, session, dataset, query, mechanism, rho, delta, epsilon, "
                    "policy_terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (charge.time, analyst, charge.session, charge.dataset, charge.query, charge.mechanism,
                     _text(charge.rho), _text(charge.delta),
                     _text(charge.epsilon) if charge.epsilon is not None else None,
                     json.dumps(list(charge.policy_terms))))
                for who, rho, delta in ((analyst, s.rho, s.delta), ("", s.rho_all, s.delta_all)):
                    db.execute("INSERT OR REPLACE INTO totals (analyst, rho, delta) VALUES (?, ?, ?)",
                               (who, _text(rho + charge.rho), _text(delta + charge.delta)))
                outcomes.append(int(cur.lastrowid or 0))
                if p.keep is not None:  # its answer, in this transaction (answers.kept)
                    p.keep(db, outcomes[-1])
                after.append((s.rho + charge.rho, s.delta + charge.delta, s.rho_all + charge.rho, s.delta_all + charge.delta))
            db.execute("COMMIT")  # durable (WAL, synchronous=FULL) before any caller sees a row
        except BaseException:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite already rolled back (an I/O error does): nothing is recorded
            raise
        leader._verify()
    for p, outcome, totals in zip(batch, outcomes, after):
        p.after = totals
        p.outcome = outcome
