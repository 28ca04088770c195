"""`dpsql advise TABLE`: split thresholds from differentially private quantiles (docs/own_data.md,
"Choosing T with dpsql advise").

A threshold T decides who pays more than ρ: a unit whose measure is above T is split into
⌈|v|/T⌉ records and pays ρ·⌈|v|/T⌉² (paper 000 Algorithm 1, Lemma 5.1); everyone else pays ρ.
The noise of a SUM is σ = T/√(2ρ). So T trades the accuracy of every sum against the policy
loss of the units above it, and paper 000 chooses it as a percentile of the units' values
(Table 8: the Conservative scheme at the 99th percentile, Moderate at about the 80th, Median at
the 50th; §6.3 "less than 1% of records have policy loss greater than ρ").

dpsql answers that question as one ordinary query — COUNT(*) and QUANTILE_CONT(m, q) of each
measure at q = 50%, 80%, 90%, 95%, 99%, 99.9% (and 1 − --split-share) — through the whole
pipeline: decided from public information, charged in the ledger, released by the exponential
mechanism (``privacy/quantile.py``). A measure whose policy declares no quantile ``range`` is
read on a public default grid (:data:`ADVICE_GRID`), chosen without looking at the data. The
recommendation is the quantile at 1 − share: the smallest threshold that splits about that
share of units. ``--write`` puts it into the policy file.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import replace
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpsql.errors import PolicyFileError, QueryRefused
from dpsql.pipeline.format import to_json
from dpsql.policy.model import Measure, Policy, QuantileGrid
from dpsql.policy.loader import load_policy
from dpsql.privacy.budget import fmt, parse_rho

#: the quantiles advice releases per measure
QUANTILES = (Fraction(1, 2), Fraction(4, 5), Fraction(9, 10), Fraction(19, 20), Fraction(99, 100), Fraction(999, 1000))
#: the public grid of a measure whose policy declares none: 0, then 1 to 10^12 granularity units,
#: 1,000 values evenly in log scale (about 2.8% apart)
ADVICE_GRID = QuantileGrid(0, 10**12, "log", 1000)
#: a candidate is resolved when its rank error at this confidence (the chance it is exceeded)
#: is below the units the quantile leaves above it, so it lies within the data's range
RESOLVE_BETA = 1e-5


def add_command(sub: Any) -> None:
    p = sub.add_parser("advise", help="suggest each measure's split threshold T from DP quantiles (charges the budget)",
                       description="Release COUNT(*) and DP quantiles of each measure of TABLE (one charged query), "
                                   "print candidate thresholds with the share of units each splits and the noise "
                                   "of a SUM at --at-rho, and recommend the quantile at 1 - --split-share.")
    p.add_argument("table", nargs="?", help="the table (default: the policy's only table with measures)")
    p.add_argument("--db", metavar="FILE", help="the database file (default: the demo database)")
    p.add_argument("--policy", metavar="FILE", help="policy file (default: <db>.policy.toml beside the database)")
    p.add_argument("--measure", action="append", metavar="M", help="advise this measure only (repeatable)")
    p.add_argument("--rho", metavar="R", help="the budget the advice query is charged (default: the smaller of 0.1 "
                                              "and a tenth of your total_rho in the policy; what it charges, and "
                                              "its share of total_rho, is printed before it runs)")
    p.add_argument("--split-share", metavar="S", default="0.01",
                   help="the share of units you accept to split (pay more than rho); default 0.01, paper 000's "
                        "Conservative scheme")
    p.add_argument("--at-rho", metavar="R", default="1", help="the rho at which to show a SUM's noise (default 1)")
    p.add_argument("--by", metavar="KEYS", help="a table with many rows per unit: the grouping its advice assumes, "
                                                "comma-separated keys (default: its text keys together)")
    p.add_argument("--write", action="store_true", help="write the recommended thresholds into the policy file")
    p.add_argument("--json", action="store_true", help="print JSON")


def _fraction(text: str, name: str, low: Fraction, high: Fraction | None) -> Fraction:
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value <= low or (high is not None and value >= high):
        bound = f"above {low}" + (f" and below {high}" if high is not None else "")
        raise QueryRefused(f"dpsql advise: {name} must be a number {bound}, not {text!r}", code="DP119")
    return value


def advise(args: argparse.Namespace) -> int:
    share = _fraction(args.split_share, "--split-share", Fraction(0), Fraction(1, 2))
    at_rho = _fraction(args.at_rho, "--at-rho", Fraction(0), None)
    target = (1 - share).limit_denominator(10_000)
    from dpsql.faces.dbapi import connect

    with connect(args.db, args.policy, rho=args.rho) as con:
        session = con.session
        table, measures = _chosen(session.policy, args.table, args.measure)
        args.rho = spend(args, session)  # the many-row path's own connection charges the same
        policy, database = session.policy, Path(session.database)
        if not policy.tables[table].many_rows:
            report = release(con, table, {m: m for m in measures}, target, share, at_rho)
            return _finish(args, report, Path(policy.path or ""), table)
    from dpsql.faces.advise_units import advise_units  # many rows per unit: kappa, R and T, per unit

    return advise_units(args, policy, database, table, measures, (share, at_rho, target), release, _finish, recommend)


#: the most ρ advice charges by default, and its largest share of the charged analyst's total_rho
DEFAULT_RHO, DEFAULT_SHARE = Fraction(1, 10), Fraction(1, 10)


def spend(args: argparse.Namespace, session: Any) -> Fraction:
    """The ρ the advice query is charged (``--rho``, else the smaller of :data:`DEFAULT_RHO` and
    :data:`DEFAULT_SHARE` of the analyst's own total_rho: a default fixed at 0.1 was 40% of the
    total ``dpsql init`` drafts), said before it runs with whose budget it comes out of and its
    share of it (on stderr with --json); kept in ``args.spend`` for the report."""
    b, ledger = session.policy.budget, session.ledger
    total = b.walls(session.analyst)[0]
    rho = parse_rho(args.rho, "--rho") if args.rho is not None else min(DEFAULT_RHO, total * DEFAULT_SHARE)
    session.set_rho(rho)
    left, where = ledger.remaining, ledger.path.resolve()
    args.spend = {"rho": fmt(rho), "analyst": session.analyst, "ledger": str(where), "total_rho": fmt(total),
                  "share_of_total_rho": float(rho / total), "rho_left_before": fmt(left), "default": args.rho is None}
    whence = ("--rho" if args.rho is not None else
              f"the default: the smaller of {fmt(DEFAULT_RHO)} and a tenth of total_rho; --rho R for another")
    print(f"dpsql advise will charge rho={fmt(rho)} ({whence}): {100 * float(rho / total):.3g}% of the total_rho="
          f"{fmt(total)} of analyst {session.analyst!r} (the login name; {fmt(left)} left) in the ledger {where}, "
          "unless the same advice was released before (then it is shown again, free)"
          + (f"; it adds to the data set's rho (dataset_rho={fmt(b.dataset_rho)})" if b.dataset_rho is not None else ""),
          file=sys.stderr if args.json else sys.stdout, flush=True)
    return rho


def release(con: Any, table: str, columns: dict[str, str], target: Fraction, share: Fraction,
            at_rho: Fraction, convert: Callable[[str, Any], int | float] | None = None) -> dict[str, Any]:
    """One charged query on ``con``: COUNT(*) and the quantiles :data:`QUANTILES` (and
    ``target``) of each column of ``table`` (name in the report -> column), read on each measure's
    grid or :data:`ADVICE_GRID`; the report with each column's candidates and recommendation.
    ``convert(name, quantile)`` makes a candidate of a released quantile (default: the quantile in
    the column's granularity, at least one step)."""
    session = con.session
    qs = sorted(set(QUANTILES) | {target})
    session.policy = _with_grids(session.policy, table, list(columns.values()))
    items = ["COUNT(*) AS units"] + [f"QUANTILE_CONT({c}, {_dec(q)}) AS {c}_q{i}" for c in columns.values()
                                     for i, q in enumerate(qs)]
    cur = con.cursor()
    cur.execute(f"SELECT {', '.join(items)} FROM {table}")
    row = dict(zip([d[0] for d in cur.description], cur.fetchall()[0]))
    receipt = cur.receipt
    terms = {t.aggregate: t for t in receipt.noise}
    n = row["units"]
    report: dict[str, Any] = {"table": table, "units": n, "rho": fmt(receipt.rho), "charge_id": receipt.charge_id,
                              "split_share": float(share), "at_rho": float(at_rho), "measures": {},
                              **({"reused": receipt.reused} if receipt.reused else {})}
    for name, m in columns.items():
        rows = []
        for i, q in enumerate(qs):
            value = row[f"{m}_q{i}"]
            label = f"MEDIAN({m})" if q == Fraction(1, 2) else f"QUANTILE({m}, {float(q):g})"
            rank = terms[label].rank_error95 if label in terms else None
            measure = session.policy.tables[table].measures[m]
            t = convert(name, value) if convert is not None else _threshold(value, measure)
            # A quantile whose rank error reaches past the units it leaves above is not resolved at
            # this budget: the mechanism may return any grid value beyond the data's top. The error
            # is taken at confidence 1 - RESOLVE_BETA, not 95%: with dozens of candidates per
            # advice, a 5% miss would be written about every other run.
            resolved = (rank is not None and n is not None and n > 0
                        and rank * _confidence(measure) < float(1 - q) * n)
            rows.append({"quantile": float(q), "threshold": t, "splits_share": float(1 - q), "resolved": resolved,
                         "splits_share_pm": (rank / n) if rank is not None and n and n > 0 else None,
                         "sum_sigma": float(t) / math.sqrt(2 * float(at_rho))})
        report["measures"][name] = recommend(rows, target)
    return report


def _confidence(measure: Measure) -> float:
    """rank_error95 (``privacy/quantile.py``: 2·max(q, 1−q)/ε · ln(20m) on m candidates, the
    error exceeded with probability at most 1/20) scaled to the error exceeded with probability
    at most :data:`RESOLVE_BETA`: 2·max(q, 1−q)/ε · ln(m/β)."""
    m = len(measure.grid.candidates()) if measure.grid is not None else 2
    return math.log(m / RESOLVE_BETA) / math.log(20 * m)


def flag_order(rows: list[dict[str, Any]], value: str = "threshold") -> None:
    """Flag (``monotone`` false, so not ``ok``) both candidates of every pair out of order (a
    higher quantile below a lower one): quantiles of one set of values cannot decrease with q, so
    one of the two is far from its true quantile, and which one is not known."""
    for i, r in enumerate(rows):
        r["monotone"] = all(o[value] <= r[value] for o in rows[:i]) and all(o[value] >= r[value] for o in rows[i + 1:])
        r["ok"] = r["resolved"] and r["monotone"]


def recommend(rows: list[dict[str, Any]], target: Fraction, value: str = "threshold") -> dict[str, Any]:
    """The candidate at ``target``; when it is flagged (unresolved or out of order), the largest
    unflagged one below it (it splits more than the share asked for, never fewer by accident); None
    when every candidate up to ``target`` is flagged: then nothing may be written."""
    flag_order(rows, value)
    upto = [r for r in rows if Fraction(r["quantile"]).limit_denominator(10_000) <= target]
    chosen = upto[-1]
    good = [r for r in upto if r["ok"]]
    pick = good[-1] if good else None
    return {"candidates": rows, "at_target": chosen[value], "resolved": chosen["ok"],
            "recommended": pick[value] if pick else None,
            "recommended_quantile": pick["quantile"] if pick else None}


def _finish(args: argparse.Namespace, report: dict[str, Any], policy: Path, table: str,
            fields: tuple[str, ...] = ()) -> int:
    """Print the report; with --write, write every recommendation (``fields``: those that are
    fields of the table, max_groups and row_threshold, not measures' thresholds), or nothing when
    one of them is flagged (DP406: a flagged quantile may be any grid value beyond the data)."""
    if getattr(args, "spend", None) is not None:
        report["spend"] = args.spend  # what advice said it would charge, and whose budget (:func:`spend`)
    values = {m: v["recommended"] for m, v in report["measures"].items()}
    unresolved = sorted(m for m, v in values.items() if v is None)
    if args.write and not unresolved:
        report["written"] = str(write_thresholds(policy, table, {m: v for m, v in values.items() if m not in fields},
                                                 {f: values[f] for f in fields}))
    print(to_json(report) if args.json else _text(report))
    if args.write and unresolved:
        raise QueryRefused(f"dpsql advise --write: wrote nothing: no candidate for {', '.join(unresolved)} is resolved "
                           "at this budget (each is flagged above)", code="DP406",
                           hint="run advise with a larger --rho or a larger --split-share, or set the value by hand "
                                "(docs/own_data.md, \"Choosing T\").")
    return 0


def _dec(q: Fraction) -> str:
    return format(Decimal(q.numerator) / Decimal(q.denominator), "f")


def _chosen(policy: Policy, table: str | None, only: list[str] | None) -> tuple[str, list[str]]:
    with_measures = [t for t, tp in policy.tables.items() if tp.measures]
    if table is None:
        if len(with_measures) != 1:
            raise QueryRefused("dpsql advise: name the table to advise on", code="DP119",
                               hint=f"tables with measures: {', '.join(with_measures) or 'none'}.")
        table = with_measures[0]
    tp = policy.table(table)
    if tp is None or not tp.measures:
        raise QueryRefused(f"dpsql advise: {table!r} is not a table of the policy with measures", code="DP119",
                           hint=f"tables with measures: {', '.join(with_measures) or 'none'}.")
    measures = sorted(tp.measures)
    if only:
        unknown = [m for m in only if m.lower() not in tp.measures]
        if unknown:
            raise QueryRefused(f"dpsql advise: {unknown[0]!r} is not a measure of {tp.name!r}", code="DP119",
                               hint=f"its measures: {', '.join(measures)}.")
        measures = sorted({m.lower() for m in only})
    return tp.name, measures


def _with_grids(policy: Policy, table: str, measures: list[str]) -> Policy:
    """The policy, in this process only, with :data:`ADVICE_GRID` for each advised measure that
    declares no quantile grid (public: it does not depend on the data)."""
    tp = policy.tables[table]
    patched = {name: (replace(m, grid=ADVICE_GRID) if name in measures and m.grid is None else m)
               for name, m in tp.measures.items()}
    return replace(policy, tables={**policy.tables, table: replace(tp, measures=patched)})


def _threshold(value: Any, m: Measure) -> int | float:
    """A released quantile as a threshold in the measure's own units: at least one
    granularity step (a threshold is positive)."""
    units = max(1, round(Fraction(str(value)) / m.granularity)) if value is not None else 1
    t = units * m.granularity
    return int(t) if t.denominator == 1 else float(t)


def _text(r: dict[str, Any]) -> str:
    cost = (f"the advice released at {r['reused']['released_at']} (ledger charge {r['reused']['charge_id']}, rho="
            f"{r['reused']['rho']}), shown again: charged nothing now" if r.get("reused")
            else f"charged rho={r['rho']} (ledger charge {r['charge_id']})")
    lines = [f"dpsql advise: {r['table']}, about {r['units']:,} units (noisy); {cost}", ""]
    for m, v in r["measures"].items():
        lines.append(v.get("title", f"{m}: threshold T = the quantile of the units' values"))
        noise_head = f"SUM noise sigma at rho={r['at_rho']:g}"
        lines.append(f"  {'quantile':>9}  {'T':>14}  {'units split':>16}  {noise_head:>28}")
        for c in v["candidates"]:
            pm = f" ± {100 * c['splits_share_pm']:.2g}%" if c["splits_share_pm"] is not None else ""
            sig = f"{c['sum_sigma']:,.4g}"
            flag = ("" if c["ok"] else "  (not resolved: its rank error exceeds the units above it)" if not c["resolved"]
                    else "  (out of order: below a lower quantile, so not reliable)")
            lines.append(f"  {100 * c['quantile']:>8g}%  {c['threshold']:>14,}  {100 * c['splits_share']:>7g}%{pm:<8}  {sig:>28}"
                         + flag)
        lines += _recommendation(v.get("name", "T = "), v, v.get("share", r["split_share"]))
        lines.append("")
    lines.append("A unit above T is split into ceil(|v|/T) records and pays rho*ceil(|v|/T)^2; the others pay rho "
                 "(paper 000 Algorithm 1).")
    if "written" in r:
        lines.append(f"wrote the recommended thresholds into {r['written']}")
    else:
        lines.append("--write puts the recommended thresholds into the policy file.")
    return "\n".join(lines)


def _recommendation(name: str, v: dict[str, Any], share: float) -> list[str]:
    if v["resolved"]:
        return [f"  recommended: {name}{v['recommended']:,} (about {100 * float(share):g}% of units above it; "
                "--split-share to choose another share)"]
    out = [f"  WARNING: the quantile at {100 * (1 - float(share)):g}% ({v['at_target']:,}) is flagged at this budget; "
           "give advise a larger --rho, or a larger --split-share."]
    if v["recommended"] is None:
        return out + ["  recommended: none (every candidate up to it is flagged; --write writes nothing)"]
    return out + [f"  recommended: {name}{v['recommended']:,}, the largest resolved candidate (the "
                  f"{100 * v['recommended_quantile']:g}% quantile: more units above it than asked)"]


_PLACEHOLDER_NOTE = re.compile(r"PLACEHOLDER split threshold, not read from the data: [^;]*")


def write_thresholds(path: Path, table: str, thresholds: dict[str, int | float],
                     fields: dict[str, int] | None = None) -> Path:
    """Set ``threshold = T`` of each measure in the policy file's text (inline ``m = { threshold
    = ... }`` under ``[tables.TABLE.measures]``, or ``threshold = ...`` under
    ``[tables.TABLE.measures.m]``) and each of ``fields`` (``max_groups``, ``row_threshold``)
    under ``[tables.TABLE]``, check the result loads, and replace the file atomically."""
    fields = dict(fields or {})
    by = {f.split(".", 1)[1]: fields.pop(f) for f in list(fields) if f.startswith("max_groups_by.")}
    rby = {f.split(".", 1)[1]: fields.pop(f) for f in list(fields) if f.startswith("quantile_rows_by.")}
    text = path.read_text()
    lines = text.split("\n")
    section = None
    done: set[str] = set()
    at = None  # where max_groups_by goes: its own line, else after max_groups
    for i, line in enumerate(lines):
        head = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if head:
            section = head.group(1).strip().lower()
            continue
        kappa = re.match(r"\s*max_groups(_by)?\s*=", line) if section == f"tables.{table}" else None
        if kappa and (at is None or not at[1]):
            at = (i, kappa.group(1) is not None)
        if rby and section == f"tables.{table}" and re.match(r"\s*quantile_rows_by\s*=", line):  # r per key column
            lines[i] = "quantile_rows_by = { " + ", ".join(f"{k} = {v}" for k, v in rby.items()) + " }   # from dpsql advise (DP quantiles)"
            done |= {f"quantile_rows_by.{k}" for k in rby}
        for f, v in fields.items():
            if section == f"tables.{table}":
                new, found = re.subn(rf"^(\s*{f}\s*=\s*)[0-9]+", rf"\g<1>{v}", line, count=1)
                if found:
                    new = re.sub(r";\s*set it with dpsql advise --write[^;#]*?\(docs/own_data\.md\)", "", new)
                    lines[i] = re.sub(r"#\s*PLACEHOLDER[^:]*:\s*", "# from dpsql advise (a DP quantile): ", new)
                    done.add(f)
        for m, t in thresholds.items():
            value = f"{t}"
            if section == f"tables.{table}.measures":
                new, found = re.subn(rf"^(\s*{re.escape(m)}\s*=\s*{{.*?\bthreshold\s*=\s*)[0-9.eE+_-]+", rf"\g<1>{value}",
                                     line, count=1, flags=re.IGNORECASE)
            elif section == f"tables.{table}.measures.{m}":
                new, found = re.subn(r"^(\s*threshold\s*=\s*)[0-9.eE+_-]+", rf"\g<1>{value}", line, count=1)
            else:
                continue
            if found:
                lines[i] = _PLACEHOLDER_NOTE.sub("split threshold T, from dpsql advise (a DP quantile)", new)
                done.add(m)
    if at is not None:  # κ per key column (docs/policy.md, "κ per grouping"), one inline table; a new quantile_rows
        new_lines = [f"{f} = {v}   # from dpsql advise (a DP quantile)" for f, v in fields.items()
                     if f == "quantile_rows" and f not in done]
        if by:
            new_lines.append("max_groups_by = { " + ", ".join(f"{k} = {v}" for k, v in by.items())
                             + " }   # from dpsql advise (DP quantiles)")
        if rby and f"quantile_rows_by.{next(iter(rby))}" not in done:
            new_lines.append("quantile_rows_by = { " + ", ".join(f"{k} = {v}" for k, v in rby.items())
                             + " }   # from dpsql advise (DP quantiles)")
            done |= {f"quantile_rows_by.{k}" for k in rby}
        lines[at[0]:at[0] + 1] = ([] if at[1] and by else [lines[at[0]]]) + new_lines
        done |= {f"max_groups_by.{k}" for k in by} | ({"quantile_rows"} & set(fields))
    missing = sorted((set(thresholds) | set(fields) | {f"max_groups_by.{k}" for k in by}
                      | {f"quantile_rows_by.{k}" for k in rby}) - done)
    if missing:
        raise PolicyFileError(f"{path}: could not find the threshold of {', '.join(missing)} to rewrite; "
                              "set it by hand (the advice above is unchanged)")
    tmp = path.with_name(f".{path.name}.advise-{os.getpid()}")
    tmp.write_text("\n".join(lines))
    try:
        load_policy(tmp)  # the rewritten file must load before it replaces the old one
    except PolicyFileError:
        tmp.unlink()
        raise
    os.replace(tmp, path)
    return path
