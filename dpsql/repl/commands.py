"""Meta-commands (`\\help`, `\\tables`, …): one table, filled by the :func:`command` decorator.

A handler takes the REPL and the text after the command name and returns the text to print
(or None). Handlers show only public things — the policy, the schema, the ledger — and the
results of :meth:`Session.explain`, which touches no data.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import format as fmt_mod
from ..ledger import fmt
from . import policyfn

if TYPE_CHECKING:
    from .app import Repl

Handler = Callable[["Repl", str], "str | None"]


class UsageError(Exception):
    """A meta-command typed wrongly; the message says how to type it."""


class Quit(Exception):
    """Leave the REPL."""


@dataclass(frozen=True)
class Command:
    name: str
    args: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()


COMMANDS: dict[str, Command] = {}  # every name and alias -> its command


def command(name: str, args: str = "", help: str = "", aliases: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    """Register a meta-command under ``name`` (and ``aliases``)."""
    def register(handler: Handler) -> Handler:
        cmd = Command(name, args, help, handler, aliases)
        for n in (name, *aliases):
            COMMANDS[n] = cmd
        return handler
    return register


def run(repl: Repl, line: str) -> str | None:
    """Run one meta-command line such as ``\\describe establishments``."""
    name, _, arg = line.strip().partition(" ")
    cmd = COMMANDS.get(name.lower())
    if cmd is None:
        raise UsageError(f"unknown command {name}; \\help lists the commands")
    return cmd.handler(repl, arg.strip())


def unique() -> list[Command]:
    """Each command once, in registration order."""
    return list({id(c): c for c in COMMANDS.values()}.values())


# --------------------------------------------------------------------------- the commands


@command("\\help", help="this help", aliases=("\\?", "\\h", "help"))
def _help(repl: Repl, arg: str) -> str:
    lines = ["Type SQL and end it with ; to run it. Each query is answered with noise and costs budget;",
             "refused queries cost nothing. Example:",
             "  SELECT state, COUNT(*) AS n, AVG(payann) FROM establishments GROUP BY state ORDER BY n DESC LIMIT 5;",
             "",
             "Supported: COUNT, SUM and AVG of declared measures, WHERE on any column, GROUP BY public keys,",
             "HAVING, ORDER BY, LIMIT. See \\describe TABLE for what each column may be used for.",
             "",
             "Meta-commands:"]
    for c in unique():
        usage = f"{c.name} {c.args}".strip()
        also = f"  (also {', '.join(c.aliases)})" if c.aliases else ""
        lines.append(f"  {usage:<24} {c.help}{also}")
    lines += ["", "Keys: Tab completes, Enter on a line ending with ; runs it, Alt-Enter runs what is typed,",
              "Ctrl-C cancels the line or the running query, Ctrl-D or \\q quits, Up/Down or Ctrl-R search history."]
    return "\n".join(lines)


@command("\\tables", help="the tables of the policy", aliases=("\\dt",))
def _tables(repl: Repl, arg: str) -> str:
    rows = []
    for name, tp in repl.session.policy.tables.items():
        public = [k for k, key in tp.keys.items() if key.public]
        rows.append([name, tp.privacy_unit, ", ".join(tp.measures) or "-", ", ".join(public) or "-"])
    return fmt_mod.grid(["table", "privacy unit", "measures (SUM, AVG)", "public keys (GROUP BY)"], rows)


@command("\\describe", args="TABLE", help="columns of a table and their privacy roles", aliases=("\\d",))
def _describe(repl: Repl, arg: str) -> str:
    if not arg:
        return _tables(repl, arg)
    policy = repl.session.policy
    tp = policy.table(arg.strip().strip('"'))
    if tp is None:
        raise UsageError(f"no table {arg!r} in the policy (tables: {', '.join(policy.tables)})")
    rows = [[col, dtype, _role(tp, col)] for col, dtype in repl.session.schema[tp.name].items()]
    out = [f"Table {tp.name}: one row per privacy unit {tp.privacy_unit!r}", fmt_mod.grid(["column", "type", "role"], rows)]
    if tp.max_splits:
        out.append(f"Records are split into at most {tp.max_splits} parts (larger values are top-coded).")
    return "\n".join(out)


def _role(tp, col: str) -> str:
    if col == tp.privacy_unit:
        return "privacy unit (COUNT(*) counts units)"
    if col in tp.measures:
        m = tp.measures[col]
        text = f"measure: SUM/AVG, split threshold T = {m.display(m.threshold)}"
        if m.granularity != 1:
            text += f", granularity {m.display(1)}"
        if m.override:
            items = list(m.override.thresholds.items())
            shown = ", ".join(f"{m.display(t)} if {m.override.key} = {k}" for k, t in items[:3])
            text += f" ({shown}{', …' if len(items) > 3 else ''})"
        return text
    if col in tp.keys:
        key = tp.keys[col]
        if key.public:
            return f"public key: GROUP BY, keyset of {len(key.keyset or ())} values"
        return "private key: no keyset, GROUP BY not supported yet (WHERE only)"
    return "private: WHERE only"


@command("\\explain", args="SQL", help="how a query would be answered; costs nothing, touches no data")
def _explain(repl: Repl, arg: str) -> str:
    sql = arg.strip().rstrip(";").strip()
    if not sql:
        raise UsageError("usage: \\explain SELECT …")
    repl.last_sql = sql
    return fmt_mod.explanation(repl.session.explain(sql))


@command("\\budget", help="budget spent and left, and the charges so far")
def _budget(repl: Repl, arg: str) -> str:
    s = repl.session
    led = s.ledger
    charges = list(led.charges)
    per_query = s.rho
    left = led.remaining
    lines = [f"spent rho={fmt(led.spent)} of {fmt(led.total_rho)}, {fmt(left)} left; "
             f"each query costs rho={fmt(per_query)} ({int(left // per_query)} more at this rate)."]
    if charges:
        rows = [[i, fmt(c.rho), _one_line(c.query)] for i, c in enumerate(charges, 1)]
        lines += ["", fmt_mod.grid(["#", "rho", "query"], rows[-20:])]
        if len(rows) > 20:
            lines.append(f"(the last 20 of {len(rows)} charges)")
    return "\n".join(lines)


def _one_line(sql: str, width: int = 80) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= width else text[:width - 1] + "…"


@command("\\policy", args="[col=value …]", help="the policy function P(r) charged so far; with values, for that hypothetical record")
def _policy(repl: Repl, arg: str) -> str:
    s = repl.session
    record = _record(repl, arg)
    charges = list(s.ledger.charges)
    functions = policyfn.collect(charges)
    if not functions:
        return "nothing charged yet: P(r) = 0 for every record."
    lines = [f"P(r), the privacy loss of one record r (zCDP rho) over the {len(charges)} charged "
             f"quer{'y' if len(charges) == 1 else 'ies'}: P(r) = Σ ρ_i·|A_i(r)|² + Σ ρ_j, "
             "|A(r)| the number of parts r is split into."]
    for fn in functions:
        lines += ["", f"a record of {fn.table}:", *("  " + ln for ln in policyfn.formula(fn))]
        if record:
            given = ", ".join(f"{k}={v}" for k, v in record.items())
            try:
                lines += [f"  for the hypothetical record {given}:", *policyfn.evaluate(fn, record)]
            except ValueError as exc:
                raise UsageError(str(exc)) from None
    if not record:
        lines += ["", "A record never split pays the sum of the ρ's; try \\policy employees=150 payann=10000 "
                  "for a hypothetical record (never an actual one)."]
    return "\n".join(lines)


def _record(repl: Repl, arg: str) -> dict[str, str]:
    try:
        tokens = shlex.split(arg)
    except ValueError as exc:
        raise UsageError(f"cannot read {arg!r}: {exc}") from None
    columns = {c for cols in repl.session.schema.values() for c in cols}
    record = {}
    for tok in tokens:
        name, eq, value = tok.partition("=")
        name = name.strip().lower()
        if not eq or not name or not value:
            raise UsageError(f"write the hypothetical record as column=value pairs, e.g. employees=150 (got {tok!r})")
        if name not in columns:
            raise UsageError(f"no column {name!r} in the policy's tables")
        record[name] = value.strip()
    return record


@command("\\set", args="[rho R | display moe|sigma]", help="set the rho per query or how noise is shown")
def _set(repl: Repl, arg: str) -> str:
    parts = arg.split()
    if not parts:
        return (f"rho {fmt(repl.session.rho)}    (zCDP budget charged per query)\n"
                f"display {repl.display}    (moe: value ± 95% margin of error; sigma: value (σ …))\n"
                f"timing {'on' if repl.timing else 'off'}")
    if len(parts) != 2:
        raise UsageError("usage: \\set rho 0.05  or  \\set display sigma")
    name, value = parts[0].lower(), parts[1]
    if name == "rho":
        repl.session.set_rho(value)
        return f"each query now costs rho={fmt(repl.session.rho)}."
    if name == "display":
        if value.lower() not in ("moe", "sigma"):
            raise UsageError("display is moe (± 95% margin of error) or sigma (standard deviation of the noise)")
        repl.display = value.lower()
        return f"noisy values now shown with {'± 95% MOE' if repl.display == 'moe' else 'σ'}."
    raise UsageError(f"unknown setting {name!r}: rho or display")


@command("\\timing", args="[on|off]", help="show how long each query takes")
def _timing(repl: Repl, arg: str) -> str:
    if arg.lower() not in ("", "on", "off"):
        raise UsageError("usage: \\timing [on|off]")
    repl.timing = (not repl.timing) if not arg else arg.lower() == "on"
    return f"Timing is {'on' if repl.timing else 'off'}."


@command("\\q", help="quit (or Ctrl-D)", aliases=("\\quit", "quit", "exit"))
def _quit(repl: Repl, arg: str) -> None:
    raise Quit
