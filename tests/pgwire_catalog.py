"""What real PostgreSQL clients send to ``dpsql serve`` to read its catalog, and the replay
fixtures that keep it (tests/fixtures/pgwire/*.sql).

Shared by tests/test_server_catalog.py (which replays the fixtures and drives the real clients)
and scripts/capture_pgwire.py (which captures the fixtures from the real clients). A fixture is
the statements one tool sent, in order::

    -- <what and how it was captured>
    -- expect: word word        (each word appears in some answer of the file)
    -- params: ["main", "t"]    (the values bound to $1, $2 of the next statement)
    SELECT ...
    ;

Statements are separated by a line holding ``;`` alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "pgwire"
JDBC_JAR = Path("/usr/share/java/postgresql.jar")

#: psql 15 commands, one fixture each: file stem -> (commands, words the answers must contain)
PSQL_COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "psql15_d": (["\\d"], ["establishments", "states", "table"]),
    "psql15_dt": (["\\dt"], ["devices", "paper_table1"]),
    "psql15_d_table": (["\\d establishments"], ["payann", "bigint", "text"]),
    "psql15_d_public_table": (["\\d states"], ["states_pkey", "PRIMARY KEY", "btree (code)"]),
    "psql15_dplus_table": (["\\d+ establishments"], ["measure: SUM/AVG, split threshold T = 10000", "heap"]),
    "psql15_dt_plus": (["\\dt+"], ["0 bytes", "dpsql: one row per id"]),
    "psql15_dn": (["\\dn", "\\dn+"], ["main"]),
    "psql15_l": (["\\l", "\\l+"], ["demo", "UTF8"]),
    "psql15_df": (["\\df", "\\df+"], []),
    "psql15_dv": (["\\dv", "\\dm", "\\ds", "\\dE"], []),
    "psql15_di": (["\\di"], ["states_pkey"]),
    "psql15_du": (["\\du", "\\dg"], ["alice"]),
    "psql15_misc": (["\\dT", "\\dx", "\\dp", "\\z", "\\db", "\\dD", "\\dconfig", "\\dy", "\\dL", "\\dd", "\\des",
                     "\\dew", "\\dF", "\\dFd", "\\dFp", "\\dFt", "\\do", "\\dC", "\\dc", "\\dO", "\\dRp", "\\dRs",
                     "\\dX", "\\drds", "\\lo_list"], ["pg_default", "dpsql=r/dpsql"]),
}


@dataclass
class Fixture:
    name: str
    header: list[str]
    expect: list[str]
    statements: list[tuple[str, list[Any]]] = field(default_factory=list)


def load_fixture(path: Path) -> Fixture:
    fixture = Fixture(path.stem, [], [])
    params: list[Any] = []
    sql: list[str] = []
    for line in path.read_text().splitlines():
        if line.strip() == ";":
            if "".join(sql).strip():
                fixture.statements.append(("\n".join(sql).strip(), params))
            sql, params = [], []
        elif not sql and line.startswith("-- params: "):
            params = json.loads(line[len("-- params: "):])
        elif not sql and line.startswith("-- expect: "):
            fixture.expect += line[len("-- expect: "):].split(" | ")
        elif not sql and line.startswith("--"):
            fixture.header.append(line)
        elif sql or line.strip():
            sql.append(line)
    assert not "".join(sql).strip(), f"{path}: the last statement has no closing ';' line"
    return fixture


def write_fixture(path: Path, header: list[str], expect: list[str], statements: list[tuple[str, list[Any]]]) -> None:
    out = [f"-- {h}" for h in header]
    if expect:
        out.append("-- expect: " + " | ".join(expect))
    for sql, params in statements:
        out.append("")
        if params:
            out.append("-- params: " + json.dumps(params))
        out.append(sql.strip().rstrip(";").rstrip())
        out.append(";")
    path.write_text("\n".join(out) + "\n")


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.sql"))


# ---------------------------------------------------------------------------------- tools
def missing(tool: str) -> str | None:
    """Why ``tool`` (psql, java, javac, the JDBC jar) cannot run here, or None."""
    if tool == "jdbc":
        return None if JDBC_JAR.is_file() else f"{JDBC_JAR} is missing (apt-get install libpostgresql-jdbc-java)"
    return None if shutil.which(tool) else f"{tool} is not on PATH (scripts/test-deps.sh installs it)"


def psql(port: int, user: str, password: str, command: str, database: str = "demo") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", database, "-c", command],
                          capture_output=True, text=True, env=env, timeout=60)


#: what is typed at psql's prompt to make it complete (Tab Tab), and each line is then erased
TAB_COMPLETION = ("SELECT * FROM est\t\t", "SELECT * FROM establishments WHERE \t\t", "\\d \t\t", "SET \t\t",
                  "SELECT * FROM main.\t\t")


def psql_tab_completion(port: int, user: str, password: str, typed: tuple[str, ...] = TAB_COMPLETION) -> str:
    """Drive an interactive psql on a pseudo-terminal so that it sends its completion queries."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: psql on the terminal
        os.environ["PGPASSWORD"] = password
        os.execvp("psql", ["psql", "-X", "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", "demo"])

    def read(seconds: float) -> bytes:
        out, end = b"", time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        return out

    screen = read(3.0)
    for keys in typed:
        os.write(fd, keys.encode())
        screen += read(1.5)
        os.write(fd, b"\x15")  # erase the line
    os.write(fd, b"\\q\n")
    read(1.0)
    os.waitpid(pid, 0)
    return screen.decode("utf-8", "replace")


def jdbc_probe(port: int, user: str, password: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """Compile and run CatalogProbe.java with Debian's pgjdbc."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "CatalogProbe.java", workdir / "CatalogProbe.java")
    subprocess.run(["javac", "-cp", str(JDBC_JAR), "CatalogProbe.java"], cwd=workdir, check=True, timeout=120,
                   capture_output=True)
    return subprocess.run(["java", "-cp", f"{JDBC_JAR}{os.pathsep}.", "CatalogProbe",
                           f"jdbc:postgresql://127.0.0.1:{port}/demo", user, password],
                          cwd=workdir, capture_output=True, text=True, timeout=120)


def psycopg_session(port: int, user: str, password: str) -> dict[str, Any]:
    """What a psycopg 3 program reads of the catalog."""
    import psycopg
    from psycopg.types import TypeInfo

    out: dict[str, Any] = {}
    with psycopg.connect(host="127.0.0.1", port=port, user=user, password=password, dbname="demo") as conn:
        cur = conn.cursor()
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", ("main",))
        out["tables"] = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position", ("main", "establishments"))
        out["columns"] = cur.fetchall()
        cur.execute("SELECT current_schema(), current_user, version()")
        out["who"] = cur.fetchone()
        info = TypeInfo.fetch(conn, "int8")
        out["int8"] = (info.oid, info.array_oid) if info else None
    return out


def asyncpg_session(port: int, user: str, password: str) -> dict[str, Any]:
    """What an asyncpg program reads of the catalog (binary results, the extended protocol)."""
    import asyncio

    import asyncpg

    async def main() -> dict[str, Any]:
        conn = await asyncpg.connect(host="127.0.0.1", port=port, user=user, password=password, database="demo")
        try:
            tables = await conn.fetch("SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'r' ORDER BY 1")
            cols = await conn.fetch("SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute "
                                    "WHERE attrelid = $1::regclass AND attnum > 0 ORDER BY attnum", "establishments")
            keys = await conn.fetchval("SELECT conkey FROM pg_constraint WHERE contype = 'p' AND conrelid = $1::regclass",
                                       "states")
            return {"tables": [r["relname"] for r in tables], "columns": [(r["attname"], r["type"]) for r in cols],
                    "pkey": keys}
        finally:
            await conn.close()

    return asyncio.run(main())


def sqlalchemy_inspector(port: int, user: str, password: str) -> dict[str, Any]:
    """What SQLAlchemy's inspector (Superset's database introspection) and pandas read."""
    import pandas as pd
    import sqlalchemy as sa

    engine = sa.create_engine(f"postgresql+psycopg://{user}:{password}@127.0.0.1:{port}/demo")
    try:
        insp = sa.inspect(engine)
        out: dict[str, Any] = {
            "schemas": insp.get_schema_names(),
            "tables": insp.get_table_names(schema="main"),
            "default_tables": insp.get_table_names(),
            "views": insp.get_view_names(schema="main"),
            "materialized": insp.get_materialized_view_names(schema="main"),
            "columns": insp.get_columns("establishments", schema="main"),
            "pk": insp.get_pk_constraint("states", schema="main"),
            "fks": insp.get_foreign_keys("establishments", schema="main"),
            "indexes": insp.get_indexes("states", schema="main"),
            "unique": insp.get_unique_constraints("states", schema="main"),
            "checks": insp.get_check_constraints("states", schema="main"),
            "comment": insp.get_table_comment("establishments", schema="main"),
            "has_table": insp.has_table("establishments", schema="main"),
            "sequences": insp.get_sequence_names(schema="main"),
        }
        table = sa.Table("states", sa.MetaData(), autoload_with=engine, schema="main")
        out["reflected"] = list(table.columns.keys())
        out["read_sql"] = pd.read_sql("SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2", engine)
        return out
    finally:
        engine.dispose()
