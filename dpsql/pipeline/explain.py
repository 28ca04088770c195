"""EXPLAIN: what a query would cost and release, and the SQL it would run — from public
information only, charging nothing and reading no private row."""

from __future__ import annotations

import math
from fractions import Fraction

from dpsql.pipeline import memory
from dpsql.pipeline.decide import TSGD, policy_terms, selection_cost, selection_params
from dpsql.pipeline.domain import MAX_CELLS, PublicDomain
from dpsql.policy.model import Policy
from dpsql.privacy.allocate import EXPONENTIAL, Allocation
from dpsql.privacy.budget import fmt, fmt_up
from dpsql.privacy.mechanisms import discrete_laplace_variance
from dpsql.privacy.selection_analysis import midpoint
from dpsql.privacy.selection_gauss import plan as kappa_plan
from dpsql.privacy.tsgd import tsgd_threshold
from dpsql.pipeline.release import quantile_term
from dpsql.pipeline.result import Explanation
from dpsql.sql.plan import Plan
from dpsql.sql.rewrite import exact_sql, reference_sql


def explain(sql: str, plan: Plan, allocs: list[Allocation], policy: Policy, domain: PublicDomain,
            schema: dict[str, str]) -> Explanation:
    """The explanation of a planned query: its noise per aggregate, its partition selection,
    its public keysets' sizes, its policy terms, its exact, reference and finish SQL."""
    noise = []
    for a in allocs:
        p = a.primitive
        if a.mechanism == TSGD:
            sel = policy.selection
            noise.append({"aggregate": p.label, "mechanism": TSGD, "rho": "0 (the partition selection's noisy count)",
                          "sensitivity": [1.0], "sigma": [math.sqrt(discrete_laplace_variance(1 / sel.epsilon))],
                          "moe95": [float(tsgd_threshold(sel.epsilon, sel.delta))]})
            continue
        if a.mechanism == EXPONENTIAL:
            noise.append({**quantile_term(a, plan).to_dict(), "em_epsilon": fmt_up(a.em_epsilon)})
            continue
        m = plan.table.measure(p.column) if p.kind in ("sum", "sumsq") and p.column else None
        power = 2 if p.kind == "sumsq" else 1  # a split adds at most T² to a sum of squares, as released
        g = m.granularity ** power if m else Fraction(1)
        sens = sorted({t ** power for t in m.thresholds()}) if m else [1]
        entry = {"aggregate": p.label, "mechanism": a.mechanism, "rho": fmt(a.rho),
                 "sensitivity": [float(s * g) for s in sens],
                 "sigma": [a.sigma(s) * float(g) for s in sens],
                 "moe95": [a.moe(s) * float(g) for s in sens]}
        if a.epsilon is not None:
            entry["epsilon"] = fmt_up(a.epsilon)
        noise.append(entry)
    public = {k.label: len(domain.keyset(plan, k)) for k in plan.keys if k.public}
    notes = ["every key of the public keysets is returned (empty groups as noise on zero); other keys are dropped"] if public else []
    if not plan.primitives and not plan.private_keys:
        notes.append("no aggregate and public keys only: answered from the policy's public values, no private row is read "
                     "and nothing is charged")
    selection = None
    rho_sel = Fraction(0)
    delta_sel = Fraction(0)
    if plan.private_keys:
        sel = policy.selection
        rho_sel, delta_sel = selection_cost(plan, sel)
        k = plan.table.max_groups or 1  # many rows per unit: the method selection_gauss.plan picks
        selection = {**selection_params(plan, policy), "midpoint": midpoint(sel.epsilon / k, sel.delta / k)}
        how = "paper 002 Theorem 1" + (f", at (epsilon/{k}, delta/{k})" if k > 1 else "")
        if selection.get("kappa_method") == "gaussian":
            selection["midpoint"] = kappa_plan(sel.epsilon, sel.delta, k, sel.kappa_rule).gaussian_midpoint
            how = f"Gaussian thresholding for units in up to {k} groups, paper 002 section 5"
        notes.append(f"groups of {', '.join(k.label for k in plan.private_keys)} are released by DP partition selection "
                     f"({how}): a group with n {'units' if sel.count == 'units' else 'split rows'} "
                     f"is released with probability pi(n); pi reaches 1/2 at n = {selection['midpoint']}")
    cells = max(math.prod(len(rows) for _, rows in domain.blocks(plan)), 1)
    shown = memory.bound(plan, policy, cells, MAX_CELLS // cells)  # DP210 as the query itself would be
    if plan.private_keys and shown < MAX_CELLS // cells:
        notes.append(f"at most {shown} groups of {', '.join(k.label for k in plan.private_keys)} are shown"
                     + (" per group of the public keys" if public else "")
                     + ": what the memory a query may take holds (limits.query_memory_mib)")
    public_joins = [j for j in plan.joins if j.table not in policy.tables]
    if public_joins:
        notes.append("joined public tables: " + ", ".join(f"{j.table} ({j.side} JOIN on its key {j.key})" for j in public_joins)
                     + "; each private row meets at most one of their rows, so nothing costs more")
    for j in (j for j in plan.joins if j.table in policy.tables):  # scopes.add_unit_join
        notes.append(f"joined private table: {j.table} on the privacy units ({plan.table.privacy_unit} = {j.table}.{j.key}); "
                     f"every joined row belongs to the unit both of its rows hold, at most {plan.table.max_groups} groups each")
    return Explanation(sql=sql, table=plan.table.name, keys=tuple(k.label for k in plan.keys), public_keys=public,
                       exact_sql=exact_sql(plan, schema), reference_sql=reference_sql(plan, schema),
                       selection=selection, delta=delta_sel if plan.private_keys else Fraction(0),
                       noise=tuple(noise), rho=sum((a.rho for a in allocs), Fraction(0)) + rho_sel,
                       policy_terms=policy_terms(plan, allocs, policy),
                       finish_sql=plan.finish.sql("duckdb", pretty=False), notes=tuple(notes))
