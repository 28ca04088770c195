"""The real run of a workload: decide everything, charge once, then write every output whole.

Phases (docs/workloads.md, the same as one query's, docs/privacy.md):

1. :func:`dpsql.workload.plan.plan` and :meth:`Session.decide` for every query (the plan path
   of one query; the budget is checked for the whole workload, not per query), the output
   folder checked: every refusal happens here, before any private row is read;
2-4. :meth:`Session.execute_decided`: every exact query and its noise, then ONE durable charge
   of the workload's composed cost, whose policy terms are every query's (P(r) adds up);
5. outputs in long format (one row per released cell: query, group, measure, value, sigma,
   moe95), each written to a temporary file in the output folder and renamed into place.

A ``[safetab]`` section naming its table runs through :mod:`dpsql.workload.safetab` (the same
phases). With ``[random_partition]`` query i of k runs on the units whose hash of the unit, keyed
by a secret salt, is i modulo k (``Session.on_part``), and the charge is the queries' maximum.
A file mixing ``[safetab]`` with ``[[query]]`` decides both, charges their sum once, and writes
the queries' outputs and ``NAME_safetab.*``. Refused in phase 1 with DP109, the dry run working: a
``[safetab]`` without a table, and ``[random_partition]`` on Spark.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.errors import DpsqlInternalError, NotSupportedYet, WorkloadFileError
from dpsql.ledger.book import Charge
from dpsql.privacy.allocate import GAUSSIAN
from dpsql.pipeline.result import Result
from dpsql.workload.plan import WorkloadPlan, plan
from dpsql.workload.safetab import choose, decide_safetab, run_safetab
from dpsql.workload.spec import Workload

__all__ = ["run", "long_rows", "LONG_COLUMNS"]

LONG_COLUMNS = ("query", "group", "measure", "value", "sigma", "moe95")


def _check_out_dir(out_dir: Path, workload: Workload) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkloadFileError(f"cannot create the output folder {out_dir} ({exc.strerror or type(exc).__name__})",
                                hint="pass --out DIR naming a folder you can write to.") from None
    if not os.access(out_dir, os.W_OK):
        raise WorkloadFileError(f"cannot write to the output folder {out_dir}", hint="pass --out DIR naming a folder you can write to.")
    stems = [workload.name] + ([f"{workload.name}_safetab"] if workload.safetab is not None and workload.queries else [])
    clash = [str(out_dir / f"{s}.{f}") for s in stems for f in workload.formats if (out_dir / f"{s}.{f}").exists()]
    if clash:
        raise WorkloadFileError(f"the output file(s) {', '.join(clash)} exist already; a workload never overwrites "
                                "a release", hint="choose another --out folder or move the old files away.")


def run(session: Any, workload: Workload, out_dir: str | Path) -> tuple[WorkloadPlan, list[Result], list[Path]]:
    """Answer ``workload`` on ``session``'s data: one charge, then its outputs in ``out_dir``."""
    if workload.random_partition is not None and type(session.engine).__name__ != "DuckDBEngine":
        raise NotSupportedYet("[random_partition] runs on the DuckDB engine only (its secret partition is DuckDB's "
                              "hash of the unit); nothing was read or charged", hint="run it without --engine spark.")
    if workload.safetab is not None and not workload.queries:
        return _run_safetab(session, workload, Path(out_dir))
    if workload.safetab is not None and workload.safetab.table is None:
        raise _no_table()
    p = plan(session, workload)
    decisions = []
    for q in workload.queries:
        settings = replace(session.default_settings(), mechanism=GAUSSIAN)
        settings = replace(settings, rho=q.rho) if q.rho is not None else replace(settings, moe={"*": q.moe})
        decisions.append(session.decide(q.sql, settings=settings, check_budget=False))
    if ([d.rho for d in decisions], [d.delta for d in decisions]) != ([q.rho for q in p.queries], [q.delta for q in p.queries]):
        raise DpsqlInternalError("the workload's plan and its queries' decisions disagree; this is a bug in dpsql")
    if workload.random_partition is not None:
        # Query i of k reads the units whose keyed hash is i mod k: a secret, uniformly random
        # partition (the salt comes from the CSPRNG and is never shown), each unit in one part.
        salt = secrets.randbits(62)
        decisions = [session.on_part(d, salt, len(decisions), i) for i, d in enumerate(decisions)]
    n_queries = len(decisions)
    st_plan, st_terms = [], []
    if workload.safetab is not None:  # mixed: the SafeTab levels are decided too, and share the one charge
        st_plan, st_decisions, st_rho, st_terms = decide_safetab(session, workload.safetab)
        q_rho = max(d.rho for d in decisions) if workload.random_partition else sum(d.rho for d in decisions)
        if q_rho + st_rho != p.rho:
            raise DpsqlInternalError("the workload's plan and its SafeTab decisions disagree; this is a bug in dpsql")
        decisions += st_decisions
    out = Path(out_dir)
    _check_out_dir(out, workload)
    session.ledger.check(p.rho, p.delta)  # refuse early; the binding check is the charge itself
    what = "; ".join(q.sql for q in workload.queries) + (f"; SafeTab on {workload.safetab.table}" if workload.safetab else "")
    charge = Charge(query=f"WORKLOAD {workload.name}: " + what,
                    rho=p.rho, delta=p.delta, mechanism=GAUSSIAN,
                    # Sequential: P(r) terms add. On a random partition a record is in one part and pays
                    # one query's terms; their sum is kept as the (safe) upper bound of that maximum.
                    policy_terms=tuple(t for d in decisions[:n_queries] for t in d.terms) + tuple(st_terms),
                    analyst=session.analyst, session=session.session_id, dataset=str(session.database))
    results = session.execute_decided(decisions, charge)
    rows = long_rows([q.name for q in workload.queries], results[:n_queries])
    written = [_write(out / f"{workload.name}.{fmt_}", fmt_, rows) for fmt_ in workload.formats]
    if workload.safetab is not None:
        cells, _groups = choose(workload.safetab, st_plan, results[n_queries:])
        written += [_write(out / f"{workload.name}_safetab.{f}", f, _safetab_rows(cells), SAFETAB_COLUMNS)
                    for f in workload.formats]
    return p, results[:n_queries], written


def long_rows(names: list[str], results: list[Result]) -> list[tuple[Any, ...]]:
    """One row per released cell: (query, group, measure, value, sigma, moe95). The group is
    the row's other columns as ``name=value`` pairs."""
    out = []
    for name, r in zip(names, results):
        measures = [c for c in r.columns if c in r.receipt.columns]
        keys = [i for i, c in enumerate(r.columns) if c not in r.receipt.columns]
        for j, row in enumerate(r.rows):
            group = ", ".join(f"{r.columns[i]}={row[i]}" for i in keys)
            for m in measures:
                e = r.receipt.columns[m]
                out.append((name, group, m, row[r.columns.index(m)], e.sigma[j], e.moe95[j]))
    return out


def _render(fmt_: str, rows: list[tuple[Any, ...]], columns: tuple[str, ...] = LONG_COLUMNS) -> str:
    if fmt_ == "json":
        return json.dumps([dict(zip(columns, r)) for r in rows], default=str, indent=1) + "\n"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows)
    return buf.getvalue()


def _write(path: Path, fmt_: str, rows: list[tuple[Any, ...]], columns: tuple[str, ...] = LONG_COLUMNS) -> Path:
    """One output file, written whole: CSV and JSON here, Parquet by DuckDB's writer."""
    if fmt_ == "parquet":
        from dpsql.backends.duckdb_files import write_parquet  # duckdb's writer, only when asked for

        write_parquet(path, _render("csv", rows, columns))
        return path
    return _write_whole(path, _render(fmt_, rows, columns))


def _write_whole(path: Path, text: str) -> Path:
    """Write ``text`` to a new temporary file beside ``path`` (mode 0666 less the umask, as any
    new file), flush it to disk, rename it into place: a reader sees the whole file or none."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _no_table() -> NotSupportedYet:
    return NotSupportedYet("this SafeTab workload names no table ([safetab].table, races, codes, detail_keys), so it "
                           "can only be planned; nothing was read or charged", hint="run it with --dry-run.")


def _safetab_rows(cells: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.level, c.geography, c.code, c.stage1_total, c.detail, ", ".join(f"{k}={v}" for k, v in c.keys), c.value,
             c.sigma, c.moe95) for c in cells]


SAFETAB_COLUMNS = ("level", "geography", "race", "stage1_total", "detail", "group", "value", "sigma", "moe95")


def _run_safetab(session: Any, workload: Workload, out: Path) -> tuple[WorkloadPlan, list[Result], list[Path]]:
    s = workload.safetab
    assert s is not None
    if s.table is None:
        raise _no_table()
    p = plan(session, workload)
    _check_out_dir(out, workload)
    rho, cells, _groups = run_safetab(session, s, workload.name)
    if rho != p.rho:
        raise DpsqlInternalError("the SafeTab charge and its plan disagree; this is a bug in dpsql")
    written = [_write(out / f"{workload.name}.{f}", f, _safetab_rows(cells), SAFETAB_COLUMNS) for f in workload.formats]
    return p, [], written

