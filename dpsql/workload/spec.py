"""The workload file: a TOML document naming queries, their budgets and the outputs (docs/workloads.md).

Two kinds of entries, which may be mixed:

* ``[[query]]``: one SQL aggregate query with either ``rho`` (its budget) or ``moe`` (a target
  95% margin of error per cell; paper 004 eq. 37-38 through ``SET dpsql.moe``). Queries
  compose sequentially: the workload costs the sum.
* ``[safetab]`` with ``[[safetab.level]]``: the adaptive two-stage design of paper 004
  (Algorithms 1-2) planned from its MOE targets per population-group level; each level costs
  ``stability * rho_group`` by generalised parallel composition (Lemma 10) and the levels add.

Optional ``[random_partition]`` (paper 001 Section 5) and ``[output]``. Everything here is the
analyst's public text; nothing is read from data. Errors are DP501 with the offending key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.errors import DpsqlError, WorkloadFileError
from dpsql.privacy.budget import parse_rho

__all__ = ["WorkloadFileError", "Query", "Level", "SafeTab", "RandomPartition", "Workload", "load", "parse"]

OUTPUT_FORMATS = ("csv", "json", "parquet")


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    rho: Fraction | None = None
    moe: Fraction | None = None


@dataclass(frozen=True)
class Level:
    name: str
    moe: int
    stability: int
    groups: int  # population groups at this level, from the public mapping
    geography: str | None = None  # the column that splits the level's groups (None: the nation)


@dataclass(frozen=True)
class SafeTab:
    stage1_share: Fraction
    thresholds: tuple[int, ...]
    detail: tuple[str, ...]  # the stage-2 levels of detail, one more than thresholds
    levels: tuple[Level, ...]
    # For a real run (dpsql/workload/safetab.py): the table, its race-code columns, the codes
    # (one population group per code and geography) and each level of detail's GROUP BY keys.
    table: str | None = None
    races: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    detail_keys: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class RandomPartition:
    units: int  # n, the number of units (public: the data owner's declared size)
    p: float = 0.5  # the proportion the sampling error is reported at (1/2: the worst case)


@dataclass(frozen=True)
class Workload:
    name: str
    mechanism: str = "discrete_gaussian"
    delta: float = 1e-10  # the conversion delta of the (epsilon, delta) report
    queries: tuple[Query, ...] = ()
    safetab: SafeTab | None = None
    random_partition: RandomPartition | None = None
    formats: tuple[str, ...] = ("csv",)
    extra: dict[str, Any] = field(default_factory=dict)


def load(path: str | Path) -> Workload:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadFileError(f"cannot read the workload file {p} ({exc.strerror or type(exc).__name__})",
                                hint="pass the path of a workload TOML file (docs/workloads.md).") from None
    return parse(text, default_name=p.stem)


def _fail(what: str) -> WorkloadFileError:
    return WorkloadFileError(f"workload file: {what}", hint="see docs/workloads.md for the format.")


def _positive_int(d: dict[str, Any], key: str, where: str) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise _fail(f"{where}.{key} must be a positive integer")
    return v


def _fraction(v: Any, where: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _fail(f"{where} must be a number")
    try:
        f = Fraction(v) if not isinstance(v, float) else Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        raise _fail(f"{where} must be a number") from None
    return f


def _known(d: dict[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(d) - keys)
    if unknown:
        raise _fail(f"unknown key(s) in {where}: {', '.join(unknown)}")


def parse(text: str, default_name: str = "workload") -> Workload:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(f"not valid TOML ({exc})") from None
    _known(doc, {"workload", "query", "safetab", "random_partition", "output"}, "the file")
    head = doc.get("workload", {})
    _known(head, {"name", "mechanism", "delta"}, "[workload]")
    mechanism = head.get("mechanism", "discrete_gaussian")
    if mechanism != "discrete_gaussian":
        raise _fail("[workload].mechanism: only \"discrete_gaussian\" workloads are supported (zCDP composes them "
                    "exactly); the geometric figures are reported alongside")
    delta = head.get("delta", 1e-10)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise _fail("[workload].delta must be in (0, 1)")
    queries = []
    for i, q in enumerate(doc.get("query", [])):
        where = f"query[{i}]"
        _known(q, {"name", "sql", "rho", "moe"}, where)
        if not isinstance(q.get("sql"), str) or not q["sql"].strip():
            raise _fail(f"{where}.sql must be an SQL query")
        if ("rho" in q) == ("moe" in q):
            raise _fail(f"{where} needs exactly one of rho (its budget) or moe (a target 95% margin of error)")
        rho = None
        if "rho" in q:
            try:
                rho = parse_rho(q["rho"])
            except DpsqlError:
                raise _fail(f"{where}.rho must be a positive budget") from None
        moe = _fraction(q["moe"], f"{where}.moe") if "moe" in q else None
        if moe is not None and moe < 1:
            raise _fail(f"{where}.moe must be at least 1")
        queries.append(Query(name=str(q.get("name", f"q{i + 1}")), sql=q["sql"], rho=rho, moe=moe))
    names = [q.name for q in queries]
    if len(set(names)) != len(names):
        raise _fail("query names must be distinct")
    safetab = _safetab(doc["safetab"]) if "safetab" in doc else None
    if not queries and safetab is None:
        raise _fail("no [[query]] and no [safetab]: nothing to plan")
    rp = None
    if "random_partition" in doc:
        r = doc["random_partition"]
        _known(r, {"units", "p"}, "[random_partition]")
        p = r.get("p", 0.5)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise _fail("[random_partition].p must be a proportion")
        rp = RandomPartition(units=_positive_int(r, "units", "[random_partition]"), p=float(p))
        if len(queries) > rp.units:
            raise _fail("[random_partition] needs at least as many units as queries")
    out = doc.get("output", {})
    _known(out, {"formats"}, "[output]")
    formats = tuple(out.get("formats", ["csv"]))
    if not formats or any(f not in OUTPUT_FORMATS for f in formats):
        raise _fail(f"[output].formats: each must be one of {', '.join(OUTPUT_FORMATS)}")
    return Workload(name=_file_name(head.get("name", default_name)), mechanism=mechanism, delta=float(delta),
                    queries=tuple(queries), safetab=safetab, random_partition=rp, formats=formats)


def _safetab(s: dict[str, Any]) -> SafeTab:
    _known(s, {"stage1_share", "thresholds", "detail", "level", "table", "races", "codes", "detail_keys"}, "[safetab]")
    share = _fraction(s.get("stage1_share", "1/10"), "[safetab].stage1_share")
    if not 0 < share < 1:
        raise _fail("[safetab].stage1_share must be in (0, 1)")
    thresholds = s.get("thresholds", [])
    if (not isinstance(thresholds, list) or any(isinstance(t, bool) or not isinstance(t, int) for t in thresholds)
            or thresholds != sorted(set(thresholds))):
        raise _fail("[safetab].thresholds must be increasing integers")
    detail = s.get("detail", ["total"])
    if not isinstance(detail, list) or len(detail) != len(thresholds) + 1 or not all(isinstance(d, str) for d in detail):
        raise _fail("[safetab].detail must name one level of detail more than there are thresholds")
    levels = []
    for i, lv in enumerate(s.get("level", [])):
        where = f"safetab.level[{i}]"
        _known(lv, {"name", "moe", "stability", "groups", "geography"}, where)
        geo = lv.get("geography")
        if geo is not None:
            _ident(geo, f"{where}.geography")
        levels.append(Level(name=str(lv.get("name", f"level {i + 1}")), moe=_positive_int(lv, "moe", where),
                            stability=_positive_int(lv, "stability", where), groups=_positive_int(lv, "groups", where),
                            geography=geo))
    if not levels:
        raise _fail("[safetab] needs at least one [[safetab.level]]")
    out = SafeTab(stage1_share=share, thresholds=tuple(thresholds), detail=tuple(detail), levels=tuple(levels))
    if "table" not in s:
        return out
    table = _ident(s["table"], "[safetab].table")
    races = s.get("races")
    codes = s.get("codes")
    keys = s.get("detail_keys")
    if not isinstance(races, list) or not races:
        raise _fail("[safetab].races must list the race-code columns")
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) and _CODE.fullmatch(c) for c in codes):
        raise _fail("[safetab].codes must list the race codes (letters, digits, '_', '-')")
    for what, listed in (("codes", codes), ("races", races)):  # a repeat is computed and written again
        repeated = sorted({str(c) for c in listed if listed.count(c) > 1})
        if repeated:
            raise _fail(f"[safetab].{what} lists {', '.join(map(repr, repeated))} more than once; list each once")
    if (not isinstance(keys, list) or len(keys) != len(detail) or not all(isinstance(k, list) for k in keys)):
        raise _fail("[safetab].detail_keys must give the GROUP BY columns of each level of detail")
    for lv in levels:
        if lv.stability < len(races):  # a unit has at most len(races) codes: the bound that can be checked
            raise _fail(f"level {lv.name!r}: stability {lv.stability} is below the {len(races)} race columns a person "
                        "can fill; it must bound the number of groups a person is in")
    return replace(out, table=table, races=tuple(_ident(r, "[safetab].races") for r in races), codes=tuple(codes),
                   detail_keys=tuple(tuple(_ident(c, "[safetab].detail_keys") for c in k) for k in keys))


def _file_name(v: Any) -> str:
    """The workload's name, which names its output files in ``--out``: one plain file name (no
    folder, no ``..``), so nothing is written outside the folder asked for."""
    name = str(v)
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise _fail(f"[workload].name {name!r} must be a plain file name (no '/', '\\', '.' or '..'); "
                    "the output files are named after it in --out")
    return name


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE = re.compile(r"[A-Za-z0-9_-]+")


def _ident(v: Any, where: str) -> str:
    if not isinstance(v, str) or not _IDENT.fullmatch(v):
        raise _fail(f"{where} must be a column or table name")
    return v
