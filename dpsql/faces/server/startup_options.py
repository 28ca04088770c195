"""dpsql's settings in a client's startup ``options`` (libpq's ``options=-c name=value``): how a
BI tool that only takes a connection URL sets ``dpsql.error_columns`` or ``dpsql.rho``. They were
silently ignored; now each ``-c dpsql.<name>=<value>`` (or ``--dpsql.<name>=<value>``) is applied
as ``SET dpsql.<name> = '<value>'`` when the session opens, and a bad one refuses the connection
with the setting's own error. Other names are PostgreSQL's and stay ignored, as before."""

from __future__ import annotations

import re
from typing import Any


def _tokens(options: str) -> list[str]:
    """libpq's rule: words split on whitespace, a backslash escapes the next character."""
    out, word, escaped, started = [], [], False, False
    for ch in options:
        if escaped:
            word.append(ch)
            escaped, started = False, True
        elif ch == "\\":
            escaped = True
        elif ch.isspace():
            if started:
                out.append("".join(word))
            word, started = [], False
        else:
            word.append(ch)
            started = True
    if started:
        out.append("".join(word))
    return out


def dpsql_options(options: str) -> list[tuple[str, str]]:
    """(name, value) of each dpsql setting in ``options``, in order; other settings left out."""
    tokens, found, i = _tokens(options), [], 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "-c" and i + 1 < len(tokens):
            setting, i = tokens[i + 1], i + 2
        elif tok.startswith(("-c", "--")):
            setting, i = tok[2:], i + 1
        else:
            i += 1
            continue
        name, sep, value = setting.partition("=")
        if sep and re.fullmatch(r"dpsql\.\w+", name, re.I):
            found.append((name[len("dpsql."):].lower(), value))
    return found


def apply_options(session: Any, options: str) -> None:
    """Apply the dpsql settings of ``options`` to ``session`` (DpsqlError on a bad one)."""
    from dpsql.errors import QueryRefused
    from dpsql.intercept.settings import handle

    for name, value in dpsql_options(options):
        if "'" in value:
            raise QueryRefused(f"dpsql.{name}: a quote in a startup option's value is not read", code="DP119",
                               hint="set it with SET dpsql.<name> = '...' after connecting.")
        handle(session, f"SET dpsql.{name} = '{value}'")
