"""Pure formatting: Result / Explanation -> text or JSON. No I/O, no engine."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpsql.privacy.budget import fmt, fmt_down, fmt_up
from dpsql.pipeline.result import Explanation, Result, unit_epsilon_fields


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value)


def _moe(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def cells(result: Result, show: str = "moe") -> list[list[str]]:
    """Each row's cells as text; noisy cells as ``value ± MOE`` (95%), or ``value (σ …)``."""
    cols = list(result.columns)
    errs = result.receipt.columns
    body: list[list[str]] = []
    for r, row in enumerate(result.rows):
        line = []
        for c, value in enumerate(row):
            text = _cell(value)
            err = errs.get(cols[c])
            if err is not None and value is not None:
                if show == "moe" and err.moe95[r] is not None:
                    text += f" ± {_moe(err.moe95[r])}"
                elif show == "sigma" and err.sigma[r] is not None:
                    text += f" (σ {_moe(err.sigma[r])})"
            line.append(text)
        body.append(line)
    return body


def table(result: Result, show: str = "moe") -> str:
    """An aligned text table; noisy cells as ``value ± MOE`` (95%), or ``value (σ …)``."""
    cols = list(result.columns)
    body = cells(result, show)
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(cols)]
    numeric = [all(_is_number(row[i]) for row in result.rows) and bool(result.rows) for i in range(len(cols))]

    def render(cells: list[str]) -> str:
        return " | ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

    out = [render(cols), "-+-".join("-" * w for w in widths)]
    out += [render(b) for b in body]
    return "\n".join(out)


def footer(result: Result) -> str:
    rc = result.receipt
    n = len(result.rows)
    if rc.reused:  # released before, shown again (pipeline/reuse.py): its receipt's first note says when
        return (f"({n} row{'s' if n != 1 else ''}) {rc.notes[0]}; budget spent {fmt(rc.budget_spent)} of "
                f"{fmt(rc.budget_total)}, {fmt_down(rc.budget_remaining)} left."
                + (" ± is the 95% margin of error." if _any_margin(rc) else "")
                + "".join(f"\nNote: {note}." for note in rc.notes[1:]))
    notes: dict[str, list[str]] = {}  # an approximate ± -> its columns
    for name, e in rc.columns.items():
        if e.note.startswith("approximate"):
            notes.setdefault(e.note, []).append(name)
    cost = f"zCDP, {rc.mechanism.replace('_', ' ')}"
    if rc.selection:  # say plainly that the selection is part of the charge
        sel_rho = rc.selection["rho"]
        noise = f"{fmt(rc.rho - Fraction(sel_rho))} noise ({rc.mechanism.replace('_', ' ')}) + " if rc.noise else ""
        cost = f"zCDP: {noise}{sel_rho} partition selection, and delta={fmt_up(rc.delta)}"
    if rc.epsilon_unit_bound is not None:  # geometric, many rows per unit: the query's epsilon is not a unit's
        noise = f"the noise's epsilon={fmt_up(rc.epsilon)} per (unit, group) record, " if rc.epsilon is not None else ""
        cost += f"; pure epsilon-DP: {noise}at most {rc.epsilon_unit_bound} for a unit (E(u))"
    charged = (f"charged rho={fmt(rc.rho)} ({cost})" if rc.charge_id is not None or rc.rho else
               "free (the groups are the policy's public values: no private row read, nothing charged)")
    text = (f"({n} row{'s' if n != 1 else ''}) {charged}; "
            f"budget spent {fmt(rc.budget_spent)} of {fmt(rc.budget_total)}, {fmt_down(rc.budget_remaining)} left."
            + (" ± is the 95% margin of error." if _any_margin(rc) else ""))
    for note in sorted(notes):  # AVG's as it always read; a derived column's names the columns
        text += f"\n{'AVG columns' if 'noisy SUM / noisy COUNT' in note else ', '.join(notes[note])}: ± is {note}."
    for t in rc.noise:
        if t.rank_error95 is not None:
            text += (f"\n{t.aggregate}: one of {t.grid}, drawn by the exponential mechanism; with 95% probability "
                     f"its score |(1−q)·below − q·above| is within {fmt_up(t.rank_error95, 3)} units of the best "
                     "of them (a bound on the score gap, not on the units between the two values); a group of "
                     "fewer values than that has every grid value within the bound, so it may be answered "
                     "anywhere on the grid.")
    return text + "".join(f"\nNote: {note}." for note in rc.notes)


def _any_margin(rc: Any) -> bool:
    """Whether any column of the answer shows a ± (a query of quantiles only has none)."""
    return bool(rc.noise) and (not rc.columns or any(m is not None for e in rc.columns.values() for m in e.moe95))


def explanation(ex: Explanation) -> str:
    lines = [f"table: {ex.table}"]
    for k in ex.keys:
        if k in ex.public_keys:
            lines.append(f"group key {k}: public keyset of {ex.public_keys[k]} values (no partition selection needed)")
        elif ex.selection:
            s = ex.selection
            lines.append(f"group key {k}: private — DP partition selection ({s['method']}, counting {s['count'].replace('_', ' ')}), "
                         f"epsilon={s['epsilon']}, delta={s['delta']}, charged rho={s['rho']} and delta"
                         + (f"; each group kept at {s['per_group']}" if "per_group" in s else ""))
    lines += [f"  note: {n}" for n in ex.notes]
    delta = f", delta={fmt_up(ex.delta)}" if ex.delta else ""
    lines.append(f"rho for this query: {fmt(ex.rho)}{delta} ({len(ex.noise)} noisy aggregate(s)"
                 + (" + partition selection)" if ex.selection else ")"))
    unit_eps = unit_epsilon_fields(ex.policy_terms)
    if unit_eps:  # geometric, many rows per unit: what the query's epsilon means for a unit
        lines.append("  pure epsilon-DP (geometric): each aggregate's epsilon is per (unit, group) record; a unit's "
                     f"E(u) over this query is at most {unit_eps['epsilon_unit_bound']} (policy terms below)")
    for n in ex.noise:
        if "rank_error95" in n:
            lines.append(f"  {n['aggregate']}: exponential mechanism over {n['grid']}, rho={n['rho']} (epsilon "
                         f"{n['em_epsilon']}), 95% score gap {fmt_up(n['rank_error95'], 3)} units")
            continue
        sens = ", ".join(f"{s:g}" for s in n["sensitivity"])
        sig = ", ".join(f"{s:.4g}" for s in n["sigma"])
        moe = ", ".join(f"{s:.4g}" for s in n["moe95"])
        lines.append(f"  {n['aggregate']}: {n['mechanism'].replace('_', ' ')}, rho={n['rho']}, sensitivity {sens}, sigma {sig}, "
                     f"95% MOE {moe}")
    lines.append("policy terms added to P(r):")
    for t in ex.policy_terms:
        extra = f"  with {t['splits']}, thresholds {t['thresholds']}" if t["scale"] != "1" else ""
        lines.append(f"  + {t['rho']} * {t['scale']}{extra}")
        if "unit_bound" in t:  # many rows per unit (sql/units.py)
            of = f" (max_groups_by {t['max_groups_by']})" if "max_groups_by" in t else \
                f" ({t['max_groups_from']})" if "max_groups_from" in t else ""
            lines.append(f"    per (unit, group): a unit's P(u) sums it over its at most {t['max_groups']} groups{of}, "
                         f"at most {t['unit_bound']}")
            if "unit_epsilon_bound" in t:  # geometric mode: the pure-epsilon statement per unit (docs/privacy.md)
                lines.append(f"    pure epsilon-DP per unit (geometric): {t['unit_epsilon']}, epsilon = "
                             f"{fmt_up(Fraction(t.get('group_epsilon_exact', t['epsilon_exact'])))}, at most "
                             f"{t['unit_epsilon_bound']} (the query's epsilon is per (unit, group) record)")
            if "quantile_rows" in t:  # the r of this grouping (quantile_rows_by), its quantiles at epsilon/r
                by = f" (quantile_rows_by {t['quantile_rows_by']})" if "quantile_rows_by" in t else ""
                lines.append(f"    quantiles read at most {t['quantile_rows']} rows of a unit per group{by}")
    lines += ["", "-- exact per-group values noise is added to (runs inside the engine; its output never leaves it):",
              ex.exact_sql + ";", "",
              "-- the same values over materialised split records (paper 000 Algorithm 1), the reference:",
              ex.reference_sql + ";", "",
              "-- post-processing over the noisy cells:", ex.finish_sql + ";"]
    return "\n".join(lines)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, Fraction):
        return fmt(v)
    return str(v)


def csv_text(result: Result) -> str:
    """The answer as CSV (RFC 4180, a header line): NULL as an empty field, numbers as Python
    writes them. The ± columns are whatever the result carries (``dpsql.error_columns``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(["" if v is None else v for v in row] for row in result.rows)
    return out.getvalue()


def to_json(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, indent=2)


# --------------------------------------------------------------------------- the REPL's additions


def grid(headers: list[str], rows: list[list[Any]]) -> str:
    """An aligned text table of plain values, drawn like :func:`table` (numbers to the right)."""
    body = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(_is_number(r[i]) for r in rows) for i in range(len(headers))]

    def render(cells: list[str]) -> str:
        return " | ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

    return "\n".join([render(headers), "-+-".join("-" * w for w in widths), *(render(b) for b in body)])


def status(result: Result, show: str = "moe") -> str:
    """The line under a result: :func:`footer`, saying σ instead of ± when σ is shown, and
    "nothing charged" for answers that released nothing private (settings, the schema)."""
    rc = result.receipt
    if rc.rho == 0 and not rc.reused:
        n = len(result.rows)
        return (f"({n} row{'s' if n != 1 else ''}) nothing charged; "
                f"budget spent {fmt(rc.budget_spent)} of {fmt(rc.budget_total)}, {fmt_down(rc.budget_remaining)} left."
                + "".join(f"\nNote: {note}." for note in rc.notes))
    text = footer(result)
    if show == "sigma":
        text = text.replace("± is the 95% margin of error.", "(σ …) is the standard deviation of the noise.")
    return text


def error(exc: Any, sql: str | None = None) -> str:
    """A refusal as psql shows one: the message, the SQL line with a caret under the column, the hint.

    ``exc`` carries ``code``, ``message``, ``line``, ``column`` (1-based) and ``hint``
    (a :class:`~dpsql.errors.DpsqlError`).
    """
    out = [f"{exc.code}: {exc.message}"]
    lines = (sql or "").splitlines()
    if exc.line and exc.column and 0 < exc.line <= len(lines):
        text = lines[exc.line - 1].expandtabs(1)
        col = min(exc.column, len(text) + 1) - 1
        if len(text) > 100:  # show a window around the column
            lo = max(0, col - 60)
            text, col = ("…" if lo else "") + text[lo:lo + 100], col - lo + (1 if lo else 0)
        prefix = f"LINE {exc.line}: "
        out += [prefix + text, " " * (len(prefix) + col) + "^"]
    if exc.hint:
        out.append(f"Hint: {exc.hint}")
    return "\n".join(out)


def timing(seconds: float, stages: dict[str, float] | None = None) -> str:
    """``Time: 12.3 ms (plan 1.0, execute 9.1, …)``."""
    text = f"Time: {seconds * 1000:.1f} ms"
    if stages:
        text += " (" + ", ".join(f"{k} {v * 1000:.1f}" for k, v in stages.items()) + ")"
    return text


def charge_dict(c: Any) -> dict[str, Any]:
    out = {"id": c.id, "time": c.time, "analyst": c.analyst, "session": c.session, "query": c.query,
           "mechanism": c.mechanism, "rho": fmt(c.rho), "delta": fmt_up(c.delta) if c.delta else 0,
           "policy_terms": list(c.policy_terms)}
    if c.epsilon is not None:
        out["epsilon"] = fmt_up(c.epsilon)
    out.update(unit_epsilon_fields(tuple(c.policy_terms)))  # many rows per unit: the epsilon above is per (unit, group)
    return out


def history(charges: list[Any]) -> str:
    """The ledger's charges as a table: id, time, analyst, mechanism, rho, query."""
    import time as _time

    rows = [[str(c.id), _time.strftime("%Y-%m-%d %H:%M:%S", _time.localtime(c.time)), c.analyst, c.mechanism,
             fmt(c.rho), " ".join(c.query.split())[:70]] for c in charges]
    head = ["id", "time", "analyst", "mechanism", "rho", "query"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, widths)), "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)
