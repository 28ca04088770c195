"""`dpsql init`: from a CSV file, a Parquet folder or a DuckDB file to answered queries, with
nothing written by hand but what `dpsql init` asks (docs/own_data.md), driven as a user drives it:
the real command in a subprocess, at a real terminal (a pty) when it asks a question."""

from __future__ import annotations

import csv
import math
import os
import re
import pty
import random
import subprocess
import sys
import tomllib
from pathlib import Path

import duckdb
import pytest

import dpsql


def _dpsql(*args: str, cwd: Path, stdin: str | None = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DPSQL_HOME=str(cwd), COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "dpsql", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=env, timeout=timeout)


def _customers(path: Path, n: int = 5000, duplicate: bool = False) -> Path:
    rng = random.Random(7)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["customer_id", "region", "plan", "signup", "spend", "visits"])
        for i in range(n):
            w.writerow([1 if duplicate and i < 2 else i + 1, rng.choice(["north", "south", "east", "west"]),
                        rng.choice(["free", "pro", "team"]), f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                        round(rng.lognormvariate(3, 1.5), 2), rng.randint(0, 40)])
    return path


def _every_query(con: dpsql.Connection, table: str, policy: Path) -> int:
    """Every aggregate the drafted policy offers, grouped by every key: none is refused."""
    spec = tomllib.loads(policy.read_text())["tables"][table]
    measures, keys = list(spec["measures"]), list(spec["keys"])
    answered = 0
    for key in [None, *keys]:
        aggs = ["COUNT(*)"] + [f"{f}({m})" for m in measures for f in ("SUM", "AVG")]
        sql = f"SELECT {key + ', ' if key else ''}{', '.join(aggs)} FROM {table}" + (f" GROUP BY {key}" if key else "")
        con.cursor().execute(sql)
        answered += 1
    return answered


def test_from_a_csv_file_to_answers(tmp_path):
    _customers(tmp_path / "customers.csv")
    p = _dpsql("init", "customers.csv", "--unit", "customer_id", "--public", "region", "--threshold", "spend=500",
               cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    db, policy = tmp_path / "customers.duckdb", tmp_path / "customers.policy.toml"
    assert f"database: {db.name}" in p.stdout and f"policy:   {policy.name}" in p.stdout
    assert "table customers: 5,000 rows" in p.stderr
    text = policy.read_text()
    spec = tomllib.loads(text)["tables"]["customers"]
    assert spec["privacy_unit"] == "customer_id"
    # quantile ranges: 0 (no negative value) to the power of ten at or above the largest value, on a log grid
    top = {c: next(10**k for k in range(1, 20) if 10**k >= duckdb.sql(f"SELECT MAX({c}) FROM '{tmp_path / 'customers.csv'}'"
                                                                    ).fetchall()[0][0]) for c in ("spend", "visits")}
    assert spec["measures"] == {"spend": {"threshold": 500, "range": [0, top["spend"]], "grid": "log"},
                                "visits": {"threshold": 1000, "range": [0, top["visits"]], "grid": "log"}}
    assert top == {"spend": 10**4, "visits": 100}  # the data's, checked once by hand (lognormal(3, 1.5); 0..40)
    # spend and visits: measures and private keys too (two roles: GROUP BY spend through partition selection)
    assert spec["keys"] == {"region": {"keyset": ["east", "north", "south", "west"]}, "plan": {}, "signup": {},
                            "spend": {}, "visits": {}}
    assert "PLACEHOLDER split threshold" in text and "signup = {}   # DATE: private key" in text
    assert all(line.startswith(("#", "[", " ")) or "#" in line for line in text.splitlines() if line.strip())
    answer = _dpsql("query", "SELECT region, COUNT(*) AS n FROM customers GROUP BY region", "customers.duckdb",
                    cwd=tmp_path)
    assert answer.returncode == 0, answer.stderr
    assert [line.split()[0] for line in answer.stdout.splitlines()[2:6]] == ["east", "north", "south", "west"]
    with dpsql.connect(db, policy) as con:
        assert _every_query(con, "customers", policy) == 6  # region, plan, signup, spend, visits, none


def _gaussian_epsilon(rho: float, delta: float) -> float:
    """The ε at which the Gaussian mechanism of ρ-zCDP (μ = √(2ρ)) is (ε, δ)-DP, by its exact privacy profile
    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle and Wang 2018): no conversion valid for every ρ-zCDP
    mechanism can state less. Bisection; an oracle independent of dpsql's conversion."""
    mu = math.sqrt(2 * rho)
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))  # noqa: E731
    low, high = 0.0, 100.0
    for _ in range(200):
        eps = (low + high) / 2
        low, high = (eps, high) if phi(mu / 2 - eps / mu) - math.exp(eps) * phi(-mu / 2 - eps / mu) > delta else (low, eps)
    return high


def test_the_drafted_budget_is_a_defensible_default(tmp_path):
    """The draft's total is a few ε at δ = 1e-6 per analyst (not the ε ≈ 20.6 of ρ = 5), 20 to 50 queries fit it,
    one partition selection is not a large share of it, and what init prints about it is true: each ε it
    prints lies between the Gaussian mechanism's exact ε (no valid conversion states less) and the analytic
    bound ρ + 2√(ρ ln(1/δ)) (Bun and Steinke 2016, Proposition 1.3)."""
    _customers(tmp_path / "customers.csv", n=500)
    p = _dpsql("init", "customers.csv", "--unit", "customer_id", "--threshold", "spend=500", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = tomllib.loads((tmp_path / "customers.policy.toml").read_text())
    per, total, delta = doc["budget"]["default_rho"], doc["budget"]["total_rho"], 1e-6
    analytic = lambda rho: rho + 2 * math.sqrt(rho * math.log(1 / delta))  # noqa: E731
    assert 1 <= _gaussian_epsilon(total, delta) and analytic(total) <= 4.5, total
    assert 20 <= total / per <= 50, (per, total)
    selection = doc["selection"]["epsilon"] ** 2 / 2
    assert selection <= 0.1 * total, selection  # a GROUP BY of a private key does not take a large share
    said = re.search(r"each query rho=([0-9.e-]+), that is \(([0-9.]+), 1e-06\)-DP.*total rho=([0-9.e-]+) .*?that is "
                     r"\(([0-9.]+), 1e-06\)-DP over every answer", p.stdout.replace("\n", " "))
    assert said, p.stdout
    assert (float(said[1]), float(said[3])) == (per, total)
    for rho, eps in ((per, float(said[2])), (total, float(said[4]))):
        assert _gaussian_epsilon(rho, delta) * 0.99 <= eps <= analytic(rho), (rho, eps)
    with dpsql.connect(tmp_path / "customers.duckdb", tmp_path / "customers.policy.toml") as con:
        cur = con.cursor()  # the drafted values are the ones charged: a query costs default_rho, a selection its ε²/2
        cur.execute("SELECT COUNT(*) FROM customers")
        assert float(cur.receipt.rho) == per
        cur.execute("SELECT plan, COUNT(*) FROM customers GROUP BY plan")
        assert math.isclose(float(cur.receipt.rho), per + selection)


def test_a_date_column_declared_public_gets_its_range(tmp_path):
    """--public on a DATE column writes its first and last day as the key's range: monthly
    buckets are then public keys, every month of the range released."""
    _customers(tmp_path / "customers.csv")
    p = _dpsql("init", "customers.csv", "--unit", "customer_id", "--public", "signup", "--yes", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    policy = tmp_path / "customers.policy.toml"
    spec = tomllib.loads(policy.read_text())["tables"]["customers"]
    assert spec["keys"]["signup"] == {"range": ["2023-01-01", "2023-12-28"]}
    with dpsql.connect(tmp_path / "customers.duckdb", policy) as con:
        cur = con.cursor()
        cur.execute("SELECT DATE_TRUNC('month', signup) AS m, COUNT(*) FROM customers GROUP BY 1 ORDER BY 1")
        assert [r[0].month for r in cur.fetchall()] == list(range(1, 13))


def test_the_unit_is_asked_at_a_terminal(tmp_path):
    _customers(tmp_path / "customers.csv", n=500)
    main, child = pty.openpty()
    env = dict(os.environ, DPSQL_HOME=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "dpsql", "init", "customers.csv"], cwd=tmp_path, stdin=child,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    os.close(child)
    os.write(main, b"\n")  # Enter: the offered default
    out, err = proc.communicate(timeout=120)
    os.close(main)
    assert proc.returncode == 0, err
    assert "Which column identifies the privacy unit (one row per person, firm, device)? [customer_id]" in err
    assert tomllib.loads((tmp_path / "customers.policy.toml").read_text())["tables"]["customers"]["privacy_unit"] \
        == "customer_id"


def test_from_a_parquet_folder_to_answers(tmp_path):
    _customers(tmp_path / "c.csv", n=3000)
    with duckdb.connect() as con:  # the test's own Parquet folder, partitioned by region (hive style)
        con.execute(f"COPY (SELECT * FROM read_csv('{tmp_path / 'c.csv'}')) TO '{tmp_path / 'sales'}' "
                    "(FORMAT parquet, PARTITION_BY (region))")
    p = _dpsql("init", "sales", "--yes", "--public", "region,plan", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    policy = tmp_path / "sales.policy.toml"
    spec = tomllib.loads(policy.read_text())["tables"]["sales"]
    assert spec["privacy_unit"] == "customer_id" and spec["keys"]["region"]["keyset"] == ["east", "north", "south", "west"]
    with dpsql.connect(tmp_path / "sales.duckdb", policy) as con:
        # region, plan, signup (a private DATE key), the two measures as private keys, none
        assert _every_query(con, "sales", policy) == 6
        assert len(con.execute("SELECT plan, SUM(spend) FROM sales GROUP BY plan").fetchall()) == 3


def test_a_duckdb_file_gets_a_policy_for_its_tables_with_the_unit(tmp_path):
    db = tmp_path / "shop.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE orders AS SELECT i AS id, i % 7 AS store, 'x' || (i % 3) AS channel, i * 3 AS amount "
                    "FROM range(1, 2001) t(i)")
        con.execute("CREATE TABLE stores AS SELECT i AS store, 'S' || i AS name FROM range(7) t(i)")
    p = _dpsql("init", "shop.duckdb", "--unit", "id", "--public", "channel", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = tomllib.loads((tmp_path / "shop.policy.toml").read_text())
    assert list(doc["tables"]) == ["orders"]  # stores has no id column: left out
    with dpsql.connect(db) as con:  # the policy beside the database is found
        # the owner's own schema lets channel hold NULL: its NULL group is shown too (issue 32; an
        # imported CSV declares NOT NULL what holds none, test_null_keys.py)
        got = [r[0] for r in con.execute("SELECT channel, SUM(amount) FROM orders GROUP BY channel").fetchall()]
        assert got == ["x0", "x1", "x2", None]


def test_refusals_leave_nothing_behind(tmp_path):
    _customers(tmp_path / "customers.csv", n=300)
    p = _dpsql("init", "customers.csv", cwd=tmp_path)  # no terminal, no --unit: say what to pass
    assert p.returncode == 1 and "give --unit COLUMN" in p.stderr and "--unit customer_id" in p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["customers.csv"]
    _customers(tmp_path / "dups.csv", n=300, duplicate=True)
    p = _dpsql("init", "dups.csv", "--unit", "customer_id", "--threshold", "nope=5", cwd=tmp_path)  # after the import
    assert p.returncode == 1
    assert sorted(f.name for f in tmp_path.iterdir()) == ["customers.csv", "dups.csv"]
    p = _dpsql("init", "customers.csv", "--unit", "nope", cwd=tmp_path)
    assert p.returncode == 1 and "no such column" in p.stderr and "customer_id" in p.stderr
    assert _dpsql("init", "customers.csv", "--unit", "customer_id", cwd=tmp_path).returncode == 0
    again = _dpsql("init", "customers.csv", "--unit", "customer_id", cwd=tmp_path)
    assert again.returncode == 1 and "exists already" in again.stderr and "--force" in again.stderr


def test_a_data_file_given_as_the_database_says_to_init_it(tmp_path):
    _customers(tmp_path / "customers.csv", n=10)
    for args in (["customers.csv"], ["query", "SELECT COUNT(*) FROM t", "customers.csv"]):
        p = _dpsql(*args, cwd=tmp_path, stdin="")
        assert p.returncode == 1 and "is a csv file, not a DuckDB database" in p.stderr, p.stderr
        assert "dpsql init customers.csv" in p.stderr


def test_many_rows_per_unit_with_max_groups(tmp_path):
    """A unit that repeats is accepted and said to repeat, max_groups and row_threshold drafted as
    placeholders for review (test_own_many_rows.py runs the chain); --row-threshold on a unit that
    does not repeat is refused; with --max-groups the draft declares it, and COUNT(*),
    COUNT(DISTINCT unit), SUM and AVG answer."""
    _customers(tmp_path / "visits.csv", n=600, duplicate=True)
    p = _dpsql("init", "visits.csv", "--unit", "customer_id", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "visits.customer_id repeats: 600 rows of 599 units" in p.stderr
    spec = tomllib.loads((tmp_path / "visits.policy.toml").read_text())["tables"]["visits"]
    assert (spec["max_groups"], spec["row_threshold"]) == (1, 10)
    assert "visits's row_threshold, visits's max_groups are placeholders" in p.stdout
    _customers(tmp_path / "ones.csv", n=50)
    p = _dpsql("init", "ones.csv", "--unit", "customer_id", "--row-threshold", "5", cwd=tmp_path)
    assert p.returncode == 1 and "one row per unit" in p.stderr
    p = _dpsql("init", "visits.csv", "--unit", "plan", "--max-groups", "2", "--public", "region",
               "--threshold", "spend=500", "--force", cwd=tmp_path)  # three units (free, pro, team) of many rows each
    assert p.returncode == 0, p.stderr
    assert "visits's row_threshold are placeholders" in p.stdout
    policy = tmp_path / "visits.policy.toml"
    spec = tomllib.loads(policy.read_text())["tables"]["visits"]
    assert (spec["privacy_unit"], spec["max_groups"], spec["row_threshold"]) == ("plan", 2, 10)
    with dpsql.connect(tmp_path / "visits.duckdb", policy) as con:
        cur = con.cursor()
        cur.execute("SELECT region, COUNT(*), COUNT(DISTINCT plan), SUM(spend), AVG(visits) FROM visits GROUP BY region")
        assert len(cur.fetchall()) == 4 and cur.receipt.policy_terms[0]["max_groups"] == 2


@pytest.mark.parametrize("name,profile,role", [
    ("month", (12, 1, 12), "key"),            # a calendar field, by name
    ("year", (1, 2013, 2013), "key"),         # even with one value far from 0
    ("stars", (5, 1, 5), "key"),              # a few small values, each repeated
    ("visits", (41, 0, 40), "measure"),       # more values than a key's small range
    ("delay", (1300, -40, 1300), "measure"),  # negative values: an amount
    ("flight", (3844, 1, 8500), "code"),      # thousands of values filling 45% of their range
    ("payroll", (90000, 0, 10**7), "measure"),  # many values, sparse in a wide range: an amount
    ("store_no", (30, 1, 30), "code"),        # named like an identifier
])
def test_whole_number_columns_are_drafted_by_role(name, profile, role):
    """The rules of docs/own_data.md, "Which columns are what", on column profiles of a table of
    1,000 rows; a threshold given for a column makes it a measure whatever its profile."""
    from decimal import Decimal

    from dpsql.faces.policy_draft import TableDraft

    draft = TableDraft("t", "id", "", [("id", "BIGINT"), (name, "BIGINT")], profile={name: profile}, rows=1000)
    got = draft.role(name, "BIGINT")
    assert (got if got in ("key", "measure") else "code") == role
    assert [c for c, _ in draft.measures()] == ([name] if role == "measure" else [])
    assert [c for c, _ in draft.keys()] == ([name] if role in ("key", "measure") else [])  # a measure: a private key too
    assert draft.also_private_key(name, "BIGINT") == (role == "measure")
    assert [c for c, _ in draft.others()] == ([name] if role == "code" else [])
    given = TableDraft("t", "id", "", [("id", "BIGINT"), (name, "BIGINT")], profile={name: profile}, rows=1000,
                       thresholds={name: Decimal(5)})
    assert [c for c, _ in given.measures()] == [name]


def test_a_unit_column_with_nulls_only_is_said_so(tmp_path):
    """No unit repeats but some rows have none: drafted as many rows per unit (rows without a unit
    are left out), and said as it is."""
    with open(tmp_path / "t.csv", "w") as f:
        f.write("uid,amount\n" + "".join(f"{'' if i % 10 == 0 else i},{i}\n" for i in range(100)))
    p = _dpsql("init", "t.csv", "--unit", "uid", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "t.uid has NULLs (no unit repeats): 100 rows of 90 units (10 rows have no unit" in p.stderr
