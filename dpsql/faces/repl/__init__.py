"""The interactive `dpsql` prompt.

    app.py         the loop: Repl.handle(text), the interactive and the script loops
    commands.py    meta-commands, registered by @command into one table
    completion.py  context-aware Tab completion from the policy and the schema
    lexer.py       SQL highlighting
    progress.py    a query in a worker thread: spinner, Ctrl-C cancels
    prompt.py      the prompt_toolkit session
    statements.py  where `;` ends a statement
"""

from __future__ import annotations

import sys
from typing import Any

from dpsql.faces.repl.app import Repl

__all__ = ["Repl", "main"]


def main(database: Any = None, policy: Any = None, rho: Any = None, *, display: str = "moe") -> int:
    """Open a connection and run the prompt on a terminal, or read statements from a pipe."""
    from dpsql.faces.dbapi import connect

    with connect(database, policy, rho=rho) as con:
        repl = Repl(con, display=display, progress=sys.stderr.isatty())
        if sys.stdin.isatty():
            return repl.interactive()
        return repl.script(sys.stdin)
