"""Queries that passed the empty-twin check (``Engine.check``), remembered across processes.

The check binds and runs a query's exact SQL on an empty twin of the schema, so that errors no
row can cause are refused before a private row is read (docs/privacy.md, "Phases of a query").
Its answer is a function of the SQL, the schema and the engine that checks it alone, so a pass
need not be checked again by the next process: a fresh ``dpsql query`` then never builds the
twin (a DuckDB instance, ~20 ms of its start-up; issue 15).

A key is the SHA-256 of: this record's version and dpsql's; the session's plan context
(:func:`dpsql.sql.plan_cache.context`: the analyst, the policy file's digest and path, the
schema's types and NOT NULL columns); the engine's :attr:`check_identity` (DuckDB's version and
the twin's DDL as read from the data file); and the SQL. An engine with no identity (Spark,
whose check also asks a Spark session) and a policy not read from a file are not remembered.

The analyst is in the key for the reason the plan cache keeps it (a hit answers faster, so a
shared key would tell one analyst of a wire server which texts another had sent).

What a forged key could cost: a query that the twin would refuse (DP120, free) runs instead;
its error is then raised while the rows are read, so it is charged and reported with fixed text
(the backstop of ``Session.execute``): budget, not privacy. Only passes are kept.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dpsql.records.store import Records
from dpsql.version import __version__

#: bump when what the twin checks changes in a way the engine's identity does not show
VERSION = 1
RECORDS = Records("twin_checks.json", 1024)


def key(context: Any, identity: str | None, sql: str) -> list[str] | None:
    """The record's key for ``sql`` checked in ``context`` by an engine of ``identity``, or None
    when the pass must not be remembered."""
    if not isinstance(context, str) or identity is None:
        return None
    return [hashlib.sha256(repr((VERSION, __version__, context, identity, sql)).encode()).hexdigest()]
