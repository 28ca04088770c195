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
they are computed from the stored cells' σ and MOE when the answer is shown. No key (no reuse)
when the policy has no file or the data has no single file identity (Parquet).

**One release, many pages.** ORDER BY, LIMIT and OFFSET run in the finish, on the noisy cells
only, after the charge (they add no primitive the key does not hold: an ORDER BY of an aggregate
the SELECT list lacks is a primitive of its own, so another key). So the key holds the plan's
finish *without* them (``Plan.finish_base_sql``), and what is stored is the release itself: the
noisy cells (each group's keys, noisy values, σ, MOE, rank errors; clamped when clamping is on),
as JSON (:func:`encode`; a large answer's 64-bit columns as words, :mod:`dpsql.pipeline.stored`). Every statement, fresh or reused, is shown by running its own finish —
SELECT list, HAVING, ORDER BY, LIMIT, OFFSET — over those cells (:func:`finished`): page 1, page
2, another ORDER BY and Superset's ``rowcount_qry`` over the page query are post-processing of one
release, charged once, and a fresh release shows exactly what its reuse shows (ties in ORDER BY
are broken by the cells' order, ``sql/finish_forms.py``). A value JSON cannot carry exactly is not
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
from pathlib import Path
from typing import Any

from dpsql.pipeline import output, stored
from dpsql.pipeline.decide import Decision
from dpsql.pipeline.domain import MAX_CELLS, file_identity
from dpsql.pipeline.finish import finish
from dpsql.pipeline.result import ColumnError, NoiseTerm, Receipt, Result
from dpsql.policy.model import Policy
from dpsql.privacy.allocate import Allocation
from dpsql.privacy.budget import fmt
from dpsql.records import plan as plan_record
from dpsql.sql.plan import ROW_COLUMN, Plan

#: bump when what a key stands for or what an answer holds changes
VERSION = 2  # 2: keyed without ORDER BY / LIMIT / OFFSET; the noisy cells are kept, not the finished rows
#: what of a plan's record is not the release: its text, and the finish's forms with ORDER BY /
#: LIMIT / OFFSET (the key holds ``finish_base_sql`` for them)
_NOT_THE_RELEASE = ("sql", "finish_sql", "projection")


def key(policy: Policy, analyst: str, database: Path, plan: Plan, query: str, allocs: Any, clamp: bool) -> str | None:
    """The key of a release (module docstring), or None when it cannot be reused."""
    if policy.digest is None or policy.parquet:
        return None
    ident = file_identity(database)
    if ident is None:
        return None
    shape = _shape(plan)  # not its spelling or pages
    parts = (VERSION, analyst, policy.digest, str(policy.path), ident, shape, query,
             [_alloc(a) for a in allocs], clamp,
             _digest(plan.table), _digest(policy.selection))  # as used: a face may amend the file's policy in memory (advise)
    # the text of repr(parts), the plan's part printed once per plan object (_Printed)
    return hashlib.sha256(("(" + ", ".join(map(repr, parts)) + ")").encode()).hexdigest()


class _Printed(str):
    """A text that ``repr`` prints as itself: the plan's shape, printed once per plan object."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


#: id(plan) -> (the plan, the repr of its shape): a plan object answers many queries (its record)
_SHAPES: dict[int, tuple[Plan, _Printed]] = {}


def _shape(plan: Plan) -> _Printed:
    """The repr of what of ``plan`` is the release (not its spelling or pages), once per plan
    object (plans are frozen)."""
    kept = _SHAPES.get(id(plan))
    if kept is not None and kept[0] is plan:
        return kept[1]
    shape = {k: v for k, v in plan_record.encode(plan).items() if k not in _NOT_THE_RELEASE}
    printed = _Printed(repr(shape))
    if len(_SHAPES) >= 256:
        _SHAPES.clear()
    _SHAPES[id(plan)] = (plan, printed)
    return printed


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


def _column(v: Any) -> list[Any]:
    """One column of the noisy cells for JSON: an array with its dtype (numbers), or a list (keys,
    a small answer's values) as it is when it holds only JSON's own types, else converted."""
    dtype = getattr(v, "dtype", None)
    if dtype is not None:
        if dtype.kind not in "biuf":
            raise _Unstorable(dtype.name)
        return ["array", dtype.name, _floats(v.tolist())]
    v = list(v)
    return ["list", v if set(map(type, v)) <= _JSON_PLAIN else [_value(x) for x in v]]


def _read_column(c: list[Any]) -> Any:
    if c[0] == "array":
        import numpy as np  # an array was released: numpy was imported then

        return np.array(_read_floats(c[2]), dtype=c[1])
    return [_read_value(x) for x in c[1]]


def _floats(xs: Any) -> Any:
    """A column's values; one non-zero value repeated (the usual σ or MOE column: one
    sensitivity) is written once — JSON's text for floats is most of a large answer's cost."""
    xs = list(xs)  # a tuple, a list or an array of the release: one form
    if len(xs) > 1 and xs[0] and xs.count(xs[0]) == len(xs):
        return {"repeat": xs[0], "n": len(xs)}
    return xs


def _read_floats(v: Any) -> list[Any]:
    if isinstance(v, dict) and not 0 <= v["n"] <= MAX_CELLS:  # a forged count: allocate nothing
        raise ValueError("more cells than an answer may have")
    return [v["repeat"]] * v["n"] if isinstance(v, dict) else list(v)


def _read_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "timedelta":
        return dt.timedelta(days=x[0], seconds=x[1], microseconds=x[2])
    read = {"decimal": Decimal, "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat,
            "time": dt.time.fromisoformat, "uuid": uuid.UUID}
    return read[tag](x)


def encode(d: Decision, columns: dict[str, Any], clamped: int | None, noise: list[NoiseTerm],
           selection: dict[str, Any] | None) -> str | bytes | None:
    """The release of ``d`` — its noisy cells as the finish reads them — as JSON text, or, from
    :data:`~dpsql.pipeline.stored.LARGE` cells, in the compact stored form (its 64-bit columns as
    words: pipeline/stored.py); None when a value cannot be carried exactly."""
    payload: list[bytes] | None = [] if len(columns.get(ROW_COLUMN, ())) >= stored.LARGE else None
    try:
        cells = {name: (payload is not None and stored.column(v, payload)) or _column(v) for name, v in columns.items()}
        doc = {"version": VERSION, "mechanism": d.mechanism, "table": d.plan.table.name,
               "cells": cells, "clamped": clamped, "selection": selection,
               "noise": [[n.aggregate, str(n.rho), list(n.sensitivity), list(n.sigma), list(n.moe95), n.mechanism,
                          None if n.epsilon is None else str(n.epsilon), n.rank_error95, n.grid] for n in noise]}
        return json.dumps(doc) if payload is None else stored.pack(doc, payload)
    except (_Unstorable, TypeError, ValueError, AttributeError):
        return None


def finished(plan: Plan, columns: dict[str, Any], clamped: int | None, prims: set[int], finisher: Any
             ) -> tuple[list[str], list[str], list[tuple[Any, ...]], list[ColumnError | None], tuple[str, ...]]:
    """(names, types, rows, errors, notes) of ``plan``'s answer over released noisy cells: its
    SELECT list, HAVING, ORDER BY, LIMIT and OFFSET, the same for a fresh release and a reused one."""
    names, types, rows, errors = finish(plan, columns, finisher)
    return names, types, rows, errors, output.notes(plan, names, rows, prims, clamped, errors)


def reused(hit: Any, plan: Plan, session: Any) -> Result | None:
    """The release ``hit`` (:class:`dpsql.ledger.answers.Released`) shown again through ``plan``'s
    finish (its ORDER BY, LIMIT, OFFSET), charged nothing, with the ``session``'s ledger figures;
    None without a hit, or when the stored text is not one this version wrote (the statement is
    then released afresh)."""
    if hit is None:
        return None
    charge_id, rho, ledger = hit.charge_id, hit.rho, session.ledger
    try:
        doc, words = stored.unpack(hit.answer) if isinstance(hit.answer, bytes) else (json.loads(hit.answer), {})
        if doc.get("version") != VERSION:
            return None
        columns = {name: words[name] if name in words else _read_column(c) for name, c in doc["cells"].items()}
        if len(set(map(len, columns.values()))) > 1:  # one value per cell in every column, or not this release
            return None
        noise = tuple(NoiseTerm(n[0], Fraction(n[1]), tuple(n[2]), tuple(n[3]), tuple(n[4]), n[5],
                                None if n[6] is None else Fraction(n[6]), n[7], n[8]) for n in doc["noise"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    prims = output.nonnegative_primitives(plan, session.nonnegative)
    names, types, rows, errors, notes = finished(plan, columns, doc["clamped"], prims, session.finisher)
    names, types, rows = output.with_error_columns(names, types, rows, errors, session.output.error_columns)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(hit.time))
    spent, remaining = ledger.rho_spent_and_left()
    note = (f"reused: released at {when} (charge {charge_id}), charged 0 now (rho={fmt(rho)} when first released); "
            "SET dpsql.reuse = off for a fresh, charged release")
    receipt = Receipt(rho=Fraction(0), delta=Fraction(0), mechanism=doc["mechanism"], table=doc["table"], noise=noise,
                      columns={e.column: e for e in errors if e is not None}, policy_terms=(), budget_spent=spent,
                      budget_total=ledger.total_rho, budget_remaining=remaining, charge_id=None, selection=doc["selection"],
                      notes=(note, *notes),
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
