"""The REPL loop: read input, run a meta-command or the SQL, print the answer, repeat.

Interactive on a terminal (prompt_toolkit: highlighting, completion, history, multi-line input
that runs on `;`); a plain reader of statements when standard input is a file or a pipe, with
the same output and exit status 1 on the first error.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

from dpsql import format as fmt_mod
from dpsql.errors import DpsqlError
from dpsql.faces.repl import commands, statements
from dpsql.faces.repl.progress import run_interruptible
from dpsql.intercept import execute
from dpsql.privacy.budget import fmt


class Repl:
    """One analyst's prompt over one connection; settings live here, the rest in the session."""

    def __init__(self, connection: Any, *, out: TextIO | None = None, err: TextIO | None = None,
                 display: str = "moe", progress: bool = True) -> None:
        self.connection = connection
        self.session = connection.session
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.display = display
        self.timing = False
        self.progress = progress
        self.last_sql: str | None = None  # the SQL an error's line and column refer to

    # ------------------------------------------------------------------ one input
    def handle(self, text: str) -> bool:
        """Run one accepted input (a meta-command, or one or more statements); False on error.

        Raises:
            commands.Quit: the input asks to leave.
        """
        stripped = text.strip()
        if not stripped:
            return True
        if statements.is_meta(stripped) or stripped.lower() in ("quit", "exit", "help"):
            return self.meta(stripped)
        done, rest = statements.split(text)
        if not statements.is_blank(rest):
            done.append(rest.strip())  # Alt-Enter, or the end of a script without a final ;
        return all(self.run_sql(sql) for sql in done)

    def meta(self, line: str) -> bool:
        self.last_sql = None
        return self._guard(lambda: self._print(commands.run(self, line)))

    def run_sql(self, sql: str) -> bool:
        self.last_sql = sql
        return self._guard(lambda: self._answer(sql))

    def _answer(self, sql: str) -> None:
        t0 = time.perf_counter()
        try:
            result = run_interruptible(lambda: execute(self.session, sql), self.session.engine.interrupt,
                                       stream=self.err if self.progress else None)
        except KeyboardInterrupt as exc:
            if getattr(exc, "dpsql_charged", None) is None:  # stopped before any private row was read
                self._error("query cancelled; nothing was charged.")
            else:  # stopped after: charged anyway (docs/privacy.md, "Phases of a query")
                self._error(f"query cancelled: {exc}.")
            raise _Cancelled from None
        finally:
            # Engine.interrupt is sticky (it also stops a query the worker has not started yet):
            # a Ctrl-C that came when the engine had nothing left to run must not cancel the
            # next statement.
            self.session.engine.clear_interrupt()
        elapsed = time.perf_counter() - t0
        self._print(fmt_mod.table(result, show=self.display))
        self._print(fmt_mod.status(result, self.display))
        if self.timing:
            self._print(fmt_mod.timing(elapsed, result.timings))

    def _guard(self, action: Any) -> bool:
        """Run ``action``; print a refusal or failure as one message, never a traceback."""
        try:
            action()
            return True
        except (commands.Quit, KeyboardInterrupt, _Cancelled):
            raise
        except commands.UsageError as exc:
            self._error(str(exc))
        except DpsqlError as exc:
            self._error(fmt_mod.error(exc, self.last_sql if exc.line else None))
        except Exception as exc:  # noqa: BLE001 - a bug: never print a message that may carry data values
            if os.environ.get("DPSQL_DEBUG"):
                raise
            self._error(f"DP900: internal error ({type(exc).__name__}); this is a bug in dpsql. "
                        "Set DPSQL_DEBUG=1 to see the traceback (it may show private values: only for the data owner).")
        return False

    def _print(self, text: str | None) -> None:
        if text:
            print(text + "\n", file=self.out, flush=True)

    def _error(self, text: str) -> None:
        print(text + "\n", file=self.err, flush=True)

    # ------------------------------------------------------------------ texts
    def banner(self) -> str:
        s = self.session
        led = s.ledger
        return (f"dpsql {_version()}: differentially private SQL over {s.database}\n"
                f"policy {s.policy.path}; tables: {', '.join(s.policy.tables)}"
                + (f"; public tables: {', '.join(s.policy.public_tables)}" if s.policy.public_tables else "") + "\n"
                f"Each query's noise costs rho={fmt(s.rho)} (a private GROUP BY key adds "
                f"{fmt(s.policy.selection.epsilon ** 2 / 2)}); budget left {fmt(led.remaining)} of {fmt(led.total_rho)}. "
                "Refused queries cost nothing.\n"
                "End SQL with ;  \\help for help, \\tables to start, Tab completes, Ctrl-D quits.\n")

    def toolbar(self) -> str:
        s = self.session
        shown = "± 95% MOE" if self.display == "moe" else "σ"
        return (f" rho/query {fmt(s.rho)} │ budget left {fmt(s.ledger.remaining)} of {fmt(s.ledger.total_rho)}"
                f" │ showing {shown} │ \\help  Ctrl-D quits ")

    # ------------------------------------------------------------------ loops
    def interactive(self, *, input: Any = None, output: Any = None, history: Any = None) -> int:
        """Prompt until Ctrl-D or \\q. ``input``/``output`` are for tests (a pipe input, DummyOutput)."""
        from dpsql.faces.repl.prompt import make_session

        prompt = make_session(self, input=input, output=output, history=history)
        self._print(self.banner().rstrip())
        while True:
            try:
                text = prompt.prompt()
            except KeyboardInterrupt:
                continue  # Ctrl-C: drop the line, keep the session
            except EOFError:
                break
            try:
                self.handle(text)
            except commands.Quit:
                break
            except _Cancelled:
                continue
            except KeyboardInterrupt:
                self._error("cancelled.")
        return 0

    def script(self, lines: Iterable[str]) -> int:
        """Run statements and meta-command lines from a file or pipe; stop with status 1 at the first error."""
        buf = ""
        try:
            for line in lines:
                if statements.is_blank(buf) and statements.is_meta(line):
                    buf = ""
                    if not self.handle(line):
                        return 1
                    continue
                buf += line
                done, buf = statements.split(buf)
                if not all(self.run_sql(sql) for sql in done):
                    return 1
            return 0 if self.handle(buf) else 1
        except commands.Quit:
            return 0
        except (KeyboardInterrupt, _Cancelled):
            return 130


class _Cancelled(Exception):
    """The running query was cancelled with Ctrl-C (already reported)."""


def _version() -> str:
    from dpsql.version import __version__

    return __version__
