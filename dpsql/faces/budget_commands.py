"""The budget commands of ``dpsql`` (registered by :mod:`dpsql.faces.cli`): ``ledger`` (the budget
spent and left, the (epsilon, delta)-DP of everything spent, every charge), ``policy`` (the public
policy function P(r) of everything released) and ``convert`` (rho-zCDP as (epsilon, delta)-DP).
They read the ledger beside the policy, never the database.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpsql.pipeline import format as fmt_mod
from dpsql.errors import DpsqlError


def open_ledger(args: argparse.Namespace, everyone: bool = False):
    """The ledger of the policy (no database needed), for one analyst or all."""
    from pathlib import Path

    from dpsql.ledger.book import Ledger, ledger_path, os_user
    from dpsql.policy.loader import default_policy_path, load_policy

    if args.policy:
        policy_file = Path(args.policy)
    elif args.db:
        policy_file = default_policy_path(Path(args.db))
    else:
        from dpsql.demo_db import ensure_demo

        policy_file = ensure_demo()[1]
    policy = load_policy(policy_file)
    analyst = args.analyst or os_user()
    b = policy.budget
    ledger = Ledger(ledger_path(policy), analyst, b.total_rho, b.dataset_rho,
                    total_delta=b.total_delta, dataset_delta=b.dataset_delta)
    return policy, ledger, analyst


def _conversion_delta(text: str | None):
    """δ' of `dpsql ledger --delta` (default: accounting.DEFAULT_CONVERSION_DELTA)."""
    from dpsql.privacy.accounting import DEFAULT_CONVERSION_DELTA
    from dpsql.privacy.budget import parse_rho

    if text is None:
        return DEFAULT_CONVERSION_DELTA
    delta = parse_rho(text, "--delta")
    if delta >= 1:
        raise DpsqlError("--delta must be below 1", code="DP302")
    return delta


def ledger(args: argparse.Namespace) -> int:
    from dpsql.privacy.accounting import guarantee
    from dpsql.privacy.budget import fmt, fmt_up

    conversion = _conversion_delta(args.delta)
    _, ledger, analyst = open_ledger(args)
    try:
        charges = ledger.history(None if args.all else analyst)
        summary = ledger.summary(conversion)
        everyone = ledger.totals
    finally:
        ledger.close()
    out: dict[str, Any] = {"budget": summary}
    if args.all:
        g = guarantee(everyone.rho_all, everyone.delta_all, conversion)
        out["dataset"] = {"spent": fmt(everyone.rho_all), "delta_spent": fmt(everyone.delta_all),
                          "epsilon": fmt_up(g.epsilon_tight), "epsilon_analytic": fmt_up(g.epsilon_analytic),
                          "delta": fmt_up(g.delta), "conversion_delta": fmt_up(g.conversion_delta)}
    if args.json:
        print(fmt_mod.to_json({**out, "charges": [fmt_mod.charge_dict(c) for c in charges]}))
        return 0
    s = summary
    print(f"analyst {analyst}: spent rho={s['spent']} of {s['total']}, {s['remaining']} left; "
          f"delta={s['delta_spent']} of {s['delta_total']} (partition selection), {s['delta_remaining']} left"
          f"  (ledger {s['ledger']})")
    print(_guarantee_line("everything this analyst has spent", s))
    if args.all:
        print(_guarantee_line("everything released from the data set (all analysts)", out["dataset"]))
    print(fmt_mod.history(charges) if charges else "no charges yet")
    return 0


def _guarantee_line(what: str, s: dict[str, str]) -> str:
    return (f"{what} is ({s['epsilon']}, {s['delta']})-DP for a record never split (a split record r: "
            f"dpsql policy gives its P(r)): epsilon converts rho by the tight conversion (paper 004 Lemma 4) at "
            f"delta'={s['conversion_delta']}, delta adds the delta spent; the analytic bound "
            f"rho + 2 sqrt(rho ln(1/delta')) gives epsilon={s['epsilon_analytic']}")


def policy(args: argparse.Namespace) -> int:
    from dpsql.privacy import policy_function as pf
    from dpsql.privacy.budget import fmt

    _, ledger, analyst = open_ledger(args)
    try:
        terms = pf.collect(ledger.history(None))  # everything released from this data set
    finally:
        ledger.close()
    formulas = pf.formula(terms)
    out: dict[str, object] = {"policy_function": formulas}
    if args.record:
        record = pf.parse_record(args.record)
        tables = sorted(formulas)
        table = args.table or (tables[0] if len(tables) == 1 else None)
        if table is None and tables:
            raise DpsqlError(f"{len(tables)} tables have releases ({', '.join(tables)}): say which with --table",
                             code="DP119")
        total, lines = pf.evaluate(terms, table, record) if table is not None else (0, [])
        out["record"] = {"table": table, "values": record, "P": fmt(total), "terms": lines}
    if args.json:
        print(fmt_mod.to_json(out))
        return 0
    if not formulas:
        print("nothing released yet: P(r) = 0 for every record")
    for table, text in formulas.items():
        print(f"{table}: {text}")
    if args.record and formulas:
        rec = out["record"]
        print(f"\nfor the hypothetical {rec['table']} record {' '.join(args.record)}:")  # type: ignore[index]
        for line in rec["terms"]:  # type: ignore[index]
            print(f"  {line['why']}")
        which = "P(u)" if formulas.get(rec["table"], "").startswith("P(u)") else "P(r)"  # type: ignore[index]
        print(f"  {which} = {rec['P']}")  # type: ignore[index]
    return 0


def convert(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from dpsql.privacy.accounting import guarantee
    from dpsql.privacy.budget import fmt_up, parse_rho

    rho = parse_rho(args.rho, "--rho")
    delta = parse_rho(args.delta, "--delta")
    plus = parse_rho(args.plus_delta, "--plus-delta") if args.plus_delta is not None else Fraction(0)
    if delta >= 1 or plus >= 1:
        raise DpsqlError("--delta and --plus-delta must be below 1", code="DP302")
    g = guarantee(rho, plus, delta)
    result = {"rho": args.rho, "delta": args.delta, "plus_delta": args.plus_delta or "0", "delta_total": fmt_up(g.delta),
              "epsilon_analytic": g.epsilon_analytic, "epsilon_tight": g.epsilon_tight}
    if args.json:
        print(fmt_mod.to_json(result))
        return 0
    given = f"{args.plus_delta}-approximate {args.rho}-zCDP" if args.plus_delta else f"{args.rho}-zCDP"
    print(f"{given} implies (epsilon, {result['delta_total']})-DP with\n"
          f"  epsilon = {fmt_up(g.epsilon_tight)}  (tight numeric conversion at delta={args.delta}, paper 004 Lemma 4)\n"
          f"  epsilon = {fmt_up(g.epsilon_analytic)}  (analytic bound rho + 2 sqrt(rho ln(1/delta)), paper 004 Lemma 5)")
    if not args.plus_delta:
        print("This converts rho alone. Partition selections also spend delta (dpsql ledger shows it): add it "
              "with --plus-delta.")
    return 0
