"""The real run of SafeTab's adaptive two-stage tabulation (paper 004 Algorithms 1-2).

Per level and race code, every query is decided first (phase 1, public information only):

* stage 1, one query per code: ``SELECT geo, COUNT(*) FROM t WHERE 'code' IN (race1, ..)
  GROUP BY geo``, each (geo, code) cell a population group's noisy total at rho_1;
* stage 2, one query per code and level of detail (total; sex x 4, 9 or 23 age bins) at rho_2.

Then all are computed (noise added), ONE charge is made (each level: stability x one group's
rho_1 + rho_2, paper 004 Lemma 10; levels add), and only then is anything finished. Which level
of detail a group gets is decided from its noisy stage-1 total and the public thresholds
(post-processing, Algorithm 2); each group's stage-2 cells are taken from the query at its
level and the other levels' noisy cells are dropped unreleased. Each group therefore releases
one stage-1 total and one stage-2 table, both with sensitivity 1 per person (a person is one
row and lands in one cell of each), so each group's releases are (rho_1 + rho_2)-zCDP on its
own people, and a person in at most s groups of a level costs at most s times that.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpsql.errors import WorkloadFileError
from dpsql.ledger.book import Charge
from dpsql.privacy.allocate import GAUSSIAN
from dpsql.privacy.budget import fmt
from dpsql.pipeline.result import Result
from dpsql.workload.composition import generalised_parallel, level_budget
from dpsql.workload.spec import Level, SafeTab

__all__ = ["Cell", "stage_sql", "run_safetab", "decide_safetab", "choose"]


@dataclass(frozen=True)
class Cell:
    """One released stage-2 cell."""

    level: str
    geography: str  # "" at the nation level
    code: str
    detail: str
    stage1_total: Any  # the group's noisy stage-1 total, which chose ``detail``
    keys: tuple[tuple[str, Any], ...]
    value: Any
    sigma: float
    moe95: float


def stage_sql(s: SafeTab, lv: Level, code: str, keys: tuple[str, ...]) -> str:
    group = ([lv.geography] if lv.geography else []) + list(keys)
    cols = ", ".join([*group, "COUNT(*) AS n"])
    sql = f"SELECT {cols} FROM {s.table} WHERE '{code}' IN ({', '.join(s.races)})"
    return sql + (f" GROUP BY {', '.join(group)}" if group else "")


def _settings(session: Any, rho: Fraction) -> Any:
    return replace(session.default_settings(), mechanism=GAUSSIAN, rho=rho)


def _decide(session: Any, sql: str, rho: Fraction) -> Any:
    """One stage query decided; it must cost exactly ``rho`` with no delta. A private key (a
    geography or detail column without a public keyset) would add partition selection, which
    the level's charge does not include: refused (DP501) before any row is read."""
    d = session.decide(sql, settings=_settings(session, rho), check_budget=False)
    if d.plan.table.many_rows:  # a person is not one row: the levels' composition (Lemma 10) does not hold as stated
        raise WorkloadFileError(f"SafeTab runs on tables of one row per person; {d.plan.table.name!r} declares "
                                "max_groups (many rows per unit)", hint="run SafeTab on a table of one row per person.")
    if d.rho != rho or d.delta != 0 or d.plan.private_keys:
        raise WorkloadFileError(f"SafeTab query {sql!r} groups by a key without a public keyset (it would need "
                                "partition selection, which a SafeTab level's charge does not include)",
                                hint="use geography and detail columns with public keysets in the policy.")
    return d


def decide_safetab(session: Any, s: SafeTab) -> tuple[list[tuple[Level, str, int | None]], list[Any], Fraction,
                                                      list[dict[str, Any]]]:
    """Phase 1 of the SafeTab part: every stage query decided; (plan, decisions, rho, policy terms)."""
    plan: list[tuple[Level, str, int | None]] = []  # (level, code, detail index; None = stage 1)
    decisions = []
    rho = Fraction(0)
    terms = []
    for lv in s.levels:
        b = level_budget(lv.moe, lv.stability, s.stage1_share)
        level_rho = generalised_parallel([b.group_rho], lv.stability)  # Lemma 10
        rho += level_rho
        terms.append({"rho": fmt(level_rho), "rho_exact": str(level_rho), "scale": "1", "table": s.table,
                      "composition": f"SafeTab level {lv.name}: {lv.stability} x {fmt(b.group_rho)} (paper 004 Lemma 10)"})
        for code in s.codes:
            plan.append((lv, code, None))
            decisions.append(_decide(session, stage_sql(s, lv, code, ()), b.group_stage1_rho))
            for i, keys in enumerate(s.detail_keys):
                plan.append((lv, code, i))
                decisions.append(_decide(session, stage_sql(s, lv, code, keys), b.group_stage2_rho))
    return plan, decisions, rho, terms


def run_safetab(session: Any, s: SafeTab, name: str) -> tuple[Fraction, list[Cell], list[dict[str, Any]]]:
    """Decide, compute, charge once, choose each group's level; returns (rho charged, cells, groups)."""
    plan, decisions, rho, terms = decide_safetab(session, s)
    session.ledger.check(rho)  # refuse early; the binding check is the charge itself
    charge = Charge(query=f"WORKLOAD {name}: SafeTab, {len(decisions)} queries on {s.table}", rho=rho, mechanism=GAUSSIAN,
                    policy_terms=tuple(terms), analyst=session.analyst, session=session.session_id,
                    dataset=str(session.database))
    results = session.execute_decided(decisions, charge)
    return rho, *choose(s, plan, results)


def choose(s: SafeTab, plan: list[tuple[Level, str, int | None]], results: list[Result]
            ) -> tuple[list[Cell], list[dict[str, Any]]]:
    """Algorithm 2 on charged noisy values: each group's level of detail from its stage-1 total."""
    by = {(lv.name, code, i): r for (lv, code, i), r in zip(plan, results)}
    cells, groups = [], []
    for lv in s.levels:
        for code in s.codes:
            stage1 = by[(lv.name, code, None)]
            for row in stage1.rows:
                geo = str(row[0]) if lv.geography else ""
                total = row[-1]
                i = bisect_right(list(s.thresholds), total)  # t >= threshold k moves to detail k + 1
                groups.append({"level": lv.name, "geography": geo, "code": code, "stage1_total": total,
                               "detail": s.detail[i]})
                r = by[(lv.name, code, i)]
                err = r.receipt.columns["n"]
                for j, cell in enumerate(r.rows):
                    if lv.geography and str(cell[0]) != geo:
                        continue
                    keys = tuple(zip(r.columns[1 if lv.geography else 0:-1], cell[1 if lv.geography else 0:-1]))
                    cells.append(Cell(lv.name, geo, code, s.detail[i], total, keys, cell[-1], err.sigma[j], err.moe95[j]))
    return cells, groups
