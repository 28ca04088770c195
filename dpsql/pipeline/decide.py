"""Phase 1 of a query: what it will cost and release, decided from public information only.

The session (:meth:`dpsql.session.Session.decide`) plans the query, asks the public domain for
the keys' values and the engine to check the exact SQL on an empty schema; this module holds
the pure parts: each primitive's share of the budget (:func:`allocations`), the query's whole
charge and its policy terms (:func:`decision`), and refuses (DP207) an answer too large to
release, or (DP210, :mod:`dpsql.pipeline.memory`) one whose worst case does not fit the memory a
query may take. Its output, :class:`Decision`, is everything phases 2-3 need: they read no setting,
policy field or table that phase 1 did not already fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpsql.pipeline import domain, memory
from dpsql.pipeline.domain import Blocks
from dpsql.errors import QueryCostCapError, QueryRefused
from dpsql.policy.model import Policy, Selection
from dpsql.privacy.allocate import EXPONENTIAL, GEOMETRIC, Allocation, Settings, allocate, scale_fits
from dpsql.privacy.budget import fmt, fmt_up, parse_rho
from dpsql.privacy.policy_function import unit_epsilon
from dpsql.sql.plan import Plan, Primitive, count_sensitivity
from dpsql.sql.session_cap import SESSION_CAP

#: the count of units taken from truncated-geometric partition selection (paper 002 Theorem 6)
TSGD = "truncated_geometric"


@dataclass(frozen=True)
class Decision:
    """What phase 1 decided about one query, from public information only."""

    sql: str
    plan: Plan
    allocs: tuple[Allocation, ...]
    selection: Selection | None
    rho: Fraction  # the whole charge: noise and selection
    delta: Fraction
    epsilon: Fraction | None
    mechanism: str
    terms: tuple[dict[str, Any], ...]
    query: str  # the exact SQL, checked on the schema's empty twin
    blocks: Blocks  # the public keys' values
    max_released: int  # private-key groups shown at most (MAX_CELLS over the public cells, and memory)

    @property
    def reads_rows(self) -> bool:
        """Whether phases 2-4 read private rows and charge: not for a query with no aggregate and
        public keys only (SELECT state FROM t GROUP BY state): its answer is the public keysets'
        values (``blocks``), so the exact query does not run and the ledger records nothing."""
        return bool(self.plan.primitives) or self.selection is not None


def decision(sql: str, plan: Plan, allocs: list[Allocation], policy: Policy, blocks: Blocks, query: str) -> Decision:
    """The charge of a planned query and the size of its answer.

    Raises:
        QueryRefused: DP207 when the public keys alone make more than :data:`dpsql.pipeline.domain.MAX_CELLS` groups;
            DP210 when they do not fit the memory budget (:func:`dpsql.pipeline.memory.bound`).
    """
    sel = policy.selection if plan.private_keys else None
    rho_sel, delta_q = selection_cost(plan, sel) if sel else (Fraction(0), Fraction(0))
    rho_q = sum((a.rho for a in allocs), Fraction(0)) + rho_sel
    eps_q = (sum((a.epsilon or Fraction(0) for a in allocs), Fraction(0))
             if any(a.epsilon is not None for a in allocs) else None)
    public_cells = math.prod(len(rows) for _, rows in blocks)
    if public_cells > domain.MAX_CELLS:
        raise QueryRefused(f"the public keys {', '.join(k.label for k in plan.keys if k.public)} make {public_cells} "
                           f"groups, more than {domain.MAX_CELLS}", code="DP207", hint="group by fewer keys or filter with WHERE.")
    max_released = memory.bound(plan, policy, public_cells, domain.MAX_CELLS // max(public_cells, 1))
    return Decision(sql=sql, plan=plan, allocs=tuple(allocs), selection=sel, rho=rho_q, delta=delta_q, epsilon=eps_q,
                    mechanism=next((a.mechanism for a in allocs if a.mechanism not in (TSGD, EXPONENTIAL)),
                                   next((a.mechanism for a in allocs if a.mechanism != TSGD),
                                        TSGD if allocs else "partition_selection" if sel else "none")),
                    terms=policy_terms(plan, allocs, policy), query=query, blocks=blocks,
                    max_released=max_released)


def check_query_cap(d: Decision, policy: Policy) -> None:
    """Refuse (DP303), before anything runs, a query whose charge would pass the policy's
    ``budget.max_query_rho``: one ``SET dpsql.moe`` or ``rho`` cannot spend a large share of a
    budget in one answer. The cost is public (the settings, the policy): it is stated."""
    cap = policy.budget.max_query_rho
    if cap is not None and d.rho > cap:
        raise QueryCostCapError(f"this query would cost rho={fmt_up(d.rho)}, more than the policy's per-query cap "
                                f"max_query_rho={fmt(cap)}; nothing was charged",
                                hint="ask for less: a smaller SET dpsql.rho, a larger SET dpsql.moe (a wider margin), "
                                     "fewer aggregates, or ask the data owner to raise budget.max_query_rho.")


def settings_for(settings: Settings, rho: Any) -> Settings:
    """The connection's settings, with a per-call ρ when one is given."""
    return settings if rho is None else replace(settings, rho=parse_rho(rho))


def allocations(plan: Plan, settings: Settings, policy: Policy) -> list[Allocation]:
    """Each primitive's mechanism and budget (``privacy/allocate.py``; docs/privacy.md).

    With truncated-geometric selection on private keys only, the count of units is the
    selection's own noisy count (paper 002 Theorem 6): it costs nothing more.

    ``settings.rho`` is the noise's budget. A partition selection (GROUP BY a private key)
    costs its ε²/2 on top, and the receipt, EXPLAIN and the prompt show the total and the
    breakdown: making ``rho`` the total would refuse every private-key query at the default
    ρ = 0.1 (below the default selection's 0.125)."""
    shared = shared_count(plan, policy)
    rest = tuple(p for p in plan.primitives if p != shared)
    power = {"sum": 1, "sumsq": 2}  # a sum of split squares: each split adds at most T² (sql/spread.py)
    sens = {p: (plan.table.measure(p.column).max_threshold ** power[p.kind] if p.kind in power
                else count_sensitivity(plan.table, p)) for p in rest}
    gran = {p: (plan.table.measure(p.column).granularity ** power[p.kind] if p.kind in power else Fraction(1)) for p in rest}
    made = allocate(rest, settings, sens, gran) if rest else []
    for a in made:
        if not scale_fits(a, sens[a.primitive]):
            raise QueryRefused(f"the noise {a.primitive.label} needs at this rho is beyond what dpsql can draw exactly "
                               f"(a scale of 2^57 or more, in the measure's granularity units)", code="DP212",
                               hint="ask at a larger rho, or ask the data owner for a smaller threshold for this measure "
                                    "(the policy's thresholds and rho alone decide this).")
    allocs = iter(made)
    return [Allocation(p, TSGD, Fraction(0)) if p == shared else quantile_rows(plan, next(allocs)) for p in plan.primitives]


def quantile_rows(plan: Plan, a: Allocation) -> Allocation:
    """A quantile on a table with many rows per unit: each kept (unit, group) adds up to r =
    ``quantile_rows`` values to its group's histogram (sql/units.py), so one unit moves a score by
    up to r·Δ; the exponential mechanism runs at ε/r, which is ε-DP per group again and charged the
    same ρ per group (docs/privacy.md, "Many rows per unit")."""
    if a.mechanism != EXPONENTIAL or not plan.table.many_rows:
        return a
    assert a.em_epsilon is not None
    return replace(a, em_epsilon=a.em_epsilon / plan.table.quantile_rows)


def shared_count(plan: Plan, policy: Policy) -> Primitive | None:
    """The count of units that truncated-geometric selection releases itself, if it can stand
    for the query's COUNT (private keys only, counting units)."""
    sel = policy.selection
    count = Primitive("count")
    if (plan.private_keys and len(plan.private_keys) == len(plan.keys) and sel.method == "truncated_geometric"
            and sel.count == "units" and count in plan.primitives):
        return count
    return None


def selection_cost(plan: Plan, sel: Selection) -> tuple[Fraction, Fraction]:
    """(ρ, δ) a query's partition selection is charged: ε²/2 and δ, as (ε, δ)-DP is δ-approximate
    ε²/2-zCDP; for units in κ = max_groups > 1 groups, the charge of the method
    :func:`dpsql.privacy.selection_gauss.plan` picks (π_opt at (ε/κ, δ/κ): ε²/2 and δ; discrete
    Gaussian thresholding: κ/(2σ²) and δ_thr). Public: the policy and the table only.

    Raises:
        QueryRefused: DP213 when the policy's (ε, δ, κ) ask a selection phase 1 cannot plan in
            bounded time and memory, or the release could not run (π_opt's exact table past its
            cap): free, nothing read (docs/partition_selection.md, "Bounded in phase 1")."""
    k = plan.table.max_groups or 1
    if k > 1:
        from dpsql.privacy.selection_gauss import plan as kappa_plan, refusal

        if (why := refusal(sel.epsilon, sel.delta, k, sel.kappa_rule)) is not None:
            raise _unplannable(why)
        how = kappa_plan(sel.epsilon, sel.delta, k, sel.kappa_rule)
        return how.rho, how.delta
    if sel.method == "truncated_geometric":
        from dpsql.privacy.tsgd import refusal as tsgd_refusal

        if (why := tsgd_refusal(sel.epsilon, sel.delta)) is not None:
            raise _unplannable(why)
    if sel.method == "optimal":
        from dpsql.privacy.selection import table_fits

        if not table_fits(sel.epsilon, sel.delta):
            raise _unplannable(f"selection.epsilon = {float(sel.epsilon):.3g} is outside what the exact table of the optimal "
                               "partition selection handles (more than 250,000 steps when small, above 65,536)")
    return sel.epsilon**2 / 2, sel.delta


def _unplannable(why: str) -> QueryRefused:
    return QueryRefused(f"this query's partition selection cannot run: {why}", code="DP213",
                        hint="the data owner changes selection.epsilon (the message says which way), selection.delta or "
                             "max_groups in the policy; or group by a key with a public keyset. The policy alone decides "
                             "this: nothing was read or charged.")


def selection_params(plan: Plan, policy: Policy) -> dict[str, Any]:
    """The public parameters of a query's partition selection (receipt and explain); counting
    split rows, also the bound K on a record's splits and the (Kε, δ_K) a record of K splits
    gets by group privacy (:func:`split_selection_delta`)."""
    sel = policy.selection
    out: dict[str, Any] = {"keys": [k.label for k in plan.private_keys], "method": sel.method, "count": sel.count,
                           "epsilon": fmt_up(sel.epsilon), "delta": fmt_up(sel.delta),
                           "rho": fmt(selection_cost(plan, sel)[0])}
    if splits_selected(plan, policy):
        k = plan.table.max_splits
        out["max_splits"] = k
        out["group_privacy"] = ("none: no max_splits bounds a record's splits" if k is None else
                                f"a record of up to {k} splits: epsilon_K = {fmt_up(k * sel.epsilon)}, "
                                f"delta_K = delta*(e^(K*epsilon)-1)/(e^epsilon-1) = {_up(split_selection_delta(sel, k))}")
    if (plan.table.max_groups or 1) > 1:  # units in up to κ groups: the method and its parameters (release.select_groups)
        from dpsql.privacy.selection_gauss import plan as kappa_plan

        how = kappa_plan(sel.epsilon, sel.delta, plan.table.max_groups, sel.kappa_rule)
        out.update(how.params(sel.epsilon, sel.delta))
        if how.method == "gaussian":
            out["delta_charged"] = fmt_up(how.delta)
    return out


def splits_selected(plan: Plan, policy: Policy) -> bool:
    """Whether the query's partition selection counts split rows (a record moves it by its splits)."""
    return bool(plan.private_keys) and policy.selection.count == "split_rows" and bool(plan.split_measures)


def split_selection_delta(sel: Selection, max_splits: int) -> float:
    """δ_K of (ε, δ) partition selection for a record of up to K = ``max_splits`` split rows.

    Group privacy: a record of k splits moves the selection's count by k, i.e. k neighbouring
    steps, each (ε, δ)-DP. By induction P[M(x₀) ∈ S] ≤ e^ε·P[M(x₁) ∈ S] + δ ≤ … gives
    (kε, δ·Σ_{i<k} e^{iε}) = (kε, δ·(e^{kε} − 1)/(e^ε − 1)) (Vadhan 2017, "The Complexity of
    Differential Privacy", Lemma 2.2 and its proof; docs/privacy.md, "Partition selection").
    Increasing in k, so K bounds every record. Float, rounded up by a margin far above its
    error; ``inf`` when e^{Kε} overflows."""
    eps = float(sel.epsilon)
    try:
        return float(sel.delta) * math.expm1(max_splits * eps) / math.expm1(eps) * (1 + 1e-9)
    except OverflowError:
        return math.inf


def check_split_selection(plan: Plan, policy: Policy, delta_wall: Fraction | None) -> None:
    """Refuse (DP209) partition selection on split rows whose group-privacy δ_K is unbounded (no
    ``max_splits``) or not below the analyst's δ wall (and 1): a record of k splits gets δ_k =
    δ(e^{kε} − 1)/(e^ε − 1), which reaches 1 from k ≈ 27 at ε = 0.5, δ = 1e-6 — no guarantee
    for exactly the records the option exists for (issue 29, finding 6). Public information only."""
    if not splits_selected(plan, policy):
        return
    sel, k = policy.selection, plan.table.max_splits
    if k is None:
        raise QueryRefused(f"partition selection counts split rows ([selection] count = \"split_rows\") but table "
                           f"{plan.table.name!r} sets no max_splits: a record of k splits gets delta*(e^(k*epsilon)-1)/"
                           "(e^epsilon-1), which reaches 1 for large k, so no record's guarantee would be bounded",
                           code="DP209", hint="the data owner must set max_splits for the table, or count units "
                           "([selection] count = \"units\").")
    wall = min(1.0, float(delta_wall)) if delta_wall is not None else 1.0
    dk = split_selection_delta(sel, k)
    if dk >= wall:
        raise QueryRefused(f"partition selection on split rows with max_splits = {k} gives a record of {k} splits "
                           f"delta_K = {_up(dk)} (epsilon_K = {fmt_up(k * sel.epsilon)}), not below the delta wall "
                           f"{wall:.3g}", code="DP209", hint="the data owner must lower max_splits or selection.delta "
                           "or epsilon, or count units ([selection] count = \"units\").")


def _up(x: float) -> str:
    """A δ_K for people, rounded up (``inf`` when it overflowed)."""
    return fmt_up(x) if math.isfinite(x) else "inf"


def policy_terms(plan: Plan, allocs: list[Allocation], policy: Policy) -> tuple[dict[str, Any], ...]:
    """The terms this query adds to the public policy function P(r) (paper 000 Lemma 5.1,
    Lemma 5.6, Table 3): Σ ρ_sum · |A(r)|² + Σ ρ_count. A pure ε-DP release enters as its
    zCDP equivalent ε²/2; a record with k splits then pays (kε)²/2 (group privacy).

    Partition selection (ε, δ) enters as ρ = ε²/2 and δ. Counting units it is the same
    for every record; counting split rows, a record with k = |A(r)| splits moves a count by
    k and pays (kε, δ·(e^(kε) − 1)/(e^ε − 1)) by group privacy (:func:`split_selection_delta`),
    i.e. ε²/2·|A(r)|² and that δ; phase 1 refuses it unless max_splits bounds k (DP209)."""
    split = ("sum", "sumsq")  # both pay ρ·|A(r)|²: a split adds at most T, or T² to the squares
    sum_rho = sum((a.rho for a in allocs if a.primitive.kind in split), Fraction(0))
    count_rho = sum((a.rho for a in allocs if a.primitive.kind not in split), Fraction(0))  # counts and quantiles
    sel = policy.selection if plan.private_keys else None
    split_selection = sel is not None and splits_selected(plan, policy)
    terms: list[dict[str, Any]] = []
    split_rho = sum_rho + (sel.epsilon**2 / 2 if split_selection else 0)
    pure = policy.mechanism == GEOMETRIC  # every release pure ε-DP: counts and sums geometric, quantiles at their ε
    if split_rho:
        thresholds: dict[str, Any] = {}
        for name in plan.split_measures:
            m = plan.table.measure(name)
            thresholds[name] = m.display(m.threshold)
            if m.override:
                thresholds[f"{name} by {m.override.key}"] = {str(k): m.display(v) for k, v in m.override.thresholds.items()}
        term: dict[str, Any] = {"rho": fmt(split_rho), "rho_exact": str(split_rho), "scale": "|A(r)|^2",
                                "table": plan.table.name, "measures": list(plan.split_measures),
                                "thresholds": thresholds,
                                "splits": "|A(r)| = max(1, " + ", ".join(f"ceil(|{n}|/T({n}))" for n in plan.split_measures) + ")"}
        if split_selection:
            term.update({"delta_exact": str(sel.delta), "delta_epsilon": str(sel.epsilon),
                         "delta_scale": "(exp(|A(r)|*epsilon)-1)/(exp(epsilon)-1)"})
        if plan.table.max_splits:
            term["max_splits"] = plan.table.max_splits
        if pure:  # geometric mode: the ε a split pays, kε for k splits (docs/privacy.md, "Pure ε per unit")
            term["epsilon_exact"] = str(_eps(allocs, True) + (sel.epsilon if split_selection else 0))
        terms.append(term)
    rho_sel, delta_sel = selection_cost(plan, sel) if sel is not None else (Fraction(0), Fraction(0))
    const_rho = count_rho + (rho_sel if sel is not None and not split_selection else 0)
    if const_rho:
        term = {"rho": fmt(const_rho), "rho_exact": str(const_rho), "scale": "1", "table": plan.table.name}
        if sel is not None and not split_selection:
            term["delta_exact"] = str(delta_sel)
        if pure:
            term["epsilon_exact"] = str(_eps(allocs, False))
        terms.append(term)
    if plan.table.many_rows:
        quantiles = any(p.kind == "quantile" for p in plan.primitives)
        eps_sel = _selection_epsilon(plan, sel) if sel is not None and not split_selection else Fraction(0)
        return tuple(_per_unit(plan.table, t, rho_sel, quantiles, eps_sel) for t in terms)
    return tuple(terms)


def _eps(allocs: list[Allocation], split: bool) -> Fraction:
    """Σ ε of the pure-ε releases of one shape: split (sums, row counts) or constant (counts of units,
    COUNT(DISTINCT col), quantiles)."""
    return sum((a.epsilon for a in allocs if a.epsilon is not None and (a.primitive.kind in ("sum", "sumsq")) == split),
               Fraction(0))


def _selection_epsilon(plan: Plan, sel: Selection) -> Fraction | None:
    """The ε of a units-counting selection's (ε, δ)-DP per unit: π_opt (at (ε/κ, δ/κ) per group for
    κ > 1: basic composition) and Gaussian thresholding calibrated as the paper does are (ε, δ)-DP;
    Gaussian thresholding at the charge (``kappa_rule = "charge"``) is only δ-approximate
    κ/(2σ²)-zCDP: no ε to state (None)."""
    k = plan.table.max_groups or 1
    if k == 1:
        return sel.epsilon
    from dpsql.privacy.selection_gauss import plan as kappa_plan

    how = kappa_plan(sel.epsilon, sel.delta, k, sel.kappa_rule)
    return sel.epsilon if how.method == "optimal" or sel.kappa_rule == "paper" else None


def _per_unit(table: Any, term: dict[str, Any], rho_sel: Fraction, quantiles: bool = False,
              eps_sel: Fraction | None = Fraction(0)) -> dict[str, Any]:
    """A term of a table with many rows per unit (sql/units.py) is per (unit, group) record: the
    unit's loss P(u) sums it over the at most κ groups it keeps (docs/privacy.md, "Many rows per
    unit"), so its bound is κ·K²·ρ for a split term (K = max_splits; none without it), κ·ρ for
    counts of units. A partition selection (units counted) costs a unit at most its charge in all
    (:func:`selection_cost`): π_opt keeps each of its ≤ κ groups at (ε/κ, δ/κ), and basic
    composition gives (ε, δ); Gaussian thresholding's κ/(2σ²) covers a shift in ≤ κ groups."""
    k, rho = table.max_groups, Fraction(term["rho_exact"])
    if term["scale"] != "1":
        bound = k * table.max_splits**2 * rho if table.max_splits else None
    else:
        bound = k * (rho - rho_sel) + rho_sel
    out = {**term, "max_groups": k, "per": "unit and group: P(u) sums it over the unit's groups",
           "unit_bound": "none (no max_splits)" if bound is None else fmt(bound), "unit_bound_exact": str(bound)}
    if term["scale"] == "1":
        out["group_rho_exact"] = str(rho - rho_sel)  # paid in each group; the selection's part once
    if "epsilon_exact" in term:  # geometric mode: the pure-ε statement per unit, E(u) (docs/privacy.md)
        out.update(unit_epsilon(table.max_groups, table.max_splits, term, eps_sel))
    if table.max_groups_set == (SESSION_CAP,):  # κ is the session's SET dpsql.max_groups
        out["max_groups_from"] = SESSION_CAP
    elif table.max_groups_set:  # κ is the declared κ_C of this set of key columns (max_groups_by)
        out["max_groups_by"] = " × ".join(table.max_groups_set)  # several: κ is the product of theirs
    if quantiles and term["scale"] == "1":  # r: the rows a quantile samples per (unit, group), in ε/r
        out["quantile_rows"] = table.quantile_rows
        if table.quantile_rows_set:
            out["quantile_rows_by"] = table.quantile_rows_set[0]
    return out


def selection_info(d: Decision, policy: Policy, released: list[tuple[Any, ...]] | None) -> dict[str, Any] | None:
    """The receipt's account of partition selection: its parameters and how many groups it released."""
    if released is None:
        return None
    info = {**selection_params(d.plan, policy), "released_groups": len(released)}
    if len(released) == d.max_released:
        info["note"] = (f"at most {d.max_released} groups are shown (dpsql's limit of {domain.MAX_CELLS} cells, "
                        "and of the memory a query may take); more may have been selected")
    return info

