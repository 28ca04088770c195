"""A plan is served from memory (dpsql/sql/plan_cache.py) or from a record of an earlier process
(dpsql/records/plan.py) only in the context it was made in (issue 35). Two changes no earlier
test made:

* a column changes type under the same policy: the text planned when ``x`` was an INTEGER
  (``x = 3`` runs bare) is refused free once ``x`` is text (DP110) — served the stale plan, it
  would run ``x = 3`` on text rows and fail after reading them (a charged DP901, whose
  occurrence depends on the rows);
* a module of dpsql is edited in place: the code identity that keys every record changes
  whether the edit keeps the file's size (one character replaced) or its modification time
  (restored with ``os.utime``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import QueryRefused
from dpsql.testing import seeded_random
import table_rows

ROOT = Path(__file__).resolve().parents[1]
SQL = "SELECT g, COUNT(*) AS n FROM t WHERE x = 3 GROUP BY g"
POLICY = """
[budget]
default_rho = 1.0
total_rho = 1000.0
[tables.t]
privacy_unit = "id"
[tables.t.measures]
v = { threshold = 10 }
[tables.t.keys]
g = { keyset = ["a", "b"] }
"""


def _build(db: Path, x_type: str, values: list[object]) -> None:
    if db.exists():
        db.unlink()
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t (id INTEGER, g VARCHAR NOT NULL, v INTEGER, x {x_type})")  # no NULL group (issue 32)
    table_rows.insert(con, "t", [[i, "ab"[i % 2], i % 7, values[i % len(values)]] for i in range(100)])
    con.close()


def test_a_column_that_changes_type_is_planned_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))  # this test's plan records only
    db, policy = tmp_path / "t.duckdb", tmp_path / "t.policy.toml"
    policy.write_text(textwrap.dedent(POLICY))
    _build(db, "INTEGER", [1, 2, 3])
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        assert sorted(r[0] for r in con.execute(SQL).fetchall()) == ["a", "b"]
        assert con.session.recorded(SQL) is not None  # planned, remembered and recorded
        first = con.session._plan_context
    _build(db, "VARCHAR", ["3", "abc", "x"])
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        assert con.session._plan_context != first
        spent = con.session.ledger.spent
        with pytest.raises(QueryRefused) as err:
            con.execute(SQL)
        assert err.value.code == "DP110" and con.session.ledger.spent == spent


def _identity(copy: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", "from dpsql.records.plan import code_identity, key\n"
                          "print(code_identity(), key('ctx', 'SELECT 1'))"],
                         capture_output=True, text=True, env=env, cwd=copy, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture(scope="module")
def dpsql_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("code")
    shutil.copytree(ROOT / "dpsql", folder / "dpsql", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_a_module_edited_in_place_changes_the_code_identity(dpsql_copy):
    module = dpsql_copy / "dpsql" / "sql" / "validate.py"
    before = _identity(dpsql_copy)
    assert _identity(dpsql_copy) == before  # stable while nothing changes
    # the same size, a later modification time: one character of a comment replaced
    text = module.read_text()
    st = module.stat()
    edited = text.replace("#", "%", 1) if "#" in text else text[:-1] + " "
    assert len(edited.encode()) == len(text.encode())
    module.write_text(edited)
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    same_size = _identity(dpsql_copy)
    assert same_size.split()[0] != before.split()[0] and same_size.split()[1] != before.split()[1]
    # another size, the same modification time as before the edit
    st = module.stat()
    module.write_text(edited + "\n# one line more\n")
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    same_time = _identity(dpsql_copy)
    assert same_time.split()[0] not in (before.split()[0], same_size.split()[0])
