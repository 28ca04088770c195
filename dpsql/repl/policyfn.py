"""The public policy function P(r) of what a connection has released, as text.

Each charged query adds terms (paper 000 Lemma 5.1, Table 3): ρ_q·|A_q(r)|² for its SUM/AVG
releases over split records, where |A_q(r)| = max(1, ceil(|r(m)|/T(m)) over the query's
measures m) (capped at max_splits), and ρ'_q for its counts. So

    P(r) = Σ_i ρ_i·|A_i(r)|² + Σ_j ρ_j

Terms over the same measures and thresholds are merged (their ρ add up). P(r) is evaluated
only for a hypothetical record the analyst types — never for an actual record: its value would
reveal the record's measures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..ledger import Charge, fmt


@dataclass(frozen=True)
class SplitTerm:
    """ρ·|A(r)|² for releases that split records on ``measures``."""

    measures: tuple[str, ...]
    thresholds: tuple[tuple[str, Any], ...]  # the term's thresholds, as sorted items
    max_splits: int | None
    rho: Fraction


@dataclass(frozen=True)
class TableFunction:
    """P(r) for a record of one table."""

    table: str
    split_terms: tuple[SplitTerm, ...]
    unsplit_rho: Fraction
    queries: int


def collect(charges: Iterable[Charge]) -> list[TableFunction]:
    """Merge the policy terms of ``charges`` into one P(r) per table (tables in first-use order)."""
    split: dict[str, dict[tuple[Any, ...], Fraction]] = {}
    unsplit: dict[str, Fraction] = {}
    queries: dict[str, int] = {}
    for charge in charges:
        for table in {t["table"] for t in charge.policy_terms}:
            queries[table] = queries.get(table, 0) + 1
        for t in charge.policy_terms:
            table, rho = t["table"], Fraction(t["rho"])
            unsplit.setdefault(table, Fraction(0))
            split.setdefault(table, {})
            if t["scale"] == "1":
                unsplit[table] += rho
            else:
                key = (tuple(t["measures"]), _freeze(t["thresholds"]), t.get("max_splits"))
                split[table][key] = split[table].get(key, Fraction(0)) + rho
    return [TableFunction(table, tuple(SplitTerm(k[0], k[1], k[2], r) for k, r in split[table].items()),
                          unsplit[table], queries.get(table, 0)) for table in unsplit]


def formula(fn: TableFunction) -> list[str]:
    """``P(r) = 0.2·|A1(r)|² + 0.1`` and one line defining each |A_i(r)|."""
    parts = [f"{fmt(t.rho)}·|A{i}(r)|²" for i, t in enumerate(fn.split_terms, 1)]
    if fn.unsplit_rho:
        parts.append(fmt(fn.unsplit_rho))
    lines = [f"P(r) = {' + '.join(parts) or '0'}"]
    for i, t in enumerate(fn.split_terms, 1):
        inner = ", ".join(f"ceil(|{m}| / {_threshold_text(t, m)})" for m in t.measures)
        text = f"max(1, {inner})"
        if t.max_splits:
            text = f"min({t.max_splits}, {text})"
        lines.append(f"  |A{i}(r)| = {text}")
    return lines


def evaluate(fn: TableFunction, record: Mapping[str, str]) -> list[str]:
    """P(r) for a hypothetical record given as ``{column: typed text}``: the |A_i(r)| and the sum.

    Raises:
        ValueError: a measure's value is not a number.
    """
    notes: list[str] = []
    sizes = [_splits(t, record, notes) for t in fn.split_terms]
    total = sum((t.rho * a * a for t, a in zip(fn.split_terms, sizes)), Fraction(0)) + fn.unsplit_rho
    parts = [f"{fmt(t.rho)}·{a * a}" for t, a in zip(fn.split_terms, sizes)]
    if fn.unsplit_rho:
        parts.append(fmt(fn.unsplit_rho))
    lines = []
    if sizes:
        lines.append("    " + ", ".join(f"|A{i}(r)| = {a}" for i, a in enumerate(sizes, 1)))
    lines.append(f"    P(r) = {' + '.join(parts) or '0'} = {fmt(total)}")
    lines += [f"    note: {n}" for n in dict.fromkeys(notes)]
    return lines


def _splits(term: SplitTerm, record: Mapping[str, str], notes: list[str]) -> int:
    thresholds = dict(term.thresholds)
    size = 1
    for m in term.measures:
        if m not in record:
            notes.append(f"{m} not given: taken as 0")
            continue
        try:
            value = Fraction(record[m])
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{m}={record[m]!r} is not a number") from None
        t = _threshold_for(m, thresholds, record, notes)
        size = max(size, math.ceil(abs(value) / t))
    return min(size, term.max_splits) if term.max_splits else size


def _threshold_for(measure: str, thresholds: dict[str, Any], record: Mapping[str, str], notes: list[str]) -> Fraction:
    default = Fraction(thresholds[measure])
    for name, per_value in thresholds.items():
        if not name.startswith(f"{measure} by "):
            continue
        key = name.split(" by ", 1)[1]
        per_value = dict(per_value)
        if key in record:
            return Fraction(per_value.get(record[key], default))
        notes.append(f"{key} not given: used the smallest threshold of {measure} (the largest |A(r)|)")
        return min([default, *(Fraction(v) for v in per_value.values())])
    return default


def _threshold_text(term: SplitTerm, measure: str) -> str:
    thresholds = dict(term.thresholds)
    text = str(thresholds[measure])
    for name, per_value in thresholds.items():
        if name.startswith(f"{measure} by "):
            key = name.split(" by ", 1)[1]
            items = list(dict(per_value).items())
            shown = ", ".join(f"{v} if {key}={k}" for k, v in items[:3]) + (", …" if len(items) > 3 else "")
            text = f"T[{text}; {shown}]"
    return text


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    return value
