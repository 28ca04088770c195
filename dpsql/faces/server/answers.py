"""One statement from a wire client, answered: the session command, the public catalog, or the
private pipeline (:func:`dpsql.faces.server.statements.route`), as an :class:`Answer`.

Runs in a worker thread (DuckDB releases the GIL). The private pipeline is reached only through
:func:`dpsql.intercept.execute`, exactly as the DB-API reaches it: the same phases, the same
single charge per executed query, the same refusals. Errors become :class:`StatementError`
with a SQLSTATE; a :class:`~dpsql.errors.DpsqlError` keeps its code, message, hint and position
(all built from public information), and the public catalog's own messages pass through
because nothing private is in it.
"""

from __future__ import annotations

import re

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpsql.backends import CatalogQueryError, PublicCatalog
from dpsql.errors import DpsqlError
from dpsql.faces.server.pgcatalog import PgCatalog
from dpsql.faces.server.pgsession import PgSettings, SessionCommandError
from dpsql.faces.server.statements import Scans, route, to_qmark
from dpsql.pipeline.format import footer
from dpsql.intercept import answer as intercept_answer
from dpsql.intercept import execute
from dpsql.intercept import over_answers
from dpsql.intercept.parameters import bound
from dpsql.intercept.explain import answer_explain
from dpsql.pipeline.result import Result
from dpsql.session import Session


@dataclass
class Answer:
    """What a statement returns: columns (None: no result set), DuckDB types, rows, the
    command tag, settings to report, and a notice (the receipt of a charged answer)."""

    columns: list[str] | None
    types: list[str]
    rows: list[tuple[Any, ...]]
    tag: str
    report: dict[str, str] = field(default_factory=dict)
    notice: str = ""


class StatementError(Exception):
    """A statement failed; ``fields`` are the ErrorResponse's (C SQLSTATE, M, H, P, ...)."""

    def __init__(self, sqlstate: str, message: str, hint: str = "", position: int | None = None,
                 detail: str = "") -> None:
        super().__init__(message)
        self.fields = {"S": "ERROR", "V": "ERROR", "C": sqlstate, "M": message, "D": detail, "H": hint,
                       "P": str(position) if position else ""}


#: dpsql's code family -> SQLSTATE
_SQLSTATE = {"DP1": "42601", "DP2": "42501", "DP3": "53400", "DP4": "58000", "DP9": "XX000"}


#: what an analyst is told when the server's own files fail (DP4xx: its policy, database, ledger,
#: engine, user file): fixed text with the code, never the server's paths or why (the operator's
#: log has the whole message)
_SERVER_SIDE = {"DP401": "the server's policy cannot be used", "DP402": "the server's database cannot be used",
                "DP404": "the server's budget ledger refuses to charge; nothing was charged and nothing released",
                "DP405": "the server's query engine is unavailable"}


def for_analyst(exc: DpsqlError) -> tuple[str, str]:
    """(message, hint) of a dpsql error as an analyst may read them: as the CLI shows them, but
    a failure of the server's own files in fixed text (the whole message goes to the server's log)."""
    if exc.code.startswith("DP4") and exc.code != "DP403":
        print(f"dpsql serve: SERVER-SIDE ERROR shown to a client as {exc.code} without details: {exc}",
              file=sys.stderr, flush=True)
        return (f"{exc.code}: {_SERVER_SIDE.get(exc.code, 'the server cannot answer (its configuration fails)')}",
                "the server's operator must act (the server's log says what); try again later.")
    return f"{exc.code}: {exc.message}", exc.hint or ""


def from_dpsql(exc: DpsqlError, statement: str, offset: int) -> StatementError:
    """The ErrorResponse of a dpsql error: code and message as the CLI shows them (the server's
    own failures without their details: :func:`for_analyst`), the hint, and the position
    (1-based characters in the whole Query text) when the error has one."""
    position = None
    if exc.line:
        lines = statement.split("\n")
        line = min(exc.line, len(lines))
        position = offset + sum(len(x) + 1 for x in lines[:line - 1]) + (exc.column or 1)
    sqlstate = "0A000" if exc.code in ("DP109", "DP110") else _SQLSTATE.get(exc.code[:3], "XX000")
    return StatementError(sqlstate, *for_analyst(exc), position)


def receipt_notice(result: Result) -> str:
    """The receipt of a charged answer as one NOTICE: its cost, the budget left, and each noisy
    column's 95% margin of error (psql shows notices above the rows)."""
    text = "dpsql: " + footer(result)
    for name, err in result.receipt.columns.items():
        moes = [m for m in err.moe95 if m is not None]
        if moes:
            lo, hi = min(moes), max(moes)
            text += f"\n  {name}: ± {lo:.4g}" + (f" to {hi:.4g}" if hi - lo > 1e-9 * max(1.0, abs(hi)) else "")
    return text


#: PostgreSQL's error for a statement nested deeper than its stack allows (max_stack_depth)
TOO_DEEP = ("54001", "stack depth limit exceeded",
            "the statement nests parentheses, subqueries or expressions too deeply: write it flatter.")


def answer(sql: str, parameters: list[Any], session: Session, catalog: PublicCatalog, pg: PgSettings,
           private_tables: set[str], guard: Callable[[], None] | None = None, scans: Scans | None = None) -> Answer:
    """Run one statement (``$n`` parameters, values in order of their numbers); ``guard`` is
    called before the private pipeline runs (the server's ledger check: it raises to refuse);
    ``scans``: the connection's memo of its texts' routes. A statement nested too deep for the
    parser is an ERROR (54001, as PostgreSQL), never the connection's end."""
    try:
        return _answer(sql, parameters, session, catalog, pg, private_tables, guard, scans or Scans())
    except RecursionError:
        raise StatementError(*TOO_DEEP) from None


def _answer(sql: str, parameters: list[Any], session: Session, catalog: PublicCatalog, pg: PgSettings,
            private_tables: set[str], guard: Callable[[], None] | None, scans: Scans) -> Answer:
    way = scans.get("route", sql, lambda: route(sql, private_tables))
    if way == "session":
        try:
            tag, columns, rows, report = pg.run(sql)
        except SessionCommandError as exc:
            raise StatementError(exc.sqlstate, str(exc), exc.hint) from None
        return Answer(columns or None, ["VARCHAR"] * len(columns), rows, tag, report)
    if way == "catalog":
        names, types, rows = _catalog(sql, parameters, catalog, pg)
        return Answer(names or None, types, rows, f"SELECT {len(rows)}" if names else "SELECT 0")
    qmark, order = scans.get("qmark", sql, lambda: _qmark(sql))
    values = [_value(parameters, n) for n in order] if order else None
    if guard is not None:
        guard()  # the server's ledger is still the one it adopted
    result = execute(session, qmark, values)
    charged = result.receipt.charge_id is not None or result.receipt.reused is not None  # a receipt to show
    first = qmark.split(None, 1)[0].upper() if qmark.strip() else ""
    if first in ("SET", "RESET") and not charged:
        # PostgreSQL's SET returns no rows and the tag SET (psql prints it, drivers expect it):
        # the value dpsql now holds travels as a NOTICE instead of a result set
        said = "; ".join(f"{r[0]} = {r[1]}" for r in result.rows if len(r) == 2)
        return Answer(None, [], [], first, notice=f"dpsql: {said}" if said else "")
    tag = _tag(qmark, result)
    return Answer(list(result.columns) or None, list(result.types), result.rows, tag,
                  notice=receipt_notice(result) if charged else "")


def describe(sql: str, parameters: list[Any], session: Session, catalog: PublicCatalog, pg: PgSettings,
             private_tables: set[str]) -> tuple[list[str], list[str]] | None:
    """(names, DuckDB types) of what ``sql`` would return, or None for no rows; runs nothing
    private and charges nothing. ``parameters``: the bound values, or stand-ins of their types."""
    try:
        return _describe(sql, parameters, session, catalog, pg, private_tables)
    except RecursionError:
        raise StatementError(*TOO_DEEP) from None


def _describe(sql: str, parameters: list[Any], session: Session, catalog: PublicCatalog, pg: PgSettings,
              private_tables: set[str]) -> tuple[list[str], list[str]] | None:
    way = route(sql, private_tables)
    if way == "session":
        return ([sql.split()[1]], ["VARCHAR"]) if sql.split()[0].lower() == "show" else None
    if way == "catalog":
        names, types, _ = _catalog(sql, parameters, catalog, pg)
        return (names, types) if names else None
    qmark, order = to_qmark(sql)
    values = [_value(parameters, n) for n in order] if order else None
    public = intercept_answer(session, qmark) if not order else answer_explain(session, qmark, values)
    if public is not None:
        return (list(public.columns), list(public.types)) if public.columns else None
    text = qmark if not order else bound(qmark, values)  # issue 32: nothing runs; ? values bound as literals
    if text is not None and (over := over_answers.describe(session, text)) is not None:
        return over
    names, types = session.describe(qmark, values)
    return names, types


#: the catalog's OID columns are UINTEGER (PostgreSQL's oid is an unsigned 32-bit number)
_OID = {"UINTEGER": "OID", "UINTEGER[]": "OID[]"}


def _catalog(sql: str, parameters: list[Any], catalog: PublicCatalog, pg: PgSettings
             ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """A statement on the catalog twin: PostgreSQL's catalog as :mod:`pgcatalog` emulates it."""
    try:
        if isinstance(catalog, PgCatalog):
            names, types, rows = catalog.run(sql, parameters or None, pg)
            return names, [_OID.get(t, t) for t in types], rows
        return catalog.run(sql, parameters or None)
    except CatalogQueryError as exc:
        first = str(exc).split("\n")[0]
        missing = re.match(r"Catalog Error: Table with name (.+?) does not exist", first)
        if missing:  # as PostgreSQL says it (42P01); the catalog twin holds public names only
            raise StatementError("42P01", f'relation "{missing.group(1)}" does not exist',
                                 "the tables served are the policy's: \\dt lists them.") from None
        raise StatementError(getattr(exc, "sqlstate", "42000"), first) from None


def _qmark(sql: str) -> tuple[str, tuple[int, ...]]:
    qmark, order = to_qmark(sql)
    return qmark, tuple(order)


def _value(parameters: list[Any], number: int) -> Any:
    if number < 1 or number > len(parameters):
        raise StatementError("08P01", f"the query uses ${number} but {len(parameters)} parameter value(s) were bound")
    return parameters[number - 1]


def _tag(sql: str, result: Result) -> str:
    return f"SELECT {len(result.rows)}"
