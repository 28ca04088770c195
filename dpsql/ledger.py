"""Budget accounting: charges in (ρ, δ), checked before release.

The currency is approximate zCDP (ρ, δ) (DESIGN.md). Discrete Gaussian releases add ρ and no
δ; sequential composition adds ρ's (Bun & Steinke 2016, Lemma 2.3). All arithmetic is exact
(``fractions.Fraction``), so no charge is ever lost to float rounding.

This ledger lives in memory, per connection: the durable, multi-process ledger is its own
issue. The interface — ``check`` before the work, ``charge`` (atomic check-and-add) after the
noise and before any row is returned — is the one the durable ledger keeps.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .errors import BudgetExceededError, BudgetValueError


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
    text = f"{float(value):.6g}"
    return text


@dataclass(frozen=True)
class Charge:
    """One release: what it cost and the policy terms it adds to P(r)."""

    query: str
    rho: Fraction
    mechanism: str
    policy_terms: tuple[dict[str, Any], ...] = ()
    delta: Fraction = Fraction(0)
    analyst: str = ""
    time: float = field(default_factory=time.time)


class Ledger:
    """Spent and remaining budget of one connection."""

    def __init__(self, total_rho: Fraction) -> None:
        self.total_rho = total_rho
        self.charges: list[Charge] = []
        self._lock = threading.Lock()

    @property
    def spent(self) -> Fraction:
        return sum((c.rho for c in self.charges), Fraction(0))

    @property
    def remaining(self) -> Fraction:
        return self.total_rho - self.spent

    def check(self, rho: Fraction) -> None:
        """Refuse early, before any work, when ``rho`` cannot be covered."""
        if rho > self.remaining:
            raise self._refusal(rho)

    def charge(self, charge: Charge) -> None:
        """Record a charge, atomically with the check. Nothing is recorded on refusal."""
        with self._lock:
            if charge.rho > self.remaining:
                raise self._refusal(charge.rho)
            self.charges.append(charge)

    def _refusal(self, rho: Fraction) -> BudgetExceededError:
        return BudgetExceededError(
            f"the query needs rho={fmt(rho)} but only rho={fmt(self.remaining)} of {fmt(self.total_rho)} remains; "
            "nothing was charged and nothing released",
            hint="ask for less (a smaller rho per query) or ask the data owner for more budget.",
        )
