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
    stays off and what start-up made is frozen (Python's exit-time collection skips it)."""
    out = _python(
        "import gc, sys\n"
        "from dpsql.faces import cli\n"
        "cli._run = lambda args: 0\n"
        "sys.argv = ['dpsql', 'query', 'SELECT 1']\n"
        "assert cli.main() == 0\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 0)\n")
    assert out.split() == ["False", "True"]
