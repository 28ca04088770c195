"""The `dpsql` command: the interactive prompt, and one-shot subcommands with text or --json output.

    dpsql [DATABASE] [--policy FILE]   the SQL prompt (the demo database when none is given);
                                   reads statements from standard input when it is not a terminal
    dpsql demo                     build the demo database if needed and run a sample query
    dpsql query "SQL" [--format table|csv|json]
                                   answer a query with noise; charges the budget
    dpsql explain "SQL"            show the plan, the exact SQL and the noise; charges nothing
    dpsql ledger [--delta D] [--all] [--state DIR]
                                   budget spent and left in rho and delta, the (epsilon, delta)-DP of
                                   everything spent, and the history of charges, embedded and served
    dpsql policy [m=v ...]         the policy function P(r) so far; evaluated for a typed-in record
    dpsql convert --rho R --delta D [--plus-delta P]
                                   rho-zCDP (P-approximate) as (epsilon, D [+ P])-DP, two ways
    dpsql serve [DATABASE]         serve it over the PostgreSQL protocol (psql, JDBC, BI tools)
    dpsql user add|remove|list     the analysts `dpsql serve` lets in
    dpsql init DATA [--unit C]     a database and a starter policy from a CSV, Parquet or DuckDB file
    dpsql workload FILE [--dry-run]
                                   many queries planned together and charged once (docs/workloads.md)

Exit status: 0 on success, 1 when dpsql refused or failed (message on stderr, or
``{"error": {...}}`` on stdout with --json), 2 on bad command-line usage, 141 when the reader of
standard output went away (``| head``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from dpsql.pipeline import format as fmt_mod
from dpsql.errors import DpsqlError
from dpsql.faces import budget_commands, engine_option, startup

SAMPLE_QUERY = "SELECT naics2, COUNT(*) AS establishments, SUM(payann) AS payroll, AVG(employees) AS avg_employees\n" \
               "FROM establishments GROUP BY naics2 ORDER BY naics2"


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("database", nargs="?", metavar="DATABASE", help="DuckDB database file, as for the prompt "
                   "(or --db; default: the demo database)")
    p.add_argument("--db", metavar="FILE", help="the database file, as an option")
    p.add_argument("--policy", metavar="FILE", help="policy file (default: <db>.policy.toml beside the database)")
    p.add_argument("--rho", metavar="R", help="zCDP budget for this query (default: the policy's default_rho)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


COMMANDS = ("demo", "query", "explain", "ledger", "policy", "convert", "serve", "user", "init", "workload", "advise")
REPL_USAGE = "dpsql [DATABASE] [--policy FILE] [--rho R] [--sigma]"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the `dpsql` commands; with ``command``, of that one only (a command line that
    starts with its name needs no other, nor the modules that define them)."""
    parser = argparse.ArgumentParser(
        prog="dpsql", usage=f"{REPL_USAGE}\n       dpsql COMMAND ...",
        description="Differentially private GROUP BY aggregates (COUNT, SUM, AVG) over a DuckDB file. "
                    "Without a COMMAND: the interactive SQL prompt on DATABASE (default: the demo database), "
                    "with options --policy FILE, --rho R and --sigma; it reads statements from standard input "
                    "when that is not a terminal.",
        epilog="Start with `dpsql` (the prompt on the demo database) or `dpsql demo`. "
               "Docs: README.md and docs/ in the source tree.")
    parser.add_argument("--version", action="version", version="dpsql 0.1.0")
    # prog: each subcommand's usage line starts "dpsql query", not with the two-line usage above.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="dpsql")

    def wanted(*names: str) -> bool:
        return command is None or command in names

    if wanted("serve", "user"):
        from dpsql.faces.server import cli as server_cli

        server_cli.add_commands(sub)
    if wanted("init"):
        from dpsql.faces import init_cmd

        init_cmd.add_command(sub)
    if wanted("workload"):
        from dpsql.faces import workload_cmd

        workload_cmd.add_command(sub)
    if wanted("advise"):
        from dpsql.faces import advise_cmd

        advise_cmd.add_command(sub)
    _add_builtin_commands(sub, wanted)
    return parser


def _add_builtin_commands(sub: Any, wanted: Callable[..., bool]) -> None:
    """The commands defined here that are ``wanted``, and the engine options of those that read data."""
    if wanted("demo"):
        p = sub.add_parser("demo", help="build the demo database if needed, show where it is, run a sample query")
        p.add_argument("--rows", type=int, default=200_000, help="establishments rows (default 200000)")
        p.add_argument("--json", action="store_true", help="print JSON")
    if wanted("query"):
        p = sub.add_parser("query", help="answer one aggregate query with differential privacy (charges the budget)")
        p.add_argument("sql", help="the SELECT statement ('-' reads it from standard input)")
        _connection_args(p)
        p.add_argument("--sigma", action="store_true", help="show σ instead of the 95%% margin of error")
        p.add_argument("--fresh", action="store_true", help="a fresh, charged release with new noise, not the answer "
                       "released before to this analyst (SET dpsql.reuse = off)")
        p.add_argument("--format", choices=("table", "csv", "json"), help="table (the default), csv (the rows with "
                       "a <column>_moe95 column for each noisy one (after the columns asked for), or _sigma too with --sigma; the cost on standard "
                       "error) or json (as --json)")
    if wanted("explain"):
        p = sub.add_parser("explain", help="show how a query would be answered; touches no data, charges nothing")
        p.add_argument("sql", help="the SELECT statement ('-' reads it from standard input)")
        _connection_args(p)
    for name in ("demo", "query", "explain", "serve"):
        if name in sub.choices:
            engine_option.add_engine_args(sub.choices[name])
    if wanted("ledger"):
        p = sub.add_parser("ledger", help="budget spent and remaining in rho and delta, the (epsilon, delta)-DP "
                                          "guarantee of everything spent, and every charge so far")
        _ledger_args(p)
        p.add_argument("--all", action="store_true", help="every analyst's charges, and the data set's guarantee (default: yours)")
        p.add_argument("--delta", metavar="D", help="delta' at which the rho spent is converted to epsilon "
                                                    "(default 1e-6); the guarantee's delta is D plus the delta spent")
    if wanted("policy"):
        p = sub.add_parser("policy", help="the public policy function P(r) of everything released so far",
                           description="Prints P(r) as a formula in a record's measure values; with measure=value "
                                       "pairs, evaluates it for that hypothetical record (never for real records).")
        _ledger_args(p)
        p.add_argument("record", nargs="*", metavar="measure=value", help="a hypothetical record, e.g. employees=150 payann=10000")
        p.add_argument("--table", help="the table the record belongs to (default: the only one with releases)")
    if wanted("convert"):
        p = sub.add_parser("convert", help="convert rho-zCDP (optionally P-approximate) to (epsilon, delta)-DP",
                           description="Converts rho alone: rho-zCDP is (epsilon, D)-DP. With --plus-delta P (the delta "
                                       "of approximate zCDP, e.g. the delta the ledger shows spent by partition "
                                       "selection), P-approximate rho-zCDP is (epsilon, D + P)-DP, epsilon unchanged.")
        p.add_argument("--rho", required=True, help="zCDP rho (e.g. the total spent)")
        p.add_argument("--delta", required=True, help="delta of the conversion, e.g. 1e-10")
        p.add_argument("--plus-delta", metavar="P", help="delta already spent (approximate zCDP), added to the result's delta")
        p.add_argument("--json", action="store_true", help="print JSON")


def _ledger_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE", help="database file (default: the demo database)")
    p.add_argument("--policy", metavar="FILE", help="policy file (default: <db>.policy.toml); its ledger is read")
    p.add_argument("--analyst", help="whose budget (default: your login name)")
    p.add_argument("--state", metavar="DIR", help="the state folder of the data set's `dpsql serve`, whose ledger "
                                                  "is read too (default: the one it uses beside the database, "
                                                  "<db>.dpsql-server, when there is one)")
    p.add_argument("--json", action="store_true", help="print JSON")


def build_repl_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpsql", usage=REPL_USAGE,
        description="The interactive SQL prompt: each query is answered with differential-privacy noise and "
                    "charged to your budget. When standard input is not a terminal, statements are read from it "
                    f"(exit status 1 at the first error). Other commands: dpsql {{{','.join(COMMANDS)}}} --help.")
    parser.add_argument("database", nargs="?", metavar="DATABASE",
                        help="DuckDB database file (default: the demo database; write ./NAME for a file named like a command)")
    parser.add_argument("--db", metavar="FILE", help=argparse.SUPPRESS)  # as in the subcommands
    parser.add_argument("--policy", metavar="FILE", help="policy file (default: <db>.policy.toml beside the database)")
    parser.add_argument("--rho", metavar="R", help="zCDP budget per query (default: the policy's default_rho); \\set rho R changes it")
    parser.add_argument("--sigma", action="store_true", help="show σ instead of the 95%% margin of error")
    return parser


def _first_word(argv: list[str]) -> str | None:
    """The first positional word of ``argv`` (a command's name, when it names one). Values of the
    prompt's options are skipped, so `--policy demo` is not the command."""
    takes_value = {"--db", "--policy", "--rho"}
    words = iter(argv)
    for word in words:
        if word in takes_value:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _names_command(argv: list[str]) -> bool:
    """Whether ``argv`` is for a subcommand (or the top-level help): its first positional word is a
    command name."""
    word = _first_word(argv)
    if word is not None:
        return word in COMMANDS
    return any(w in ("-h", "--help", "--version") for w in argv)


def main(argv: list[str] | None = None) -> int:
    """The ``dpsql`` command; returns its exit status. When the reader of standard output goes
    away (``dpsql ledger --json | head -1``) it stops quietly with status 141, as a program
    killed by SIGPIPE does, instead of a BrokenPipeError traceback.

    Without ``argv`` (the console script, ``python -m dpsql``) this is the process's command:
    the process exits when it returns (see :func:`dpsql.faces.startup.one_statement`)."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not as a warning when Python exits
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered goes nowhere
        return 141


def _main(argv: list[str] | None) -> int:
    exiting = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    with startup.one_statement(_first_word(argv), exiting):
        args = _parse(argv)
        return _run(args) if args is not None else 0


def _parse(argv: list[str]) -> argparse.Namespace | None:
    """The command line parsed (``args.command`` set, "repl" for the prompt); None when the
    top-level help was printed instead."""
    if _names_command(argv):
        # A line that starts with the command's name needs that command's parser only.
        parser = build_parser(argv[0] if argv[0] in COMMANDS else None)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return None
    else:
        parser = build_repl_parser()
        args, extra = parser.parse_known_args(argv)
        args.command = "repl"
        _check_repl_args(parser, args)
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    engine_option.apply(args)
    return args


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; every failure becomes an exit status and a message."""
    try:
        commands = {"demo": _demo, "query": _query, "explain": _explain, "ledger": budget_commands.ledger,
                    "policy": budget_commands.policy, "convert": budget_commands.convert, "repl": _repl,
                    "serve": _serve, "user": _user, "init": _init, "workload": _workload,
                    "advise": _advise}
        return commands[args.command](args)
    except DpsqlError as exc:
        return _fail(args, exc.to_dict(), str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise  # the reader went away: main() stops quietly
    except Exception as exc:  # noqa: BLE001 - a bug: never print a message that may carry data values
        if os.environ.get("DPSQL_DEBUG"):
            raise
        return _fail(args, {"code": "DP900", "message": f"internal error ({type(exc).__name__}); this is a bug in dpsql"},
                     f"DP900: internal error ({type(exc).__name__}); this is a bug in dpsql. "
                     "Set DPSQL_DEBUG=1 to see the traceback (it may show private values: only for the data owner).")


def _init(args: argparse.Namespace) -> int:
    from dpsql.faces.init_cmd import init

    return init(args)


def _workload(args: argparse.Namespace) -> int:
    from dpsql.faces.workload_cmd import workload

    return workload(args)


def _advise(args: argparse.Namespace) -> int:
    from dpsql.faces.advise_cmd import advise

    return advise(args)


def _serve(args: argparse.Namespace) -> int:
    from dpsql.faces.server.cli import serve

    return serve(args)


def _user(args: argparse.Namespace) -> int:
    from dpsql.faces.server.cli import user

    return user(args)


def _fail(args: argparse.Namespace, error: dict[str, Any], text: str) -> int:
    if getattr(args, "json", False):
        print(fmt_mod.to_json({"error": error}))
    else:
        print(text, file=sys.stderr)
    return 1


def _sql(args: argparse.Namespace) -> str:
    return sys.stdin.read() if args.sql == "-" else args.sql


def _database(args: argparse.Namespace) -> str | None:
    """The database of `dpsql query|explain`: DATABASE after the SQL, or --db (not both)."""
    if args.database and args.db and args.database != args.db:
        raise SystemExit(f"dpsql {args.command}: give the database once, as DATABASE or as --db")
    return args.database or args.db


def _connect(args: argparse.Namespace):
    from dpsql.faces.dbapi import connect

    return connect(_database(args), args.policy, rho=args.rho)


def _query(args: argparse.Namespace) -> int:
    if args.json and args.format not in (None, "json"):
        print(f"dpsql query: --json and --format {args.format} disagree: give one", file=sys.stderr)
        return 2
    args.json = args.json or args.format == "json"  # errors as JSON too
    from dpsql.faces.dbapi import connect

    csv = args.format == "csv"  # the ± as columns, from the session's own error columns
    with connect(_database(args), args.policy, rho=args.rho, error_columns=("sigma" if args.sigma else "on") if csv else None,
                 reuse=not args.fresh) as con:
        result = con.cursor().execute(_sql(args)).result
    if args.json:
        print(fmt_mod.to_json(result.to_dict()))
    elif csv:
        sys.stdout.write(fmt_mod.csv_text(result))
        print(fmt_mod.status(result), file=sys.stderr)
    else:
        print(fmt_mod.table(result, show="sigma" if args.sigma else "moe"))
        print(fmt_mod.status(result, show="sigma" if args.sigma else "moe"))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from dpsql.intercept.explain import explanation_text

    with _connect(args) as con:
        print(fmt_mod.to_json(con.explain(_sql(args)).to_dict()) if args.json
              else explanation_text(con.session, _sql(args)))
    return 0


def _check_repl_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.database and args.db:
        parser.error("give the database once: as DATABASE or as --db")
    args.database = args.database or args.db
    if args.database and not os.path.exists(args.database) and "." not in os.path.basename(args.database):
        parser.error(f"{args.database!r} is neither a command ({', '.join(COMMANDS)}) nor a database file")


def _repl(args: argparse.Namespace) -> int:
    from dpsql.faces.repl import main as repl_main

    if args.database is None:  # building the demo takes a second on first use: say so
        from dpsql.demo_db import ensure_demo

        ensure_demo(progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True))
    return repl_main(args.database, args.policy, args.rho, display="sigma" if args.sigma else "moe")


def _demo(args: argparse.Namespace) -> int:
    from dpsql.faces.dbapi import connect
    from dpsql.demo_db import ensure_demo

    def progress(msg: str) -> None:
        if not args.json:
            print(f"  {msg}", file=sys.stderr, flush=True)

    db, policy = engine_option.demo_source(*ensure_demo(rows=args.rows, progress=progress))
    with connect(db, policy) as con:
        result = con.cursor().execute(SAMPLE_QUERY).result
    if args.json:
        print(fmt_mod.to_json({"database": str(db), "policy": str(policy), "query": SAMPLE_QUERY, **result.to_dict()}))
        return 0
    print(f"demo database: {db}\npolicy:        {policy}\n")
    print(SAMPLE_QUERY + ";\n")
    print(fmt_mod.table(result))
    print(fmt_mod.footer(result))
    print(f"\nNext: dpsql query \"SELECT state, SUM(employees) FROM establishments GROUP BY state\"\n"
          f"      dpsql query \"SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
          f"GROUP BY s.region\"\n"
          f"      dpsql explain \"...\" shows how a query is answered; dpsql with no arguments opens the prompt.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
