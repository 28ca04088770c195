"""Capture what real PostgreSQL clients send to ``dpsql serve`` as replay fixtures.

    python scripts/capture_pgwire.py [psql|jdbc|psycopg|asyncpg|sqlalchemy ...]   (default: all)

Runs a ``dpsql serve`` of the demo database inside this process (in a fresh DPSQL_HOME), records
each statement a client executes with the values bound to its ``$n`` parameters, runs the real
client, and writes tests/fixtures/pgwire/<tool>_<what>.sql: the statements answered by the
session or the catalog, in order. Statements that reach the private pipeline (the clients' one
aggregate) are left out: the fixtures are the catalog's. Replayed by tests/test_server_catalog.py.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pgwire_catalog as clients  # noqa: E402

from dpsql.faces.server import connection  # noqa: E402
from dpsql.faces.server.server import Served, Server  # noqa: E402
from dpsql.faces.server.statements import route  # noqa: E402

USER, PASSWORD = "alice", "pw-alice"
_VERSION = {"psql": "psql (PostgreSQL) 15", "jdbc": "pgjdbc 42.5 (Debian libpostgresql-jdbc-java)"}


class Recorder:
    """Wraps the connection's ``answer`` to keep (statement, parameters) of each execution."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[Any]]] = []
        self._answer = connection.answer

    def __call__(self, sql: str, values: list[Any], session: Any, catalog: Any, pg: Any, private: set[str]) -> Any:
        if route(sql, private) != "private":
            self.seen.append((sql, list(values)))
        return self._answer(sql, values, session, catalog, pg, private)

    def take(self) -> list[tuple[str, list[Any]]]:
        out, self.seen = self.seen, []
        return out


def start(home: Path) -> int:
    os.environ["DPSQL_HOME"] = str(home)
    served = Served(None, None)
    served.users.add(USER, PASSWORD)
    server = Server(served)
    ready = threading.Event()
    port: list[int] = []
    loop = asyncio.new_event_loop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.run("127.0.0.1", 0, lambda h, p: (port.append(p), ready.set())))

    threading.Thread(target=run, daemon=True).start()
    if not ready.wait(120):
        raise SystemExit("the server did not start")
    return port[0]


def write(name: str, what: str, expect: list[str], statements: list[tuple[str, list[Any]]]) -> None:
    path = clients.FIXTURES / f"{name}.sql"
    clients.write_fixture(path, [what, "captured by scripts/capture_pgwire.py from the real client against "
                                       "dpsql serve on the demo database"], expect, statements)
    print(f"{path.relative_to(ROOT)}: {len(statements)} statements")


def capture(tool: str, port: int, recorder: Recorder, work: Path) -> None:
    if tool == "psql":
        for name, (commands, expect) in clients.PSQL_COMMANDS.items():
            for command in commands:
                done = clients.psql(port, USER, PASSWORD, command)
                if "ERROR" in done.stderr:
                    print(f"psql {command}: {done.stderr.strip()}", file=sys.stderr)
            write(name, f"{_VERSION['psql']}: {' '.join(commands)}", expect, recorder.take())
        clients.psql_tab_completion(port, USER, PASSWORD)
        write("psql15_tab_completion", f"{_VERSION['psql']}, interactive: Tab Tab after "
                                       + "; ".join(repr(t.replace(chr(9), '')) for t in clients.TAB_COMPLETION),
              ["establishments", "payann", "statement_timeout"], recorder.take())
    elif tool == "jdbc":
        done = clients.jdbc_probe(port, USER, PASSWORD, work / "jdbc")
        if done.returncode:
            print(done.stdout, done.stderr, file=sys.stderr)
        write("pgjdbc42_metadata", f"{_VERSION['jdbc']}: connect, then every DatabaseMetaData call of "
                                   "tests/fixtures/pgwire/CatalogProbe.java (DBeaver's and Metabase's driver)",
              ["establishments", "payann", "states_pkey"], recorder.take())
    elif tool == "psycopg":
        clients.psycopg_session(port, USER, PASSWORD)
        write("psycopg3_session", "psycopg 3: connect, information_schema tables and columns, TypeInfo.fetch",
              ["establishments", "bigint", "int8"], recorder.take())
    elif tool == "asyncpg":
        clients.asyncpg_session(port, USER, PASSWORD)
        write("asyncpg_session", "asyncpg: connect, pg_class, pg_attribute with $1::regclass, pg_constraint",
              ["establishments", "payann"], recorder.take())
    elif tool == "sqlalchemy":
        clients.sqlalchemy_inspector(port, USER, PASSWORD)
        write("sqlalchemy_inspector", "SQLAlchemy 2 postgresql+psycopg: the inspector calls Superset's database "
                                      "introspection makes, Table(autoload_with=), pandas.read_sql",
              ["establishments", "states_pkey", "bigint"], recorder.take())
    else:
        raise SystemExit(f"unknown tool {tool!r}")


def main(argv: list[str]) -> int:
    tools = argv or ["psql", "jdbc", "psycopg", "asyncpg", "sqlalchemy"]
    recorder = Recorder()
    connection.answer = recorder  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        port = start(Path(tmp))
        for tool in tools:
            capture(tool, port, recorder, Path(tmp))
    return 0  # the server's thread is a daemon: it ends with this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
