"""Meta-commands (`\\help`, `\\tables`, …): one table, filled by the :func:`command` decorator.

A handler takes the REPL and the text after the command name and returns the text to print
(or None). Handlers show only public things — the policy, the schema, the ledger — and the
results of :meth:`Session.explain`, which touches no data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from dpsql.pipeline import format as fmt_mod
from dpsql.intercept.explain import explanation_text
from dpsql.privacy import policy_function as pf
from dpsql.privacy.budget import fmt, fmt_down, fmt_up

if TYPE_CHECKING:
    from dpsql.faces.repl.output import View
    from dpsql.pipeline.result import Result
    from dpsql.session import Session


class ReplState(Protocol):
    """What a meta-command reads and sets of the REPL running it (:class:`dpsql.faces.repl.app.Repl`
    is one). A protocol, so this module does not import the loop that imports it."""

    session: Session
    display: str
    timing: bool
    last_sql: str | None
    last_query: str | None
    last_result: Result | None
    view: View
    pending: str
    prompting: bool
    confirm_share: Fraction
    depth: int
    out: Any

    def query(self, sql: str) -> Result: ...

    def run_sql(self, sql: str) -> bool: ...

    def emit(self, text: str | None, *, answer: bool = False) -> None: ...

    def emit_status(self, result: Result) -> None: ...

    def run_lines(self, lines: Any) -> bool: ...


Handler = Callable[["ReplState", str], "str | None"]
H = TypeVar("H", bound=Handler)


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
    section: str = "Information"


COMMANDS: dict[str, Command] = {}  # every name and alias -> its command
#: How \help groups the commands.
SECTIONS = ("Information", "Answers", "Input", "Session")


def command(name: str, args: str = "", help: str = "", aliases: tuple[str, ...] = (),
            section: str = "Information") -> Callable[[H], H]:
    """Register a meta-command under ``name`` (and ``aliases``), listed by \\help under ``section``."""
    assert section in SECTIONS, section

    def register(handler: H) -> H:
        cmd = Command(name, args, help, handler, aliases, section)
        for n in (name, *aliases):
            COMMANDS[n] = cmd
        return handler
    return register


def run(repl: ReplState, line: str) -> str | None:
    """Run one meta-command line such as ``\\describe establishments``."""
    name, _, arg = line.strip().partition(" ")
    name = name.rstrip(";") if name.lower().rstrip(";") in ("quit", "exit", "help") else name
    cmd = COMMANDS.get(name.lower())
    if cmd is None:
        raise UsageError(f"unknown command {name}; \\help lists the commands")
    return cmd.handler(repl, arg.strip())


def unique() -> list[Command]:
    """Each command once, in registration order."""
    return list({id(c): c for c in COMMANDS.values()}.values())


# --------------------------------------------------------------------------- the commands


@command("\\help", help="this help", aliases=("\\?", "\\h", "help", ".help"))
def _help(repl: ReplState, arg: str) -> str:
    lines = ["Type SQL and end it with ; to run it. Each query is answered with noise and costs budget;",
             "refused queries cost nothing. Example:",
             "  SELECT state, COUNT(*) AS n, AVG(payann) FROM establishments GROUP BY state ORDER BY n DESC LIMIT 5;",
             "",
             "Supported: COUNT, SUM and AVG of declared measures, WHERE on any column, GROUP BY public keys,",
             "HAVING, ORDER BY, LIMIT. See \\describe TABLE for what each column may be used for.",
             "",
             "Meta-commands (also on a line under a half-typed statement, which then waits in the prompt):"]
    for section in SECTIONS:
        lines.append(f" {section}")
        for c in unique():
            if c.section == section:
                usage = f"{c.name} {c.args}".strip()
                also = f"  (also {', '.join(c.aliases)})" if c.aliases else ""
                lines.append(f"  {usage:<24} {c.help}{also}")
    lines += ["", "Keys: Tab completes, Enter on a line ending with ; runs it, Alt-Enter runs what is typed,",
              "Ctrl-C cancels the line or the running query, Ctrl-D or \\q quits, Up/Down or Ctrl-R search history,",
              "Ctrl-X Ctrl-E edits the input in $EDITOR."]
    return "\n".join(lines)


@command("\\tables", help="the tables of the policy", aliases=("\\dt", ".tables"))
def _tables(repl: ReplState, arg: str) -> str:
    rows = []
    for name, tp in repl.session.policy.tables.items():
        public = [k for k, key in tp.keys.items() if key.public]
        rows.append([name, tp.privacy_unit, ", ".join(tp.measures) or "-", ", ".join(public) or "-"])
    out = fmt_mod.grid(["table", "privacy unit", "measures (SUM, AVG)", "public keys (GROUP BY)"], rows)
    public = repl.session.policy.public_tables
    if public:
        out += ("\n\nPublic tables (join them on their key; group by any of their columns):\n"
                + fmt_mod.grid(["table", "key", "columns"],
                               [[t.name, t.key, ", ".join(repl.session.schema.get(t.name, {}))] for t in public.values()]))
    return out


@command("\\describe", args="TABLE", help="columns of a table and their privacy roles", aliases=("\\d", ".schema"))
def _describe(repl: ReplState, arg: str) -> str:
    if not arg:
        return _tables(repl, arg)
    policy = repl.session.policy
    name = arg.strip().strip('"')
    public = policy.public_table(name)
    if public is not None:
        from dpsql.intercept.catalog import column_role

        rows = [[col, dtype, column_role(repl.session, public.name, col)]
                for col, dtype in repl.session.schema[public.name].items()]
        return "\n".join([f"Public table {public.name}: reference data, joined on its key {public.key!r} "
                          f"(JOIN {public.name} ON <column> = {public.name}.{public.key})",
                          fmt_mod.grid(["column", "type", "role"], rows)])
    tp = policy.table(name)
    if tp is None:
        raise UsageError(f"no table {arg!r} in the policy (tables: {', '.join([*policy.tables, *policy.public_tables])})")
    rows = [[col, dtype, tp.role(col)] for col, dtype in repl.session.schema[tp.name].items()]
    out = [f"Table {tp.name}: one row per privacy unit {tp.privacy_unit!r}", fmt_mod.grid(["column", "type", "role"], rows)]
    if tp.max_splits:
        out.append(f"Records are split into at most {tp.max_splits} parts (larger values are top-coded).")
    return "\n".join(out)


@command("\\conninfo", help="the database, policy, ledger and analyst of this session")
def _conninfo(repl: ReplState, arg: str) -> str:
    s = repl.session
    led = s.ledger
    return (f'You are connected to the DuckDB file "{s.database}" (embedded, read-only) as analyst "{led.analyst}".\n'
            f'Policy "{s.policy.path}"; budget ledger "{led.path}": {fmt_down(led.remaining)} of {fmt(led.total_rho)} '
            f"left; each query costs rho={fmt(s.rho)}.")


@command("\\explain", args="SQL", help="how a query would be answered; costs nothing, touches no data")
def _explain(repl: ReplState, arg: str) -> str:
    sql = arg.strip().rstrip(";").strip()
    if not sql:
        raise UsageError("usage: \\explain SELECT …")
    repl.last_sql = sql
    return explanation_text(repl.session, sql)


@command("\\budget", args="[DELTA']",
         help="budget spent and left in rho and delta, the (epsilon, delta)-DP of it all, and the charges")
def _budget(repl: ReplState, arg: str) -> str:
    from dpsql.faces.budget_commands import pure_sentence
    from dpsql.privacy.accounting import DEFAULT_CONVERSION_DELTA
    from dpsql.privacy.budget import parse_rho

    s = repl.session
    led = s.ledger
    conversion = parse_rho(arg, "delta'") if arg else DEFAULT_CONVERSION_DELTA
    if conversion >= 1:
        raise UsageError("usage: \\budget [DELTA'], with DELTA' below 1 (default 1e-6)")
    charges = list(led.charges)
    b = led.summary(conversion)
    per_query = s.rho
    left = led.remaining
    sel = s.policy.selection
    more = ""
    if led.remaining_delta is not None:
        more = f", {int(led.remaining_delta // sel.delta)} more GROUP BY on a private key"
    lines = [(f"analyst {led.analyst}: spent rho={b['spent']} of {b['total']}, {b['remaining']} left; "
              f"the noise of each query costs rho={fmt(per_query)} ({int(left // per_query)} more at this rate)."),
             (f"delta spent by partition selection: {b['delta_spent']} of {b['delta_total']}, "
              f"{b['delta_remaining']} left{more}."),
             (f"A GROUP BY on a private key adds rho={fmt(sel.epsilon ** 2 / 2)} and delta={fmt_up(sel.delta)} for "
              "partition selection with the optimal method (a table with many rows per unit may run Gaussian "
              "thresholding instead, at its own cost); \\explain shows a query's cost before it runs."),
             (f"Everything spent so far is ({b['epsilon']}, {b['delta']})-DP for a record never split (\\policy "
              f"gives a split record's P(r)): epsilon converts the rho spent at delta'={b['conversion_delta']} "
              f"(tight; the analytic bound gives {b['epsilon_analytic']}), delta adds the delta spent. "
              "\\budget 1e-9 converts at another delta'.")]
    if (pure := pure_sentence(charges)) is not None:  # geometric mode, no selection: a guarantee with delta 0
        lines.append(pure[0].upper() + pure[1:] + ".")
    for text in pf.unit_sentences(charges, conversion, "\\policy"):  # many rows per unit: the line above for a unit
        lines.append(text[0].upper() + text[1:] + ".")
    if charges:
        rows = [[i, fmt(c.rho), _one_line(c.query)] for i, c in enumerate(charges, 1)]
        lines += ["", fmt_mod.grid(["#", "rho", "query"], rows[-20:])]
        if len(rows) > 20:
            lines.append(f"(the last 20 of {len(rows)} charges)")
    return "\n".join(lines)


def _one_line(sql: str, width: int = 80) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= width else text[:width - 1] + "…"


@command("\\policy", args="[TABLE] [col=value …]",
         help="the policy function P(r) of all releases so far; with values, for that hypothetical record")
def _policy(repl: ReplState, arg: str) -> str:
    words = arg.split()
    table = words.pop(0).lower() if words and "=" not in words[0] else None
    record = pf.parse_record(words)
    columns = {c for cols in repl.session.schema.values() for c in cols}
    for name in record:
        if name not in columns:
            raise UsageError(f"no column {name!r} in the policy's tables")
    charges = repl.session.ledger.history(None)  # every release from this data set, as `dpsql policy`
    terms = pf.collect(charges)
    tables = list(dict.fromkeys(t.table for t in terms))
    if table is not None and table not in tables:
        raise UsageError(f"no release from table {table!r} yet (tables with releases: {', '.join(tables) or 'none'})")
    if not terms:
        return "nothing released yet: P(r) = 0 for every record."
    lines = [(f"P(r): the privacy loss (zCDP ρ) of one record r over the {len(charges)} "
              f"release{'s' if len(charges) != 1 else ''} from this data set; |A(r)| is the number of parts "
              "r is split into.")]
    units = {t.table for t in terms if t.max_groups}  # many rows per unit: P(u) over the unit's groups
    for name in ([table] if table else tables):
        if name in units:
            lines += ["", f"a unit of {name} (many rows per unit: a record is its rows in one group of a query):",
                      f"  {pf.formula([t for t in terms if t.table == name])[name]}"]
        else:
            lines += ["", f"a record of {name}:", *_formula([t for t in terms if t.table == name])]
        if record:
            total, why = pf.evaluate(terms, name, record)
            which = ("unit", "unit, one value per group") if name in units else ("record", "record")
            lines.append(f"  for the hypothetical {which[1]} {' '.join(words)} (never an actual {which[0]}):")
            lines += [f"    {w['why']}" for w in why]
            lines.append(f"    {'P(u)' if name in units else 'P(r)'} = {fmt(total)}")
    if not record:
        if set(tables) - units:  # the hint names the measures these releases summed (the demo's: employees, payann)
            summed = list(dict.fromkeys(m for t in terms if t.table not in units for m in t.measures))[:2]
            lines += ["", "A record never split pays the sum of the ρ's." + (
                " For a hypothetical record: \\policy " + " ".join(f"{m}=100" for m in summed) if summed else "")]
        for name in sorted(units):
            lines += ["", (f"On {name} a unit pays each query's ρ in each of its groups, times |A_g(u)|² for sums: for "
                           f"a hypothetical unit, \\policy {name} col=v1,v2,… rows=n1,n2,… (one value per group).")]
    return "\n".join(lines)


def _formula(terms: list[pf.Term]) -> list[str]:
    """``P(r) = 0.2·|A1(r)|² + 0.1`` and a line defining each |A_i(r)|."""
    split = [t for t in terms if t.split]
    constant = sum((t.rho for t in terms if not t.split), Fraction(0))
    parts = [f"{fmt(t.rho)}·|A{i}(r)|²" for i, t in enumerate(split, 1)] + ([fmt(constant)] if constant else [])
    return [f"  P(r) = {' + '.join(parts)}", *(f"    |A{i}(r)| = {pf.split_formula(t)}" for i, t in enumerate(split, 1))]


@command("\\set", args="[NAME VALUE]", section="Session", help="rho R, display moe|sigma; or any SET dpsql.NAME (moe, epsilon, weights)")
def _set(repl: ReplState, arg: str) -> str:
    name, _, value = arg.strip().partition(" ")
    name, value = name.lower(), value.strip()
    if not name:
        return (f"rho      {fmt(repl.session.rho)}  (zCDP budget charged per query)\n"
                f"display  {repl.display}  (moe: value ± 95% margin of error; sigma: value (σ …))\n"
                f"timing   {'on' if repl.timing else 'off'}\n"
                f"confirm  {fmt(repl.confirm_share)}  (ask before a query costing more than this share of what is left; 0: never)\n"
                "Also: \\set moe 1000 (a target 95% MOE per cell), \\set epsilon 0.5, \\set weights '…': "
                "the same as SQL SET dpsql.NAME = VALUE.")
    if not value:
        raise UsageError("usage: \\set NAME VALUE, e.g. \\set rho 0.05 or \\set display sigma")
    if name == "rho":
        repl.session.set_rho(value)
        return f"each query now costs rho={fmt(repl.session.rho)}."
    if name == "confirm":
        try:
            share = Fraction(value)
        except (ValueError, ZeroDivisionError):
            share = Fraction(-1)
        if not 0 <= share <= 1:
            raise UsageError("confirm is a share of the budget left, from 0 (never ask) to 1, e.g. \\set confirm 0.25")
        repl.confirm_share = share
        return (f"the prompt asks before a query costing more than {float(share):.0%} of what is left." if share
                else "the prompt no longer asks before a query.")
    if name == "display":
        if value.lower() not in ("moe", "sigma"):
            raise UsageError("display is moe (± 95% margin of error) or sigma (standard deviation of the noise)")
        repl.display = value.lower()
        return f"noisy values now shown with {'± 95% MOE' if repl.display == 'moe' else 'σ'}."
    if not name.isidentifier():
        raise UsageError(f"no setting {name!r}: rho, display, moe, moe_<measure>, epsilon, weights")
    # The session's own settings, through the statement BI tools send (it charges nothing).
    repl.session.execute(f"SET dpsql.{name} = {value}")
    return f"{name} = {value}"


@command("\\timing", args="[on|off]", help="show how long each query takes", aliases=(".timer",), section="Session")
def _timing(repl: ReplState, arg: str) -> str:
    if arg.lower() not in ("", "on", "off"):
        raise UsageError("usage: \\timing [on|off]")
    repl.timing = (not repl.timing) if not arg else arg.lower() == "on"
    return f"Timing is {'on' if repl.timing else 'off'}."


@command("\\q", help="quit (or Ctrl-D)", aliases=("\\quit", "quit", "exit", ".quit", ".exit"), section="Session")
def _quit(repl: ReplState, arg: str) -> None:
    raise Quit
