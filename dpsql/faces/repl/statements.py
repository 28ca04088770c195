"""Cutting typed text into statements: where a `;` ends one, and when input is complete.

A `;` ends a statement unless it is inside a quoted string, a quoted identifier or a comment.
A line starting with a backslash is a meta-command, ended by the end of the line (as in psql);
so is one of the duckdb shell's dot-commands (:data:`DOT_COMMANDS`). A meta-command line, or
`quit`, `exit` or `help` alone on a line, also ends the input when it follows a half-typed
statement (:func:`meta_tail`): it runs, and the statement waits (psql's query buffer).
"""

from __future__ import annotations

#: Words that are commands when they stand alone on a line (psql's, and Python's habit).
WORDS = ("quit", "exit", "help")
#: The duckdb shell's dot-commands dpsql answers (aliases in commands.py; a test keeps both in step).
DOT_COMMANDS = (".tables", ".schema", ".help", ".quit", ".exit", ".read", ".output", ".timer")


def split(text: str) -> tuple[list[str], str]:
    """Split ``text`` into complete statements (without their `;`) and the unfinished rest.

    >>> split("SELECT 1; SELECT 'a;b'; SELECT")
    (['SELECT 1', "SELECT 'a;b'"], ' SELECT')
    """
    done, start, _ = _scan(text)
    return [s.strip() for s in done if s.strip()], text[start:]


def _scan(text: str) -> tuple[list[str], int, bool]:
    """(the statements ended by `;`, where the rest starts, whether text ends inside quotes or a
    /* comment */)."""
    done: list[str] = []
    start = i = 0
    quote = ""  # the open quote character, or "" outside quotes
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == quote:
                if i + 1 < n and text[i + 1] == quote:  # '' or "" inside quotes
                    i += 1
                else:
                    quote = ""
        elif c in "'\"":
            quote = c
        elif text.startswith("--", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return done, start, True
            i = end + 2
            continue
        elif c == ";":
            done.append(text[start:i])
            start = i + 1
        i += 1
    return done, start, bool(quote)


def is_meta(text: str, *, any_dot: bool = True) -> bool:
    """A meta-command: the input starts with a backslash, or with a dot and a letter (no SQL
    statement does: `.mode line` is an unknown command, not the start of a statement). Under a
    half-typed statement (``any_dot=False``) only :data:`DOT_COMMANDS` count, as a line of SQL may
    start with `.name`."""
    stripped = text.lstrip()
    if stripped.startswith("\\"):
        return True
    if any_dot:
        return len(stripped) > 1 and stripped[0] == "." and stripped[1].isalpha()
    return (stripped.split(None, 1) or [""])[0] in DOT_COMMANDS


def is_word(text: str) -> bool:
    """`quit`, `exit` or `help` alone (a `;` after it is forgiven)."""
    return text.strip().rstrip(";").strip().lower() in WORDS


def is_open(text: str) -> bool:
    """Whether ``text`` ends inside a quoted string, a quoted name or a /* comment */."""
    return _scan(text)[2]


def meta_tail(text: str) -> tuple[str, str] | None:
    """(what comes before, the line) when the last line of ``text`` is a meta-command line or one
    of :data:`WORDS` that stands outside quotes and comments; else None.

    >>> meta_tail("SELECT COUNT(*)\\n\\\\q")
    ('SELECT COUNT(*)\\n', '\\\\q')
    """
    body = text.rstrip()
    cut = body.rfind("\n") + 1
    line = body[cut:]
    if not (is_meta(line, any_dot=not body[:cut].strip()) or is_word(line)) or is_open(body[:cut]):
        return None
    return body[:cut], line.strip()


def is_complete(text: str) -> bool:
    """Whether Enter should run the input rather than start a new line."""
    stripped = text.strip()
    if not stripped or is_meta(stripped) or is_word(stripped) or meta_tail(text) is not None:
        return True
    done, rest = split(text)
    return bool(done) and is_blank(rest)


def _strip_comments(text: str) -> str:
    """``text`` without its -- line comments (a trailing comment after `;` does not hold input open)."""
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def is_blank(text: str) -> bool:
    """Nothing but whitespace and -- comments."""
    return not _strip_comments(text).strip()
