"""Tab completion that knows the policy: keywords, tables, columns, meta-commands.

Context decides what is offered: tables after FROM; the measures of the FROM table inside
SUM( / AVG(; its public keys after GROUP BY; its columns elsewhere (with their privacy role as
the menu's note). Only public things are offered: names from the policy and the schema (and,
after `\\i`, `\\o`, `\\export`, `\\e`, the analyst's own file names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from dpsql.faces.repl import commands
from dpsql.faces.repl import statements

if TYPE_CHECKING:
    from dpsql.session import Session

KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "OFFSET", "AS", "AND", "OR", "NOT",
    "IN", "BETWEEN", "LIKE", "ILIKE", "IS NULL", "IS NOT NULL", "ASC", "DESC", "CASE", "WHEN", "THEN", "ELSE",
    "END", "CAST", "NULL", "TRUE", "FALSE", "DISTINCT",
)
AGGREGATES = {"COUNT(": "COUNT(*): units; COUNT(col): units with col not NULL", "SUM(": "SUM(measure)",
              "AVG(": "AVG(measure)"}
FUNCTIONS = ("ROUND(", "ABS(", "COALESCE(", "LOWER(", "UPPER(", "LENGTH(", "SUBSTR(", "TRIM(", "NULLIF(",
             "FLOOR(", "CEIL(", "LEAST(", "GREATEST(")

_WORD = re.compile(r"[\w\\]*$")
_FROM = re.compile(r"\bFROM\s+\"?(\w+)", re.IGNORECASE)
_JOIN = re.compile(r"\bJOIN\s+\"?(\w+)", re.IGNORECASE)
_CLAUSE = re.compile(r"\b(SELECT|FROM|WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|LIMIT|OFFSET)\b", re.IGNORECASE)


class SqlCompleter(Completer):
    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        word = _WORD.search(before).group()  # type: ignore[union-attr]
        if not word and not complete_event.completion_requested:
            return  # while typing, only complete a word that has begun
        if statements.is_meta(before):
            yield from self._meta(before.lstrip(), word)
            return
        _, current = statements.split(before)
        after = _statement_end(document.text_after_cursor)
        yield from self._sql(current[: len(current) - len(word)], current + " " + after, word)

    # ------------------------------------------------------------------ meta-commands
    def _meta(self, line: str, word: str) -> Iterator[Completion]:
        name, sep, rest = line.partition(" ")
        if not sep:
            names = sorted(n for n in commands.COMMANDS if n.startswith("\\"))
            yield from _matching(word, ((n, commands.COMMANDS[n].help) for n in names), keep_case=True)
            return
        cmd = commands.COMMANDS.get(name.lower())
        args = rest[: len(rest) - len(word)].split()
        if cmd is None:
            return
        if cmd.name == "\\describe" and not args:
            yield from _matching(word, self._table_names(), keep_case=True)
        elif cmd.name == "\\set" and not args:
            yield from _matching(word, [("rho", "zCDP budget per query"), ("display", "moe or sigma"),
                                              ("moe", "target 95% MOE per cell"), ("epsilon", "pure-DP policies"),
                                              ("weights", "how a query's budget is split")], keep_case=True)
        elif cmd.name == "\\set" and args == ["display"]:
            yield from _matching(word, [("moe", "value ± 95% margin of error"), ("sigma", "value (σ …)")], keep_case=True)
        elif cmd.name == "\\timing" and not args:
            yield from _matching(word, [("on", ""), ("off", "")], keep_case=True)
        elif cmd.name in ("\\x", "\\pset") and (args == [] if cmd.name == "\\x" else args == ["expanded"]):
            yield from _matching(word, [("on", ""), ("off", ""), ("auto", "when wider than the screen")], keep_case=True)
        elif cmd.name == "\\pset" and not args:
            yield from _matching(word, [("pager", "on|off|always"), ("expanded", "on|off|auto"),
                                        ("format", "aligned|csv")], keep_case=True)
        elif cmd.name == "\\pset" and args == ["pager"]:
            yield from _matching(word, [("on", ""), ("off", ""), ("always", "")], keep_case=True)
        elif cmd.name == "\\pset" and args == ["format"]:
            yield from _matching(word, [("aligned", ""), ("csv", "with <col>_moe95 columns")], keep_case=True)
        elif cmd.name in FILE_ARGS and not rest.split(None, 1)[1:]:  # the first argument, being typed
            yield from _files(rest)
        elif cmd.name == "\\policy":
            if not args:
                yield from _matching(word, ((t, "table") for t in self.session.policy.tables), keep_case=True)
            cols = {c: "measure" for tp in self.session.policy.tables.values() for c in tp.measures}
            for tp in self.session.policy.tables.values():
                for k in tp.keys:
                    cols.setdefault(k, "key")
            yield from _matching(word, ((c + "=", role) for c, role in cols.items()), keep_case=True)
        elif cmd.name == "\\explain":
            yield from self._sql(rest[: len(rest) - len(word)], rest, word)

    # ------------------------------------------------------------------ SQL
    def _sql(self, before: str, statement: str, word: str) -> Iterator[Completion]:
        table = self._table(statement)
        tables = [table] if table else list(self.session.policy.tables)
        tables += [t.lower() for t in _JOIN.findall(statement) if self.session.policy.public_table(t)]
        clause = _last_clause(before)
        if re.search(r"\b(SUM|AVG)\s*\(\s*$", before, re.IGNORECASE):
            yield from _matching(word, self._columns(tables, only="measures"), keep_case=True)
        elif re.search(r"\bCOUNT\s*\(\s*$", before, re.IGNORECASE):
            yield from _matching(word, [("*", "number of privacy units")], keep_case=True)
            yield from _matching(word, self._columns(tables), keep_case=True)
        elif clause == "FROM" and re.search(r"\bJOIN\s+\"?\w*$", before, re.IGNORECASE):
            yield from _matching(word, ((t, "public table") for t in self.session.policy.public_tables), keep_case=True)
        elif clause == "FROM" and not re.search(r"\bFROM\s+\"?\w+\"?\s", before, re.IGNORECASE):
            yield from _matching(word, ((t, "table") for t in self.session.policy.tables), keep_case=True)
        elif clause == "GROUP BY":
            yield from _matching(word, self._columns(tables, only="public keys"), keep_case=True)
            if word:
                yield from _matching(word, ((k, "") for k in KEYWORDS))
        elif clause in ("LIMIT", "OFFSET"):
            return
        elif not before.strip():
            yield from _matching(word, [("SELECT", "")])
        else:
            yield from _matching(word, self._columns(tables), keep_case=True)
            if clause in ("SELECT", "HAVING", "ORDER BY"):
                yield from _matching(word, AGGREGATES.items())
            if word:  # Tab on nothing lists names, not the whole language
                yield from _matching(word, ((f, "function") for f in FUNCTIONS))
                yield from _matching(word, ((k, "") for k in KEYWORDS))

    def _table(self, statement: str) -> str | None:
        m = _FROM.search(statement)
        if m and self.session.policy.table(m.group(1)):
            return m.group(1).lower()
        return None

    def _table_names(self) -> Iterator[tuple[str, str]]:
        yield from ((t, "table") for t in self.session.policy.tables)
        yield from ((t, "public table") for t in self.session.policy.public_tables)

    def _columns(self, tables: list[str], only: str = "") -> Iterator[tuple[str, str]]:
        seen = set()
        for t in tables:
            if self.session.policy.public_table(t) is not None:
                if only != "measures":
                    for col in self.session.schema.get(t, {}):
                        if col not in seen:
                            seen.add(col)
                            yield col, f"public column of {t}"
                continue
            tp = self.session.policy.tables[t]
            for col in self.session.schema.get(t, {}):
                if col in seen:
                    continue
                if col == tp.privacy_unit:
                    role = "privacy unit"
                elif col in tp.measures:
                    role = f"measure, T={tp.measures[col].display(tp.measures[col].threshold)}"
                elif col in tp.keys:
                    role = "public key" if tp.keys[col].public else "private key"
                else:
                    role = "column (WHERE only)"
                if only == "measures" and col not in tp.measures:
                    continue
                if only == "public keys" and not (col in tp.keys and tp.keys[col].public):
                    continue
                seen.add(col)
                yield col, role


#: Meta-commands whose argument is a file name (Tab completes paths).
FILE_ARGS = ("\\i", "\\o", "\\export", "\\e")


def _files(typed: str) -> Iterator[Completion]:
    """File names, as a shell completes them (quotes are not handled: type the name bare)."""
    document = Document(typed, len(typed))
    yield from PathCompleter(expanduser=True).get_completions(document, CompleteEvent(completion_requested=True))


def _statement_end(text: str) -> str:
    """The text after the cursor up to the end of its statement."""
    done, rest = statements.split(text)
    return done[0] if done else rest


def _last_clause(text: str) -> str:
    found = _CLAUSE.findall(text)
    return " ".join(found[-1].upper().split()) if found else ""


def _matching(word: str, candidates: Iterable[tuple[str, str]], keep_case: bool = False) -> Iterator[Completion]:
    """Candidates starting with ``word`` (any case); keywords take the case the user types in."""
    low = word.lower()
    for text, meta in candidates:
        if not text.lower().startswith(low) or text.lower() == low:
            continue
        if not keep_case and word and word == low:
            text = text.lower()
        yield Completion(text, start_position=-len(word), display_meta=meta)
