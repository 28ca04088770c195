"""The `dpsql` command, run as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run(*args: str, env_home: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, DPSQL_HOME=env_home)
    return subprocess.run([sys.executable, "-m", "dpsql", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=120)


def test_query_json(demo):
    home = str(demo[0].parent)
    p = run("query", "SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2", "--json", env_home=home)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["columns"] == ["naics2", "pay"] and len(out["rows"]) == 24
    assert out["receipt"]["rho"] == "0.1" and out["receipt"]["columns"]["pay"]["sigma"][0] > 0


def test_query_table_and_stdin(demo):
    home = str(demo[0].parent)
    p = run("query", "-", "--rho", "0.5", "--db", str(demo[0]), "--policy", str(demo[1]), env_home=home,
            stdin="SELECT state, COUNT(*) AS n FROM establishments GROUP BY state")
    assert p.returncode == 0, p.stderr
    assert "± " in p.stdout and "charged rho=0.5" in p.stdout and "(51 rows)" in p.stdout


def test_refusal_json_and_exit_code(demo):
    home = str(demo[0].parent)
    p = run("query", "SELECT id, payann FROM establishments", "--json", env_home=home)
    assert p.returncode == 1
    assert json.loads(p.stdout)["error"]["code"] == "DP201"
    p = run("query", "SELECT naics2, MAX(payann) FROM establishments GROUP BY naics2", env_home=home)
    assert p.returncode == 1 and "DP109" in p.stderr and "Traceback" not in p.stderr


def test_explain(demo):
    home = str(demo[0].parent)
    p = run("explain", "SELECT AVG(payann) FROM establishments WHERE state = 'CA'", env_home=home)
    assert p.returncode == 0, p.stderr
    assert "UNNEST(RANGE(" in p.stdout and "SUM(\"payann\")" in p.stdout and "policy terms" in p.stdout
    p = run("explain", "SELECT AVG(payann) FROM establishments", "--json", env_home=home)
    assert json.loads(p.stdout)["exact_sql"].startswith("SELECT")


def test_demo_command(demo):
    home = str(demo[0].parent)
    p = run("demo", env_home=home)
    assert p.returncode == 0, p.stderr
    assert str(demo[0]) in p.stdout and "± " in p.stdout and "budget spent" in p.stdout


def test_query_format_csv_json_table(demo):
    import csv
    import io

    home, where = str(demo[0].parent), ("--db", str(demo[0]), "--policy", str(demo[1]))
    sql = "SELECT naics2, COUNT(*) AS n, AVG(payann) AS avg_pay FROM establishments GROUP BY naics2"
    p = run("query", sql, "--format", "csv", *where, env_home=home)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0] == ["naics2", "n", "avg_pay", "n_moe95", "avg_pay_moe95"] and len(rows) == 25
    assert all(float(r[3]) > 0 for r in rows[1:])
    assert "charged rho=0.1" in p.stderr and "charged" not in p.stdout  # the cost apart from the data
    p = run("query", sql, "--format", "csv", "--sigma", *where, env_home=home)
    assert next(csv.reader(io.StringIO(p.stdout)))[:5] == ["naics2", "n", "avg_pay", "n_moe95", "n_sigma"]
    p = run("query", sql, "--format", "json", *where, env_home=home)
    out = json.loads(p.stdout)
    # the same statement again, in a new process: the answer released first, charged nothing (pipeline/reuse.py)
    assert out["columns"] == ["naics2", "n", "avg_pay"] and out["receipt"]["rho"] == "0"
    assert out["receipt"]["reused"]["rho"] == "0.1"
    p = run("query", sql, "--format", "table", *where, env_home=home)
    assert "± " in p.stdout and "(24 rows) reused: released at " in p.stdout
    assert "charged 0 now (rho=0.1 when first released)" in p.stdout
    p = run("query", "SELECT id FROM establishments", "--format", "json", *where, env_home=home)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["code"] == "DP201"  # errors as JSON too
    p = run("query", sql, "--format", "csv", "--json", *where, env_home=home)
    assert p.returncode == 2 and "disagree" in p.stderr
    p = run("query", "SELECT code, region FROM states", "--format", "csv", *where, env_home=home)
    assert p.stdout.splitlines()[:2] == ["code,region", "AK,West"] and "nothing charged" in p.stderr


def test_every_command_prints_its_help():
    """`dpsql X --help` for every command the parser lists: `serve --help` once crashed in
    argparse's %-formatting of a default that holds '%' (50%)."""
    from dpsql.faces.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    names = sorted(sub.choices)
    assert {"serve", "user", "init", "query", "ledger"} <= set(names)
    for name in names:
        p = subprocess.run([sys.executable, "-m", "dpsql", name, "--help"], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and p.stdout.startswith(f"usage: dpsql {name}"), (name, p.stderr[-400:])
