"""A released answer is reused, not re-bought (issue 33; docs/privacy.md, "A released answer is
reused, not re-bought").

The same statement on the same data, policy and analyst is answered with the noisy answer
already released: identical rows, nothing charged, a receipt saying when it was charged. A
dashboard's reloads, ``\\watch`` and a BI tool's double requests are then consistent and free.
Returning what was released before is post-processing of that release (Dwork and Roth 2014,
Proposition 2.1): it reads no private row and costs nothing.

:func:`key` is decided in phase 1 from public information only: the analyst, the policy's
identity (its file's digest, and the table's and selection's parameters as this process uses
them), the data file's identity (with its write-ahead log: any write changes it), the plan
and exact SQL (parameters bound; two texts with the same plan ask the same question), each
primitive's mechanism and budget share (ρ, ε, MOE targets and weights all end there), and the
clamping option (it changes the noisy cells the finish sees). Error columns are not in the key:
they are computed from the stored per-row errors when the answer is shown. No key (no reuse)
when the policy has no file or the data has no single file identity (Parquet).

The answer is stored after finish (HAVING, ORDER BY, LIMIT ran on the noisy cells) and before
error columns are added, as JSON (:func:`encode`); a value JSON cannot carry exactly is not
stored, and the next such statement is charged again. Storage: :mod:`dpsql.ledger.answers`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
import uuid
from decimal import Decimal
from fractions import Fraction
from operator import itemgetter
from pathlib import Path
from typing import Any

from dpsql.pipeline import output
from dpsql.pipeline.decide import Decision
from dpsql.pipeline.domain import file_identity
from dpsql.pipeline.result import ColumnError, NoiseTerm, Receipt, Result
from dpsql.policy.model import Policy
from dpsql.privacy.allocate import Allocation
from dpsql.privacy.budget import fmt
from dpsql.records import plan as plan_record
from dpsql.sql.plan import Plan

#: bump when what a key stands for or what an answer holds changes
VERSION = 1


def key(policy: Policy, analyst: str, database: Path, plan: Plan, query: str, allocs: Any, clamp: bool) -> str | None:
    """The key of a release (module docstring), or None when it cannot be reused."""
    if policy.digest is None or policy.parquet:
        return None
    ident = file_identity(database)
    if ident is None:
        return None
    shape = {k: v for k, v in plan_record.encode(plan).items() if k != "sql"}  # the text's plan, not its spelling
    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,
             [_alloc(a) for a in allocs], clamp,
             _digest(plan.table), _digest(policy.selection))  # as used: a face may amend the file's policy in memory (advise)
    return hashlib.sha256(repr(parts).encode()).hexdigest()


#: id(object) -> (the object, SHA-256 of its repr). The demo's table policy prints as ~360 KB (its
#: keysets): ~9 ms of CPU per answer (issue 34). The objects are frozen and never changed in place
#: (an amended policy is a new object), and each entry holds its object, so its id is not reused.
_DIGESTS: dict[int, tuple[Any, str]] = {}


def _digest(obj: Any) -> str:
    kept = _DIGESTS.get(id(obj))
    if kept is not None and kept[0] is obj:
        return kept[1]
    digest = hashlib.sha256(repr(obj).encode()).hexdigest()
    if len(_DIGESTS) >= 64:
        _DIGESTS.clear()
    _DIGESTS[id(obj)] = (obj, digest)
    return digest


def _alloc(a: Allocation) -> tuple[Any, ...]:
    p = a.primitive
    return (p.kind, p.column, p.shown, p.distinct, str(p.q), a.mechanism, str(a.rho), str(a.epsilon), str(a.em_epsilon))


class _Unstorable(Exception):
    pass


_TAGS: tuple[tuple[type, str], ...] = ((Decimal, "decimal"), (dt.datetime, "datetime"), (dt.date, "date"),
                                       (dt.time, "time"), (uuid.UUID, "uuid"))


def _value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dt.timedelta):
        return {"timedelta": [v.days, v.seconds, v.microseconds]}
    for kind, tag in _TAGS:
        if isinstance(v, kind):
            return {tag: v.isoformat() if hasattr(v, "isoformat") else str(v)}
    raise _Unstorable(type(v).__name__)


_JSON_PLAIN = {type(None), bool, int, float, str}


def _rows(rows: list[tuple[Any, ...]]) -> list[Any]:
    """The rows for JSON: as they are when every column holds only JSON's own types (checked a
    column at a time, in C: a large answer is not converted value by value), else converted."""
    if not rows or all(set(map(type, map(itemgetter(j), rows))) <= _JSON_PLAIN for j in range(len(rows[0]))):
        return rows  # tuples are written as lists
    return [[_value(v) for v in row] for row in rows]


def _floats(xs: tuple[Any, ...]) -> Any:
    """A column's σ or MOE per row; one non-zero value repeated (the usual column: one
    sensitivity) is written once — JSON's text for floats is most of a large answer's cost."""
    xs = list(xs)  # a tuple, a list or an array of the release: one form
    if len(xs) > 1 and xs[0] and xs.count(xs[0]) == len(xs):
        return {"repeat": xs[0], "n": len(xs)}
    return xs


def _read_floats(v: Any) -> tuple[Any, ...]:
    return (v["repeat"],) * v["n"] if isinstance(v, dict) else tuple(v)


def _read_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "timedelta":
        return dt.timedelta(days=x[0], seconds=x[1], microseconds=x[2])
    read = {"decimal": Decimal, "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat,
            "time": dt.time.fromisoformat, "uuid": uuid.UUID}
    return read[tag](x)


def encode(d: Decision, names: list[str], types: list[str], rows: list[tuple[Any, ...]],
           errors: list[ColumnError | None], notes: tuple[str, ...], noise: list[NoiseTerm],
           selection: dict[str, Any] | None) -> str | None:
    """The finished answer of ``d`` as JSON text, or None when a value cannot be carried exactly."""
    try:
        doc = {"version": VERSION, "mechanism": d.mechanism, "table": d.plan.table.name,
               "names": list(names), "types": list(types),
               "rows": _rows(rows),
               "errors": [None if e is None else [e.column, _floats(e.sigma), _floats(e.moe95), e.note,
                                                  [[x, _floats(v)] for x, v in e.extra], e.flagged] for e in errors],
               "notes": list(notes), "selection": selection,
               "noise": [[n.aggregate, str(n.rho), list(n.sensitivity), list(n.sigma), list(n.moe95), n.mechanism,
                          None if n.epsilon is None else str(n.epsilon), n.rank_error95, n.grid] for n in noise]}
        return json.dumps(doc)
    except (_Unstorable, TypeError, ValueError, AttributeError):
        return None


def reused(hit: Any, shown: output.Output, ledger: Any) -> Result | None:
    """The answer ``hit`` (:class:`dpsql.ledger.answers.Released`) shown again, charged nothing,
    with ``ledger``'s figures; None without a hit, or when the stored text is not one this
    version wrote (the statement is then released afresh)."""
    if hit is None:
        return None
    charge_id, rho = hit.charge_id, hit.rho
    try:
        doc = json.loads(hit.answer)
        if doc.get("version") != VERSION:
            return None
        rows = [tuple(_read_value(v) for v in row) for row in doc["rows"]]
        errors = [None if e is None else ColumnError(e[0], _read_floats(e[1]), _read_floats(e[2]), e[3],
                                                     tuple((x, _read_floats(v)) for x, v in (e[4] if len(e) > 4 else ())),
                                                     e[5] if len(e) > 5 else 0) for e in doc["errors"]]
        noise = tuple(NoiseTerm(n[0], Fraction(n[1]), tuple(n[2]), tuple(n[3]), tuple(n[4]), n[5],
                                None if n[6] is None else Fraction(n[6]), n[7], n[8]) for n in doc["noise"])
        names, types, rows = output.with_error_columns(doc["names"], doc["types"], rows, errors, shown.error_columns)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(hit.time))
    spent, remaining = ledger.rho_spent_and_left()
    note = (f"reused: released at {when} (charge {charge_id}), charged 0 now (rho={fmt(rho)} when first released); "
            "SET dpsql.reuse = off for a fresh, charged release")
    receipt = Receipt(rho=Fraction(0), delta=Fraction(0), mechanism=doc["mechanism"], table=doc["table"], noise=noise,
                      columns={e.column: e for e in errors if e is not None}, policy_terms=(), budget_spent=spent,
                      budget_total=ledger.total_rho, budget_remaining=remaining, charge_id=None, selection=doc["selection"],
                      notes=(note, *doc["notes"]),
                      reused={"charge_id": charge_id, "released_at": when, "rho": fmt(rho)})
    return Result(columns=tuple(names), types=tuple(types), rows=rows, receipt=receipt)


def would(hit: Any, key: str | None) -> str:
    """EXPLAIN's note on reuse: whether the statement would be answered with a release before."""
    if hit is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(hit.time))
        return (f"reuse: would show the answer released at {when} (charge {hit.charge_id}), charging nothing; "
                "SET dpsql.reuse = off for a fresh, charged release")
    if key is None:
        return "reuse: none (no single data file or no policy file to key a release on): every run is charged"
    return "reuse: not released before (or reuse is off): it would be a new, charged release, then reused when repeated"
