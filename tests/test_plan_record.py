"""Plans remembered across processes (dpsql/records/plan.py): a statement that went to the
pipeline through dpsql.intercept.execute is recorded with its plan, and a later session in the
same context answers it from that record, without sqlglot, exactly as it would have from a plan
made afresh. Every accepted query of the SQL corpus is answered both ways with the same seed.
Nothing dpsql answers itself, nothing refused and nothing with parameters is recorded; another
analyst, another policy or a damaged record means planning again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import dpsql
from dpsql.records import plan as plan_record
from dpsql.errors import DpsqlError
from dpsql.session import Session
from dpsql.testing import seeded_random
from tests.test_grammar import CASES

ACCEPTED = [c for c in CASES if c.expected is not None and c.meta.get("public") != "true"]
QUERY = "SELECT state, COUNT(*) AS n, AVG(payann) AS pay FROM establishments GROUP BY state"


def _records() -> list[Path]:
    folder = Path(os.environ["DPSQL_HOME"]) / plan_record.DOCUMENTS.folder
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _record_of(session: Session, sql: str) -> Path:
    key = plan_record.key(session._plan_context, sql)
    assert key is not None
    return plan_record.DOCUMENTS.path(key)


@pytest.fixture(autouse=True)
def own_home(monkeypatch, tmp_path):
    """Records of this test only (dpsql's folder is otherwise shared by a worker's tests)."""
    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))


@pytest.fixture()
def fresh_memory(monkeypatch):
    """No record read earlier in this process: a new session reads the file, as a new process would."""
    monkeypatch.setattr(plan_record, "_read", type(plan_record._read)())


@pytest.fixture(scope="module")
def big_budget(demo_files, tmp_path_factory):
    """A copy of the demo database under a copy of its policy whose budget outlasts the corpus,
    read by one DuckDB thread: the exact rows then come in the same order every time, and so do
    the noise draws of the seeded source (partition selection draws in that order)."""
    from tests.server_harness import policy_with_budget

    folder = tmp_path_factory.mktemp("plan_record")
    db = Path(shutil.copyfile(demo_files[0], folder / "demo.duckdb"))
    policy = policy_with_budget(demo_files[1], folder / "demo.policy.toml", total_rho="1000000", total_delta="0.5")
    s = Session(db, policy, threads=1)
    s.output = replace(s.output, reuse=False)  # each run its own release under its seed (pipeline/reuse.py)
    yield s
    s.close()


def _answer(session: Session, sql: str, planned=None):
    session.rng = seeded_random(20261125)
    try:
        r = session.execute(sql, planned=planned)
    except DpsqlError as e:
        return ("refused", type(e).__name__, e.code)
    return (r.columns, r.types, r.rows, r.receipt.rho, r.receipt.noise, [r.receipt.columns[c] for c in sorted(r.receipt.columns)],
            r.receipt.selection, r.receipt.notes)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_a_recorded_plan_answers_as_the_plan_made_afresh(big_budget, case):
    """The record's JSON, read back, stands for the plan: every field the pipeline reads after
    planning is equal, and the answer (rows, types, noise, errors, selection) is the same under
    the same seed."""
    s = big_budget
    plan, exact = s._planned(case.sql, None)
    back = plan_record.decode(json.loads(json.dumps(plan_record.encode(plan))), s.policy)
    assert back.where is None and back.finish is None and all(k.expr is None for k in back.keys)  # no tree
    for name in ("sql", "table", "primitives", "outputs", "selection_count", "joins", "public_types", "public_columns",
                 "finish_sql", "finish_names", "projection"):
        assert getattr(back, name) == getattr(plan, name), name
    for got, want in zip(back.keys, plan.keys, strict=True):
        for name in ("name", "label", "sources", "public", "column", "text", "bounded_text", "plain", "tried_sql"):
            assert getattr(got, name) == getattr(want, name), name
    assert _answer(s, case.sql, planned=(back, exact)) == _answer(s, case.sql)


def test_a_known_query_runs_without_sqlglot_in_a_new_process(demo, tmp_path):
    """The second process finds the record: it imports neither sqlglot nor the handlers; and a
    small answer (51 states, two noisy columns) is released without numpy (dpsql/pipeline/release.py)."""
    db, policy = demo
    probe = ("import sys\n"
             "from dpsql.faces.cli import main\n"
             f"rc = main(['query', {QUERY!r}, '--db', {str(db)!r}, '--policy', {str(policy)!r}])\n"
             "print(rc, 'sqlglot' in sys.modules, 'numpy' in sys.modules)\n")
    env = {**os.environ, "DPSQL_HOME": str(tmp_path / "home")}
    runs = [subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert [line for line in runs[0].stdout.splitlines() if line][-1] == "0 True False"  # the first plans
    assert [line for line in runs[1].stdout.splitlines() if line][-1] == "0 False False"  # the second reads its record
    assert "pay" in runs[1].stdout and "(51 rows)" in runs[1].stdout


def test_the_second_session_reads_the_record_and_does_not_plan(demo, monkeypatch, fresh_memory):
    with dpsql.connect(*demo) as con:
        first = con.execute(QUERY).fetchall()
    assert len(_records()) >= 1
    monkeypatch.setattr(Session, "plan", lambda *a: pytest.fail("planned although recorded"))
    with dpsql.connect(*demo) as con:
        second = con.execute(QUERY).fetchall()
    assert [r[0] for r in first] == [r[0] for r in second]  # the same public groups, fresh noise


@pytest.mark.parametrize("sql", [
    "SET dpsql.rho = 0.05",
    "SHOW dpsql.rho",
    "SELECT 1",
    "SHOW TABLES",
    "SELECT version()",
    f"EXPLAIN {QUERY}",
    "SELECT COUNT(*) FROM states",  # public table only: its exact rows, free
    "SELECT table_name FROM information_schema.tables",
    "SELECT state, COUNT(*) FROM establishments GROUP BY state LIMIT -1",  # refused
])
def test_what_does_not_go_to_the_pipeline_is_never_recorded(demo, sql):
    with dpsql.connect(*demo) as con:
        try:
            con.execute(sql)
        except DpsqlError:
            pass
        assert not _record_of(con.session, sql).exists()


def test_a_statement_with_parameters_is_never_recorded(demo):
    sql = "SELECT COUNT(*) FROM establishments WHERE state = ?"
    with dpsql.connect(*demo) as con:
        con.execute(sql, ["CA"])
        assert not _record_of(con.session, sql).exists()


def test_another_analyst_plans_again(demo, fresh_memory):
    with dpsql.connect(*demo, analyst="ann") as con:
        con.execute(QUERY)
        assert con.session.recorded(QUERY) is not None
    with dpsql.connect(*demo, analyst="bob") as con:
        assert con.session.recorded(QUERY) is None  # a shared record would tell bob, by timing, what ann asked


def test_an_edited_policy_plans_again(demo, fresh_memory):
    db, policy = demo
    with dpsql.connect(db, policy) as con:
        con.execute(QUERY)
        assert con.session.recorded(QUERY) is not None
    policy.write_text(policy.read_text() + "\n# edited\n")
    with dpsql.connect(db, policy) as con:
        assert con.session.recorded(QUERY) is None


def test_other_code_plans_again(demo, monkeypatch, fresh_memory):
    with dpsql.connect(*demo) as con:
        con.execute(QUERY)
        assert con.session.recorded(QUERY) is not None
        monkeypatch.setattr(plan_record, "_code", ["another dpsql or sqlglot"])
        assert con.session.recorded(QUERY) is None


def test_the_code_identity_covers_every_module_of_dpsql():
    """Every module that plans or rewrites is in the identity, found here by a glob of its own."""
    package = Path(dpsql.__file__).resolve().parent
    modules = {str(p) for p in package.rglob("*.py")
               if not any(part.startswith(("__", ".")) for part in p.relative_to(package).parts[:-1])}
    listed = {f.rsplit(":", 2)[0] for f in plan_record.code_files()}
    assert str(package / "sql" / "rewrite.py") in modules and modules <= listed
    names = {Path(f).relative_to(package).as_posix() for f in listed}
    assert {"sql/rewrite.py", "sql/units.py", "session.py", "records/plan.py", "pipeline/release.py"} <= names


@pytest.mark.parametrize("damage", ["", "{", '{"version": 1}', "[]", "null",
                                    '{"version": 1, "sql": "SELECT 1", "plan": {}, "exact": "SELECT 1"}'])
def test_a_damaged_record_is_planned_again(demo, fresh_memory, damage):
    with dpsql.connect(*demo) as con:
        con.execute(QUERY)
        path = _record_of(con.session, QUERY)
    path.write_text(damage)
    with dpsql.connect(*demo) as con:
        assert con.session.recorded(QUERY) is None
        assert len(con.execute(QUERY).fetchall()) == 51
    assert json.loads(path.read_text())["sql"] == QUERY  # written again, whole


def test_past_its_size_a_store_drops_its_oldest_an_eighth_at_a_time(tmp_path, monkeypatch):
    """At most ``size`` documents; past it the oldest go until an eighth is free (the next
    size // 8 puts then add without sorting), the newest always kept."""
    from dpsql.records.store import Documents

    monkeypatch.setenv("DPSQL_HOME", str(tmp_path))
    store = Documents("docs", 16)
    for i in range(16):
        store.put(f"k{i}", {"i": i})
        os.utime(store.path(f"k{i}"), ns=(i * 10**9, i * 10**9))  # an order of writing the clock cannot blur
    assert len(list(store.path("k0").parent.glob("*.json"))) == 16
    store.put("k16", {"i": 16})  # the 17th: the 3 oldest go (16 - 2 = 14 kept)
    kept = sorted(int(json.loads(p.read_text())["i"]) for p in store.path("k0").parent.glob("*.json"))
    assert kept == list(range(3, 17))
    store.put("k17", {"i": 17})
    store.put("k18", {"i": 18})  # 16 again: nothing dropped until past 16
    assert len(list(store.path("k0").parent.glob("*.json"))) == 16


def test_the_oldest_records_are_dropped(demo, monkeypatch, fresh_memory):
    monkeypatch.setattr(plan_record.DOCUMENTS, "size", 3)
    with dpsql.connect(*demo) as con:
        for state in ("CA", "NY", "TX", "WA", "OR"):
            con.execute(f"SELECT COUNT(*) FROM establishments WHERE state = '{state}'")
    assert len(_records()) == 3
