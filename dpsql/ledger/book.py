"""The durable budget ledger: every release is charged on disk before it is returned.

Currency: approximate zCDP (ρ, δ) (DESIGN.md). Discrete Gaussian releases add ρ and no δ;
pure ε-DP releases add ε²/2 (Bun & Steinke 2016, Prop. 1.4); an (ε, δ)-DP partition selection
adds ε²/2 and δ ((ε, δ)-DP is δ-approximate ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.13);
sequential composition adds ρ's and δ's (Bun & Steinke 2016, Lemma 2.3 for ρ, Lemma 8.2 for
approximate zCDP). Everything spent, (ρ, δ), is then (ρ + 2√(ρ ln(1/δ')), δ + δ')-DP for any
δ' (:func:`dpsql.privacy.accounting.guarantee`). The statements, the argument, and how far those
numbers could be checked: docs/privacy.md, "Approximate zCDP: the statements relied on".

Budgets — walls in both currencies: ``budget.total_rho`` and ``budget.total_delta`` per
analyst; optionally ``budget.dataset_rho`` and ``budget.dataset_delta`` for all analysts of the
data set together. A charge that either currency cannot cover is refused whole.

Store: SQLite from the standard library (why: docs/privacy.md, "The ledger"), one file per
policy, in WAL mode with ``synchronous=FULL`` so a committed charge survives a crash or power
loss. A charge is one ``BEGIN IMMEDIATE`` transaction — take the write lock, read the running
totals, refuse or insert, commit — so processes sharing a budget are serialised and can never
spend more than it holds together; a ``threading.Lock`` does the same for threads sharing one
:class:`Ledger`. The charges of a process's Ledgers on one file that arrive while a commit is
under way share the next transaction, each checked in turn (:mod:`dpsql.ledger.group`). All
arithmetic is exact (``fractions.Fraction``, stored as "numerator/denominator" text).

A ledger that cannot record refuses: before every use (and again after a charge commits) the
file at ``path`` and its ``-wal`` / ``-shm`` companions must still be the very files opened
(same device and inode) and the file must still start with SQLite's header. SQLite itself
would go on writing to a deleted or replaced file's old inode, and would not notice garbage
written over the main file while its pages are in the WAL. Any failure is a
:class:`~dpsql.errors.LedgerError` (DP404); no ``sqlite3`` exception leaves this module.
The header is read through one descriptor per file (:mod:`dpsql.ledger.fds`), kept open
while any :class:`Ledger` of the process uses the file: closing a descriptor drops every POSIX
lock the process holds on the file, SQLite's included, and another process could then take the
ledger for unused and delete its WAL.
"""

from __future__ import annotations

import getpass
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.ledger import fds as ledger_fds
from dpsql.ledger import group as ledger_group
from dpsql.ledger import pool as ledger_pool
from dpsql.errors import BudgetExceededError, LedgerError, PolicyFileError
from dpsql.policy.model import Policy
from dpsql.privacy import accounting
from dpsql.privacy.budget import fmt, fmt_down, fmt_up

SCHEMA = """
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    analyst TEXT NOT NULL,
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    query TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    rho TEXT NOT NULL,            -- exact, "num/den"
    delta TEXT NOT NULL,          -- exact, "num/den"
    epsilon TEXT,                 -- pure-DP epsilon when the mechanism is pure DP
    policy_terms TEXT NOT NULL    -- JSON list: the terms this release adds to P(r)
);
CREATE TABLE IF NOT EXISTS totals (
    analyst TEXT PRIMARY KEY,     -- '' holds the total of all analysts
    rho TEXT NOT NULL,
    delta TEXT NOT NULL
);
"""
_HISTORY = ("SELECT id, time, analyst, session, dataset, query, mechanism, rho, delta, epsilon, policy_terms "
            "FROM charges")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def ledger_path(policy: Policy) -> Path:
    """The policy's ledger file: ``budget.ledger``, else ``<policy stem>.ledger.sqlite`` beside it.
    Chosen by the data owner's policy, never by the analyst's connection."""
    if policy.budget.ledger is not None:
        return policy.budget.ledger
    if policy.path is None:
        raise PolicyFileError("a policy without a file needs budget.ledger to say where its ledger lives")
    return policy.path.with_name(policy.path.stem + ".ledger.sqlite")


@dataclass(frozen=True)
class Charge:
    """One release: what it cost and the policy terms it adds to P(r)."""

    query: str
    rho: Fraction
    mechanism: str
    policy_terms: tuple[dict[str, Any], ...] = ()
    delta: Fraction = Fraction(0)
    epsilon: Fraction | None = None
    analyst: str = ""
    session: str = ""
    dataset: str = ""
    time: float = field(default_factory=time.time)
    id: int | None = None


@dataclass(frozen=True)
class Spent:
    """The running totals, read in one statement: this analyst's and all analysts' together."""

    rho: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho_all: Fraction = Fraction(0)
    delta_all: Fraction = Fraction(0)


def os_user() -> str:
    """The login name, the analyst recorded with charges when a face names none."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (some containers): one shared analyst
        return "analyst"


class Ledger:
    """The charges of one policy's data set, on disk. One object may be shared by threads."""

    def __init__(self, path: Path, analyst: str, total_rho: Fraction, dataset_rho: Fraction | None = None, *,
                 total_delta: Fraction | None = None, dataset_delta: Fraction | None = None) -> None:
        """Open (or create) the ledger file.

        Args:
            total_rho, dataset_rho: the ρ caps per analyst and for the data set (None: none).
            total_delta, dataset_delta: the δ caps likewise; None means no cap, for callers that
                do not pass one (the session passes the policy's ``budget.total_delta``).

        Raises:
            LedgerError: the file cannot be opened or created, or is not a dpsql ledger.
        """
        self.path = Path(path)
        self.analyst = analyst
        self.total_rho = total_rho
        self.dataset_rho = dataset_rho
        self.total_delta = total_delta
        self.dataset_delta = dataset_delta
        self._lock = threading.Lock()  # one statement sequence (a BEGIN IMMEDIATE ... COMMIT) at a time
        self._db: sqlite3.Connection | None = None
        self._after: tuple[int, Spent] | None = None  # the last charge's id and the totals its commit left
        self._opened = self._identity()
        self._db = ledger_pool.take(self._opened)  # one a closed Ledger left open on these very files
        if self._db is not None:
            return
        try:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._broken(f"cannot be opened ({exc})") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
            db.execute(_HISTORY + " LIMIT 0").fetchall()  # the columns this module reads exist
            db.execute("SELECT analyst, rho, delta FROM totals LIMIT 0").fetchall()
            self._opened = self._identity()  # the files SQLite now holds open
            if self._opened[0] is None:
                raise OSError(f"{self.path} vanished while it was being opened")
            ledger_fds.hold_fd(self.path, self._opened[0])
        except (sqlite3.Error, OSError) as exc:
            db.close()
            raise self._broken(f"is not a readable dpsql ledger ({exc})") from None
        self._db = db

    def close(self, keep: bool = True) -> None:
        with self._lock:  # keep: its connection serves the process's next Ledger on these files (ledger/pool.py)
            if self._db is not None:
                (ledger_pool.give if keep else ledger_pool.close)(self._opened, self._db)
                self._db = None

    # ------------------------------------------------------------------ the file is still this ledger
    def _companions(self) -> tuple[str, ...]:  # names, not Paths: stat'ed ~6 times an answer
        p = str(self.path)
        return p, f"{p}-wal", f"{p}-shm"

    def _identity(self) -> tuple[tuple[int, int] | None, ...]:
        out: list[tuple[int, int] | None] = []
        for f in self._companions():
            try:
                st = os.stat(f)
            except FileNotFoundError:
                out.append(None)
                continue
            out.append((st.st_dev, st.st_ino))
        return tuple(out)

    def _verify(self) -> None:
        """Raise unless the files at ``path`` are still the ones this ledger opened, and the
        main file still starts with SQLite's header."""
        try:
            now = self._identity()
            if now[0] is None:
                raise self._broken("no longer exists (deleted or moved)")
            if now[0] != self._opened[0]:
                raise self._broken("was replaced by another file")
            if now[1:] != self._opened[1:]:
                raise self._broken("lost its write-ahead log (-wal) or shared-memory (-shm) file")
            assert self._opened[0] is not None
            if os.pread(ledger_fds.header_fd(self._opened[0]), len(_SQLITE_MAGIC), 0) != _SQLITE_MAGIC:
                raise self._broken("is no longer a SQLite file (it was overwritten)")
        except OSError as exc:
            raise self._broken(f"cannot be read ({exc.strerror or exc})") from None

    def _broken(self, reason: str) -> LedgerError:
        return LedgerError(f"the budget ledger {self.path} {reason}; nothing was charged and nothing released",
                           hint="the ledger must stay where the policy puts it, untouched while dpsql runs: "
                                "restore it (or ask the data owner) and reconnect.")

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        """The SQLite connection, for one thread at a time, after checking the file; every
        ``sqlite3`` error inside becomes a LedgerError (STYLE.md habit 7)."""
        with self._lock:
            if self._db is None:
                raise self._broken("is closed")
            self._verify()
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._broken(f"could not be used ({exc})") from None

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _read_spent(db: sqlite3.Connection, analyst: str) -> Spent:
        rows = dict(((a, (r, d)) for a, r, d in db.execute(
            "SELECT analyst, rho, delta FROM totals WHERE analyst IN (?, '')", (analyst,))))
        mine, everyone = rows.get(analyst, ("0", "0")), rows.get("", ("0", "0"))
        return Spent(Fraction(mine[0]), Fraction(mine[1]), Fraction(everyone[0]), Fraction(everyone[1]))

    @property
    def totals(self) -> Spent:
        """ρ and δ spent by this analyst and by all analysts, over every session and process."""
        with self._use() as db:
            return self._read_spent(db, self.analyst)

    @property
    def spent(self) -> Fraction:
        """ρ this analyst has spent, over every session and process."""
        return self.totals.rho

    @property
    def spent_delta(self) -> Fraction:
        """δ this analyst has spent (partition selections), over every session and process."""
        return self.totals.delta

    @property
    def remaining(self) -> Fraction:
        """ρ this analyst may still spend (the data set's cap included)."""
        return self._left(self.totals)[0]

    def rho_spent_and_left(self, after: int | None = None) -> tuple[Fraction, Fraction]:
        """ρ this analyst has spent and may still spend, from one read (a receipt's two figures);
        ``after``: the id of this ledger's last charge, whose transaction wrote them (no read)."""
        s = self._after[1] if after is not None and self._after is not None and self._after[0] == after else self.totals
        return s.rho, self._left(s)[0]

    @property
    def remaining_delta(self) -> Fraction | None:
        """δ this analyst may still spend (the data set's cap included); None when uncapped."""
        return self._left(self.totals)[1]

    def _left(self, s: Spent) -> tuple[Fraction, Fraction | None]:
        rho = self.total_rho - s.rho
        if self.dataset_rho is not None:
            rho = min(rho, self.dataset_rho - s.rho_all)
        caps = [cap - used for cap, used in ((self.total_delta, s.delta), (self.dataset_delta, s.delta_all))
                if cap is not None]
        return max(rho, Fraction(0)), (max(min(caps), Fraction(0)) if caps else None)

    def history(self, analyst: str | None = None) -> list[Charge]:
        """Every charge (of one analyst, or of all), oldest first."""
        sql, args = _HISTORY, ()
        if analyst is not None:
            sql, args = sql + " WHERE analyst = ?", (analyst,)
        with self._use() as db:
            rows = db.execute(sql + " ORDER BY id", args).fetchall()
        return [Charge(id=r[0], time=r[1], analyst=r[2], session=r[3], dataset=r[4], query=r[5], mechanism=r[6],
                       rho=Fraction(r[7]), delta=Fraction(r[8]), epsilon=Fraction(r[9]) if r[9] else None,
                       policy_terms=tuple(json.loads(r[10]))) for r in rows]

    @property
    def charges(self) -> list[Charge]:
        """This analyst's charges."""
        return self.history(self.analyst)

    def summary(self, conversion_delta: Any = accounting.DEFAULT_CONVERSION_DELTA) -> dict[str, str]:
        """This analyst's budget in both currencies and the (ε, δ)-DP guarantee of everything it
        has spent, as text for people and scripts (``dpsql ledger``, ``\\budget``,
        ``Connection.budget``).

        The guarantee converts the ρ spent at ``conversion_delta`` (δ') and adds the δ spent:
        δ-approximate ρ-zCDP is (ε, δ + δ')-DP (docs/privacy.md). ε is given twice: the tight
        numeric conversion (paper 004 Lemma 4, ``epsilon``) and the analytic bound
        ρ + 2√(ρ ln(1/δ')) (Lemma 5, ``epsilon_analytic``); both rounded up.
        """
        s = self.totals
        rho_left, delta_left = self._left(s)
        g = accounting.guarantee(s.rho, s.delta, conversion_delta)
        out = {"analyst": self.analyst, "spent": fmt(s.rho), "remaining": fmt_down(rho_left), "total": fmt(self.total_rho),
               "delta_spent": fmt_up(s.delta),
               "delta_remaining": "no cap" if delta_left is None else fmt_down(delta_left),
               "delta_total": "no cap" if self.total_delta is None else fmt(self.total_delta),
               "epsilon": fmt_up(g.epsilon_tight), "epsilon_analytic": fmt_up(g.epsilon_analytic),
               "delta": fmt_up(g.delta), "conversion_delta": fmt_up(g.conversion_delta), "ledger": str(self.path)}
        if self.dataset_rho is not None:
            out["dataset_total"] = fmt(self.dataset_rho)
        if self.dataset_delta is not None:
            out["dataset_delta_total"] = fmt(self.dataset_delta)
        return out

    # ------------------------------------------------------------------ charging
    def check(self, rho: Fraction, delta: Fraction = Fraction(0)) -> None:
        """Refuse early, before any work, when ``rho`` or ``delta`` cannot be covered.

        Raises:
            BudgetExceededError: a currency ran out; nothing was charged.
            LedgerError: the ledger cannot record a charge (see the module docstring).
        """
        refusal = self._refusal(rho, delta, self.totals)
        if refusal is not None:
            raise refusal

    def charge(self, charge: Charge, keep: Callable[[Any, int], None] | None = None) -> int:
        """Record a charge durably, atomically with the check; returns its id. ``keep``: the
        write that keeps the answer it pays for (:func:`dpsql.ledger.answers.kept`), run in the
        same transaction.

        The binding check: inside one ``BEGIN IMMEDIATE`` transaction, read the totals, refuse
        or insert, commit — together with the process's other charges on this file that arrive
        meanwhile (:mod:`dpsql.ledger.group`: one commit for them all, each checked in turn).
        After the commit the file is verified once more, so a charge that went to a deleted or
        replaced file is never reported as recorded.

        Raises:
            BudgetExceededError: the remaining ρ or δ cannot cover it; nothing is recorded.
            LedgerError: the ledger cannot record it; the caller must release nothing.
        """
        pending = ledger_group.Pending(self, charge, keep)
        charge_id = ledger_group.charge(self._opened, pending, lambda batch: ledger_group.commit(self, batch))
        # not verified again: the batch's leader verified these very files (the queue is per
        # identity) after its COMMIT returned, and a failed check there failed every charge of it
        self._after = (int(charge_id), Spent(*pending.after))  # one assignment: read whole or not at all
        return int(charge_id)

    def _refusal(self, rho: Fraction, delta: Fraction, s: Spent) -> BudgetExceededError | None:
        """The refusal of a charge of (rho, delta) after ``s``, naming each currency that ran out."""
        rho_left, delta_left = self._left(s)
        needs, hints = [], []
        if rho > rho_left:
            mine_binds = self.dataset_rho is None or self.total_rho - s.rho <= self.dataset_rho - s.rho_all
            needs.append(f"rho={fmt(rho)} but only rho={fmt_down(rho_left)} of "
                         f"{'this analyst' if mine_binds else 'the data set'}'s rho budget remains "
                         f"(total {fmt(self.total_rho)} per analyst"
                         + (f", {fmt(self.dataset_rho)} for the data set" if self.dataset_rho is not None else "")
                         + ")")
            hints.append("ask for less (a smaller rho per query) or ask the data owner for more budget")
        if delta > 0 and delta_left is not None and delta > delta_left:
            mine_binds = (self.total_delta is not None
                          and (self.dataset_delta is None
                               or self.total_delta - s.delta <= self.dataset_delta - s.delta_all))
            caps = [f"budget.total_delta {fmt(self.total_delta)} per analyst" if self.total_delta is not None else "",
                    f"budget.dataset_delta {fmt(self.dataset_delta)} for the data set"
                    if self.dataset_delta is not None else ""]
            needs.append(f"delta={fmt(delta)} (partition selection) but only delta={fmt_down(delta_left)} of "
                         f"{'this analyst' if mine_binds else 'the data set'}'s delta budget remains "
                         f"({', '.join(c for c in caps if c)})")
            hints.append("GROUP BY keys with public keysets need no selection and no delta; the data owner "
                         "can lower selection.delta or raise budget.total_delta")
        if not needs:
            return None
        return BudgetExceededError(f"the query needs {'; and '.join(needs)}; nothing was charged and nothing released",
                                   hint="; ".join(hints) + ".")
