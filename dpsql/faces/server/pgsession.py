"""PostgreSQL's session and transaction commands.

Clients send ``SET application_name``, ``SET extra_float_digits = 3``, ``BEGIN`` and ``SHOW
search_path`` on their own; none of them touches data, so the connection answers them here
from its settings (:class:`PgSettings`). dpsql is read-only, so a transaction only changes
the status byte clients check (idle, in a transaction, failed).

Catalog queries (``pg_catalog``, ``information_schema``) are :mod:`dpsql.faces.server.pgcatalog`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dpsql.version import __version__

SERVER_VERSION = "15.0"
VERSION_TEXT = f"PostgreSQL {SERVER_VERSION} (dpsql {__version__}; differentially private answers only)"

#: settings a client may read with SHOW, and their values at the start of a connection
DEFAULTS = {
    "server_version": f"{SERVER_VERSION} (dpsql {__version__})", "server_version_num": "150000",
    "server_encoding": "UTF8", "client_encoding": "UTF8", "DateStyle": "ISO, MDY", "TimeZone": "UTC",
    "IntervalStyle": "postgres", "integer_datetimes": "on", "standard_conforming_strings": "on",
    "is_superuser": "off", "search_path": "main", "transaction_isolation": "read committed",
    "default_transaction_isolation": "read committed", "transaction_read_only": "on",
    "default_transaction_read_only": "on", "max_identifier_length": "63", "lc_collate": "C", "lc_ctype": "C",
    "extra_float_digits": "1", "application_name": "", "statement_timeout": "0", "bytea_output": "hex",
    "in_hot_standby": "off", "max_index_keys": "32", "max_function_args": "100", "block_size": "8192",
    "lc_messages": "C", "lc_monetary": "C", "lc_numeric": "C", "lc_time": "C", "default_text_search_config": "pg_catalog.simple",
    "row_security": "on", "idle_in_transaction_session_timeout": "0", "lock_timeout": "0",
}
#: settings PostgreSQL reports to the client (ParameterStatus) at start and when they change
REPORTED = ("server_version", "server_encoding", "client_encoding", "DateStyle", "TimeZone", "IntervalStyle",
            "integer_datetimes", "standard_conforming_strings", "is_superuser", "application_name",
            "session_authorization", "default_transaction_read_only", "in_hot_standby")

_SET = re.compile(r"^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(TIME\s+ZONE)\s+|([\w.\"]+)\s*(?:=|\bTO\b)\s*)(.*?)\s*$",
                  re.I | re.S)
#: SET ROLE x, SET [SESSION | LOCAL] SESSION AUTHORIZATION x: PostgreSQL's spellings without "=" or TO
_IDENTITY = re.compile(r"^\s*SET\s+(?:(?:SESSION|LOCAL)\s+)?(?:ROLE|SESSION\s+AUTHORIZATION|AUTHORIZATION)\b", re.I)
_SHOW = re.compile(r"^\s*SHOW\s+([\w.\"]+|ALL|TIME\s+ZONE|TRANSACTION\s+ISOLATION\s+LEVEL)\s*$", re.I)
_RESET = re.compile(r"^\s*RESET\s+([\w.\"]+|ALL)\s*$", re.I)


class SessionCommandError(Exception):
    """A session command dpsql does not accept; ``sqlstate`` says which kind."""

    def __init__(self, message: str, sqlstate: str = "0A000", hint: str = "") -> None:
        super().__init__(message)
        self.sqlstate, self.hint = sqlstate, hint


@dataclass
class PgSettings:
    """One connection's PostgreSQL settings and transaction status."""

    user: str
    values: dict[str, str] = field(default_factory=dict)
    status: str = "I"  # I idle, T in a transaction, E in a failed transaction

    def __post_init__(self) -> None:
        self.values = {**DEFAULTS, "session_authorization": self.user, **self.values}
        self.initial = dict(self.values)  # what RESET restores: the server's and the startup packet's values

    def get(self, name: str) -> str | None:
        for key, value in self.values.items():
            if key.lower() == name.lower():
                return value
        return None

    def _canonical(self, name: str) -> str:
        return next((k for k in self.values if k.lower() == name.lower()), name.lower())

    def run(self, sql: str) -> tuple[str, list[str], list[tuple[str, ...]], dict[str, str]]:
        """(command tag, columns, rows, settings to report) of one session command."""
        words = sql.split()
        first = words[0].lower()
        two = " ".join(w.lower() for w in words[:2])
        if first in ("begin", "start"):
            self.status = "T"
            return ("BEGIN" if first == "begin" else "START TRANSACTION"), [], [], {}
        if first in ("commit", "end"):
            self.status = "I"
            return "COMMIT", [], [], {}
        if first in ("rollback", "abort"):
            if "to" in (w.lower() for w in words[1:3]):
                return "ROLLBACK", [], [], {}
            self.status = "I"
            return "ROLLBACK", [], [], {}
        if first in ("savepoint", "release"):
            return first.upper(), [], [], {}
        if two == "discard all":
            self.values = dict(self.initial)
            return "DISCARD ALL", [], [], {}
        if first in ("discard", "deallocate", "listen", "unlisten", "close"):
            return {"close": "CLOSE CURSOR"}.get(first, first.upper() + (" ALL" if two == "discard all" else "")), [], [], {}
        if first == "set":
            return self._set(sql)
        if first == "show":
            return self._show(sql)
        if first == "reset":
            m = _RESET.match(sql)
            if not m:
                raise SessionCommandError("RESET needs a setting name", "42601")
            name = m.group(1).strip('"')
            if name.lower() == "all":
                self.values = dict(self.initial)
            elif (key := self._canonical(name)) in DEFAULTS:
                self.values[key] = self.initial.get(key, DEFAULTS[key])
            return "RESET", [], [], {}
        raise SessionCommandError(f"{first.upper()} is not available on dpsql, which is read-only", "25006")

    def _set(self, sql: str) -> tuple[str, list[str], list[tuple[str, ...]], dict[str, str]]:
        if _IDENTITY.match(sql):
            raise SessionCommandError("the analyst is the authenticated user and cannot be changed", "42501")
        m = _SET.match(sql)
        if not m:
            if re.match(r"^\s*SET\s+(SESSION\s+CHARACTERISTICS|TRANSACTION)\b", sql, re.I):
                return "SET", [], [], {}
            raise SessionCommandError("dpsql does not understand this SET", "42601",
                                      "write SET name = value (SET dpsql.rho = 0.05 for dpsql's own settings).")
        name = "TimeZone" if m.group(1) else m.group(2).strip('"')
        value = m.group(3).strip().strip("'").strip('"')
        if name.lower() == "session_authorization" or name.lower() == "role":
            raise SessionCommandError("the analyst is the authenticated user and cannot be changed", "42501")
        if name.lower() == "client_encoding" and value.upper().replace("-", "") not in ("UTF8", "UNICODE"):
            raise SessionCommandError(f"client encoding {value!r} is not supported: dpsql speaks UTF8 only", "0A000")
        key = self._canonical(name)
        if key.lower() == "client_encoding":
            value = "UTF8"
        self.values[key] = value
        return "SET", [], [], ({key: value} if key in REPORTED else {})

    def _show(self, sql: str) -> tuple[str, list[str], list[tuple[str, ...]], dict[str, str]]:
        m = _SHOW.match(sql)
        if not m:
            raise SessionCommandError("SHOW needs one setting name", "42601")
        name = re.sub(r"\s+", " ", m.group(1).strip('"'))
        if name.lower() == "all":
            return "SHOW", ["name", "setting", "description"], [(k, v, "") for k, v in sorted(self.values.items())], {}
        alias = {"time zone": "TimeZone", "transaction isolation level": "transaction_isolation"}.get(name.lower(), name)
        value = self.get(alias)
        if value is None:
            raise SessionCommandError(f'unrecognized configuration parameter "{name}"', "42704")
        return "SHOW", [alias if alias != "TimeZone" else "TimeZone"], [(value,)], {}
