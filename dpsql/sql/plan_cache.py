"""Plans remembered for the process, shared by its sessions.

A plan and its exact SQL are functions of the query text, the policy and the schema alone
(:func:`dpsql.sql.query.plan_query`, :func:`dpsql.sql.rewrite.exact_sql`): no row, no setting,
no budget. So a session opened on the same policy file and database schema as an earlier one
finds its plans already made — a BI tool that opens a connection per query, or a wire server
with a session per client, no longer re-plans each query (5-30 ms of sqlglot work). Settings
(ρ, weights, MOE targets) and the public domain are applied after, on every query. A query with
``?`` values is kept under its text and its values (:func:`key`): the plan binds them as
literals, so the same values give the same plan (a dashboard's filter sent again, a driver's
parameters), other values another one.

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

import datetime
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from decimal import Decimal
from typing import Any

from dpsql.policy.model import Policy
from dpsql.sql.plan import Plan

#: plans kept (a dashboard's queries, REPL histories, several clients), least recently used dropped
SIZE = 512
#: the longest query text kept (a longer one is planned each time)
TEXT = 8192

_lock = threading.Lock()
_plans: OrderedDict[tuple[Any, Hashable], tuple[Plan, str]] = OrderedDict()

#: ? values a plan is kept for: those :func:`dpsql.sql.query.literal` binds as one literal each
_PLAIN = frozenset((type(None), bool, int, float, str, Decimal, datetime.date, datetime.datetime, datetime.time, bytes))


def context(policy: Policy, schema: dict[str, dict[str, str]], not_null: dict[str, set[str]], analyst: str) -> Any:
    """The key part that stands for the policy, the schema and the analyst (computed once per
    session)."""
    if policy.digest is None:
        return object()
    parts = (analyst, policy.digest, str(policy.path), policy.max_groups_cap, sorted(policy.parquet.items()),
             [(t, sorted(cols.items())) for t, cols in sorted(schema.items())],
             [(t, sorted(cols)) for t, cols in sorted(not_null.items())])
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def key(sql: str, parameters: Any) -> Hashable | None:
    """What the plan of ``sql`` with ``parameters`` is kept under: the text alone, or with ?
    values the text and each value's type and repr — the plan binds them into its tree as
    literals, so it is a function of them and the text (``1``, ``1.0`` and ``True`` are three
    keys). None (planned each time): values in something other than a list or tuple (an
    iterator must not be read here), a value of another type, or a key longer than ``TEXT``."""
    if parameters is None:
        return sql
    if type(parameters) not in (list, tuple) or any(type(v) not in _PLAIN for v in parameters):
        return None
    values = tuple((type(v).__qualname__, repr(v)) for v in parameters)
    return (sql, values) if len(sql) + sum(len(r) for _, r in values) <= TEXT else None


def get(ctx: Any, sql: Hashable) -> tuple[Plan, str] | None:
    """The remembered plan and exact SQL under ``sql`` (:func:`key`) in ``ctx``, or None."""
    with _lock:
        hit = _plans.get((ctx, sql))
        if hit is not None:
            _plans.move_to_end((ctx, sql))
        return hit


def put(ctx: Any, sql: Hashable, planned: tuple[Plan, str]) -> None:
    """Remember a plan under ``sql`` (:func:`key`; a bare text longer than ``TEXT`` is not kept)."""
    if isinstance(sql, str) and len(sql) > TEXT:
        return
    with _lock:
        _plans[(ctx, sql)] = planned
        if len(_plans) > SIZE:
            _plans.popitem(last=False)
