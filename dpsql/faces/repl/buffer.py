"""Meta-commands on input: run a file (`\\i`), edit the statement in ``$EDITOR`` (`\\e`), run or
drop the half-typed statement (`\\g`, `\\r`), a shell command (`\\!`). psql's names; the statement being typed is psql's
query buffer, kept in :attr:`Repl.pending` and shown again in the next prompt.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile

from dpsql.faces.repl import output
from dpsql.faces.repl.commands import ReplState, UsageError, command

MAX_DEPTH = 16  # \i inside \i: enough for any real script, and a loop stops


@command("\\i", args="FILE", aliases=("\\include", ".read"), section="Input",
         help="run the statements and meta-commands of FILE; it stops at its first error")
def _include(repl: ReplState, arg: str) -> None:
    name = output.file_arg(arg)
    if not name:
        raise UsageError("usage: \\i FILE")
    if repl.depth >= MAX_DEPTH:
        raise UsageError(f"\\i {name}: files nested more than {MAX_DEPTH} deep (does one include itself?)")
    try:
        f = open(output.expand(name), encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UsageError(f"could not read {name}: {exc.strerror}") from None
    repl.depth += 1
    try:
        with f:
            ok = repl.run_lines(f)
    finally:
        repl.depth -= 1
    if not ok:
        raise UsageError(f"{name}: stopped at the error above; nothing after it ran.")


@command("\\e", args="[FILE]", aliases=("\\edit",), section="Input",
         help="edit the statement being typed (or the last one, or FILE) in $EDITOR; it comes back to the prompt")
def _edit(repl: ReplState, arg: str) -> None:
    if not repl.prompting:
        raise UsageError("\\e needs the interactive prompt")
    name = output.file_arg(arg)
    if name:
        path = output.expand(name)
        if not os.path.exists(path):
            open(path, "w", encoding="utf-8").close()
    else:
        text = repl.pending or repl.last_query or ""
        fd, path = tempfile.mkstemp(prefix="dpsql-", suffix=".sql")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + ("\n" if text and not text.endswith("\n") else ""))
    try:
        run_editor(path)
        with open(path, encoding="utf-8") as f:
            edited = f.read()
    finally:
        if not name:
            os.unlink(path)
    # The text comes back into the prompt rather than running at once (psql runs it when it ends
    # with ;): a query costs budget, so Enter is the analyst's to press.
    repl.pending = edited.rstrip()


def editor() -> list[str]:
    """``$DPSQL_EDITOR``, ``$EDITOR`` or ``$VISUAL`` (psql's order, with dpsql's first), else vi."""
    for name in ("DPSQL_EDITOR", "EDITOR", "VISUAL"):
        value = os.environ.get(name, "").strip()
        if value:
            return shlex.split(value)
    return ["vi"]


def run_editor(path: str) -> None:
    command = [*editor(), path]
    try:
        done = subprocess.run(command, check=False)
    except OSError as exc:
        raise UsageError(f"could not start the editor {command[0]!r}: {exc.strerror}; set $EDITOR") from None
    if done.returncode != 0:
        raise UsageError(f"the editor {command[0]!r} exited with status {done.returncode}; nothing changed")


@command("\\!", args="[COMMAND]", aliases=(".shell", ".system"), section="Input",
         help="run a shell command (alone: a shell; exit returns here)")
def _shell(repl: ReplState, arg: str) -> None:
    command = arg.strip() or os.environ.get("SHELL") or "/bin/sh"
    repl.out.flush()
    try:
        repl.out.fileno()
        real = True
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO): copy the output over
        real = False
    try:
        done = subprocess.run(command, shell=True, check=False, stdout=repl.out if real else subprocess.PIPE,
                              text=True)
    except OSError as exc:
        raise UsageError(f"could not run {command!r}: {exc.strerror}") from None
    if not real:
        repl.out.write(done.stdout)


@command("\\g", section="Input", help="run the half-typed statement (as if it ended with ;)")
def _go(repl: ReplState, arg: str) -> None:
    sql = repl.pending.strip().rstrip(";")
    if not sql:
        raise UsageError("nothing to run: \\g runs a statement typed above it without its ;")
    repl.pending = ""
    repl.run_sql(sql)


@command("\\r", aliases=("\\reset",), section="Input", help="drop the half-typed statement (as Ctrl-C does)")
def _reset(repl: ReplState, arg: str) -> str:
    repl.pending = ""
    return "Query buffer reset (cleared)."
