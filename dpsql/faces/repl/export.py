"""Answers written as files: the rows with a ``<column>_moe95`` column after each noisy column.

Used by `\\copy (query) TO 'file' CSV HEADER`, `\\export FILE` and `\\pset format csv`. The margin
of error comes from the answer's receipt (``Receipt.columns[c].moe95``, row by row): the same
error bar the table shows as ``±``, so a file carries it without a second call. Floats are
written with ``repr``, so a CSV reloads with exactly the values shown (tests/test_repl_desk.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpsql.pipeline import format as fmt_mod

if TYPE_CHECKING:
    from dpsql.pipeline.result import Result

MOE_SUFFIX = "_moe95"


class CopyError(ValueError):
    """A `\\copy` typed wrongly; the message says how to type it."""


@dataclass(frozen=True)
class Copy:
    """A parsed `\\copy`: the query, where to write, and psql's format options."""

    sql: str
    target: str  # a file name, or "STDOUT"
    format: str = "text"  # psql's default: tab-separated, \N for NULL
    header: bool = False
    delimiter: str | None = None  # "," for csv, a tab for text
    null: str | None = None  # "" for csv, \N for text


def with_errors(result: Result) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) with ``<c>_moe95`` after each column the receipt gives an error for (unless
    the answer already has that column: `SET dpsql.error_columns`)."""
    cols = list(result.columns)
    errs = [result.receipt.columns.get(c) if c + MOE_SUFFIX not in cols else None for c in cols]
    headers: list[str] = []
    for c, e in zip(cols, errs):
        headers += [c, c + MOE_SUFFIX] if e is not None else [c]
    rows = []
    for r, row in enumerate(result.rows):
        out: list[Any] = []
        for value, e in zip(row, errs):
            out += [value, e.moe95[r] if value is not None else None] if e is not None else [value]
        rows.append(out)
    return headers, rows


def csv_text(result: Result, *, header: bool = True, delimiter: str = ",", null: str = "") -> str:
    """The answer as CSV (RFC 4180 quoting; NULL as ``null``, unquoted)."""
    buf = io.StringIO()
    write_csv(buf, result, header=header, delimiter=delimiter, null=null)
    return buf.getvalue()


def write_csv(stream: Any, result: Result, *, header: bool = True, delimiter: str = ",", null: str = "") -> int:
    headers, rows = with_errors(result)
    writer = csv.writer(stream, delimiter=delimiter, lineterminator="\n")
    if header:
        writer.writerow(headers)
    for row in rows:
        writer.writerow([null if v is None else _plain(v) for v in row])
    return len(rows)


def write_text(stream: Any, result: Result, *, header: bool = False, delimiter: str = "\t", null: str = "\\N") -> int:
    """psql's text format: one line per row, values separated by ``delimiter``, backslash escapes."""
    headers, rows = with_errors(result)
    if header:
        stream.write(delimiter.join(_escape(h, delimiter) for h in headers) + "\n")
    for row in rows:
        stream.write(delimiter.join(null if v is None else _escape(str(_plain(v)), delimiter) for v in row) + "\n")
    return len(rows)


def write_json(stream: Any, result: Result) -> int:
    """An array of row objects (``pandas.read_json(path)`` reads it), error columns included."""
    headers, rows = with_errors(result)
    stream.write(fmt_mod.to_json([dict(zip(headers, row)) for row in rows]) + "\n")
    return len(rows)


def write(path: str, result: Result, copy: Copy | None = None) -> int:
    """Write ``result`` to the file ``path`` as ``copy`` says (by default as `\\export` does: JSON
    for a ``.json`` name, else CSV with a header); returns the number of rows."""
    with open(Path(path).expanduser(), "w", encoding="utf-8", newline="") as f:
        return write_to(f, result, copy, json_file=copy is None and path.lower().endswith(".json"))


def write_to(stream: Any, result: Result, copy: Copy | None, *, json_file: bool = False) -> int:
    if json_file:
        return write_json(stream, result)
    if copy is None or copy.format == "csv":
        header = True if copy is None else copy.header
        return write_csv(stream, result, header=header, delimiter=(copy and copy.delimiter) or ",",
                         null=(copy.null if copy and copy.null is not None else ""))
    return write_text(stream, result, header=copy.header, delimiter=copy.delimiter or "\t",
                      null=copy.null if copy.null is not None else "\\N")


def _plain(value: Any) -> Any:
    return repr(value) if isinstance(value, float) else value


def _escape(text: str, delimiter: str) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return text if delimiter == "\t" else text.replace(delimiter, "\\" + delimiter)


# --------------------------------------------------------------------------- \copy's grammar

_TOKEN = re.compile(r"'(?:[^']|'')*'|[^\s(),']+|[(),]")
USAGE = "usage: \\copy (SELECT …) TO 'file.csv' [WITH] [(] [FORMAT] csv [HEADER] [DELIMITER ','] [)]"


def parse_copy(arg: str) -> Copy:
    """psql's `\\copy` on one line: ``(query) | table  TO  'file' | STDOUT  [options]``.

    Raises:
        CopyError: not that shape, an unknown option, or FROM (dpsql never loads data).
    """
    text = arg.strip()
    if text.startswith("("):
        end = _closing(text)
        sql, rest = text[1:end].strip().rstrip(";"), text[end + 1:]
    else:
        name, _, rest = text.partition(" ")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise CopyError(USAGE)
        sql = f"SELECT * FROM {name}"
    tokens = _TOKEN.findall(rest)
    if not tokens or tokens[0].lower() not in ("to", "from"):
        raise CopyError(USAGE)
    if tokens[0].lower() == "from":
        raise CopyError("dpsql only answers queries: \\copy … FROM (loading rows) is not supported")
    if len(tokens) < 2 or tokens[1] in "(),":
        raise CopyError(USAGE)
    target = _unquote(tokens[1])
    if target.lower() in ("stdout", "pstdout"):
        target = "STDOUT"
    elif target.lower() in ("program", "stdin", "pstdin"):
        raise CopyError(f"\\copy … TO {target.upper()} is not supported; write to a file or STDOUT")
    options = _options([t for t in tokens[2:] if t not in "(),"])
    return Copy(sql, target, **options)


def _options(words: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(words):
        w = words[i].lower()
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w == "with":
            i += 1
        elif w in ("csv", "text"):
            out["format"], i = w, i + 1
        elif w == "format":
            if nxt.lower() not in ("csv", "text"):
                raise CopyError(f"\\copy FORMAT {nxt or '?'} is not supported: csv, or text (psql's default)")
            out["format"], i = nxt.lower(), i + 2
        elif w == "header":
            flag = nxt.lower() in ("false", "off", "0")
            out["header"] = not flag
            i += 2 if nxt.lower() in ("true", "on", "1", "false", "off", "0") else 1
        elif w in ("delimiter", "null"):
            j = i + 2 if nxt.lower() == "as" else i + 1
            if j >= len(words) or not words[j].startswith("'"):
                raise CopyError(f"{w.upper()} takes a quoted value, e.g. {w.upper()} ','")
            value = _unquote(words[j])
            if w == "delimiter" and len(value) != 1:
                raise CopyError("DELIMITER is one character")
            out[w], i = value, j + 1
        else:
            raise CopyError(f"\\copy option {words[i]!r} is not supported (CSV, HEADER, DELIMITER, NULL, "
                            "FORMAT csv|text)")
    return out


def _closing(text: str) -> int:
    """The index of the parenthesis closing ``text[0]``, quotes respected."""
    depth, quote = 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise CopyError("the query in \\copy ( … ) has no closing parenthesis")


def _unquote(word: str) -> str:
    return word[1:-1].replace("''", "'") if len(word) >= 2 and word[0] == word[-1] == "'" else word
