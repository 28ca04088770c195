"""Phase 1 of a workload: every query planned and every refusal decided from public information.

:func:`plan` turns a :class:`~dpsql.workload.spec.Workload` into a :class:`WorkloadPlan`: each
``[[query]]`` through the session's own plan path (:meth:`dpsql.session.Session.explain`, the
same planner, allocation and policy terms as one query), each SafeTab level from its MOE target
(:func:`dpsql.workload.composition.level_budget`), then the whole charge by the composition
rules of docs/workloads.md. It reads no private row and charges nothing: the dry run prints it,
the real run (:mod:`dpsql.workload.run`) charges ``rho`` / ``delta`` once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpsql.privacy.accounting import guarantee
from dpsql.privacy.allocate import GAUSSIAN
from dpsql.privacy.budget import fmt, fmt_up
from dpsql.privacy.mechanisms import moe95_discrete_gaussian
from dpsql.workload.composition import LevelBudget, generalised_parallel, level_budget, parallel, sampling_sigma, sequential
from dpsql.workload.spec import Workload

__all__ = ["QueryPlan", "LevelPlan", "WorkloadPlan", "plan"]


@dataclass(frozen=True)
class QueryPlan:
    name: str
    sql: str
    rho: Fraction
    delta: Fraction
    noise: tuple[dict[str, Any], ...]  # per aggregate: rho, sigma, moe95 (the explanation's)
    policy_terms: tuple[dict[str, Any], ...]
    sampling_sigma: float | None = None  # random-partition part of the error, as a proportion
    part_units: int | None = None


@dataclass(frozen=True)
class LevelPlan:
    name: str
    groups: int
    budget: LevelBudget
    stage1_sigma: float
    stage1_moe95: int
    stage2_sigma: float
    stage2_moe95: int

    @property
    def separate_rho(self) -> Fraction:
        """What the level costs if every group's two stages were charged as separate queries."""
        return sequential([self.budget.group_rho] * self.groups)


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    queries: tuple[QueryPlan, ...]
    levels: tuple[LevelPlan, ...]
    rho: Fraction  # the whole charge
    delta: Fraction
    separate_rho: Fraction  # the same releases charged as separate queries
    conversion_delta: float
    epsilon_tight: float
    epsilon_analytic: float
    epsilon_pure: float | None  # SafeTab[Geometric] at the same MOE targets (levels only)
    composition: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "workload": self.name, "composition": self.composition,
            "rho": fmt(self.rho), "rho_exact": str(self.rho), "delta": fmt_up(self.delta),
            "separate_queries_rho": fmt(self.separate_rho),
            "epsilon": {"conversion_delta": self.conversion_delta, "tight": float(fmt_up(self.epsilon_tight)),
                        "analytic": float(fmt_up(self.epsilon_analytic))},
            "queries": [{"name": q.name, "sql": q.sql, "rho": fmt(q.rho), "delta": fmt_up(q.delta),
                         "noise": list(q.noise),
                         **({"sampling_sigma": q.sampling_sigma, "part_units": q.part_units}
                            if q.sampling_sigma is not None else {})} for q in self.queries],
            "levels": [{"name": lv.name, "moe_target": lv.budget.moe, "stability": lv.budget.stability,
                        "groups": lv.groups, "stage2_rho": fmt(lv.budget.stage2_rho), "rho": fmt(lv.budget.total_rho),
                        "group_rho": fmt(lv.budget.group_rho), "separate_queries_rho": fmt(lv.separate_rho),
                        "stage1_sigma": round(lv.stage1_sigma, 4), "stage1_moe95": lv.stage1_moe95,
                        "stage2_sigma": round(lv.stage2_sigma, 4), "stage2_moe95": lv.stage2_moe95,
                        "geometric_epsilon": round(lv.budget.total_epsilon, 4)} for lv in self.levels],
        }
        if self.epsilon_pure is not None:
            out["epsilon"]["pure_dp_geometric"] = round(self.epsilon_pure, 4)
        return out


def _query_plans(session: Any, workload: Workload) -> list[QueryPlan]:
    out = []
    rp = workload.random_partition
    for i, q in enumerate(workload.queries):
        settings = replace(session.default_settings(), mechanism=GAUSSIAN)
        settings = replace(settings, rho=q.rho) if q.rho is not None else replace(settings, moe={"*": q.moe})
        e = session.explain(q.sql, settings=settings)
        part = sampling = None
        if rp is not None:  # query i sees part i of k near-equal parts of the n units
            k = len(workload.queries)
            part = rp.units // k + (1 if i < rp.units % k else 0)
            sampling = sampling_sigma(rp.p, part, rp.units)
        out.append(QueryPlan(name=q.name, sql=q.sql, rho=e.rho, delta=e.delta, noise=e.noise,
                             policy_terms=e.policy_terms, sampling_sigma=sampling, part_units=part))
    return out


def _level_plans(workload: Workload) -> list[LevelPlan]:
    s = workload.safetab
    if s is None:
        return []
    out = []
    for lv in s.levels:
        b = level_budget(lv.moe, lv.stability, s.stage1_share)
        sigma1 = math.sqrt(1 / (2 * float(b.group_stage1_rho)))  # sigma^2 = 1/(2 rho), sensitivity 1
        sigma2 = math.sqrt(1 / (2 * float(b.group_stage2_rho)))
        out.append(LevelPlan(name=lv.name, groups=lv.groups, budget=b, stage1_sigma=sigma1,
                             stage1_moe95=moe95_discrete_gaussian(sigma1), stage2_sigma=sigma2,
                             stage2_moe95=moe95_discrete_gaussian(sigma2)))
    return out


def plan(session: Any, workload: Workload) -> WorkloadPlan:
    """The workload's plan and whole charge, from public information only.

    Composition (docs/workloads.md): ``[[query]]`` entries add (sequential composition), or,
    with ``[random_partition]``, each runs on its own part of a secret uniformly random
    partition and the workload costs their maximum (parallel composition, paper 001 Section 5);
    each SafeTab level costs stability x its groups' budget (paper 004 Lemma 10) and the levels
    add (Theorem 3). ``separate_rho`` is the sum over every release as a query of its own.
    """
    if workload.queries and session is None:
        raise ValueError("a workload with [[query]] entries is planned on a session (its database and policy)")
    queries = _query_plans(session, workload) if workload.queries else []
    levels = _level_plans(workload)
    q_rho = [q.rho for q in queries]
    if workload.random_partition is not None:
        query_rho, parts = parallel(q_rho), ["queries on a random partition: the max over queries"]
    else:
        query_rho, parts = sequential(q_rho), ["queries: their sum"] if queries else []
    if levels:
        parts.append("SafeTab levels: stability x one group's rho, summed over levels")
    composition = "; ".join(parts)
    level_rho = sequential(generalised_parallel([lv.budget.group_rho], lv.budget.stability) for lv in levels)
    rho = query_rho + level_rho
    delta = sequential(q.delta for q in queries)
    separate = sequential(q_rho) + sequential(lv.separate_rho for lv in levels)
    d = workload.delta
    g = guarantee(rho, delta, d)  # Lemma 4 (tight) and Lemma 5 (analytic), plus the delta spent
    tight, analytic = g.epsilon_tight, g.epsilon_analytic
    pure = sum(lv.budget.total_epsilon for lv in levels) if levels and not queries else None
    return WorkloadPlan(name=workload.name, queries=tuple(queries), levels=tuple(levels), rho=rho, delta=delta,
                        separate_rho=separate, conversion_delta=d, epsilon_tight=tight, epsilon_analytic=analytic,
                        epsilon_pure=pure, composition=composition)
