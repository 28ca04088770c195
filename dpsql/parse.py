"""Text -> one sqlglot expression (DuckDB dialect). sqlglot's errors become ours here."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from .errors import QueryRefused


def parse(sql: str) -> exp.Expression:
    """Parse exactly one SQL statement.

    Raises:
        QueryRefused: DP100 when the text does not parse, DP101 when it holds several
            statements (or none).
    """
    if not isinstance(sql, str):
        raise QueryRefused("the query must be a string of SQL", code="DP100")
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise QueryRefused(
            f"could not parse the SQL: {first.get('description') or 'syntax error'}",
            code="DP100",
            line=first.get("line"),
            column=first.get("col"),
            hint="dpsql reads DuckDB's SQL dialect; check the statement near the position shown.",
        ) from None
    except TokenError as exc:
        raise QueryRefused(f"could not read the SQL: {exc}", code="DP100") from None
    if not statements:
        raise QueryRefused("the query is empty: write one SELECT statement", code="DP101")
    if len(statements) > 1:
        raise QueryRefused(
            f"the text holds {len(statements)} statements; dpsql runs exactly one per call",
            code="DP101",
            hint="send each SELECT separately.",
        )
    return statements[0]


def position(node: exp.Expression, sql: str) -> tuple[int | None, int | None]:
    """1-based (line, column) of a node in the SQL text, when sqlglot recorded it."""
    for n in node.walk():
        start = n.meta.get("start") if isinstance(n, exp.Expression) else None
        if start is not None:
            # Functions carry no position; point at their name when it precedes the argument.
            name = node.sql_name() if isinstance(node, exp.Func) else None
            if name and n is not node:
                found = sql.lower().rfind(name.lower(), 0, start)
                if found >= 0:
                    start = found
            line = sql.count("\n", 0, start) + 1
            column = start - (sql.rfind("\n", 0, start) + 1) + 1
            return line, column
    return None, None
