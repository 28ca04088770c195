"""`dpsql workload FILE [--dry-run] [--db ...] [--policy ...] [--out DIR] [--json]` (docs/workloads.md).

The dry run plans the workload from public information and prints each query's and each
SafeTab level's rho, sigma and 95% MOE and the total (epsilon, delta); it charges nothing.
The real run charges the whole workload once and writes its outputs (dpsql/workload/run.py).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from dpsql.privacy.budget import fmt, fmt_down, fmt_up

if TYPE_CHECKING:
    from dpsql.workload.plan import WorkloadPlan

# dpsql.workload is imported when the command runs: every `dpsql` command builds the parser that
# registers this one (add_command), and `dpsql query` should not pay for the workload planner.

__all__ = ["add_command", "workload", "plan_text"]


def add_command(sub: Any) -> None:
    p = sub.add_parser("workload", help="plan (--dry-run) or answer a workload file of many queries under one charge")
    p.add_argument("file", help="the workload TOML file (docs/workloads.md)")
    p.add_argument("--dry-run", action="store_true", help="plan only: print each query's cost and accuracy, charge nothing")
    p.add_argument("--db", help="database file (default: the demo database)")
    p.add_argument("--policy", help="policy file (default: the one beside the database)")
    p.add_argument("--out", default=".", help="folder for the outputs (default: the current folder)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _session(args: argparse.Namespace) -> Any:
    from dpsql.session import Session

    return Session(args.db, args.policy)


def workload(args: argparse.Namespace) -> int:
    from dpsql.workload import spec
    from dpsql.workload.plan import plan
    from dpsql.workload.run import run

    w = spec.load(args.file)  # DP501 before anything is opened
    if args.dry_run and not w.queries:  # a SafeTab-only plan needs no database
        p = plan(None, w)
        _print(p, args, None)
        return 0
    session = _session(args)
    try:
        if args.dry_run:
            _print(plan(session, w), args, None)
            return 0
        p, results, written = run(session, w, args.out)
        charges = session.ledger.charges
        _print(p, args, {"charge_id": charges[-1].id if charges else None,
                         "budget_remaining": fmt_down(session.ledger.remaining), "written": [str(x) for x in written]})
        return 0
    finally:
        session.close()


def _print(p: WorkloadPlan, args: argparse.Namespace, ran: dict[str, Any] | None) -> None:
    if args.json:
        out = p.to_dict()
        out["dry_run"] = ran is None
        if ran:
            out.update(ran)
        print(json.dumps(out, indent=1))
        return
    print(plan_text(p))
    if ran is None:
        print("dry run: nothing was read or charged")
    else:
        print(f"charged once (ledger charge {ran['charge_id']}); budget remaining rho={ran['budget_remaining']}")
        for path in ran["written"]:
            print(f"wrote {path}")


def plan_text(p: WorkloadPlan) -> str:
    """The dry run's table: one line per query or level, then the totals."""
    lines = [f"workload {p.name}  ({p.composition})"]
    if p.queries:
        lines.append(f"  {'query':<20} {'rho':>10} {'aggregate':<22} {'sigma':>10} {'moe95':>8} {'sampling sigma':>15}")
        for q in p.queries:
            for n in q.noise or ({"aggregate": "-", "sigma": ["-"], "moe95": ["-"]},):
                sig = "/".join(f"{s:.3g}" if isinstance(s, float) else str(s) for s in n["sigma"])
                moe = "/".join(f"{m:.4g}" if isinstance(m, float) else str(m) for m in n["moe95"])
                samp = f"{q.sampling_sigma:.4f}" if q.sampling_sigma is not None else ""
                lines.append(f"  {q.name:<20} {fmt(q.rho):>10} {n['aggregate']:<22} {sig:>10} {moe:>8} {samp:>15}")
    if p.levels:
        lines.append(f"  {'SafeTab level':<20} {'MOE':>4} {'s':>3} {'stage 2 rho':>12} {'total rho':>10} "
                     f"{'sigma1':>7} {'moe1':>5} {'sigma2':>7} {'moe2':>5} {'groups':>7} {'as separate queries':>20}")
        for lv in p.levels:
            b = lv.budget
            lines.append(f"  {lv.name:<20} {b.moe:>4} {b.stability:>3} {float(b.stage2_rho):>12.4f} "
                         f"{float(b.total_rho):>10.4f} {lv.stage1_sigma:>7.2f} {lv.stage1_moe95:>5} "
                         f"{lv.stage2_sigma:>7.2f} {lv.stage2_moe95:>5} {lv.groups:>7} {float(lv.separate_rho):>20.4f}")
        lines.append("  (moe = ceil(1.96 sigma), as dpsql reports it; eq. 37's rho = 1.92/MOE^2 puts 1.96 sigma 0.02% "
                     "above the target, so the ceiling is one more than the paper's floor; docs/workloads.md)")
    lines.append(f"total rho = {fmt(p.rho)}, delta spent = {fmt_up(p.delta)}; "
                 f"as separate queries rho = {fmt(p.separate_rho)}")
    lines.append(f"(epsilon, delta) at conversion delta {p.conversion_delta:g}: epsilon = {fmt_up(p.epsilon_tight)} tight "
                 f"(Lemma 4), {fmt_up(p.epsilon_analytic)} analytic (Lemma 5)"
                 + (f"; SafeTab[Geometric] pure DP epsilon = {fmt_up(p.epsilon_pure)}" if p.epsilon_pure is not None else ""))
    return "\n".join(lines)
