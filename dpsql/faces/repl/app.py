"""The REPL loop: read input, run a meta-command or the SQL, print the answer, repeat.

Interactive on a terminal (prompt_toolkit: highlighting, completion, history, multi-line input
that runs on `;`); a plain reader of statements when standard input is a file or a pipe, with
the same output and exit status 1 on the first error. A meta-command typed under a half-typed
statement runs at once and the statement comes back into the next prompt (psql's query buffer).
Answers go through :mod:`output` (aligned, expanded, CSV; the pager; a `\\o` file).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, TextIO

from dpsql.pipeline import format as fmt_mod
from dpsql.errors import DpsqlError
from dpsql.faces.repl import buffer, commands, output, results, statements  # noqa: F401 - they register commands
from dpsql.faces.repl.progress import run_interruptible
from dpsql.intercept import execute
from dpsql.privacy.budget import fmt, fmt_down, fmt_up
from dpsql.pipeline.result import Result


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
        self.last_result: Result | None = None  # for \\chart and \\export
        self.last_query: str | None = None  # for \\e on an empty prompt
        self.view = output.View()
        self.pending = ""  # a half-typed statement kept while a meta-command ran; the next prompt shows it
        self.prompting = False  # True inside interactive(): \\e needs a prompt to hand the text back to
        self.depth = 0  # how deep \\i files are nested
        #: at the prompt, ask before a statement that would spend more than this share of the budget
        #: left (\\set confirm SHARE; 0 never asks); scripts never ask (issue 33)
        self.confirm_share = Fraction(1, 4)
        self._ask_io: tuple[Any, Any] = (None, None)  # the prompt's own input and output, for the question

    # ------------------------------------------------------------------ one input
    def handle(self, text: str) -> bool:
        """Run one accepted input (a meta-command, or one or more statements); False on error.

        Raises:
            commands.Quit: the input asks to leave.
        """
        stripped = text.strip()
        if not stripped:
            return True
        if statements.is_meta(stripped) or statements.is_word(stripped):
            return self.meta(stripped)
        tail = statements.meta_tail(text)
        if tail is not None:  # a meta-command under a half-typed statement: run it, keep the statement
            before, line = tail
            done, rest = statements.split(before)
            ok = all(self.run_sql(sql) for sql in done)
            self.pending = "" if statements.is_blank(rest) else rest.strip("\n")
            return self.meta(line) and ok
        done, rest = statements.split(text)
        if not statements.is_blank(rest):
            done.append(rest.strip())  # Alt-Enter, or the end of a script without a final ;
        return all(self.run_sql(sql) for sql in done)

    def meta(self, line: str) -> bool:
        self.last_sql = None
        return self._guard(lambda: self.emit(commands.run(self, line), page="text"))

    def run_sql(self, sql: str) -> bool:
        self.last_sql = self.last_query = sql
        return self._guard(lambda: self._answer(sql))

    def _answer(self, sql: str) -> None:
        if self.prompting and self.confirm_share and not self._worth_it(sql):
            self._error("not run; nothing was charged.")
            return
        t0 = time.perf_counter()
        result = self.query(sql)
        elapsed = time.perf_counter() - t0
        size = output.terminal_size(self.out) if self.view.file is None else None
        self.emit(output.render(result, self.view, self.display, size.columns if size else None), answer=True,
                  page="table")
        self.emit_status(result)
        if self.timing:
            self.emit(fmt_mod.timing(elapsed, result.timings))

    def _worth_it(self, sql: str) -> bool:
        """Whether to run ``sql``: yes when it costs at most ``confirm_share`` of the budget left
        (its cost from EXPLAIN: public, charges nothing), or it would show an answer released
        before, or it is refused anyway (it then says why); else the analyst is asked, y or N."""
        try:  # planned as the query is: a worker thread, Ctrl-C cancels (then nothing ran)
            ex = run_interruptible(lambda: self.connection.explain(sql), self.session.engine.interrupt, stream=None)
        except DpsqlError:
            return True  # the statement itself says why it is refused
        except KeyboardInterrupt:
            self._error("query cancelled; nothing was charged.")
            raise _Cancelled from None
        # a Ctrl-C that reached the engine here stays sticky: the query's first engine call stops
        left = self.session.ledger.remaining
        if not ex.rho or any(n.startswith("reuse: would show") for n in ex.notes) or ex.rho <= self.confirm_share * left:
            return True
        share = f"{float(ex.rho / left):.0%} of" if left > 0 else "more than"
        question = (f"this query costs rho={fmt_up(ex.rho)}, {share} the rho={fmt_down(left)} left "
                    f"(\\set confirm 0 stops asking). Run it? [y/N] ")
        from prompt_toolkit import PromptSession

        try:
            answer = PromptSession(input=self._ask_io[0], output=self._ask_io[1]).prompt(question)
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    def emit_status(self, result: Result) -> None:
        """The line under an answer (its charge): to the screen, and also to a `\\o` file; on
        stderr when the screen gets CSV (`\\pset format csv`), so standard output stays CSV."""
        status = fmt_mod.status(result, self.display)
        if self.view.format == "csv":
            self._error(status)
            return
        if self.view.file is not None:
            self.emit(status, answer=True)
        self.emit(status)

    def query(self, sql: str) -> Result:
        """Run one statement as the prompt does (a worker thread, a spinner, Ctrl-C cancels) and
        keep its answer for \\chart and \\export."""
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
        self.last_result = result
        return result

    def _guard(self, action: Any) -> bool:
        """Run ``action``; print a refusal or failure as one message, never a traceback."""
        try:
            action()
            return True
        except (commands.Quit, KeyboardInterrupt, _Cancelled):
            raise
        except BrokenPipeError:
            raise  # the reader of standard output went away (`dpsql < q.sql | head`): stop, run nothing more
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

    def emit(self, text: str | None, *, answer: bool = False, page: str = "") -> None:
        """Show ``text``. An answer's rows (``answer``) go to the `\\o` file when there is one. At the
        prompt on a terminal, with the pager on, ``page="table"`` text taller or wider than the
        screen goes through the pager, ``page="text"`` (help, listings) when taller; messages never do."""
        if not text:
            return
        if answer and self.view.file is not None:
            print(text + "\n", file=self.view.file, flush=True)
            return
        if page and self.view.pager != "off" and self.prompting:  # as psql: not for `dpsql < file`
            size = output.terminal_size(self.out)
            if output.wants_pager(text, self.view.pager, size, wide=page == "table"):
                command = output.pager_command()
                if command is not None and output.page(text, self.out, command):
                    print(file=self.out, flush=True)  # the blank line an answer ends with
                    return
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
                f"{fmt(s.policy.selection.epsilon ** 2 / 2)}); budget left {self._left()} of {fmt(led.total_rho)}. "
                "Refused queries cost nothing.\n"
                "End SQL with ;  \\help for help, \\tables to start, Tab completes, Ctrl-D quits.\n")

    def _left(self) -> str:
        """The budget left, or why it cannot be read (a moved or damaged ledger: DP404). The banner
        and the toolbar must not raise: inside prompt_toolkit's application an exception waits for
        ENTER in its own handler instead of showing the prompt (tests/test_repl_faults.py)."""
        try:
            return fmt_down(self.session.ledger.remaining)
        except DpsqlError as exc:
            return f"unknown ({exc.code}: the ledger cannot be read; queries are refused)"

    def toolbar(self) -> str:
        s = self.session
        shown = "± 95% MOE" if self.display == "moe" else "σ"
        return (f" rho/query {fmt(s.rho)} │ budget left {self._left()} of {fmt(s.ledger.total_rho)}"
                f" │ showing {shown} │ \\help  Ctrl-D quits ")

    # ------------------------------------------------------------------ loops
    def interactive(self, *, input: Any = None, output: Any = None, history: Any = None) -> int:
        """Prompt until Ctrl-D or \\q. ``input``/``output`` are for tests (a pipe input, DummyOutput)."""
        from dpsql.faces.repl.prompt import make_session

        prompt = make_session(self, input=input, output=output, history=history)
        self._ask_io = (input, output)
        self.emit(self.banner().rstrip())
        self.prompting = True
        try:
            while True:
                try:
                    # A statement kept under a meta-command comes back with the cursor on a new
                    # line below it, as psql's continuation prompt (Up edits it).
                    text = prompt.prompt(default=self.pending + "\n" if self.pending else "")
                except KeyboardInterrupt:
                    self.pending = ""
                    continue  # Ctrl-C: drop the line, keep the session
                except EOFError:
                    break
                self.pending = ""
                try:
                    self.handle(text)
                except commands.Quit:
                    break
                except _Cancelled:
                    continue
                except KeyboardInterrupt:
                    self._error("cancelled.")
        finally:
            self.prompting = False
            self.view.close_file()
        return 0

    def script(self, lines: Iterable[str]) -> int:
        """Run statements and meta-command lines from a file or pipe; stop with status 1 at the first error."""
        try:
            return 0 if self.run_lines(lines) else 1
        except commands.Quit:
            return 0
        except (KeyboardInterrupt, _Cancelled):
            return 130
        finally:
            self.view.close_file()

    def run_lines(self, lines: Iterable[str]) -> bool:
        """Run a script's lines (also `\\i FILE`); False at the first error, which stops it.

        A meta-command line runs when it comes, even under an unfinished statement (as in psql);
        `quit`, `exit` and `help` only between statements.

        Raises:
            commands.Quit: the script asks to leave.
        """
        buf = ""
        for line in lines:
            blank = statements.is_blank(buf)
            meta = statements.is_meta(line, any_dot=blank) and not statements.is_open(buf)
            if meta or (blank and statements.is_word(line)):
                if not self.handle(line):
                    return False
                continue
            buf += line
            done, buf = statements.split(buf)
            if not all(self.run_sql(sql) for sql in done):
                return False
        return self.handle(buf)


class _Cancelled(Exception):
    """The running query was cancelled with Ctrl-C (already reported)."""


def _version() -> str:
    from dpsql.version import __version__

    return __version__
