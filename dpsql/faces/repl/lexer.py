"""Syntax highlighting of the input line.

SQL is coloured by pygments' SqlLexer through prompt_toolkit's PygmentsLexer — the lexer
litecli and pgcli use: it is forgiving of half-typed input (an unclosed quote, a missing
parenthesis), and its tokens map onto prompt_toolkit's default style, so no colour scheme is
written here. (Why pygments rather than sqlglot's tokenizer, which dpsql already has: sqlglot
raises on unterminated strings and drops comments, both normal while typing.) A meta-command
line is coloured on its own: the command name, then the SQL of ``\\explain`` as SQL; so is a
meta-command line typed under a half-typed statement.
"""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.lexers import Lexer

from dpsql.faces.repl import statements

try:
    from prompt_toolkit.lexers import PygmentsLexer
    from pygments.lexers.sql import SqlLexer

    _SQL: Lexer | None = PygmentsLexer(SqlLexer)
except ImportError:  # pragma: no cover - pygments is a dependency; without it, no colours
    _SQL = None


class DpsqlLexer(Lexer):
    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        if not statements.is_meta(document.text):
            if _SQL is None:
                sql: Callable[[int], StyleAndTextTuples] = (
                    lambda i: [("", document.lines[i])] if i < len(document.lines) else [])
            else:
                sql = _SQL.lex_document(document)
            tail = statements.meta_tail(document.text)
            if tail is None:
                return sql
            meta = tail[0].count("\n")  # the line of a meta-command under a half-typed statement
            return lambda i: [("class:meta-command", document.lines[i])] if i == meta else sql(i)
        first = document.lines[0]
        indent = first[: len(first) - len(first.lstrip())]
        name, sep, rest = first.lstrip().partition(" ")
        sql_lines = _SQL.lex_document(Document(rest)) if _SQL and name.lower() == "\\explain" else None

        def line(i: int) -> StyleAndTextTuples:
            if i >= len(document.lines):
                return []
            if i > 0:
                return [("", document.lines[i])]
            head: StyleAndTextTuples = [("", indent), ("class:meta-command", name), ("", sep)]
            return head + (sql_lines(0) if sql_lines else [("", rest)])
        return line
