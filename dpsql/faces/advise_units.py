"""`dpsql advise` on a table with many rows per unit (issue 31): κ (``max_groups``), R
(``row_threshold``) and each measure's T from DP quantiles, in one charged query
(docs/own_data.md, "Many rows per unit").

What is measured, per unit, under one grouping G (``--by``; default: the table's text keys
together, the finest grouping of its categories that queries are likely to use — dates are left
out, their buckets change with the question):

* ``groups``: the number of groups of G the unit has rows in. κ = its quantile at 1 − share: about
  that share of units have more groups than a query of G keeps (they lose the rest, chosen at
  random).
* ``rows``: the unit's most rows in one group of G; R = its quantile: about that share of units
  have a group whose row count is split (they pay more than ρ for COUNT(*)).
* ``m_<m>``: the unit's largest |total of m| in one group of G; T = its quantile, likewise.

A coarser query (fewer keys) puts more of a unit's rows in one group: more of its records exceed
R and T and are split, which the policy function P(u) states (docs/privacy.md); a finer one gives
units more groups than κ.

How: the data owner's machine writes one row per unit with these three kinds of values into a
temporary DuckDB file (``backends/duckdb_files.per_unit_table``, a private temporary folder,
removed at the end; its table has the table's name, so the charge's policy terms name the table:
ρ per unit, unsplit), and the usual advice query (``advise_cmd.release``: COUNT(*) and
QUANTILE_CONT of each column, the exponential mechanism on a public grid) runs on it through a
dpsql session whose ledger is the real policy's: the release is charged there, to the same
analyst, under the same walls. A unit's rows decide only its own row of that table, so a release
about that table's rows is a release about units, with the sensitivity the quantiles assume.
"""

from __future__ import annotations

import argparse
import math
import json
import tempfile
from fractions import Fraction
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpsql.errors import QueryRefused
from dpsql.ledger.book import Ledger, ledger_path
from dpsql.policy.model import Policy

#: the table fields advise writes for a many-row table, and the per-unit column each comes from
FIELDS = {"max_groups": "groups", "row_threshold": "rows"}
#: the table field of κ per key column: ``max_groups_by.<key>`` in the report, ``groups_<key>`` per unit
BY = "max_groups_by"
#: the table field of r per key column: ``quantile_rows_by.<key>`` in the report, ``rows_<key>`` per unit
RBY = "quantile_rows_by"
_TITLES = {"max_groups": "max_groups (kappa) = the quantile of the units' number of groups",
           "row_threshold": "row_threshold R = the quantile of the units' most rows in one group"}


def grouping(args: argparse.Namespace, policy: Policy, table: str, text_columns: set[str]) -> list[str]:
    tp = policy.tables[table]
    if args.by:
        keys = [k.strip().lower() for k in args.by.split(",") if k.strip()]
        unknown = [k for k in keys if k not in tp.keys]
        if unknown or not keys:
            raise QueryRefused(f"dpsql advise --by: {', '.join(unknown) or 'no key'} is not a key of {table!r}",
                               code="DP119", hint=f"its keys: {', '.join(sorted(tp.keys))}.")
        return keys
    return sorted(k for k, key in tp.keys.items() if key.range is None and k in text_columns)


def advise_units(args: argparse.Namespace, policy: Policy, database: Path, table: str, measures: list[str],
                 shares: tuple[Fraction, Fraction, Fraction], release: Callable[..., dict[str, Any]],
                 finish: Callable[..., int], recommend: Callable[..., dict[str, Any]]) -> int:
    """``advise_cmd.advise`` for a many-row table; ``shares`` its (split share, at-rho, target),
    ``release``, ``finish`` and ``recommend`` its query, its printing and writing, and its choice
    of a candidate (passed in: no import circle)."""
    share, at_rho, target = shares
    from dpsql.backends.duckdb_files import Inspector, per_unit_table
    from dpsql.faces.dbapi import connect

    tp = policy.tables[table]
    if policy.parquet:
        raise QueryRefused(f"dpsql advise: {table!r} has many rows per unit and its rows are Parquet files; advice on "
                           "such a table reads a DuckDB file", code="DP119",
                           hint="dpsql init the Parquet data into a DuckDB file first (docs/own_data.md).")
    ins = Inspector(database)
    try:
        text = {c.lower() for c, t in ins.columns(tp.name) if t.upper() in ("VARCHAR", "TEXT", "STRING")}
        names = {c.lower(): c for c, _ in ins.columns(tp.name)}
    finally:
        ins.close()
    keys = grouping(args, policy, table, text)
    per_key = keys if len(keys) > 1 else []  # κ_C per key column (max_groups_by); one key: κ is its κ_C
    fields = {**FIELDS, **{f"{BY}.{k}": f"groups_{k}" for k in per_key}, **{f"{RBY}.{k}": f"rows_{k}" for k in per_key}}
    with tempfile.TemporaryDirectory(prefix="dpsql-advise-") as tmp:
        db, pol = Path(tmp) / "per_unit.duckdb", Path(tmp) / "per_unit.policy.toml"
        per_unit_table(database, tp.name, names.get(tp.privacy_unit, tp.privacy_unit), [names.get(k, k) for k in keys],
                       {names.get(m, m): float(tp.measures[m].granularity) for m in measures}, db,
                       per_key=[names.get(k, k) for k in per_key])
        pol.write_text(_policy(policy, table, measures, per_key))
        with connect(db, pol, rho=args.rho) as con:
            session = con.session
            session.ledger.close()  # the real policy's ledger, with the walls the real session would have
            total_rho, total_delta = policy.budget.walls(session.analyst)
            session.ledger = Ledger(ledger_path(policy), session.analyst, total_rho, policy.budget.dataset_rho,
                                    total_delta=total_delta, dataset_delta=policy.budget.dataset_delta)
            columns = {**fields, **{m: f"m_{m}" for m in measures}}
            steps = {**{f: Fraction(1) for f in fields}, **{m: tp.measures[m].granularity for m in measures}}
            report = release(con, tp.name, columns, target, share, at_rho,
                             lambda name, value: _whole(value, steps[name]))
    report["table"] = table
    report["grouping"] = keys
    for f, title in _TITLES.items():
        report["measures"][f].update(title=title, name=f"{f} = ")
    # r (quantile_rows): the median of the units' most rows in one group, a candidate already released (no
    # more ρ): half the units have all their rows of a group in a quantile's sample, which runs at ε/r
    rows = report["measures"]["row_threshold"]["candidates"]
    report["measures"]["quantile_rows"] = {**recommend([dict(c) for c in rows], Fraction(1, 2)), "name": "quantile_rows = ", "share": 0.5,
                                           "title": "quantile_rows r = the median of the units' most rows in one group"}
    fields["quantile_rows"] = "rows"
    for k in per_key:  # r per key column: the median of the units' most rows in one group of k alone (released above)
        v = report["measures"][f"{RBY}.{k}"]
        report["measures"][f"{RBY}.{k}"] = {**recommend(v["candidates"], Fraction(1, 2)), "name": f"{RBY} {k} = ",
                                           "share": 0.5, "title": f"{RBY} {k} (r_C) = the median of the units' most rows "
                                                                  f"in one group of {k}"}
    kappa = report["measures"]["max_groups"]["recommended"]
    for k in per_key:
        v = report["measures"][f"{BY}.{k}"]
        v.update(title=f"{BY} {k} (kappa_C) = the quantile of the units' number of distinct {k} values",
                 name=f"{BY} {k} = ")
        if kappa is not None and v["recommended"] is not None and v["recommended"] > kappa:
            v["recommended"] = kappa  # post-processing: a set's κ_C is at most κ (policy/keys_loader.py)
    return finish(args, report, Path(policy.path or ""), table, tuple(fields))


def _whole(value: Any, step: Fraction) -> int | float:
    """A released quantile of a per-unit column as the statistic: its whole number of ``step``s
    (the hash's fraction dropped), at least one step."""
    units = max(1, math.floor(Fraction(str(value)) / step)) if value is not None else 1
    t = units * step
    return int(t) if t.denominator == 1 else float(t)


def _policy(policy: Policy, table: str, measures: list[str], per_key: list[str]) -> str:
    """The per-unit table's policy: one row per unit, a column per value (thresholds unused:
    only quantiles are asked), each measure at its own granularity."""
    tp = policy.tables[table]
    name = json.dumps(tp.name)  # the same name: the charge's policy terms are the table's (ρ per unit, unsplit)
    lines = ["[budget]", f"default_rho = {float(policy.budget.default_rho)!r}", "total_rho = 1e9",
             f"[tables.{name}]", 'privacy_unit = "unit"', f"[tables.{name}.measures]",
             "groups = { threshold = 1, granularity = 0.001 }", "rows = { threshold = 1, granularity = 0.001 }",
             *(f"{json.dumps(c + k)} = {{ threshold = 1, granularity = 0.001 }}" for k in per_key for c in ("groups_", "rows_"))]
    for m in measures:  # read at a thousandth of the measure's granularity: the hash's fraction is below it
        g = tp.measures[m].granularity / 1000
        lines.append(f"m_{m} = {{ threshold = {json.dumps(float(g * 1000))}, granularity = {json.dumps(float(g))} }}")
    return "\n".join(lines) + "\n"

