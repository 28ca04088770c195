"""Statements dpsql answers itself, before a query is planned as a private release.

BI tools and scripts can only send SQL, so settings (``SET dpsql.rho = 0.05``) and the probes
tools send on connect (``SELECT 1``, version and schema queries) arrive as SQL text. A handler
looks at the text (and, if it wants, the parsed tree) and returns a :class:`Result` when it
answers the statement, or None to let the statement go on to the private pipeline.

Handlers never touch private rows and never charge the budget: what they return is public
(settings, the policy, the schema of declared tables).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpsql.result import Receipt, Result

if TYPE_CHECKING:
    from dpsql.session import Session

Handler = Callable[["Session", str], "Result | None"]

# In registration order, the import order of the handler modules: dpsql/session.py imports settings,
# then probes, then information_schema (which imports probes, so can never register first).
HANDLERS: list[Handler] = []


def register(handler: Handler) -> Handler:
    """Add a handler; handlers run in registration order, the first answer wins."""
    HANDLERS.append(handler)
    return handler


def intercept(session: Session, sql: str) -> Result | None:
    for handler in HANDLERS:
        result = handler(session, sql)
        if result is not None:
            return result
    return None


def public_result(session: Session, columns: list[str], types: list[str], rows: list[tuple[Any, ...]]) -> Result:
    """A result that released nothing private: its receipt charges zero."""
    led = session.ledger
    receipt = Receipt(rho=Fraction(0), delta=Fraction(0), mechanism="none", table="", noise=(), columns={},
                      policy_terms=(), budget_spent=led.spent, budget_total=led.total_rho,
                      budget_remaining=led.remaining)
    return Result(columns=tuple(columns), types=tuple(types), rows=rows, receipt=receipt)
