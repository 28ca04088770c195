"""The interactive `dpsql` prompt.

    app.py         the loop: Repl.handle(text), the interactive and the script loops
    commands.py    meta-commands, registered by @command into one table; the ones on the policy
    results.py     meta-commands on answers: \\x, \\pset, \\o, \\copy, \\export, \\chart
    buffer.py      meta-commands on input: \\i, \\e, \\g, \\r
    output.py      how answers show (aligned, expanded, CSV) and the pager
    export.py      answers as CSV / text / JSON files with <column>_moe95 columns; \\copy's grammar
    chart.py       an answer as bars with ± whiskers
    completion.py  context-aware Tab completion from the policy and the schema
    lexer.py       SQL highlighting
    progress.py    a query in a worker thread: spinner, Ctrl-C cancels
    prompt.py      the prompt_toolkit session
    statements.py  where `;` ends a statement, and which lines are meta-commands
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
