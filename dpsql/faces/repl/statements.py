"""Cutting typed text into statements: where a `;` ends one, and when input is complete.

A `;` ends a statement unless it is inside a quoted string, a quoted identifier or a comment.
A line starting with a backslash is a meta-command, ended by the end of the line (as in psql).
"""

from __future__ import annotations

EXIT_WORDS = ("quit", "exit", "\\q")


def split(text: str) -> tuple[list[str], str]:
    """Split ``text`` into complete statements (without their `;`) and the unfinished rest.

    >>> split("SELECT 1; SELECT 'a;b'; SELECT")
    (['SELECT 1', "SELECT 'a;b'"], ' SELECT')
    """
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
            i = n if end < 0 else end + 2
            continue
        elif c == ";":
            done.append(text[start:i])
            start = i + 1
        i += 1
    return [s.strip() for s in done if s.strip()], text[start:]


def is_meta(text: str) -> bool:
    """A meta-command: the input's first non-blank character is a backslash."""
    return text.lstrip().startswith("\\")


def is_complete(text: str) -> bool:
    """Whether Enter should run the input rather than start a new line."""
    stripped = text.strip()
    if not stripped or is_meta(stripped) or stripped.lower() in EXIT_WORDS:
        return True
    done, rest = split(text)
    return bool(done) and is_blank(rest)


def _strip_comments(text: str) -> str:
    """``text`` without its -- line comments (a trailing comment after `;` does not hold input open)."""
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def is_blank(text: str) -> bool:
    """Nothing but whitespace and -- comments."""
    return not _strip_comments(text).strip()
