"""Result and Receipt values: what a query returns to every face (DB-API, CLI, REPL)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpsql.privacy.budget import fmt, fmt_down, fmt_up


@dataclass(frozen=True)
class NoiseTerm:
    """One noisy primitive of a query: its share of the budget and its noise scale.

    ``sensitivity`` and ``sigma`` are in the measure's own units; ``sensitivity`` lists the
    distinct values over the query's cells (several when per-group thresholds apply).
    """

    aggregate: str
    rho: Fraction
    sensitivity: tuple[float, ...]
    sigma: tuple[float, ...]
    moe95: tuple[float, ...]
    mechanism: str = "discrete_gaussian"
    epsilon: Fraction | None = None  # pure-DP ε (geometric)
    #: quantiles: with probability 95% the released value's score |(1 − q)·#below − q·#above|
    #: is within this many units of the best grid value's (a bound on the score gap, not on the
    #: number of units between the two values), and the grid it is drawn from (``privacy/quantile.py``)
    rank_error95: float | None = None
    grid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "aggregate": self.aggregate,
            "mechanism": self.mechanism,
            "rho": fmt(self.rho),
            **({"epsilon": fmt_up(self.epsilon)} if self.epsilon is not None else {}),
            "sensitivity": list(self.sensitivity),
            "sigma": list(self.sigma),
            "moe95": list(self.moe95),
            **({"rank_error95": self.rank_error95, "grid": self.grid} if self.rank_error95 is not None else {}),
        }


@dataclass(frozen=True)
class ColumnError:
    """Per-row σ and 95% margin of error of one result column (None for keys, and for
    expressions whose error dpsql cannot state)."""

    column: str
    sigma: tuple[float | None, ...]
    moe95: tuple[float | None, ...]
    note: str = ""
    #: further per-row figures shown as error columns after the ± ones, as (suffix, values): a
    #: quantile's rank interval, ``(("rank_lo", ...), ("rank_hi", ...))`` (pipeline/propagate.py)
    extra: tuple[tuple[str, tuple[float | None, ...]], ...] = ()
    #: how many rows have no ± because of what their values are (a divisor within its margin of
    #: 0, a quantile's rank interval the whole group): the receipt's note (pipeline/output.py)
    flagged: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sigma": list(self.sigma), "moe95": list(self.moe95)}
        out.update({suffix: list(values) for suffix, values in self.extra})
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Receipt:
    """What a query cost and how noisy its answer is."""

    rho: Fraction
    delta: Fraction
    mechanism: str
    table: str
    noise: tuple[NoiseTerm, ...]
    columns: dict[str, ColumnError]
    policy_terms: tuple[dict[str, Any], ...]
    budget_spent: Fraction
    budget_total: Fraction
    budget_remaining: Fraction
    charge_id: int | None = None
    #: pure-DP ε of the release's noise (geometric mode): the sum of its aggregates' ε (a partition
    #: selection's is apart), per record — on a table with many rows per unit, per (unit, group)
    #: record; a unit's bound, the selection's ε included, is :attr:`epsilon_unit_bound`
    epsilon: Fraction | None = None
    selection: dict[str, Any] | None = None  # partition selection of private keys, when any
    #: what the answer's post-processing did and what its values say, in words (clamped values,
    #: negative values of quantities that cannot be negative, an exact answer of public tables)
    notes: tuple[str, ...] = ()
    #: an answer released before and shown again, charged nothing now (pipeline/reuse.py): the
    #: charge that paid for it, when, and its ρ then
    reused: dict[str, Any] | None = None

    @property
    def epsilon_unit_bound(self) -> str | None:
        """Geometric mode on a table with many rows per unit: the query's pure-ε bound for a unit,
        E(u) ≤ κ·K·ε_split + κ·ε_const + ε_sel (the sum of the policy terms' ``unit_epsilon_bound``;
        docs/privacy.md, "Pure ε per unit"), or "none (why)" when there is none. :attr:`epsilon` is
        then per (unit, group) record, not a unit's. None elsewhere: there a record is a unit."""
        bound = query_unit_epsilon(self.policy_terms)
        return None if bound is None else bound[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rho": fmt(self.rho),
            **({"epsilon": fmt_up(self.epsilon)} if self.epsilon is not None else {}),
            **unit_epsilon_fields(self.policy_terms),
            "delta": fmt_up(self.delta) if self.delta else 0,
            "mechanism": self.mechanism,
            "table": self.table,
            "noise": [n.to_dict() for n in self.noise],
            "columns": {k: v.to_dict() for k, v in self.columns.items()},
            "policy_terms": list(self.policy_terms),
            "charge_id": self.charge_id,
            **({"selection": self.selection} if self.selection else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
            **({"reused": self.reused} if self.reused else {}),
            "budget": {
                "spent": fmt(self.budget_spent),
                "remaining": fmt_down(self.budget_remaining),
                "total": fmt(self.budget_total),
            },
        }


def query_unit_epsilon(terms: tuple[dict[str, Any], ...]) -> tuple[Fraction | None, str] | None:
    """The pure-ε bound of one query for a unit, E(u) ≤ κ·K·ε_split + κ·ε_const + ε_sel: the sum of its
    terms' ``unit_epsilon_bound_exact`` (``privacy/policy_function.unit_epsilon``), as (exact, shown),
    or (None, why) when a term has none (no ``max_splits``; Gaussian thresholding at the charge). None
    when no term states one (one row per unit, or Gaussian noise): a record is then a unit."""
    stated = [t for t in terms if "unit_epsilon_bound_exact" in t]
    if not stated:
        return None
    missing = [t["unit_epsilon_bound"] for t in stated if t["unit_epsilon_bound_exact"] == "None"]
    if missing:
        return None, missing[0]
    total = sum((Fraction(t["unit_epsilon_bound_exact"]) for t in stated), Fraction(0))
    return total, fmt_up(total)


def unit_epsilon_fields(terms: tuple[dict[str, Any], ...]) -> dict[str, str]:
    """``epsilon_unit_bound`` (shown, rounded up, or "none (why)") and its exact value, for a receipt,
    an EXPLAIN or a charge whose terms state a pure-ε bound per unit; nothing otherwise."""
    bound = query_unit_epsilon(terms)
    if bound is None:
        return {}
    return {"epsilon_unit_bound": bound[1], "epsilon_unit_bound_exact": str(bound[0])}


#: the only keys :attr:`Result.timings` may hold
PUBLIC_STAGES = ("plan", "charge", "finish")


@dataclass(frozen=True)
class Result:
    """A released answer: column names and DuckDB types, noisy rows, and the receipt of its charge."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    receipt: Receipt
    #: seconds spent in the stages whose time depends on public information and noisy values
    #: only (:data:`PUBLIC_STAGES`): plan, charge, finish. The exact query, selection and noise
    #: are never timed apart — their time depends on private rows (a select stage took 0.24-0.34
    #: ms when a target row existed, 0.12-0.15 ms when not; docs/privacy.md, "Timing").
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows], "receipt": self.receipt.to_dict()}


@dataclass(frozen=True)
class Explanation:
    """What `explain` shows: nothing here is derived from private rows."""

    sql: str
    table: str
    keys: tuple[str, ...]
    public_keys: dict[str, int]
    exact_sql: str
    reference_sql: str
    noise: tuple[dict[str, Any], ...]
    rho: Fraction
    policy_terms: tuple[dict[str, Any], ...]
    finish_sql: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    selection: dict[str, Any] | None = None
    delta: Fraction = Fraction(0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "group_keys": {k: ({"public": True, "keyset_size": self.public_keys[k]} if k in self.public_keys
                               else {"public": False, "selection": self.selection}) for k in self.keys},
            "exact_sql": self.exact_sql,
            "reference_sql": self.reference_sql,
            "finish_sql": self.finish_sql,
            "rho": fmt(self.rho),
            **unit_epsilon_fields(self.policy_terms),
            "delta": float(self.delta),
            "noise": list(self.noise),
            "policy_terms": list(self.policy_terms),
            "notes": list(self.notes),
        }
