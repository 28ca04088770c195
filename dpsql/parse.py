"""Text -> one sqlglot expression (DuckDB dialect). sqlglot's errors become ours here."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from .errors import QueryRefused

#: First keywords of statements that are not queries. A statement sqlglot cannot parse
#: (EXPORT DATABASE, IMPORT DATABASE, ...) but that starts with one is refused as "not a
#: SELECT" (DP102) rather than as a syntax error (DP100): it is well-formed, just not allowed.
STATEMENT_KEYWORDS = frozenset({
    "ALTER", "ANALYZE", "ATTACH", "BEGIN", "CALL", "CHECKPOINT", "COMMENT", "COMMIT", "COPY", "CREATE",
    "DEALLOCATE", "DELETE", "DESCRIBE", "DETACH", "DROP", "EXECUTE", "EXPLAIN", "EXPORT", "FORCE", "GRANT",
    "IMPORT", "INSERT", "INSTALL", "LOAD", "MERGE", "PIVOT", "PRAGMA", "PREPARE", "RESET", "REVOKE",
    "ROLLBACK", "SET", "SHOW", "SUMMARIZE", "TRUNCATE", "UNPIVOT", "UPDATE", "UPSERT", "USE", "VACUUM",
})


def parse(sql: str) -> exp.Expression:
    """Parse exactly one SQL statement.

    Raises:
        QueryRefused: DP100 when the text does not parse, DP101 when it holds several
            statements (or none).
    """
    if not isinstance(sql, str):
        raise QueryRefused("the query must be a string of SQL", code="DP100")
    try:
        # A comment after the last semicolon parses as a bare Semicolon: not a statement.
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None and not isinstance(s, exp.Semicolon)]
    except ParseError as exc:
        kind = statement_keyword(sql)
        if kind is not None and kind.split()[-1] in STATEMENT_KEYWORDS:
            from .validate import refuse_statement  # validate imports this module

            raise refuse_statement(kind, sql) from None
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
    """1-based (line, column) of a node in the SQL text: where its leftmost recorded token starts
    (sqlglot records positions on identifiers and literals, not on operators or functions)."""
    starts = [n.meta["start"] for n in node.walk() if isinstance(n, exp.Expression) and n.meta.get("start") is not None]
    if not starts:
        return None, None
    start = min(starts)
    # Functions carry no position; point at their name when it precedes the first argument.
    name = node.sql_name() if isinstance(node, exp.Func) else None
    if name and node.meta.get("start") is None:
        found = sql.lower().rfind(name.lower(), 0, start)
        if found >= 0:
            start = found
    if isinstance(node, exp.Join):
        start = _join_keyword_start(sql, start)
    line = sql.count("\n", 0, start) + 1
    column = start - (sql.rfind("\n", 0, start) + 1) + 1
    return line, column


_JOIN_WORDS = {"JOIN", "LEFT", "RIGHT", "FULL", "OUTER", "INNER", "CROSS", "SEMI", "ANTI", "ASOF", "POSITIONAL",
               "NATURAL"}


def _join_keyword_start(sql: str, table_start: int) -> int:
    """The start of the join's keywords (``LEFT OUTER JOIN``) before its table."""
    before = [t for t in _tokens(sql) if t.start < table_start]
    start = table_start
    for token in reversed(before):
        if token.text.upper() not in _JOIN_WORDS:
            break
        start = token.start
    return start


def _tokens(sql: str) -> list:
    try:
        return sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    except (TokenError, ValueError):
        return []


def statement_keyword(sql: str) -> str | None:
    """The keyword a statement starts with, upper-case ("EXPORT", "FORCE INSTALL"), comments
    skipped; None when it does not start with a word."""
    tokens = _tokens(sql)
    if not tokens or tokens[0].token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.L_PAREN):
        return None
    first = tokens[0].text.upper()
    if first == "FORCE" and len(tokens) > 1:
        return f"FORCE {tokens[1].text.upper()}"
    return first if first.replace("_", "").isalpha() else None


def first_token_position(sql: str) -> tuple[int | None, int | None]:
    """1-based (line, column) of the first token of the statement, comments skipped."""
    tokens = _tokens(sql)
    if not tokens:
        return None, None
    start = tokens[0].start
    return sql.count("\n", 0, start) + 1, start - (sql.rfind("\n", 0, start) + 1) + 1


def keyword_position(sql: str, keyword: str) -> tuple[int | None, int | None]:
    """1-based (line, column) of the first token spelling ``keyword`` (any case)."""
    for token in _tokens(sql):
        text = token.text.upper()
        if text == keyword.upper() or text.startswith(keyword.upper() + " "):  # "GROUP BY" is one token
            start = token.start
            return sql.count("\n", 0, start) + 1, start - (sql.rfind("\n", 0, start) + 1) + 1
    return None, None


def parameter_position(sql: str) -> tuple[int | None, int | None]:
    """1-based (line, column) of the first parameter marker (``?``, ``$1``, ``:name``)."""
    tokens = _tokens(sql)
    for i, token in enumerate(tokens):
        numbered = token.token_type in (TokenType.PARAMETER, TokenType.COLON) and i + 1 < len(tokens) \
            and tokens[i + 1].start == token.end + 1
        if token.token_type == TokenType.PLACEHOLDER or numbered:
            start = token.start
            return sql.count("\n", 0, start) + 1, start - (sql.rfind("\n", 0, start) + 1) + 1
    return None, None
