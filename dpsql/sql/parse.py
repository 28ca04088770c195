"""Text -> one sqlglot expression (DuckDB dialect). sqlglot's errors become ours here."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from dpsql.errors import QueryRefused

# --------------------------------------------------------------------------- limits
# sqlglot's parser and the tree walks after it (validate, plan, the totality allow-list, SQL
# generation) recurse once or more per level of an expression, and Python stops at 1,000 frames
# (sys.getrecursionlimit()): 45 nested parentheses or a few hundred chained ORs raised a raw
# RecursionError through the DB-API. So the size of a query is bounded here, from its text and
# tokens BEFORE sqlglot parses it, and a query past a limit is refused with DP121 naming the
# limit (docs/sql.md, "Limits"). Measured with sqlglot 30 on this code:
#   * one level of nesting costs sqlglot's parser up to 27 frames (a scalar subquery, `-(`;
#     `NOT (` costs 34 and counts as two levels below; its binary operators cost none);
#   * one level of the parsed tree costs the walks after parsing up to 3 frames (an OR chain in
#     totality.condition_total / value_type, unary minus in SQL generation; a `::` cast costs 5,
#     so it counts as nesting).
# Every query at the limits below (the deepest ones need about 650 frames) still runs with 320
# more frames on the stack, room for whoever calls dpsql (pytest ≈ 35, pandas.read_sql over
# SQLAlchemy ≈ 45); tests/test_limits.py runs one at each limit under 250 extra frames. The
# limits are far above what people and BI tools write: the corpus needs at most 3 levels of
# nesting and 5 chained operators, a Tableau-style query 7 and 3.

#: Characters of SQL text. The longest corpus query has 399; an IN list of 10,000 values fits.
MAX_SQL_LENGTH = 100_000
#: Levels of nesting: parentheses, brackets, braces, CASE … END, a prefix NOT (until the next
#: AND / OR) and a `::` cast each open one.
MAX_NESTING = 24
#: Operators (AND, OR, NOT, comparisons, arithmetic, ||, …) chained on the longest path from
#: the outside of the query to its innermost term: n terms joined by OR are a tree n levels
#: deep. Siblings do not add up — commas, WHEN / THEN / ELSE and clause keywords (SELECT,
#: WHERE, …) start a new chain — so a wide query (many columns, many CASE branches) is not
#: limited, and an IN list is one operator whatever its length.
MAX_CHAIN = 200
#: Levels of the parsed tree: a backstop for constructs the token count does not see. A query
#: at one of the two limits above stays well under it; one at both at once may reach it.
MAX_TREE_DEPTH = 240

_OPENERS = {TokenType.L_PAREN: TokenType.R_PAREN, TokenType.L_BRACKET: TokenType.R_BRACKET,
            TokenType.L_BRACE: TokenType.R_BRACE, TokenType.CASE: TokenType.END}
#: Tokens after which a new, independent expression starts at the same level.
_SEPARATORS = frozenset(getattr(TokenType, name) for name in (
    "COMMA", "SEMICOLON", "WHEN", "THEN", "ELSE", "SELECT", "FROM", "WHERE", "GROUP_BY", "HAVING", "ORDER_BY",
    "LIMIT", "OFFSET", "QUALIFY", "WINDOW", "JOIN", "ON", "USING", "UNION", "EXCEPT", "INTERSECT", "WITH",
) if hasattr(TokenType, name))
_OPERATORS = frozenset(getattr(TokenType, name) for name in (
    "AND", "OR", "XOR", "NOT", "IS", "IN", "LIKE", "ILIKE", "GLOB", "RLIKE", "IRLIKE", "SIMILAR_TO", "BETWEEN",
    "COLLATE", "ESCAPE", "PLUS", "DASH", "STAR", "SLASH", "DIV", "MOD", "DSTAR", "CARET", "DPIPE", "AMP", "PIPE",
    "TILDE", "LT", "LTE", "GT", "GTE", "EQ", "NEQ", "NULLSAFE_EQ", "DCOLON", "QDCOLON", "ARROW", "DARROW",
    "HASH_ARROW", "DHASH_ARROW", "AT_GT", "LT_AT", "CARET_AT", "DAMP", "INTERVAL", "EXISTS",
) if hasattr(TokenType, name))
#: Casts nest like CAST(x AS t): they count as a level of nesting, as a prefix NOT does.
_CASTS = frozenset(getattr(TokenType, name) for name in ("DCOLON", "QDCOLON") if hasattr(TokenType, name))


#: What to do, per limit.
_HINTS = {
    "length": "send a shorter query: split it into several, or filter on fewer values at a time.",
    "nesting": "remove redundant parentheses, or nest fewer functions, CASEs and NOTs (NOT (a OR b) is NOT a AND "
               "NOT b).",
    "depth": "simplify the expression: nest fewer functions and chain fewer operators, or split the query.",
    "chain": "write a long list of alternatives (x = 'a' OR x = 'b' OR …) as x IN ('a', 'b', …), which has no such "
             "limit, or split the query into several.",
}


def too_complex(what: str, sql: str, start: int | None = None, limit: str = "nesting") -> QueryRefused:
    """DP121: the query exceeds one of the limits above; ``what`` names it and its value,
    ``limit`` (a key of :data:`_HINTS`) says what to do (docs/sql.md, "Limits")."""
    line = column = None
    if start is not None:
        line = sql.count("\n", 0, start) + 1
        column = start - (sql.rfind("\n", 0, start) + 1) + 1
    return QueryRefused(f"the query is too large or too complex for dpsql: {what}", code="DP121",
                        line=line, column=column, hint=_HINTS[limit])


class _Level:
    """One open parenthesis (or bracket, brace, CASE) while the tokens are measured.

    Within one chain (between separators) the tree is ``t1 OR t2 AND t3 …``: AND / OR / XOR
    are its spine, one tree level each, and every operand below them holds its own operators
    (comparisons, arithmetic, NOT, ||, casts) and inner levels. So a chain is as deep as its
    connectives plus its deepest operand: ``a = 1 OR a = 2 OR …`` with n terms is n deep,
    not 2n.
    """

    __slots__ = ("closer", "spine", "ops", "child", "operand", "best", "nots")

    def __init__(self, closer: TokenType | None) -> None:
        self.closer = closer
        self.spine = 0    # AND / OR / XOR so far in the current chain
        self.ops = 0      # other operators so far in the current operand
        self.child = 0    # the deepest closed inner level in the current operand
        self.operand = 0  # the deepest finished operand of the current chain
        self.best = 0     # the deepest finished chain of this level
        self.nots = 0     # prefix NOTs and casts still open in the current operand

    def end_operand(self) -> None:
        self.operand = max(self.operand, self.ops + self.child)
        self.ops = self.child = self.nots = 0

    def end_chain(self) -> None:
        self.end_operand()
        self.best = max(self.best, self.spine + self.operand)
        self.spine = self.operand = 0


_CONNECTIVES = frozenset({TokenType.AND, TokenType.OR, TokenType.XOR})


def check_limits(sql: str, tokens: list[Token]) -> None:
    """Refuse (DP121) a query whose tokens nest deeper than :data:`MAX_NESTING` or chain more
    than :data:`MAX_CHAIN` operators on one path."""
    _scan(sql, tokens, MAX_NESTING, MAX_CHAIN)


def complexity(sql: str) -> tuple[int, int]:
    """(nesting, chain) of a query: the two numbers :func:`check_limits` bounds."""
    return _scan(sql, _tokens(sql), None, None)


def _scan(sql: str, tokens: list[Token], max_nesting: int | None, max_chain: int | None) -> tuple[int, int]:
    """One pass over the tokens, no recursion; raises at the first token past a limit (when
    given), else returns the deepest nesting and the longest chain.

    Every open level's current chain and current operand lie on one path of the tree: the
    path through the current position counts, for each open level, its connectives and the
    operators of its current operand; the innermost level adds its deepest finished operand or
    closed inner level. The largest value over the pass is the longest chain of the query.
    """
    stack = [_Level(None)]
    path = nots = 0  # sums over the stack of (.spine + .ops) and of .nots
    deepest = longest = 0
    previous = None
    for token in tokens:
        kind = token.token_type
        top = stack[-1]
        if kind in _OPENERS:
            stack.append(_Level(_OPENERS[kind]))
        elif kind == top.closer:  # a closer that matches no opener changes nothing
            path -= top.spine + top.ops
            nots -= top.nots
            top.end_chain()
            stack.pop()
            stack[-1].child = max(stack[-1].child, top.best)
        elif kind in _SEPARATORS:
            path -= top.spine + top.ops
            nots -= top.nots
            top.end_chain()
        elif kind in _CONNECTIVES:
            path -= top.ops
            nots -= top.nots
            top.end_operand()
            top.spine += 1
            path += 1
        elif kind in _OPERATORS:
            top.ops += 1
            path += 1
            if kind in _CASTS or (kind == TokenType.NOT and previous != TokenType.IS):
                top.nots += 1
                nots += 1
        previous = kind
        top = stack[-1]
        nesting = len(stack) - 1 + nots
        chain = path + max(top.operand - top.ops, top.child)
        if max_nesting is not None and nesting > max_nesting:
            raise too_complex(f"parentheses, CASE, NOT and casts nest more than the limit of {max_nesting} levels "
                              "deep here", sql, token.start)
        if max_chain is not None and chain > max_chain:
            raise too_complex(f"one expression chains more than the limit of {max_chain} operators (AND, OR, NOT, "
                              "comparisons, arithmetic, ||, …) by here", sql, token.start, "chain")
        deepest, longest = max(deepest, nesting), max(longest, chain)
    return deepest, longest


def tree_depth(tree: exp.Expression) -> int:
    """Levels of a parsed tree, counted without recursion."""
    deepest = 0
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest

#: First keywords of statements that are not queries, refused as "not a SELECT" (DP102) before
#: sqlglot parses them, also when it cannot (EXPORT DATABASE, ...): well-formed, not allowed.
STATEMENT_KEYWORDS = frozenset({
    "ALTER", "ANALYZE", "ATTACH", "BEGIN", "CALL", "CHECKPOINT", "COMMENT", "COMMIT", "COPY", "CREATE",
    "DEALLOCATE", "DELETE", "DESCRIBE", "DETACH", "DROP", "EXECUTE", "EXPLAIN", "EXPORT", "FORCE", "GRANT",
    "IMPORT", "INSERT", "INSTALL", "LOAD", "MERGE", "PIVOT", "PRAGMA", "PREPARE", "RESET", "REVOKE",
    "ROLLBACK", "SET", "SHOW", "SUMMARIZE", "TRUNCATE", "UNPIVOT", "UPDATE", "UPSERT", "USE", "VACUUM",
})

#: What to write instead of a statement that is not a SELECT, by its keyword.
_STATEMENT_HINTS: dict[str, str] = {
    "SET": "to set the budget of a query use dpsql's own setting (SET dpsql.rho = 0.05, connect(rho=...) or --rho); "
           "DuckDB settings cannot be changed.",
    "RESET": "dpsql's own settings reset with RESET dpsql.rho; DuckDB settings cannot be changed.",
    "INSTALL": "extensions cannot be installed or loaded: dpsql's connection is locked down.",
    "LOAD": "extensions cannot be installed or loaded: dpsql's connection is locked down.",
    "DESCRIBE": "the columns of the declared tables are in the policy (\\describe in the dpsql prompt).",
    "COPY": "to save an answer as a CSV file, type \\copy (SELECT ...) TO 'answer.csv' CSV HEADER in the dpsql "
            "prompt, or use dpsql query --format csv; dpsql never reads or writes files for SQL.",
    "EXPLAIN": "use dpsql explain (or \\explain in the prompt) to see how a query is rewritten, at no cost.",
}
_DEFAULT_STATEMENT_HINT = ("dpsql answers aggregate SELECT queries only; it never changes, exports or imports the "
                           "database, reads files or changes settings.")


def refuse_statement(kind: str, sql: str) -> QueryRefused:
    """DP102 for a statement that is not a SELECT: here for statements sqlglot cannot read, such
    as EXPORT DATABASE, and in ``validate.check_statement`` for the others (it lives here so that
    validate imports parse and never the other way round)."""
    line, column = first_token_position(sql)
    return QueryRefused(f"{kind} statements are not allowed: dpsql answers one aggregate SELECT", code="DP102",
                        line=line, column=column, hint=_STATEMENT_HINTS.get(kind.split()[-1], _DEFAULT_STATEMENT_HINT))


def parse(sql: str) -> exp.Expression:
    """Parse exactly one SQL statement.

    Raises:
        QueryRefused: DP100 when the text does not parse, DP101 when it holds several
            statements (or none), DP121 when it is past one of the limits above.
    """
    if not isinstance(sql, str):
        raise QueryRefused("the query must be a string of SQL", code="DP100")
    if len(sql) > MAX_SQL_LENGTH:
        raise too_complex(f"the text has {len(sql):,} characters, more than the limit of {MAX_SQL_LENGTH:,}", sql,
                          limit="length")
    kind = statement_keyword(sql)
    if kind is not None and kind.split()[-1] in STATEMENT_KEYWORDS and kind not in ("SHOW", "DESCRIBE"):
        # Refused on its first word: sqlglot would parse many of these only as a Command, with
        # a warning of its own on standard error. SHOW TABLES and DESCRIBE t are parsed: the
        # intercept answers them from their trees (the pipeline refuses them later).
        raise refuse_statement(kind, sql)
    dialect = sqlglot.Dialect.get_or_raise("duckdb")
    try:
        tokens = dialect.tokenize(sql)
        check_limits(sql, tokens)
        # A comment after the last semicolon parses as a bare Semicolon: not a statement.
        statements = [s for s in dialect.parser().parse(tokens, sql)
                      if s is not None and not isinstance(s, exp.Semicolon)]
        depth = max((tree_depth(s) for s in statements), default=0)
    except RecursionError:
        # The limits above should keep the parser far from Python's; whatever slips past them
        # is refused the same way rather than escaping as a RecursionError.
        raise too_complex("it nests too deeply for the parser", sql, limit="depth") from None
    except ParseError as exc:
        if (marker := format_parameter(sql, tokens)) is not None:
            raise marker from None
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
    if depth > MAX_TREE_DEPTH:
        raise too_complex(f"its parsed expression is {depth} levels deep, more than the limit of {MAX_TREE_DEPTH}",
                          sql, limit="depth")
    if not statements:
        raise QueryRefused("the query is empty: write one SELECT statement", code="DP101")
    if len(statements) > 1:
        raise QueryRefused(
            f"the text holds {len(statements)} statements; dpsql runs exactly one per call",
            code="DP101",
            hint="send each SELECT separately.",
        )
    return statements[0]


def format_parameter(sql: str, tokens: list[Token]) -> QueryRefused | None:
    """DP118 for a ``%s`` or ``%(name)s`` parameter marker (the format / pyformat paramstyles
    of other drivers), which sqlglot reads as a broken modulo; None when there is none."""
    for i, token in enumerate(tokens):
        if token.token_type != TokenType.MOD:
            continue
        after = [t.text for t in tokens[i + 1:i + 5]]
        adjacent = i + 1 < len(tokens) and tokens[i + 1].start == token.end + 1
        if adjacent and (after[:1] == ["s"] or (after[:1] == ["("] and after[2:4] == [")", "s"])):
            line = sql.count("\n", 0, token.start) + 1
            column = token.start - (sql.rfind("\n", 0, token.start) + 1) + 1
            return QueryRefused("%s and %(name)s are not dpsql's parameter markers", code="DP118",
                                line=line, column=column,
                                hint="dpsql's paramstyle is qmark (dpsql.paramstyle): write ? for each value and pass "
                                     "the values in order, e.g. cursor.execute('... WHERE state = ?', ['CA']).")
    return None


def written_name(node: exp.Expression, sql: str) -> str:
    """A function's name as the analyst wrote it (``DATE_TRUNC``, ``strftime``), not sqlglot's
    name for the node it becomes (``TIMESTAMP_TRUNC``, ``TIME_TO_STR``). sqlglot records where
    the name stands for functions called by name; forms with their own syntax (CAST, ``x::INT``,
    SUBSTRING ... FROM) fall back to the node's SQL name."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < len(sql):
        text = sql[start:end + 1]
        if text.replace("_", "a").isalnum() and not text[0].isdigit():
            return text
    if isinstance(node, exp.Anonymous):
        return str(node.this)
    return node.sql_name() if isinstance(node, exp.Func) else node.key.upper()


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
