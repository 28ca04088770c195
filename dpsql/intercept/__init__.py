"""Statements dpsql answers itself, dispatched before the private pipeline.

BI tools and scripts can only send SQL, so settings (``SET dpsql.rho = 0.05``) and the probes
tools send on connect (``SELECT 1``, version and schema queries) arrive as SQL text.
:func:`execute` is how every face runs a statement: each handler of :func:`handlers` looks at
the text (and, if it wants, the parsed tree) and returns a :class:`~dpsql.pipeline.result.Result` when
it answers the statement, or None; a statement no handler answers goes on to
:meth:`dpsql.session.Session.execute`, the private pipeline.

Handlers never touch private rows and never charge the budget: what they return is public
(settings, the policy, the schema of declared tables, the rows of public tables: queries that
read public tables only run on a database that holds nothing else, :mod:`.public_tables`).
SQL over a released answer (:mod:`.over_answers`) is not a handler: it releases its subquery
through :meth:`Session.execute` (charged, or reused) and runs after them, before the pipeline.
May import: the session, results, errors, the SQL parser, budget values, the policy, the
engine seam's error type, and the reuse key with the released answers' store; never the faces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpsql.pipeline.result import Result
from dpsql.session import Session

Handler = Callable[[Session, str], "Result | None"]


def handlers() -> tuple[Handler, ...]:
    """In order; the first answer wins. Settings first: ``SET``/``SHOW``/``RESET dpsql.*`` never
    reach a probe. Imported on first use: they parse with sqlglot, which a statement with a
    recorded plan never needs (:mod:`dpsql.records.plan`)."""
    from dpsql.intercept import explain, information_schema, probes, public_tables, settings

    return (
        settings.handle,
        probes.answer_constant_select,
        probes.answer_show_tables,
        probes.answer_describe,
        explain.answer_explain,
        information_schema.answer_information_schema,
        public_tables.answer_public_query,
    )


def answer(session: Session, sql: str) -> Result | None:
    """The public answer to ``sql`` if it is one of dpsql's own statements, else None."""
    for handler in handlers():
        result = handler(session, sql)
        if result is not None:
            return result
    return None


def execute(session: Session, sql: str, parameters: Any = None, rho: Any = None) -> Result:
    """Run one statement for a face: dpsql's own statements are answered here, at no cost;
    anything else is a private release (:meth:`Session.execute`). One statement at a time per
    session, settings included.

    A statement that went to the pipeline before, in this analyst's context and with this code,
    has its plan recorded (:mod:`dpsql.records.plan`): it goes straight there with that plan, as
    no handler answered it then, and none would now (the handlers read only the text and the
    policy, both in the record's key). Statements with parameters are neither recorded nor read."""
    with session.lock:
        if parameters is None:
            planned = session.recorded(sql)
            if planned is not None:
                return session.execute(sql, rho=rho, planned=planned)
            answered = answer(session, sql)
        else:  # a statement with parameters is never a probe, but may be explained or read public tables only
            from dpsql.intercept import explain, public_tables

            answered = (explain.answer_explain(session, sql, parameters)
                        or public_tables.answer_public_query(session, sql, parameters))
        if answered is not None:
            return answered
        # SQL over a released answer, a series limit (issue 32): releases of their own; with ? values
        # bound as literals first, as the pipeline binds them (intercept/parameters.py)
        from dpsql.intercept import over_answers
        from dpsql.intercept.parameters import bound

        text = sql if parameters is None else bound(sql, parameters)
        over = over_answers.answer(session, text, rho) if text is not None else None
        if over is not None:
            return over
        return session.execute(sql, parameters, rho, record=parameters is None)
