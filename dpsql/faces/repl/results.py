"""Meta-commands on answers: how they show (`\\x`, `\\pset`), where they go (`\\o`), files
(`\\copy`, `\\export`) and a chart (`\\chart`). psql's names and grammar where psql has them.

They show and write only what a query released: noisy values and their error bars.
"""

from __future__ import annotations

import os

from dpsql.faces.repl import output
from dpsql.faces.repl.chart import ChartError, chart
from dpsql.faces.repl.commands import ReplState, UsageError, command
from dpsql.faces.repl.export import CopyError, parse_copy, write, write_to

_ON_OFF = {"on": "on", "off": "off", "true": "on", "false": "off", "1": "on", "0": "off"}


@command("\\x", args="[on|off|auto]", section="Answers",
         help="expanded display: one block per row (auto: when the table is wider than the screen)")
def _expanded(repl: ReplState, arg: str) -> str:
    value = arg.strip().lower()
    if not value:
        value = "off" if repl.view.expanded == "on" else "on"
    value = _ON_OFF.get(value, value)
    if value not in ("on", "off", "auto"):
        raise UsageError("usage: \\x [on|off|auto]")
    repl.view.expanded = value
    return f"Expanded display is {'used automatically' if value == 'auto' else value}."


@command("\\pset", args="[pager|expanded|format VALUE]", section="Answers",
         help="output settings: pager on|off|always, expanded on|off|auto, format aligned|csv")
def _pset(repl: ReplState, arg: str) -> str:
    name, _, value = arg.strip().partition(" ")
    name, value = name.lower(), value.strip().lower()
    view = repl.view
    if not name:
        return "\n".join([f"expanded  {view.expanded}", f"format    {view.format}", f"pager     {view.pager}"])
    if name == "expanded":
        return _expanded(repl, value)
    if name == "pager":
        value = _ON_OFF.get(value, value) if value else ("off" if view.pager != "off" else "on")
        if value not in ("on", "off", "always"):
            raise UsageError("usage: \\pset pager on|off|always")
        view.pager = value
        return {"on": "Pager is used for long output.", "off": "Pager usage is off.",
                "always": "Pager is always used."}[value]
    if name == "format":
        if value not in ("aligned", "csv"):
            raise UsageError("usage: \\pset format aligned|csv (csv: the rows with a <column>_moe95 column after "
                             "each noisy one; the status line goes to stderr)")
        view.format = value
        return f"Output format is {value}."
    raise UsageError(f"\\pset {name} is not supported: pager, expanded, format")


@command("\\o", args="[FILE]", aliases=(".output",), section="Answers",
         help="send answers to FILE (the charge still shows here); \\o alone: back to the screen")
def _output(repl: ReplState, arg: str) -> str:
    name = output.file_arg(arg)
    if name.startswith("|"):
        raise UsageError("\\o |command is not supported; write to a file")
    was = repl.view.file_name
    repl.view.close_file()
    if not name:
        return f"Answers go to the screen again (they went to {was})." if was else "Answers go to the screen."
    try:
        repl.view.file = open(output.expand(name), "w", encoding="utf-8")  # noqa: SIM115 - closed by \o or at exit
    except OSError as exc:
        raise UsageError(f"could not open {name}: {exc.strerror}") from None
    repl.view.file_name = name
    return f"Answers now go to {name}; \\o alone sends them back to the screen."


@command("\\copy", args="(SELECT …) TO 'FILE' CSV HEADER", section="Answers",
         help="run the query (charged as usual) and write its rows with <col>_moe95 columns to FILE or STDOUT")
def _copy(repl: ReplState, arg: str) -> None:
    try:
        copy = parse_copy(arg)
    except CopyError as exc:
        raise UsageError(str(exc)) from None
    repl.last_sql = copy.sql
    if copy.target != "STDOUT":
        _writable(copy.target)  # before the query: a bad path must not cost budget
    result = repl.query(copy.sql)
    if copy.target == "STDOUT":  # as psql: where answers go (the \o file, or the screen)
        stream = repl.view.file or repl.out
        write_to(stream, result, copy)
        stream.flush()
    else:
        write(copy.target, result, copy)
    repl.emit(f"COPY {len(result.rows)}")
    repl.emit_status(result)


@command("\\export", args="FILE", section="Answers",
         help="write the last answer with <col>_moe95 columns: CSV with a header, or JSON for a .json name")
def _export(repl: ReplState, arg: str) -> str:
    name = output.file_arg(arg)
    if not name:
        raise UsageError("usage: \\export FILE.csv (or FILE.json)")
    if repl.last_result is None:
        raise UsageError("no answer yet: \\export writes the last answer of a query")
    try:
        n = write(name, repl.last_result)
    except OSError as exc:
        raise UsageError(f"could not write {name}: {exc.strerror}") from None
    return f"{n} row{'s' if n != 1 else ''} written to {name}, with a <column>_moe95 column after each noisy column."


@command("\\chart", args="[COLUMN] [N]", section="Answers",
         help="the last answer as bars with ± whiskers: one numeric column, the keys as labels, N rows (50)")
def _chart(repl: ReplState, arg: str) -> str:
    if repl.last_result is None:
        raise UsageError("no answer yet: \\chart draws the last answer of a query")
    words = arg.split()
    limit = 50
    if words and words[-1].isdigit():
        limit = max(1, int(words.pop()))
    if len(words) > 1:
        raise UsageError("usage: \\chart [COLUMN] [N]")
    size = output.terminal_size(repl.out)
    try:
        return chart(repl.last_result, words[0] if words else None, width=size.columns if size else 80, limit=limit)
    except ChartError as exc:
        raise UsageError(str(exc)) from None


def _writable(name: str) -> None:
    """Refuse a file that cannot be written, without creating it."""
    path = os.path.abspath(output.expand(name))
    if os.path.isdir(path):
        raise UsageError(f"could not write {name}: it is a directory")
    target = path if os.path.exists(path) else os.path.dirname(path)
    if not os.access(target, os.W_OK):
        raise UsageError(f"could not write {name}: {'permission denied' if os.path.exists(target) else 'no such directory'}")
