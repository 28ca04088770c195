"""Where and how answers are shown: aligned or expanded (`\\x`), CSV, through a pager, to a file.

:class:`View` holds the settings (`\\x`, `\\pset`, `\\o`); :func:`render` is a pure function of a
result and a view; :func:`page` hands text to ``$PAGER`` (``less -S`` by default, as psql and
pgcli do) when it is taller or wider than the terminal. Nothing is paged unless the output is a
terminal: a pipe or a file always gets the text itself.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from prompt_toolkit.utils import get_cwidth

from dpsql.pipeline import format as fmt_mod
from dpsql.faces.repl.export import csv_text

if TYPE_CHECKING:
    from dpsql.pipeline.result import Result

#: ``less`` options when ``$LESS`` is not set: -S chops long lines (scroll sideways with the
#: arrow keys) instead of wrapping a wide table, -R passes colours, -X leaves the page on the
#: screen after q, -F exits at once when the text fits after all (pgcli's choice).
LESS = "-SRXF"


@dataclass
class View:
    """The prompt's output settings."""

    expanded: str = "off"  # \x: off, on, auto (expanded when the table is wider than the terminal)
    pager: str = "on"  # \pset pager: on (when taller or wider than the terminal), off, always
    format: str = "aligned"  # \pset format: aligned, csv
    file: TextIO | None = None  # \o FILE: where answers go instead of the screen
    file_name: str = ""

    def close_file(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file, self.file_name = None, ""


def render(result: Result, view: View, show: str = "moe", width: int | None = None) -> str:
    """The answer's rows as the view asks: an aligned table, one block per row (`\\x`), or CSV.

    ``width`` is the terminal's, for ``\\x auto``; None when the output is not a terminal.
    """
    if view.format == "csv":
        return csv_text(result).rstrip("\n")
    aligned = fmt_mod.table(result, show)
    if view.expanded == "on" or (view.expanded == "auto" and width is not None and text_width(aligned) > width):
        return expanded(result, show)
    return aligned


def expanded(result: Result, show: str = "moe") -> str:
    """psql's expanded display: a ``-[ RECORD n ]-`` header, then one ``column | value`` line each."""
    if not result.rows:
        return "(no rows)"
    names = list(result.columns)
    body = fmt_mod.cells(result, show)
    left = max(get_cwidth(n) for n in names)
    right = max(get_cwidth(c) for row in body for c in row) if names else 0
    out = []
    for i, row in enumerate(body, 1):
        line = list(f"-[ RECORD {i} ]".ljust(left + 3 + right, "-"))
        if len(f"-[ RECORD {i} ]") <= left + 1:
            line[left + 1] = "+"  # under the | of the lines below, as psql draws it
        out.append("".join(line))
        out += [f"{n}{' ' * (left - get_cwidth(n))} | {c}".rstrip() for n, c in zip(names, row)]
    return "\n".join(out)


def file_arg(arg: str) -> str:
    """A file name as psql takes one: bare, or in single quotes."""
    name = arg.strip()
    if len(name) >= 2 and name[0] == name[-1] == "'":
        name = name[1:-1].replace("''", "'")
    return name


def expand(name: str) -> str:
    """A file name as typed: ``~`` is the home directory."""
    return os.path.expanduser(name)


def text_width(text: str) -> int:
    """The widest line, in terminal cells (± and σ are one cell, wide characters two)."""
    return max((get_cwidth(line) for line in text.splitlines()), default=0)


def terminal_size(stream: Any) -> os.terminal_size | None:
    """(columns, lines) of the terminal ``stream`` writes to; None when it is not a terminal."""
    try:
        if not stream.isatty():
            return None
        return os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def pager_command() -> list[str] | None:
    """``$DPSQL_PAGER``, else ``$PAGER``, else ``less``, else ``more``; None when there is none
    (or the variable is set to the empty string: psql's way to turn the pager off)."""
    for name in ("DPSQL_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            return shlex.split(value) or None
    for program in ("less", "more"):
        if shutil.which(program):
            return [program]
    return None


def wants_pager(text: str, setting: str, size: os.terminal_size | None, *, wide: bool = True) -> bool:
    """Whether ``text`` goes through the pager: never off a terminal; with ``always``, a table or a
    listing of more than one line; with ``on``, when it is taller than the screen (leaving a line
    for the prompt) or, for a table (``wide``), wider."""
    if size is None or setting == "off":
        return False
    if setting == "always":
        return wide or "\n" in text
    return len(text.splitlines()) >= size.lines or (wide and text_width(text) > size.columns)


def page(text: str, stream: TextIO, command: list[str]) -> bool:
    """Show ``text`` through the pager ``command`` on the terminal ``stream``; False when the
    pager could not be started (the caller prints the text instead).

    The pager owns the terminal until it exits: Ctrl-C is for it (less ignores it or stops
    reading), so this waits through KeyboardInterrupt as psql does.
    """
    env = dict(os.environ)
    env.setdefault("LESS", LESS)
    stream.flush()
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=stream, env=env)
    except OSError:
        return False
    data = (text + "\n").encode("utf-8")

    def feed() -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:  # q before the end: the pager stopped reading
            pass

    writer = threading.Thread(target=feed, name="dpsql-pager", daemon=True)
    writer.start()
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:
            continue
    writer.join(5)
    return True
