"""The ``serve`` and ``user`` subcommands of ``dpsql`` (registered by :mod:`dpsql.faces.cli`).

    dpsql serve [DATABASE] [--policy P] [--host 127.0.0.1] [--port 5433] [--tls-cert C --tls-key K]
    dpsql user add NAME [DATABASE] [--replace]     the password from a prompt, or from stdin
    dpsql user remove NAME [DATABASE]
    dpsql user list [DATABASE]

Without DATABASE both serve (and manage the users of) the demo database. ``--state DIR``
names the server's own folder (users, ledger); by default ``DPSQL_HOME/server`` for the
demo, ``<database>.dpsql-server/`` beside a database file.
"""

from __future__ import annotations

import argparse
import getpass
import ipaddress
import os
import sys
from pathlib import Path

from dpsql.errors import DpsqlError


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("serve", help="serve a database to psql, JDBC, BI tools and drivers over the PostgreSQL "
                                     "protocol; the server owns the data, the policy, the ledger and the users",
                       description="Serve DATABASE (default: the demo database) over the PostgreSQL protocol. "
                                   "Analysts connect as users added with `dpsql user add` (SCRAM-SHA-256); each "
                                   "answer is charged to the authenticated user's budget in the server's ledger.")
    p.add_argument("database", nargs="?", metavar="DATABASE", help="DuckDB file (default: the demo database)")
    p.add_argument("--policy", metavar="FILE", help="policy file (default: <database>.policy.toml beside it)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5433, help="port (default 5433; 0 picks a free one)")
    _state_arg(p)
    p.add_argument("--tls-cert", metavar="FILE", help="TLS certificate chain (PEM); with --tls-key, enables TLS")
    p.add_argument("--tls-key", metavar="FILE", help="TLS private key (PEM)")
    p.add_argument("--require-tls", action="store_true", help="refuse connections that do not use TLS")
    p.add_argument("--max-connections", type=int, default=100, metavar="N", help="connection limit (default 100)")
    p.add_argument("--idle-timeout", type=float, default=3600, metavar="S",
                   help="close connections idle this many seconds (default 3600)")
    p.add_argument("--statement-timeout", type=float, default=300, metavar="S",
                   help="cancel statements running longer (default 300; 0: no limit)")
    p.add_argument("--auth-timeout", type=float, default=5, metavar="S",
                   help="close connections that have not logged in within S seconds (default 5)")
    p.add_argument("--max-logins", type=int, default=64, metavar="N",
                   help="connections that may be logging in at once (default 64); they never take an analyst's slot")
    p.add_argument("--max-logins-per-address", type=int, default=8, metavar="N",
                   help="of those, from one client address (default 8)")
    p.add_argument("--memory-limit", default=DEFAULT_MEMORY, metavar="SIZE",
                   help=f"memory DuckDB may use for all queries together, e.g. 4GB, 512MB or 50%% of the machine's "
                        f"(default {DEFAULT_MEMORY.replace('%', '%%')}); a query that needs more fails")  # argparse %-formats help
    p.add_argument("--adopt-ledger", action="store_true",
                   help="take the ledger the policy names now as this server's own (after restoring or replacing "
                        "it; a missing one is created empty): the server refuses to start on any other")
    p.add_argument("--threads", type=int, metavar="N", help="DuckDB threads per query (default: all cores)")
    p.add_argument("--log-statements", metavar="FILE", help="append each statement clients send (JSON lines: user, "
                                                            "text) to FILE: what tools ask, never a row")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="accept any user name without a password: ONLY for a local demo (anyone can spend anyone's budget)")

    p = sub.add_parser("user", help="add, remove or list the analysts `dpsql serve` lets in")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = actions.add_parser("add", help="add an analyst (password from a prompt, or from standard input)")
    a.add_argument("name")
    a.add_argument("database", nargs="?", metavar="DATABASE")
    a.add_argument("--replace", action="store_true", help="set a new password for an existing user")
    a.add_argument("--error-columns", choices=("on", "off", "sigma"), help="this analyst's answers carry a "
                   "<column>_moe95 column for each noisy one, after those asked for (sigma: and _sigma), as SET dpsql.error_columns does: "
                   "a BI tool's grid shows the ± without any SQL")
    a.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a dpsql setting this analyst's "
                   "connections start with (rho=0.05, moe=1000, clamp_negative=on, reuse=off, ...; repeatable); the "
                   "connection's own options and SET override it")
    _state_arg(a)
    r = actions.add_parser("remove", help="remove an analyst (their ledger history stays)")
    r.add_argument("name")
    r.add_argument("database", nargs="?", metavar="DATABASE")
    _state_arg(r)
    ls = actions.add_parser("list", help="list the analysts")
    ls.add_argument("database", nargs="?", metavar="DATABASE")
    _state_arg(ls)


def _state_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state", metavar="DIR", help="the server's folder for users and the ledger "
                                                  "(default: DPSQL_HOME/server for the demo, <database>.dpsql-server/)")


def _state(args: argparse.Namespace) -> Path:
    from dpsql.faces.server.state import state_folder

    return Path(args.state) if args.state else state_folder(args.database)


def user(args: argparse.Namespace) -> int:
    from dpsql.faces.server.users import UserStore, check_name

    store = UserStore(_state(args))
    if args.action == "list":
        for name, info in store.users().items():
            print(f"{name}\tadded {info.get('created', '?')}" + (f"\t{info['options']}" if info.get("options") else ""))
        return 0
    check_name(args.name)
    if args.action == "remove":
        store.remove(args.name)
        print(f"removed {args.name} from {store.path}")
        return 0
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.name}: ")
        if getpass.getpass("again: ") != password:
            print("the passwords differ; nothing changed", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    settings = [*([f"error_columns={args.error_columns}"] if args.error_columns else []), *args.set]
    options = None
    if settings:  # checked here by name and form; the values when a connection applies them
        from dpsql.faces.server.startup_options import dpsql_options

        options = " ".join(f"-c dpsql.{s}" for s in settings)
        if len(dpsql_options(options)) != len(settings) or any(not s.split("=", 1)[1] or "'" in s for s in settings):
            print("dpsql user add: each --set is NAME=VALUE (a dpsql setting, no quotes), e.g. --set rho=0.05",
                  file=sys.stderr)
            return 2
    existed = store.add(args.name, password, replace=args.replace, options=options)
    print(f"{'changed the password of' if existed else 'added'} {args.name} in {store.path}"
          + (f"; their connections start with {', '.join(settings)}" if settings else ""))
    return 0


def serve(args: argparse.Namespace) -> int:
    from dpsql.faces.server.server import Served, Server, say, tls_context

    if bool(args.tls_cert) != bool(args.tls_key):
        raise SystemExit("dpsql serve: give both --tls-cert and --tls-key, or neither")
    if args.require_tls and not args.tls_cert:
        raise SystemExit("dpsql serve: --require-tls needs --tls-cert and --tls-key")
    memory = memory_bytes(args.memory_limit)
    served = Served(args.database, args.policy, _state(args), threads=args.threads, memory_limit=memory,
                    adopt_ledger=args.adopt_ledger, progress=lambda m: say(f"dpsql serve: {m}"))
    tls = tls_context(args.tls_cert, args.tls_key) if args.tls_cert else None
    server = Server(served, tls=tls, require_tls=args.require_tls, trust=args.insecure_no_auth,
                    max_connections=args.max_connections, idle_timeout=args.idle_timeout,
                    statement_timeout=args.statement_timeout, auth_timeout=args.auth_timeout,
                    max_logins=args.max_logins, max_logins_per_address=args.max_logins_per_address,
                    log=Path(args.log_statements) if args.log_statements else None)
    if args.insecure_no_auth:
        say("dpsql serve: WARNING: --insecure-no-auth: NO AUTHENTICATION. Any client can connect as any analyst "
            "and spend their budget. Use this only for a local demo.")
    elif not served.users.names():
        say(f"dpsql serve: no users yet: add one with `dpsql user add NAME{' ' + args.database if args.database else ''}`")
    if tls is None and not _loopback(args.host):
        say(f"dpsql serve: WARNING: listening on {args.host} without TLS: answers cross the network in clear "
            "(passwords do not: SCRAM). Give --tls-cert and --tls-key.")

    def started(host: str, port: int) -> None:
        say(f"dpsql serve: {served.database} under {served.policy_path}; state in {served.state}; ledger "
            f"{served.ledger}; memory limit {memory >> 20} MiB; statement timeout "
            f"{f'{args.statement_timeout:g} s' if args.statement_timeout else 'none'}")
        say(f"dpsql serve: listening on {host}:{port}{' (TLS)' if tls else ''}; "
            f"connect with: psql -h {host} -p {port} -U NAME")

    try:
        import asyncio  # here, not at the top: every dpsql command builds this parser

        asyncio.run(server.run(args.host, args.port, started))
    except OSError as exc:
        raise SystemExit(f"dpsql serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    say("dpsql serve: stopped")
    return 0


#: the default of ``--memory-limit``: half of the machine's memory for DuckDB, whatever the queries
DEFAULT_MEMORY = "50%"
_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def memory_bytes(text: str) -> int:
    """``--memory-limit`` in bytes: ``4GB``, ``512MiB``, ``50%`` (of the machine's memory), bytes."""
    value = text.strip().upper().replace(" ", "")
    try:
        if value.endswith("%"):
            share = float(value[:-1])
            if not 0 < share <= 100:
                raise ValueError(value)
            return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * share / 100)
        number = value.rstrip("KMGTIB")
        out = int(float(number) * _UNITS[value[len(number):]])
    except (ValueError, KeyError):
        raise SystemExit(f"dpsql serve: --memory-limit {text!r} is not a size (say 4GB, 512MB or 50%)") from None
    if out < 1 << 20:
        raise SystemExit(f"dpsql serve: --memory-limit {text!r} is below 1MiB: DuckDB cannot work in that")
    return out


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


__all__ = ["DpsqlError", "add_commands", "serve", "user"]
