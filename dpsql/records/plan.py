"""Plans of queries run before, remembered across processes: a known query runs without sqlglot.

A plan and its exact SQL are functions of the query text, the policy, the schema and the code
that plans (:mod:`dpsql.sql.plan_cache`). The plan cache keeps them for one process; this
record keeps them for the next: a fresh ``dpsql query`` repeating a query this analyst ran
before reads its plan from one small file instead of importing sqlglot and planning (~100 ms of
a ~390 ms process; issue 15, docs/performance.md "A fresh process").

A record is written only by :func:`dpsql.intercept.execute`, for a statement that no handler of
dpsql's own statements answered and that the pipeline planned and checked. It is read there
too, before the handlers: a text that planned as a private query is never one of dpsql's own
statements, so the record says which way the text goes as well as its plan.

A record holds the plan without its sqlglot trees: the text forms derived from them when the
plan was made (:class:`dpsql.sql.plan.GroupKey`, :func:`dpsql.sql.finish_forms.forms`), which
is all that deciding, releasing and finishing read, and the exact SQL. Only
:meth:`dpsql.session.Session.execute` is given such a plan; EXPLAIN, Describe and workloads plan
from the text.

A key is the SHA-256 of: this record's version; the code that plans and dispatches (the path,
size and modification time of every module of dpsql, and sqlglot's version); the session's plan
context (the analyst, the policy file's digest and path, the schema's types and NOT NULL
columns); and the text. A session whose policy was not read from a file has no record. The
analyst is in the key for the reason the plan cache keeps it (a hit answers faster).

Trust: a record stands for a plan, so whoever can write it can make a query release what the
policy would refuse — as whoever can write the policy file or the ledger can. It lives in
dpsql's folder (:func:`dpsql.home.home`) beside the ledger's other records: embedded, the folder
of the user who can read the database file anyway; under ``dpsql serve``, the server account's
(docs/server.md, "The security model"). A missing, unreadable or half-written record is a
miss: the query is planned as if it had none.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import replace
from fractions import Fraction
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from dpsql.policy.model import Policy, joined_table
from dpsql.records.store import Documents
from dpsql.sql.plan import GroupKey, Join, OutputColumn, Plan, Primitive

#: bump when what a record holds changes
VERSION = 5  # 2: outputs carry a spread (VARIANCE / STDDEV); 3: a derived form and a quantile's count; 4: NULL key columns;
#             5: the finish without ORDER BY / LIMIT / OFFSET
#             6: a public key narrowed by the WHERE (sql/narrow.py)
#: the records, one file each in dpsql's folder (the least recently written of 1024 dropped first)
DOCUMENTS = Documents("plans", 1024)
#: records read, kept in memory
MEMORY = 512
#: the longest query text kept (as the plan cache)
TEXT = 8192

_lock = threading.Lock()
_read: OrderedDict[str, tuple[Plan, str]] = OrderedDict()
_code: list[str] = []
#: the dpsql package: every module under it stands for the code (this module is in records/, so
#: its own folder would miss sql/, where a plan's exact SQL is written)
PACKAGE = Path(__file__).resolve().parents[1]


def code_identity() -> str:
    """What stands for the code that plans: every module of dpsql (path, size, modification
    time) and sqlglot's version file (found, not imported). Computed once per process (~1 ms)."""
    if not _code:
        files = code_files()
        spec = PathFinder.find_spec("sqlglot")
        try:
            version = (Path(spec.origin).parent / "_version.py").read_text() if spec and spec.origin else ""
        except OSError:
            version = ""
        _code.append(hashlib.sha256("\n".join([*sorted(files), version]).encode()).hexdigest())
    return _code[0]


def code_files() -> list[str]:
    """``path:size:mtime`` of every module of dpsql: the package's folder, not this room's (when
    plan.py moved into dpsql/records/, its own folder stood for the code, so a changed rewrite
    went on answering from plans recorded by the old one)."""
    files: list[str] = []
    _walk(Path(__file__).resolve().parents[1], files)
    return files


def _walk(folder: Path, out: list[str]) -> None:
    with os.scandir(folder) as entries:
        for e in entries:
            if e.is_dir(follow_symlinks=False) and not e.name.startswith((".", "__")):
                _walk(Path(e.path), out)
            elif e.name.endswith(".py"):
                st = e.stat()
                out.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")


def key(context: Any, sql: str) -> str | None:
    """The record's key for ``sql`` in a session's plan ``context``, or None when it has none."""
    if not isinstance(context, str) or len(sql) > TEXT:
        return None
    return hashlib.sha256(repr((VERSION, code_identity(), context, sql)).encode()).hexdigest()


def load(context: Any, sql: str, policy: Policy) -> tuple[Plan, str] | None:
    """The recorded plan and exact SQL of ``sql``, or None."""
    k = key(context, sql)
    if k is None:
        return None
    with _lock:
        hit = _read.get(k)
        if hit is not None:
            _read.move_to_end(k)
            return hit
    doc = DOCUMENTS.get(k)
    try:
        if doc is None or doc.get("version") != VERSION or doc.get("sql") != sql or not isinstance(doc["exact"], str):
            return None
        planned = (decode(doc["plan"], policy), doc["exact"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    with _lock:
        _read[k] = planned
        if len(_read) > MEMORY:
            _read.popitem(last=False)
    return planned


def save(context: Any, sql: str, planned: tuple[Plan, str]) -> None:
    """Record a plan made from ``sql``."""
    k = key(context, sql)
    if k is not None:
        DOCUMENTS.put(k, {"version": VERSION, "sql": sql, "plan": encode(planned[0]), "exact": planned[1]})


def encode(plan: Plan) -> dict[str, Any]:
    """A plan as JSON, without its trees (their text forms stand for them)."""
    return {
        "sql": plan.sql, "table": plan.table.name,
        "keys": [[k.name, k.label, list(k.sources), k.public, k.column, k.text, k.bounded_text, k.plain,
                  k.narrowed] for k in plan.keys],
        "primitives": [[p.kind, p.column, p.shown, p.distinct, None if p.q is None else str(p.q)] for p in plan.primitives],
        "outputs": [[o.name, o.primitive, None if o.ratio is None else list(o.ratio), None if o.spread is None else list(o.spread),
                     o.derived, o.ranked_by] for o in plan.outputs],
        "selection_count": plan.selection_count,
        "joins": [[j.table, j.alias, j.side, j.left, j.key, list(j.columns)] for j in plan.joins],
        "public_types": plan.public_types,
        "public_columns": {c: list(v) for c, v in plan.public_columns.items()},
        "finish_sql": plan.finish_sql, "finish_names": list(plan.finish_names), "finish_base_sql": plan.finish_base_sql,
        "projection": None if plan.projection is None else [list(p) for p in plan.projection],
        "null_columns": list(plan.null_columns),
        "max_groups": [plan.table.max_groups, list(plan.table.max_groups_set)],  # κ of the grouping (max_groups_by)
        "quantile_rows": [plan.table.quantile_rows, list(plan.table.quantile_rows_set)],  # r of the grouping
    }


def decode(doc: dict[str, Any], policy: Policy) -> Plan:
    """The plan :func:`encode` wrote, its table the policy's (the key holds the policy's digest)."""
    table = policy.tables[doc["table"]]
    for t, alias, *_ in doc["joins"]:  # a private table joined on the unit (scopes.add_unit_join)
        table = joined_table(table, policy.tables[t], alias) if t in policy.tables else table
    if table.many_rows and "max_groups" in doc:  # the κ planning chose for this grouping (units.grouping_table)
        table = replace(table, max_groups=doc["max_groups"][0], max_groups_set=tuple(doc["max_groups"][1]))
    if table.many_rows and "quantile_rows" in doc:  # the r planning chose (quantile_rows_by)
        table = replace(table, quantile_rows=doc["quantile_rows"][0], quantile_rows_set=tuple(doc["quantile_rows"][1]))
    keys = tuple(GroupKey(name, None, label, tuple(sources), bool(public), column, text=text, bounded_text=bounded,
                          plain=bool(plain), narrowed=narrowed)
                 for name, label, sources, public, column, text, bounded, plain, narrowed in doc["keys"])
    return Plan(
        sql=doc["sql"], table=table, where=None, keys=keys,
        primitives=tuple(Primitive(kind, column, shown, bool(distinct), None if q is None else Fraction(q))
                         for kind, column, shown, distinct, q in doc["primitives"]),
        finish=None,
        outputs=tuple(OutputColumn(name, primitive, None if ratio is None else (ratio[0], ratio[1]),
                                   None if spread is None else (spread[0], spread[1], spread[2], spread[3]),
                                   _tuples(derived), ranked_by)
                      for name, primitive, ratio, spread, derived, ranked_by in doc["outputs"]),
        selection_count=doc["selection_count"],
        joins=tuple(Join(t, a, side, left, k, tuple(cols)) for t, a, side, left, k, cols in doc["joins"]),
        public_types=dict(doc["public_types"]),
        public_columns={c: (v[0], v[1]) for c, v in doc["public_columns"].items()},
        finish_sql=doc["finish_sql"], finish_names=tuple(doc["finish_names"]), finish_base_sql=doc["finish_base_sql"],
        projection=None if doc["projection"] is None else tuple(tuple(p) for p in doc["projection"]),
        null_columns=tuple(doc["null_columns"]))


def _tuples(v: Any) -> Any:
    """A derived column's form (sql/derived.py: nested tuples) from its JSON lists."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v
