"""The result of a statement dpsql answers itself: public rows and a receipt that charges zero."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpsql.pipeline.result import Receipt, Result
from dpsql.session import Session


def public_result(session: Session, columns: list[str], types: list[str], rows: list[tuple[Any, ...]],
                  notes: tuple[str, ...] = ()) -> Result:
    """A result that released nothing private: its receipt charges zero."""
    led = session.ledger
    receipt = Receipt(rho=Fraction(0), delta=Fraction(0), mechanism="none", table="", noise=(), columns={},
                      policy_terms=(), budget_spent=led.spent, budget_total=led.total_rho,
                      budget_remaining=led.remaining, notes=notes)
    return Result(columns=tuple(columns), types=tuple(types), rows=rows, receipt=receipt)
