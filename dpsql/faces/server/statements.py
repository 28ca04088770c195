"""What each statement a PostgreSQL client sends is, read from its text alone.

A Query message may hold several statements (psql sends ``a; b`` as one); the extended
protocol numbers parameters ``$1, $2`` where dpsql's pipeline binds ``?`` in order. And a
statement goes one of three ways (:func:`route`):

* ``session``: PostgreSQL session and transaction commands (``SET application_name``, ``BEGIN``,
  ``SHOW search_path``, ``DISCARD ALL``): answered by the connection, touching nothing;
* ``catalog``: a statement that reads no private table (``pg_catalog``, ``information_schema``,
  ``version()``, public tables): answered on the catalog twin, which holds no private row;
* ``private``: anything that names a private table, or that cannot be read with certainty:
  the private pipeline (:func:`dpsql.intercept.execute`), which refuses what it cannot protect.

Routing needs no certainty to be safe (the twin holds no private row, and the pipeline refuses
what it does not understand); it needs it only to be useful, so in doubt a statement goes to
the pipeline.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import sqlglot
from sqlglot import exp

#: an identifier as PostgreSQL reads one: a letter (any alphabet: ``compté``, ``é``) or ``_``, then
#: letters, digits, ``_`` or ``$``
_WORD = re.compile(r"[^\W\d][\w$]*")


def _scan(sql: str) -> Iterable[tuple[int, int, str]]:
    """(start, end, kind) of the parts of ``sql`` outside quotes and comments that matter here:
    ``;`` separators, ``$n`` parameters and words. Quotes, dollar-quoted strings and comments
    are skipped whole (an unterminated one runs to the end)."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote
                        j += 2
                        continue
                    break
                j += 1
            if c == '"':  # a quoted identifier is a word too ("Establishments" names a table)
                yield i + 1, j, "word"
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "$":
            m = re.compile(r"\$(\d+)|\$([A-Za-z_]\w*)?\$").match(sql, i)
            if m and m.group(1):
                yield i, m.end(), "param"
                i = m.end()
            elif m:  # a dollar-quoted string: $tag$ ... $tag$
                close = sql.find(m.group(0), m.end())
                i = n if close < 0 else close + len(m.group(0))
            else:
                i += 1
        elif c == ";":
            yield i, i + 1, ";"
            i += 1
        elif (m := _WORD.match(sql, i)) is not None:
            yield i, m.end(), "word"
            i = m.end()
        else:
            i += 1


def split(sql: str) -> list[str]:
    """The statements of one Query message, each without its ``;``; empty ones dropped."""
    out, start = [], 0
    for s, e, kind in _scan(sql):
        if kind == ";":
            out.append(sql[start:s])
            start = e
    out.append(sql[start:])
    return [s.strip() for s in out if s.strip()]


def parameter_numbers(sql: str) -> list[int]:
    """The ``$n`` numbers in the order they appear."""
    return [int(sql[s + 1:e]) for s, e, kind in _scan(sql) if kind == "param"]


def to_qmark(sql: str) -> tuple[str, list[int]]:
    """``sql`` with each ``$n`` replaced by ``?``, and the parameter number of each ``?`` in order
    (so ``$2 ... $1`` binds the second value first)."""
    parts, order, last = [], [], 0
    for s, e, kind in _scan(sql):
        if kind == "param":
            parts.append(sql[last:s] + "?")
            order.append(int(sql[s + 1:e]))
            last = e
    parts.append(sql[last:])
    return "".join(parts), order


def words(sql: str) -> list[str]:
    """The lower-cased words outside quotes and comments."""
    return [sql[s:e].lower() for s, e, kind in _scan(sql) if kind == "word"]


_SESSION_FIRST = {"begin", "start", "commit", "end", "rollback", "abort", "discard", "deallocate", "unlisten",
                  "listen", "savepoint", "release", "close", "checkpoint"}


def route(sql: str, private_tables: set[str]) -> str:
    """``session``, ``catalog`` or ``private`` (see the module docstring)."""
    w = words(sql)
    if not w:
        return "session"
    first = w[0]
    if first in ("set", "reset", "show"):
        # dpsql's own settings are the pipeline's (intercept.settings); the rest are the session's.
        rest = sql.lower().split(None, 2)
        target = rest[1] if len(rest) > 1 else ""
        if target in ("session", "local") and len(rest) > 2:
            target = rest[2].split(None, 1)[0]
        return "private" if target.startswith("dpsql.") else "session"
    if first in _SESSION_FIRST:
        return "session"
    if first not in ("select", "with", "values", "table", "explain", "describe"):
        return "private"  # the pipeline refuses what it does not answer, with its code
    if first in ("explain", "describe") or any(word in private_tables for word in w):
        return "private"
    return "catalog" if _reads_no_private(sql, private_tables) else "private"


def _reads_no_private(sql: str, private_tables: set[str]) -> bool:
    """Whether sqlglot reads ``sql`` as reading only tables that are not private (a second look,
    after the word test: catches nothing the word test misses, but keeps out what sqlglot
    cannot parse as one plain statement)."""
    try:
        trees = sqlglot.parse(sql, read="postgres")
    except sqlglot.errors.SqlglotError:
        return True  # not parseable by sqlglot, and no private table's name appears in it
    except RecursionError:  # nested too deep for sqlglot: the pipeline refuses it (DP121), the session stays
        return False
    if len(trees) != 1 or trees[0] is None:
        return False
    return not any(t.name.lower() in private_tables for t in trees[0].find_all(exp.Table))


class Scans:
    """One connection's scans of the texts it was sent (:func:`split`, :func:`route`,
    :func:`to_qmark`: functions of the text alone, and of the server's fixed private tables), so
    that a client sending the same query again does not scan it again. Per connection, never for
    the process: a connection is one analyst, and a memo shared by analysts would let one of them
    learn, by timing, which texts another had sent (as dpsql/sql/plan_cache.py). The least
    recently used of ``KEPT`` are dropped; a text longer than ``LONGEST`` is scanned each time.
    Values kept are immutable (tuples)."""

    KEPT = 256
    LONGEST = 8192

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def get(self, kind: str, sql: str, scan: Callable[[], Any]) -> Any:
        """``scan()``'s result for ``sql``, remembered under ``kind`` (which scan it is)."""
        if len(sql) > self.LONGEST:
            return scan()
        key = (kind, sql)
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        out = self._kept[key] = scan()
        if len(self._kept) > self.KEPT:
            self._kept.popitem(last=False)
        return out
