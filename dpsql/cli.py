"""The `dpsql` command: one-shot subcommands with text or --json output.

    dpsql demo                     build the demo database if needed and run a sample query
    dpsql query "SQL"              answer a query with noise; charges the budget
    dpsql explain "SQL"            show the plan, the exact SQL and the noise; charges nothing

Exit status: 0 on success, 1 when dpsql refused or failed (message on stderr, or
``{"error": {...}}`` on stdout with --json), 2 on bad command-line usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import format as fmt_mod
from .errors import DpsqlError

SAMPLE_QUERY = "SELECT naics2, COUNT(*) AS establishments, SUM(payann) AS payroll, AVG(employees) AS avg_employees\n" \
               "FROM establishments GROUP BY naics2 ORDER BY naics2"


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE", help="DuckDB database file (default: the demo database)")
    p.add_argument("--policy", metavar="FILE", help="policy file (default: <db>.policy.toml beside the database)")
    p.add_argument("--rho", metavar="R", help="zCDP budget for this query (default: the policy's default_rho)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpsql", description="Differentially private GROUP BY aggregates (COUNT, SUM, AVG) over a DuckDB file.",
        epilog="Start with `dpsql demo`. Docs: README.md and docs/ in the source tree.")
    parser.add_argument("--version", action="version", version="dpsql 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="build the demo database if needed, show where it is, run a sample query")
    p.add_argument("--rows", type=int, default=200_000, help="establishments rows (default 200000)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("query", help="answer one aggregate query with differential privacy (charges the budget)")
    p.add_argument("sql", help="the SELECT statement ('-' reads it from standard input)")
    _connection_args(p)
    p.add_argument("--sigma", action="store_true", help="show σ instead of the 95%% margin of error")

    p = sub.add_parser("explain", help="show how a query would be answered; touches no data, charges nothing")
    p.add_argument("sql", help="the SELECT statement ('-' reads it from standard input)")
    _connection_args(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return {"demo": _demo, "query": _query, "explain": _explain}[args.command](args)
    except DpsqlError as exc:
        return _fail(args, exc.to_dict(), str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: never print a message that may carry data values
        if os.environ.get("DPSQL_DEBUG"):
            raise
        return _fail(args, {"code": "DP900", "message": f"internal error ({type(exc).__name__}); this is a bug in dpsql"},
                     f"DP900: internal error ({type(exc).__name__}); this is a bug in dpsql. "
                     "Set DPSQL_DEBUG=1 to see the traceback (it may show private values: only for the data owner).")


def _fail(args: argparse.Namespace, error: dict[str, Any], text: str) -> int:
    if getattr(args, "json", False):
        print(fmt_mod.to_json({"error": error}))
    else:
        print(text, file=sys.stderr)
    return 1


def _sql(args: argparse.Namespace) -> str:
    return sys.stdin.read() if args.sql == "-" else args.sql


def _connect(args: argparse.Namespace):
    from .dbapi import connect

    return connect(args.db, args.policy, rho=args.rho)


def _query(args: argparse.Namespace) -> int:
    with _connect(args) as con:
        result = con.cursor().execute(_sql(args)).result
    if args.json:
        print(fmt_mod.to_json(result.to_dict()))
    else:
        print(fmt_mod.table(result, show="sigma" if args.sigma else "moe"))
        print(fmt_mod.footer(result))
    return 0


def _explain(args: argparse.Namespace) -> int:
    with _connect(args) as con:
        ex = con.explain(_sql(args))
    print(fmt_mod.to_json(ex.to_dict()) if args.json else fmt_mod.explanation(ex))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .dbapi import connect
    from .demo_db import ensure_demo

    def progress(msg: str) -> None:
        if not args.json:
            print(f"  {msg}", file=sys.stderr, flush=True)

    db, policy = ensure_demo(rows=args.rows, progress=progress)
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
          f"      dpsql explain \"...\" shows how a query is answered.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
