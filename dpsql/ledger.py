"""The durable budget ledger: every release is charged on disk before it is returned.

Currency: approximate zCDP (ρ, δ) (DESIGN.md). Discrete Gaussian releases add ρ and no δ;
pure ε-DP releases add ε²/2 (Bun & Steinke 2016, Prop. 1.4); sequential composition adds ρ's
and δ's (Bun & Steinke 2016, Lemma 2.3). Rules and sources: docs/privacy.md.

Store: SQLite from the standard library (why: docs/privacy.md, "The ledger"), one file per
policy, in WAL mode with ``synchronous=FULL`` so a committed charge survives a crash or power
loss. A charge is one ``BEGIN IMMEDIATE`` transaction — take the write lock, read the running
totals, refuse or insert, commit — so processes sharing a budget are serialised and can never
spend more than it holds together. All arithmetic is exact (``fractions.Fraction``, stored as
"numerator/denominator" text).

Budgets: ``budget.total_rho`` per analyst; optionally ``budget.dataset_rho`` for all analysts
of the data set together.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import BudgetExceededError, BudgetValueError, DatabaseFileError

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


def parse_rho(value: Any, what: str = "rho") -> Fraction:
    """A budget value as an exact Fraction. ``0.1`` means 1/10 (its decimal text), not the
    nearest binary double."""
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BudgetValueError(f"{what} must be a positive number, got {type(value).__name__}")
    else:
        if isinstance(value, float) and not math.isfinite(value):
            raise BudgetValueError(f"{what} must be finite, got {value}")
        try:
            frac = Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError):
            raise BudgetValueError(f"{what} must be a positive number, got {value!r}") from None
    if frac <= 0:
        raise BudgetValueError(f"{what} must be positive, got {value}")
    return frac


def fmt(value: Fraction) -> str:
    """A budget value for people: exact when short, else 6 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6g}"


def _text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


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


class Ledger:
    """The charges of one policy's data set, on disk."""

    def __init__(self, path: Path, analyst: str, total_rho: Fraction, dataset_rho: Fraction | None = None) -> None:
        self.path = Path(path)
        self.analyst = analyst
        self.total_rho = total_rho
        self.dataset_rho = dataset_rho
        try:
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise DatabaseFileError(f"cannot open the budget ledger {self.path}: {exc}",
                                    hint="the ledger lives beside the policy file (or at budget.ledger); "
                                         "its directory must be writable.") from None

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ reading
    def _total(self, analyst: str, db: sqlite3.Connection | None = None) -> tuple[Fraction, Fraction]:
        row = (db or self._db).execute("SELECT rho, delta FROM totals WHERE analyst = ?", (analyst,)).fetchone()
        return (Fraction(row[0]), Fraction(row[1])) if row else (Fraction(0), Fraction(0))

    @property
    def spent(self) -> Fraction:
        """ρ this analyst has spent, over every session and process."""
        return self._total(self.analyst)[0]

    @property
    def spent_delta(self) -> Fraction:
        return self._total(self.analyst)[1]

    @property
    def remaining(self) -> Fraction:
        return self._remaining(*self._totals_pair())

    def _totals_pair(self, db: sqlite3.Connection | None = None) -> tuple[Fraction, Fraction]:
        return self._total(self.analyst, db)[0], self._total("", db)[0]

    def _remaining(self, mine: Fraction, everyone: Fraction) -> Fraction:
        left = self.total_rho - mine
        if self.dataset_rho is not None:
            left = min(left, self.dataset_rho - everyone)
        return max(left, Fraction(0))

    def history(self, analyst: str | None = None) -> list[Charge]:
        """Every charge (of one analyst, or of all), oldest first."""
        sql = "SELECT id, time, analyst, session, dataset, query, mechanism, rho, delta, epsilon, policy_terms FROM charges"
        args: tuple[Any, ...] = ()
        if analyst is not None:
            sql += " WHERE analyst = ?"
            args = (analyst,)
        rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [Charge(id=r[0], time=r[1], analyst=r[2], session=r[3], dataset=r[4], query=r[5], mechanism=r[6],
                       rho=Fraction(r[7]), delta=Fraction(r[8]), epsilon=Fraction(r[9]) if r[9] else None,
                       policy_terms=tuple(json.loads(r[10]))) for r in rows]

    @property
    def charges(self) -> list[Charge]:
        """This analyst's charges."""
        return self.history(self.analyst)

    # ------------------------------------------------------------------ charging
    def check(self, rho: Fraction) -> None:
        """Refuse early, before any work, when ``rho`` cannot be covered."""
        remaining = self.remaining
        if rho > remaining:
            raise self._refusal(rho, remaining)

    def charge(self, charge: Charge) -> int:
        """Record a charge durably, atomically with the check; returns its id.

        Raises:
            BudgetExceededError: the remaining budget cannot cover it; nothing is recorded.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")  # the write lock: one charge at a time across processes
        try:
            mine, everyone = self._totals_pair(db)
            remaining = self._remaining(mine, everyone)
            if charge.rho > remaining:
                raise self._refusal(charge.rho, remaining)
            cur = db.execute(
                "INSERT INTO charges (time, analyst, session, dataset, query, mechanism, rho, delta, epsilon, policy_terms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (charge.time, self.analyst, charge.session, charge.dataset, charge.query, charge.mechanism,
                 _text(charge.rho), _text(charge.delta), _text(charge.epsilon) if charge.epsilon is not None else None,
                 json.dumps(list(charge.policy_terms))))
            for who in (self.analyst, ""):
                rho, delta = self._total(who, db)
                db.execute("INSERT OR REPLACE INTO totals (analyst, rho, delta) VALUES (?, ?, ?)",
                           (who, _text(rho + charge.rho), _text(delta + charge.delta)))
            db.execute("COMMIT")  # durable (WAL, synchronous=FULL) before the caller sees a row
            return int(cur.lastrowid)
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _refusal(self, rho: Fraction, remaining: Fraction) -> BudgetExceededError:
        whose = "this analyst's" if self.dataset_rho is None else "the"
        return BudgetExceededError(
            f"the query needs rho={fmt(rho)} but only rho={fmt(remaining)} of {whose} budget remains "
            f"(total {fmt(self.total_rho)} per analyst"
            + (f", {fmt(self.dataset_rho)} for the data set" if self.dataset_rho is not None else "")
            + "); nothing was charged and nothing released",
            hint="ask for less (a smaller rho per query) or ask the data owner for more budget.")
