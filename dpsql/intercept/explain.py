"""``EXPLAIN <query>`` typed as SQL (psql, a BI tool's SQL editor, a DB-API cursor): dpsql's
own explanation of the query, one text line per row under PostgreSQL's column name ``QUERY
PLAN``. It is made from public information only (the query, the policy, the schema, public
keysets: :meth:`dpsql.session.Session.explain`) and charges nothing. ``EXPLAIN ANALYZE`` would
run the query over private rows and report on the run, so it is refused."""

from __future__ import annotations

from dpsql.errors import QueryRefused
from dpsql.pipeline.format import explanation
from dpsql.intercept.probes import parsed
from dpsql.intercept.public import public_result
from dpsql.intercept.public_tables import reads_only_public
from typing import Any

from dpsql.pipeline.result import Result
from dpsql.session import Session
from dpsql.sql.parse import first_token_position, statement_keyword


def answer_explain(session: Session, sql: str, parameters: Any = None) -> Result | None:
    """The explanation of the query after ``EXPLAIN`` (its ``?`` parameters bound to
    ``parameters``), or None for any other statement."""
    if statement_keyword(sql) != "EXPLAIN":
        return None
    line, column = first_token_position(sql)
    start = sum(len(s) + 1 for s in sql.split("\n")[:(line or 1) - 1]) + (column or 1) - 1
    # the word blanked out, not cut: a refusal of the query points at the same line and column
    query = sql[:start] + " " * len("EXPLAIN") + sql[start + len("EXPLAIN"):]
    option = statement_keyword(query)
    if option in ("ANALYZE", "ANALYSE", "VERBOSE") or query.lstrip().startswith("("):
        raise QueryRefused(
            "EXPLAIN takes no options here: EXPLAIN ANALYZE would run the query over private rows",
            code="DP102", line=line, column=column,
            hint="EXPLAIN SELECT ... shows how dpsql answers a query, what it costs and its error bars, "
                 "without running it.")
    text = explanation_text(session, query, parameters)
    return public_result(session, ["QUERY PLAN"], ["VARCHAR"], [(row,) for row in text.split("\n")])


def explanation_text(session: Session, sql: str, parameters: Any = None) -> str:
    """How ``sql`` would be answered, as text: dpsql's explanation of a private release, or, for
    a query of public tables only, that it is answered exactly and for free."""
    tree = parsed(sql, session.analyst)
    if tree is not None and session.policy.public_tables and reads_only_public(tree, sql, session):
        return ("public tables only: answered exactly from the public tables' rows, on a database that holds "
                "nothing private; no noise, nothing charged.\n\n" + sql.strip().rstrip(";") + ";")
    from dpsql.intercept.over_answers import explain
    from dpsql.intercept.parameters import bound

    over = sql if parameters is None else bound(sql, parameters)  # ? values bound as literals first
    if over is not None and (text := explain(session, over)) is not None:  # SQL over a released answer, a series limit
        return text
    return explanation(session.explain(sql, parameters=parameters))
