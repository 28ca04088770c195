"""Plans remembered for the process, shared by its sessions.

A plan and its exact SQL are functions of the query text, the policy and the schema alone
(:func:`dpsql.sql.query.plan_query`, :func:`dpsql.sql.rewrite.exact_sql`): no row, no setting,
no budget. So a session opened on the same policy file and database schema as an earlier one
finds its plans already made — a BI tool that opens a connection per query, or a wire server
with a session per client, no longer re-plans each query (5-30 ms of sqlglot work). Settings
(ρ, weights, MOE targets) and the public domain are applied after, on every query.

A context names what the plan depends on besides the text: the policy file's SHA-256, path and
resolved Parquet locations, the session's ``SET dpsql.max_groups`` (``sql/session_cap.py``), and
the schema's tables, column types and NOT NULL columns. A policy not read from a file
(``parse_policy``) has no digest: its session gets a context of its own (an object that compares
by identity and is kept alive by the entries that hold it).

The analyst is in the context too, though the plan does not depend on it: a plan found in the
cache answers faster than one made, so a shared entry would let one analyst of a wire server
learn, by timing, which query texts another analyst had sent. Only one analyst's own sessions
share plans (a BI tool connecting per query as one user is the case this serves).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from dpsql.policy.model import Policy
from dpsql.sql.plan import Plan

#: plans kept (a dashboard's queries, REPL histories, several clients), least recently used dropped
SIZE = 512
#: the longest query text kept (a longer one is planned each time)
TEXT = 8192

_lock = threading.Lock()
_plans: OrderedDict[tuple[Any, str], tuple[Plan, str]] = OrderedDict()


def context(policy: Policy, schema: dict[str, dict[str, str]], not_null: dict[str, set[str]], analyst: str) -> Any:
    """The key part that stands for the policy, the schema and the analyst (computed once per
    session)."""
    if policy.digest is None:
        return object()
    parts = (analyst, policy.digest, str(policy.path), policy.max_groups_cap, sorted(policy.parquet.items()),
             [(t, sorted(cols.items())) for t, cols in sorted(schema.items())],
             [(t, sorted(cols)) for t, cols in sorted(not_null.items())])
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def get(ctx: Any, sql: str) -> tuple[Plan, str] | None:
    """The remembered plan and exact SQL of ``sql`` in ``ctx``, or None."""
    with _lock:
        hit = _plans.get((ctx, sql))
        if hit is not None:
            _plans.move_to_end((ctx, sql))
        return hit


def put(ctx: Any, sql: str, planned: tuple[Plan, str]) -> None:
    """Remember a plan made without parameters (a parametrised text does not say its values)."""
    if len(sql) > TEXT:
        return
    with _lock:
        _plans[(ctx, sql)] = planned
        if len(_plans) > SIZE:
            _plans.popitem(last=False)
