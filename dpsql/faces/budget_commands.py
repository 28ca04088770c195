"""The budget commands of ``dpsql`` (registered by :mod:`dpsql.faces.cli`): ``ledger`` (the budget
spent and left, the (epsilon, delta)-DP of everything spent, every charge), ``policy`` (the public
policy function P(r) of everything released) and ``convert`` (rho-zCDP as (epsilon, delta)-DP).
They read the ledger beside the policy, never the database, and the ledger of the data set's
``dpsql serve`` (:func:`served_ledger`): the data owner's view of spending covers every release of
the data set, embedded and served.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from dpsql.pipeline import format as fmt_mod
from dpsql.errors import DpsqlError


def open_ledger(args: argparse.Namespace, everyone: bool = False):
    """The ledger of the policy (no database needed), for one analyst or all."""
    from dpsql.ledger.book import ledger_path, os_user
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
    ledger = _open(ledger_path(policy), policy, analyst)
    return policy, ledger, analyst


def server_state(args: argparse.Namespace, policy: Any) -> tuple[Path, bool]:
    """The state folder of the data set's server, and whether the user named it (``--state``).
    Else the one ``dpsql serve`` uses by default for the same files: ``<database>.dpsql-server``
    beside ``--db``; with ``--policy X.policy.toml`` alone, ``X.dpsql-server`` beside it (the
    folder of a database ``X.duckdb`` there); with neither, the demo server's ``DPSQL_HOME/server``.
    A policy reading Parquet names no database: its server's folder must be given."""
    from dpsql.faces.server.state import state_folder

    if getattr(args, "state", None):
        return Path(args.state), True
    if args.db:
        return state_folder(args.db), False
    if args.policy:
        name = Path(args.policy).name
        stem = name[: -len(".policy.toml")] if name.endswith(".policy.toml") else Path(name).stem
        return Path(args.policy).with_name(stem + ".dpsql-server"), False
    return state_folder(None), False


def served_ledger(args: argparse.Namespace, policy: Any, embedded: Path) -> dict[str, Any] | None:
    """Where the data set's server keeps its charges: ``{"state", "ledger", "shared"}`` (``shared``:
    the server charges the embedded ledger itself, the policy's ``budget.ledger``, so its charges
    are read once), or None when no server was found. The server's ledger is the one its state
    folder adopted (``ledger.id``), checked as the server checks it before charging it: a ledger
    missing, replaced or foreign is refused (DP404), not read as the server's."""
    from dpsql.errors import LedgerError
    from dpsql.faces.server.state import LEDGER_ID_FILE, LedgerGuard

    state, named = server_state(args, policy)
    if not (state / LEDGER_ID_FILE).is_file():
        if named:
            raise LedgerError(f"{state} is not the state folder of a dpsql server that has run (no {LEDGER_ID_FILE})",
                              code="DP411", hint="name the folder `dpsql serve --state DIR` uses (by default "
                                                 "<database>.dpsql-server beside the database file).")
        return None
    path = Path(policy.budget.ledger or state / "ledger.sqlite")  # as dpsql serve chooses it
    LedgerGuard(state, path).verify()
    shared = embedded.exists() and os.path.samefile(path, embedded)
    return {"state": state, "ledger": path, "shared": shared}


def _open(path: Path, policy: Any, analyst: str) -> Any:
    """A ledger with the analyst's walls as the session sets them (their own, where the policy names one)."""
    from dpsql.ledger.book import Ledger

    b = policy.budget
    total_rho, total_delta = b.walls(analyst)
    return Ledger(path, analyst, total_rho, b.dataset_rho, total_delta=total_delta, dataset_delta=b.dataset_delta)


def open_books(args: argparse.Namespace) -> tuple[Any, str, dict[str, Any] | None, list[tuple[str, Any]]]:
    """The policy, the analyst, the server found (:func:`served_ledger`) and the ledgers to read:
    ``("embedded", ledger)`` first, then ``("served", ledger)``; one ``("embedded and served",
    ledger)`` when the server charges the embedded ledger itself."""
    policy, ledger, analyst = open_ledger(args)
    books = [("embedded", ledger)]
    try:
        served = served_ledger(args, policy, ledger.path)
        if served is not None and served["shared"]:
            books = [("embedded and served", ledger)]
        if served is not None and not served["shared"]:
            books.append(("served", _open(served["ledger"], policy, analyst)))
    except BaseException:
        ledger.close()
        raise
    return policy, analyst, served, books


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
    from fractions import Fraction

    from dpsql.ledger import answers

    from dpsql.privacy.accounting import guarantee
    from dpsql.privacy.budget import fmt, fmt_up

    conversion = _conversion_delta(args.delta)
    policy, analyst, served, books = open_books(args)
    try:
        charges = [(name, c) for name, book in books for c in book.history(None if args.all else analyst)]
        summaries = {name: book.summary(conversion) for name, book in books}
        everyone = {name: book.totals for name, book in books}
        kept = {name: answers.held(book) for name, book in books}  # the answers kept for reuse (ledger/answers.py)
    finally:
        for _, book in books:
            book.close()
    b = policy.budget
    held = {name: {"kept": n, "bytes": size, "most": b.answers_kept, "most_bytes": b.answers_bytes}
            for name, (n, size) in kept.items()}
    out: dict[str, Any] = {"budget": summaries[books[0][0]], "answers": held[books[0][0]]}
    if served is not None:
        out["served"] = {"state": str(served["state"]), "ledger": str(served["ledger"]), "shared": served["shared"]}
        if "served" in summaries:
            out["served"]["budget"], out["served"]["answers"] = summaries["served"], held["served"]
    if args.all:
        # Every release of the data set, each ledger read once: rho and delta add (composition).
        rho = sum((t.rho_all for t in everyone.values()), Fraction(0))
        delta = sum((t.delta_all for t in everyone.values()), Fraction(0))
        g = guarantee(rho, delta, conversion)
        out["dataset"] = {"spent": fmt(rho), "delta_spent": fmt(delta),
                          "epsilon": fmt_up(g.epsilon_tight), "epsilon_analytic": fmt_up(g.epsilon_analytic),
                          "delta": fmt_up(g.delta), "conversion_delta": fmt_up(g.conversion_delta),
                          "ledgers": {name: {"spent": fmt(t.rho_all), "delta_spent": fmt(t.delta_all)}
                                      for name, t in everyone.items()}}
    if args.json:
        from dpsql.privacy.policy_function import unit_tables

        from dpsql.privacy.accounting import pure_total

        mine = [c for _, c in charges if args.all or c.analyst == analyst]
        units = unit_tables(mine)
        if (pure := pure_total(mine)) is not None:  # every charge pure epsilon-DP: their epsilons add up, delta 0
            out["pure"] = {"epsilon": fmt_up(pure), "delta": "0"}
        if units:  # tables with many rows per unit: the rho above is a (unit, group) record's; a unit's bound
            out["many_rows_per_unit"] = [{"table": t.table, "max_groups": t.kappa, "rho": fmt(t.rho),
                                          "unit_bound": "none (no max_splits)" if t.bound is None else fmt(t.bound)}
                                         for t in units]
        print(fmt_mod.to_json({**out, "charges": [{**fmt_mod.charge_dict(c), "where": w} for w, c in charges]}))
        return 0
    for name, s in summaries.items():
        whose = f"analyst {analyst}" + (" through the server" if name == "served" else "")
        print(f"{whose}: spent rho={s['spent']} of {s['total']}, {s['remaining']} left; "
              f"delta={s['delta_spent']} of {s['delta_total']} (partition selection), {s['delta_remaining']} left"
              f"  (ledger {s['ledger']})")
        print(_guarantee_line("everything this analyst has spent" + (" through the server" if name == "served"
                                                                     else ""), s,
                              [c for w, c in charges if w == name and c.analyst == analyst], conversion))
        h = held[name]
        print(f"answers kept for reuse for this analyst{' by the server' if name == 'served' else ''}: {h['kept']} "
              f"({h['bytes']:,} bytes), at most {h['most']} and {h['most_bytes'] / 2**20:g} MiB per analyst "
              "(budget.answers_kept, budget.answers_mib: the least recently used go first; a statement whose answer "
              "went is charged again)")
    if served is None:
        print(f"no dpsql serve of this data set found (no ledger.id in {server_state(args, policy)[0]}): give --state DIR "
              "to include its charges")
    elif served["shared"]:
        print(f"the server (state folder {served['state']}) charges this same ledger: its charges are here, once")
    if args.all:
        d = out["dataset"]
        parts = " + ".join(f"{name} {v['spent']}" for name, v in d["ledgers"].items())
        print(f"the data set (all analysts): spent rho={d['spent']} ({parts}), delta={d['delta_spent']}")
        print(_guarantee_line("everything released from the data set (all analysts)", d, [c for _, c in charges],
                              conversion))
    if charges:
        for name in dict.fromkeys(w for w, _ in charges):
            print(f"\n{name}:\n" + fmt_mod.history([c for w, c in charges if w == name]))
    else:
        print("no charges yet")
    return 0


def pure_sentence(charges: list[Any]) -> str | None:
    """What `dpsql ledger` and ``\\budget`` add when every charge is pure ε-DP with δ = 0
    (``accounting.pure_total``), else None."""
    from dpsql.privacy.accounting import pure_total
    from dpsql.privacy.budget import fmt_up

    pure = pure_total(charges)
    if pure is None:
        return None
    return (f"and pure ({fmt_up(pure)}, 0)-DP for a record never split: every charge was pure epsilon-DP "
            "(geometric mode, no partition selection), so their epsilons add up (basic composition)")


def _guarantee_line(what: str, s: dict[str, str], charges: list[Any], conversion: Any) -> str:
    """The (ε, δ)-DP of ``what`` for a record never split, and pure ε-DP where it holds
    (:func:`pure_sentence`); with charges on tables with many rows per unit, what holds for a unit
    of each (``policy_function.unit_sentences``)."""
    from dpsql.privacy.policy_function import unit_sentences

    text = (f"{what} is ({s['epsilon']}, {s['delta']})-DP for a record never split (a split record r: "
            f"dpsql policy gives its P(r)): epsilon converts rho by the tight conversion (paper 004 Lemma 4) at "
            f"delta'={s['conversion_delta']}, delta adds the delta spent; the analytic bound "
            f"rho + 2 sqrt(rho ln(1/delta')) gives epsilon={s['epsilon_analytic']}")
    if (pure := pure_sentence(charges)) is not None:
        text += "\n  " + pure
    for sentence in unit_sentences(charges, conversion, "dpsql policy"):
        text += "\n  " + sentence
    return text


def policy(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from dpsql.privacy import policy_function as pf
    from dpsql.privacy.budget import fmt, fmt_up

    _, _, _, books = open_books(args)
    try:  # everything released from this data set, embedded and served
        terms = pf.collect([c for _, book in books for c in book.history(None)])
    finally:
        for _, book in books:
            book.close()
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
        if table is not None and pf.pure_formula(formulas.get(table, "")):  # geometric mode, many rows: E(u)
            out["record"]["E"] = fmt_up(sum((Fraction(ln["epsilon_exact"]) for ln in lines if "epsilon_exact" in ln),
                                            Fraction(0)))
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
        if "E" in rec:  # type: ignore[operator]
            print(f"  pure epsilon-DP (geometric): E(u) = {rec['E']}")  # type: ignore[index]
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
