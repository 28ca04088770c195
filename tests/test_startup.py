"""Start-up of a fresh process (issue 15, docs/performance.md): what `import dpsql` and the
`dpsql` command load before they need it, and the garbage collector paused while one statement
runs. No timing is asserted: which modules are loaded, and that the behaviour is unchanged."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from dpsql.faces import cli


def _python(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _loaded_after(code: str) -> set[str]:
    return set(json.loads(_python(f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))").splitlines()[-1]))


def test_import_dpsql_loads_no_engine_parser_or_numpy():
    loaded = _loaded_after("import dpsql")
    assert not {"sqlglot", "numpy", "duckdb", "dpsql.session", "dpsql.faces.dbapi"} & loaded


def test_the_dbapi_names_resolve_on_first_use():
    out = _python(
        "import sys, dpsql\n"
        "assert 'dpsql.faces.dbapi' not in sys.modules\n"
        "from dpsql import connect\n"
        "import dpsql.faces.dbapi as d\n"
        "assert connect is d.connect and dpsql.Cursor is d.Cursor and dpsql.paramstyle == d.paramstyle\n"
        "assert set(dpsql.__all__) <= set(dir(dpsql))\n"
        "try:\n    dpsql.no_such_name\nexcept AttributeError:\n    print('ok')\n")
    assert out.strip() == "ok"


def test_the_command_line_parser_loads_no_pipeline():
    """Every command builds the parser of all commands; `dpsql query` must not pay for the
    workload planner, nor `dpsql ledger` for sqlglot, numpy or DuckDB."""
    loaded = _loaded_after("import dpsql.faces.cli as c\nc.build_parser().parse_args(['ledger'])")
    assert not {m for m in loaded if m.startswith("dpsql.workload")}
    assert not {"sqlglot", "numpy", "duckdb", "dpsql.session"} & loaded


def test_budget_commands_load_no_engine_parser_or_numpy(demo):
    """`dpsql ledger`, `policy` and `convert` read the ledger file and the policy only."""
    for argv in (["ledger", "--db", str(demo[0]), "--policy", str(demo[1]), "--json"],
                 ["policy", "--db", str(demo[0]), "--policy", str(demo[1]), "--table", "establishments", "employees=3"],
                 ["convert", "--rho", "1", "--delta", "1e-6"]):
        loaded = _loaded_after("import contextlib, io\nfrom dpsql.faces.cli import main\n"
                               f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0")
        assert not {"sqlglot", "numpy", "duckdb", "dpsql.session"} & loaded, argv


def test_a_command_line_starting_with_a_command_builds_its_parser_only():
    loaded = _loaded_after("import dpsql.faces.cli as c\nc.build_parser('query')")
    assert not {"dpsql.faces.server.cli", "dpsql.faces.init_cmd", "dpsql.faces.workload_cmd",
                "dpsql.faces.advise_cmd"} & loaded
    for argv in (["query", "SELECT 1", "--db", "x.duckdb", "--format", "csv", "--engine", "spark"],
                 ["serve", "--port", "0"], ["user", "list"], ["init", "a.csv", "--unit", "id"],
                 ["workload", "w.toml", "--dry-run"], ["advise", "--json"], ["ledger", "--all"],
                 ["policy", "employees=3"], ["convert", "--rho", "1", "--delta", "1e-6"], ["explain", "SELECT 1"],
                 ["demo", "--rows", "10"]):
        assert cli.build_parser(argv[0]).parse_args(argv) == cli.build_parser().parse_args(argv)


def test_the_collector_is_paused_only_while_one_statement_runs(monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "_run", lambda args: seen.append((args.command, gc.isenabled())) or 0)
    assert cli.main(["query", "SELECT 1"]) == 0
    assert cli.main(["explain", "SELECT 1"]) == 0
    assert cli.main(["ledger"]) == 0
    assert seen == [("query", False), ("explain", False), ("ledger", True)]
    assert gc.isenabled() and gc.get_freeze_count() == 0  # a caller of main() gets its collector back


def test_a_failing_command_gives_the_collector_back(monkeypatch):
    with pytest.raises(SystemExit) as exc:  # bad usage: argparse exits while the collector is paused
        cli.main(["query", "SELECT 1", "--no-such-option"])
    assert exc.value.code == 2 and gc.isenabled()

    def fail(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_run", fail)
    with pytest.raises(RuntimeError):
        cli.main(["query", "SELECT 1"])
    assert gc.isenabled()


def test_the_process_command_freezes_instead_of_collecting():
    """Without argv, main() is the process's command: the process exits next, so the collector
    stays off and what start-up made is frozen (Python's exit-time collection skips it), and
    OpenBLAS starts one thread unless told otherwise; a caller's own process is left alone."""
    code = ("import gc, os, sys\n"
            "from dpsql.faces import cli\n"
            "cli._run = lambda args: print(os.environ.get('OPENBLAS_NUM_THREADS')) or 0\n"
            "sys.argv = ['dpsql', 'query', 'SELECT 1']\n"
            "assert cli.main() == 0\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
            "sys.argv = ['dpsql', 'ledger']\n")
    assert _python(code).split() == ["1", "False", "True"]
    assert _python(code.replace("import gc, os, sys", "import gc, os, sys; os.environ['OPENBLAS_NUM_THREADS'] = '3'")
                   ).split() == ["3", "False", "True"]
    assert _python(code.replace("cli.main()", "cli.main(['query', 'SELECT 1'])")).split() == ["None", "True", "False"]


def test_one_catalog_read_gives_the_information_schema_facts(tmp_path):
    """The engine reads duckdb_columns() and duckdb_constraints() once per session for the
    schema, the NOT NULL columns, the non-negative ones and the unit check's constraints: the
    same facts as information_schema.columns (a view of duckdb_columns) read three times."""
    import duckdb

    from dpsql.backends.check_bounds import bounded_below_by_zero
    from dpsql.backends.duckdb import DuckDBEngine

    path = tmp_path / "cat.duckdb"
    con = duckdb.connect(str(path))
    con.execute('CREATE TABLE t (id BIGINT PRIMARY KEY, u UINTEGER, x INTEGER CHECK (x >= 0), y DOUBLE NOT NULL, '
                '"Mixed" VARCHAR UNIQUE, z DECIMAL(10,2), CHECK (0 <= y AND y < 100))')
    con.execute('CREATE TABLE "Other" (k VARCHAR UNIQUE NOT NULL, s STRUCT(a INT), e INTEGER[])')
    con.execute("CREATE VIEW v AS SELECT id, x FROM t")
    con.execute("INSERT INTO t VALUES (1, 1, 0, 1.0, 'a', 1), (2, 1, 0, 2.0, 'b', 1)")
    tables = ["t", "other", "v", "missing"]
    schema: dict = {t: {} for t in tables}
    for table, column, dtype, nullable in con.execute(
            "SELECT lower(table_name), lower(column_name), data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall():
        if table in schema:
            schema[table][column] = (dtype, nullable)
    con.close()
    engine = DuckDBEngine(path)
    try:
        got = engine.schema(tables)
        assert {t: list(c.items()) for t, c in got.items()} == \
            {t: [(c, d) for c, (d, _) in cols.items()] for t, cols in schema.items()}
        assert engine.not_null_columns(tables) == \
            {t: {c for c, (_, n) in cols.items() if n == "NO"} for t, cols in schema.items()}
        assert engine.nonnegative_columns(tables) == {"t": {"u", "x", "y"}, "other": set(), "v": set(), "missing": set()}
        assert bounded_below_by_zero("(x >= 0)") == {"x"}
        # proven by the catalog (PRIMARY KEY; UNIQUE and NOT NULL), or by a scan of the rows
        assert [engine.units_unique(t, u) for t, u in [("t", "id"), ("other", "k"), ("t", "mixed"), ("t", "x")]] == \
            [True, True, True, False]
    finally:
        engine.close()


def test_the_finisher_shares_the_empty_twin_made_when_first_needed(con):
    """The DuckDB engine's finish stage runs on a cursor of the empty schema twin's in-memory
    database (one DuckDB instance fewer per session), opened at the first query, not before;
    it holds no private row and keeps the lockdown."""
    import duckdb

    session = con.session
    assert session.engine._twin is None and session.finisher._con is None  # nothing opened yet
    # ORDER BY: the finish query runs on DuckDB (a bare projection is finished without it)
    cur = con.cursor().execute("SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2 ORDER BY naics2")
    assert len(cur.fetchall()) == 24
    fin = session.finisher._con
    assert session.engine._twin is not None and fin is not None
    assert fin.execute("SELECT COUNT(*) FROM establishments").fetchall() == [(0,)]  # the twin's empty table
    for statement in ("SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true",
                      "INSTALL httpfs", "SET threads = 1"):
        with pytest.raises(duckdb.Error):
            fin.execute(statement)
    with pytest.raises(duckdb.CatalogException):  # a query's noisy cells are on its own cursor only
        session.engine._twin.con.execute("SELECT * FROM __noisy")


def test_a_schema_the_twin_cannot_mirror_is_refused_per_query(tmp_path):
    """A column whose default reads a sequence cannot be mirrored on the empty twin: the session still
    opens (the finisher, on the twin's instance, is made on first use) and a query is refused in
    phase 1 with nothing charged."""
    import textwrap

    import duckdb

    import dpsql
    from dpsql.errors import DatabaseFileError

    db = tmp_path / "ev.duckdb"
    raw = duckdb.connect(str(db))
    raw.execute("CREATE SEQUENCE ids")
    raw.execute("CREATE TABLE ev (id BIGINT DEFAULT nextval('ids'), amt BIGINT)")
    raw.execute("INSERT INTO ev SELECT i, i % 7 FROM range(100) r(i)")
    raw.close()
    policy = tmp_path / "ev.policy.toml"
    policy.write_text(textwrap.dedent("""
        [budget]
        default_rho = 1.0
        total_rho = 10.0
        [tables.ev]
        privacy_unit = "id"
        [tables.ev.measures]
        amt = { threshold = 10 }
        """))
    c = dpsql.connect(db, policy)
    try:
        assert c.cursor().execute("SELECT 1").fetchall() == [(1,)]
        with pytest.raises(DatabaseFileError, match="cannot mirror the schema"):
            c.cursor().execute("SELECT COUNT(*) FROM ev")
        assert c.session.ledger.spent == 0
    finally:
        c.close()


def test_the_postgres_dialect_is_imported_by_the_first_to_date(demo):
    """sqlglot's PostgreSQL dialect (its time mapping turns TO_DATE formats into STRPTIME ones)
    is imported when a query first uses TO_DATE / TO_TIMESTAMP, not by every process."""
    out = _python(
        "import sys, dpsql\n"
        f"c = dpsql.connect({str(demo[0])!r}, {str(demo[1])!r})\n"
        "c.cursor().execute('SELECT COUNT(*) FROM establishments').fetchall()\n"
        "print('sqlglot.dialects.postgres' in sys.modules)\n"
        "sql = \"SELECT COUNT(*) FROM establishments WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD')\"\n"
        "print('strptime' in c.session.plan(sql).where.sql('duckdb').lower(), 'sqlglot.dialects.postgres' in sys.modules)\n"
        "c.close()\n")
    assert out.split() == ["False", "True", "True"]


def test_each_session_reads_the_catalog_afresh(tmp_path):
    """The engine keeps its catalog read for its own life only (the file is read-only and locked
    against writers meanwhile): a column added between two sessions is seen by the second."""
    import duckdb

    from dpsql.backends.duckdb import DuckDBEngine

    path = tmp_path / "grow.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x INTEGER)")
    con.close()
    first = DuckDBEngine(path)
    assert first.schema(["t"]) == {"t": {"id": "BIGINT", "x": "INTEGER"}}
    writer = subprocess.run([sys.executable, "-c", f"import duckdb; duckdb.connect({str(path)!r})"],
                            capture_output=True, text=True, timeout=60)
    assert writer.returncode != 0 and "lock" in writer.stderr.lower()  # no writer while a session holds it
    first.close()
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE t ADD COLUMN y UINTEGER")
    con.close()
    second = DuckDBEngine(path)
    try:
        assert second.schema(["t"]) == {"t": {"id": "BIGINT", "x": "INTEGER", "y": "UINTEGER"}}
        assert second.nonnegative_columns(["t"]) == {"t": {"y"}}
    finally:
        second.close()
