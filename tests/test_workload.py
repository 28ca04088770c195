"""The workload file, its dry run and its real run (dpsql/workload/, docs/workloads.md)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from dpsql.errors import BudgetExceededError, NotSupportedYet, WorkloadFileError
from dpsql.privacy.accounting import epsilon_analytic, epsilon_tight
from dpsql.workload import spec
from dpsql.workload.composition import level_budget
from dpsql.workload.plan import plan
from dpsql.workload.run import LONG_COLUMNS, run

ROOT = Path(__file__).resolve().parents[1]
SAFETAB = ROOT / "examples" / "safetab_workload.toml"

QUERIES = """
[workload]
name = "states"

[[query]]
name = "by_state"
sql = "SELECT state, COUNT(*) AS n, SUM(employees) AS emp FROM establishments GROUP BY state"
rho = "1/100"

[[query]]
name = "by_sector"
sql = "SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2"
moe = 50

[output]
formats = ["csv", "json", "parquet"]
"""


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpsql", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_safetab_dry_run_reproduces_tables_1_and_4():
    p = plan(None, spec.load(SAFETAB))
    assert [round(float(lv.budget.total_rho), 3) for lv in p.levels] == [0.533, 0.533, 0.159, 0.159, 0.008, 0.008, 0.008]
    assert [round(float(lv.budget.stage2_rho), 3) for lv in p.levels] == [0.48, 0.48, 0.143, 0.143, 0.007, 0.007, 0.007]
    assert round(p.epsilon_analytic, 1) == 12.8 and round(p.epsilon_tight, 1) == 12.2
    assert round(p.epsilon_pure, 2) == 15.31
    # the ledger's conversion (dpsql.privacy.accounting.guarantee), rounded up, never below the formulas
    assert epsilon_tight(float(p.rho), 1e-10) <= p.epsilon_tight == pytest.approx(epsilon_tight(float(p.rho), 1e-10))
    assert epsilon_analytic(float(p.rho), 1e-10) <= p.epsilon_analytic == pytest.approx(epsilon_analytic(float(p.rho), 1e-10))


def test_safetab_charge_is_the_generalised_parallel_composition():
    w = spec.load(SAFETAB)
    p = plan(None, w)
    # Lemma 10 per level (stability x one group's rho), the levels adding up (Theorem 3)
    expected = sum((9 * level_budget(lv.moe, 9, Fraction(1, 10)).group_rho for lv in w.safetab.levels), Fraction(0))
    assert p.rho == expected
    # charging every group's two releases as a query of its own costs the sum over groups
    separate = sum((lv.groups * level_budget(lv.moe, 9, Fraction(1, 10)).group_rho for lv in w.safetab.levels), Fraction(0))
    assert p.separate_rho == separate > 100 * p.rho


def test_safetab_dry_run_cli_prints_totals_and_charges_nothing():
    r = _cli("workload", str(SAFETAB), "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["dry_run"] is True
    assert round(out["epsilon"]["tight"], 1) == 12.2 and round(out["epsilon"]["analytic"], 1) == 12.8
    assert [lv["moe_target"] for lv in out["levels"]] == [6, 6, 11, 11, 50, 50, 50]
    text = _cli("workload", str(SAFETAB), "--dry-run")
    assert "nothing was read or charged" in text.stdout and "15.31" in text.stdout


def test_safetab_real_run_is_refused_before_reading(demo, tmp_path):
    from dpsql.session import Session

    s = Session(*demo)
    try:
        with pytest.raises(NotSupportedYet):
            run(s, spec.load(SAFETAB), tmp_path / "out")
        assert s.ledger.spent == 0 and not (tmp_path / "out").exists()
    finally:
        s.close()


@pytest.mark.parametrize("text, what", [
    ("[workload]\nname='x'\n", "nothing to plan"),
    ("[[query]]\nsql='SELECT COUNT(*) FROM establishments'\n", "exactly one of rho"),
    ("[[query]]\nsql='SELECT COUNT(*) FROM establishments'\nrho=0.1\nmoe=3\n", "exactly one of rho"),
    ("[[query]]\nsql='SELECT 1'\nrho=-1\n", "positive budget"),
    ("[[query]]\nsql='x'\nrho=0.1\nbogus=1\n", "unknown key"),
    ("[safetab]\nthresholds=[5, 3]\ndetail=['a','b','c']\n", "increasing"),
    ("[safetab]\nthresholds=[5]\ndetail=['a']\n", "one level of detail more"),
    ("[safetab]\n[[safetab.level]]\nmoe=6\nstability=0\ngroups=1\n", "positive integer"),
    ("[[query]]\nsql='x'\nrho=0.1\n[output]\nformats=['xlsx']\n", "formats"),
    ("not toml [", "not valid TOML"),
])
def test_bad_workload_files_are_refused_with_dp501(text, what):
    with pytest.raises(WorkloadFileError) as err:
        spec.parse(text)
    assert err.value.code == "DP501" and what in str(err.value)


def test_query_workload_dry_run_uses_the_query_plan_path(session):
    w = spec.parse(QUERIES)
    p = plan(session, w)
    by_state = session.explain(w.queries[0].sql, rho="1/100")
    assert p.queries[0].rho == by_state.rho == Fraction(1, 100)
    assert p.queries[0].noise == by_state.noise
    assert all(m <= 50 for n in p.queries[1].noise for m in n["moe95"])  # the MOE target holds
    assert p.rho == p.queries[0].rho + p.queries[1].rho == p.separate_rho  # sequential composition
    assert session.ledger.spent == 0


def test_query_workload_real_run_charges_once_and_writes_long_outputs(session, tmp_path):
    w = spec.parse(QUERIES)
    p, results, written = run(session, w, tmp_path / "out")
    charges = session.ledger.charges
    assert len(charges) == 1 and charges[0].rho == p.rho == session.ledger.spent
    # the policy function P(r) gets every query's terms
    assert len(charges[0].policy_terms) == sum(len(q.policy_terms) for q in p.queries) > 0
    assert {x.name for x in written} == {"states.csv", "states.json", "states.parquet"}
    rows = list(csv.DictReader((tmp_path / "out" / "states.csv").open()))
    assert tuple(rows[0]) == LONG_COLUMNS
    assert {r["query"] for r in rows} == {"by_state", "by_sector"}
    assert len([r for r in rows if r["query"] == "by_state"]) == 2 * 51  # n and emp, the public keyset of states
    assert all(float(r["moe95"]) > 0 for r in rows)
    assert json.loads((tmp_path / "out" / "states.json").read_text()) == [
        {k: (v if k not in ("value", "sigma", "moe95") else pytest.approx(float(v))) for k, v in r.items()} for r in rows]
    import duckdb  # the test's own reader of the Parquet file: the same cells as the CSV

    with duckdb.connect() as con:
        parquet = con.execute(f"SELECT * FROM read_parquet('{tmp_path / 'out' / 'states.parquet'}')").fetchall()
    assert [[str(v) for v in row] for row in parquet] == [list(r.values()) for r in rows]
    assert not list((tmp_path / "out").glob(".*"))  # no temporary file left
    # a second run never overwrites a release: refused before reading, nothing charged
    with pytest.raises(WorkloadFileError):
        run(session, w, tmp_path / "out")
    assert len(session.ledger.charges) == 1


def test_query_workload_over_budget_is_refused_whole(session, tmp_path):
    # each query fits in the budget of 10 alone (9.9995 and 0.0008); together they do not
    text = QUERIES.replace('rho = "1/100"', 'rho = 9.9995')
    with pytest.raises(BudgetExceededError):
        run(session, spec.parse(text), tmp_path / "out")
    assert session.ledger.spent == 0 and not list((tmp_path / "out").iterdir())


def test_a_refused_query_refuses_the_whole_workload(session, tmp_path):
    text = QUERIES.replace("SUM(employees)", "MAX(employees)")
    with pytest.raises(Exception) as err:
        run(session, spec.parse(text), tmp_path / "out")
    assert getattr(err.value, "code", "").startswith("DP1")
    assert session.ledger.spent == 0


def test_random_partition_reports_both_error_parts(session):
    text = QUERIES + "\n[random_partition]\nunits = 32768\n"
    p = plan(session, spec.parse(text))
    assert p.rho == max(q.rho for q in p.queries) < p.separate_rho  # parallel composition
    assert [q.part_units for q in p.queries] == [16384, 16384]
    assert p.queries[0].sampling_sigma == pytest.approx((0.25 * (1 / 16384 - 1 / 32768)) ** 0.5)


RANDOM_PARTITION = """
[workload]
name = "thirds"

[[query]]
name = "a"
sql = "SELECT COUNT(*) AS n FROM establishments"
rho = 50

[[query]]
name = "b"
sql = "SELECT COUNT(*) AS n, SUM(employees) AS emp FROM establishments"
rho = 30

[[query]]
name = "c"
sql = "SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2"
rho = 50

[random_partition]
units = 200000

[output]
formats = ["csv"]
"""


def test_random_partition_real_run_charges_the_max_on_disjoint_parts(demo, tmp_path):
    """Three queries, each on its part of a secret random partition of the 200,000 units: the
    charge is the largest query's ρ (50), not the sum (130), in one ledger row; the parts are
    disjoint and cover every unit — the noisy totals (σ = 0.1) add up to the 200,000 units
    within 3 — and each holds about a third (binomial sd 211; checked within 5 sd)."""
    import dpsql
    from dpsql.testing import seeded_random

    db, policy = demo
    policy.write_text(policy.read_text().replace("total_rho = 10.0", "total_rho = 200.0", 1))
    con = dpsql.connect(db, policy, _random_source=seeded_random(7))
    session = con.session
    p, results, written = run(session, spec.parse(RANDOM_PARTITION), tmp_path / "out")
    assert p.rho == 50 and p.separate_rho == 130
    assert [c.rho for c in session.ledger.charges] == [Fraction(50)]
    total_a = results[0].rows[0][0]
    total_b = results[1].rows[0][0]
    total_c = sum(r[1] for r in results[2].rows)  # over the 24 public sectors: σ·√24 ≈ 0.5
    assert abs(total_a + total_b + total_c - 200_000) <= 3
    sd = (200_000 * (1 / 3) * (2 / 3)) ** 0.5
    assert all(abs(t - 200_000 / 3) <= 5 * sd for t in (total_a, total_b, total_c)), (total_a, total_b, total_c)
    assert written[0].read_text().startswith(",".join(LONG_COLUMNS))
    con.close()


def test_safetab_mixed_with_queries_runs_under_one_charge(demo, tmp_path):
    """The demo SafeTab levels plus one [[query]]: one ledger row whose ρ is the query's plus the
    levels' (the plan's total), the query's long output and NAME_safetab.csv both written."""
    import dpsql
    from dpsql.testing import seeded_random

    db, policy = demo
    policy.write_text(policy.read_text().replace("total_rho = 10.0", "total_rho = 100.0", 1))
    text = (ROOT / "examples" / "safetab_demo_workload.toml").read_text().replace('formats = ["csv", "json"]', 'formats = ["csv"]')
    text += '\n[[query]]\nname = "by_sex"\nsql = "SELECT sex, COUNT(*) AS n FROM persons GROUP BY sex"\nrho = "1/10"\n'
    with dpsql.connect(db, policy, _random_source=seeded_random(5)) as con:
        p, results, written = run(con.session, spec.parse(text), tmp_path / "out")
        charges = con.session.ledger.charges
    levels = sum((lv.budget.total_rho for lv in p.levels), Fraction(0))
    assert [c.rho for c in charges] == [p.rho] and p.rho == levels + Fraction(1, 10)
    assert [w.name for w in written] == ["safetab_demo.csv", "safetab_demo_safetab.csv"]
    assert [r[0] for r in results[0].rows] == ["F", "M"]
    safetab_rows = list(csv.reader(written[1].open()))
    assert safetab_rows[0][:3] == ["level", "geography", "race"] and len(safetab_rows) > 100


# ---------------------------------------------------------------------------------------------
# SafeTab's adaptive two-stage tabulation, for real, on the demo's persons
# ---------------------------------------------------------------------------------------------

SAFETAB_DEMO = ROOT / "examples" / "safetab_demo_workload.toml"


def _exact_counts(db: Path, tmp: Path) -> tuple[dict, dict]:
    """Exact counts straight from (a copy of) the file, the test's reference, not dpsql's path:
    per (geography, code, key pairs) and per (geography, code) group total."""
    import collections
    import shutil

    import duckdb

    copy = tmp / "reference.duckdb"  # the session holds the file open with its own configuration
    shutil.copyfile(db, copy)
    con = duckdb.connect(str(copy), read_only=True)
    rows = con.execute("SELECT state, sex, age4, age9, age23, race1, race2, race3, race4, race5, race6, race7, race8 "
                       "FROM persons").fetchall()
    con.close()
    cells: collections.Counter = collections.Counter()
    totals: collections.Counter = collections.Counter()
    for state, sex, a4, a9, a23, *races in rows:
        for code in {r for r in races if r is not None}:
            for geo in ("", state):
                totals[(geo, code)] += 1
                for keys in ((), (("sex", sex), ("age4", a4)), (("sex", sex), ("age9", a9)), (("sex", sex), ("age23", a23))):
                    cells[(geo, code, keys)] += 1
    return cells, totals


def test_safetab_demo_runs_charges_once_and_errors_match_sigma(session, demo, tmp_path):
    w = spec.load(SAFETAB_DEMO)
    p, _, written = run(session, w, tmp_path / "out")
    charges = session.ledger.charges
    assert len(charges) == 1 and charges[0].rho == p.rho == session.ledger.spent
    # the charge is the generalised parallel composition: per level 9 x one group's rho (Lemma 10)
    per_level = 9 * level_budget(6, 9, Fraction(1, 10)).group_rho
    assert p.rho == 2 * per_level == Fraction(16, 15)
    assert p.separate_rho == (12 + 612) * level_budget(6, 9, Fraction(1, 10)).group_rho > 30 * p.rho
    assert [t["rho_exact"] for t in charges[0].policy_terms] == [str(per_level)] * 2

    released = list(csv.DictReader((tmp_path / "out" / "safetab_demo.csv").open()))
    exact, totals = _exact_counts(demo[0], tmp_path)
    groups = {(r["level"], r["geography"], r["race"]): (float(r["stage1_total"]), r["detail"]) for r in released}
    assert len(groups) == 12 + 12 * 51  # every group released at exactly one level of detail
    details = ["total", "sex x age (4 bins)", "sex x age (9 bins)", "sex x age (23 bins)"]
    for (_, geo, code), (t, detail) in groups.items():
        assert detail == details[sum(t >= th for th in (971, 4971, 19971))]  # Algorithm 2's thresholds
    assert len({d for _, d in groups.values()}) >= 3  # the demo exercises several levels of detail

    # Each released cell's error against the exact count, in units of its stated sigma: seeded,
    # so deterministic; the checks allow 5 standard errors for N cells.
    z, inside = [], 0
    for r in released:
        keys = tuple(tuple(kv.split("=", 1)) for kv in r["group"].split(", ")) if r["group"] else ()
        err = float(r["value"]) - exact[(r["geography"], r["race"], keys)]
        sigma = float(r["sigma"])
        assert sigma == pytest.approx((1 / (2 * float(level_budget(6, 9, Fraction(1, 10)).group_stage2_rho))) ** 0.5)
        z.append(err / sigma)
        inside += abs(err) <= float(r["moe95"])
    n = len(z)
    assert n > 700
    mean = sum(z) / n
    sd = (sum((x - mean) ** 2 for x in z) / (n - 1)) ** 0.5
    assert abs(mean) < 5 / n**0.5
    assert abs(sd - 1) < 5 / (2 * n) ** 0.5
    assert inside / n >= 0.95 - 5 * (0.05 * 0.95 / n) ** 0.5
    # stage-1 totals: noisy versions of the group totals, with stage 1's sigma
    s1 = (1 / (2 * float(level_budget(6, 9, Fraction(1, 10)).group_stage1_rho))) ** 0.5
    z1 = [(t - totals[(geo, code)]) / s1 for (_, geo, code), (t, _) in groups.items()]
    sd1 = (sum(x * x for x in z1) / len(z1)) ** 0.5
    assert abs(sd1 - 1) < 5 / (2 * len(z1)) ** 0.5


def test_safetab_stability_below_the_race_columns_is_refused():
    text = SAFETAB_DEMO.read_text().replace("stability = 9", "stability = 1")
    with pytest.raises(WorkloadFileError, match="stability 1 is below the 8 race columns"):
        spec.parse(text)


def test_safetab_demo_cli_dry_run_then_real_run(demo, tmp_path):
    db, policy = demo
    dry = _cli("workload", str(SAFETAB_DEMO), "--dry-run", "--db", str(db), "--policy", str(policy))
    assert dry.returncode == 0, dry.stderr
    assert "nothing was read or charged" in dry.stdout
    real = _cli("workload", str(SAFETAB_DEMO), "--db", str(db), "--policy", str(policy), "--out", str(tmp_path / "o"),
                "--json")
    assert real.returncode == 0, real.stderr
    out = json.loads(real.stdout)
    assert out["dry_run"] is False and out["rho"] == "1.06667" and out["charge_id"] is not None
    assert sorted(Path(x).name for x in out["written"]) == ["safetab_demo.csv", "safetab_demo.json"]


def test_a_failure_after_the_first_query_read_rows_charges_the_whole_workload(session, tmp_path, monkeypatch):
    from dpsql.errors import QueryFailed

    w = spec.parse(QUERIES)
    real_run, calls = session.engine.run, []

    def second_fails(sql):
        calls.append(sql)
        if len(calls) == 2:
            raise MemoryError("the secret count was 424242")
        return real_run(sql)

    monkeypatch.setattr(session.engine, "run", second_fails)
    with pytest.raises(QueryFailed) as err:
        run(session, w, tmp_path / "out")
    assert err.value.code == "DP901" and "424242" not in str(err.value) and err.value.__context__ is None
    p = plan(session, w)
    assert session.ledger.spent == p.rho and len(session.ledger.charges) == 1  # the whole workload, once
    assert not list((tmp_path / "out").iterdir())  # nothing written


def test_an_interrupt_before_the_first_query_started_charges_nothing(session, tmp_path, monkeypatch):
    from dpsql.backends import InterruptedBeforeStart

    def not_started(sql):
        raise InterruptedBeforeStart()

    monkeypatch.setattr(session.engine, "run", not_started)
    with pytest.raises(KeyboardInterrupt, match="nothing was charged"):
        run(session, spec.parse(QUERIES), tmp_path / "out")
    assert session.ledger.spent == 0


@pytest.mark.parametrize("k, printed", [(32, 0.0153), (64, 0.0219)])
def test_random_partition_receipt_reproduces_paper001_table1(session, k, printed):
    """The dry run's sampling part for k queries on a random partition of n = 2^15 units is
    paper 001 Table I's sigma (printed truncated to four decimals)."""
    import math

    queries = "".join(f'[[query]]\nname = "q{i}"\nsql = "SELECT COUNT(*) FROM establishments"\nrho = "1/1000"\n'
                      for i in range(k))
    p = plan(session, spec.parse(queries + "[random_partition]\nunits = 32768\n"))
    assert {q.part_units for q in p.queries} == {32768 // k}
    assert {math.floor(q.sampling_sigma * 10_000) for q in p.queries} == {round(printed * 10_000)}
    assert p.rho == Fraction(1, 1000) and p.separate_rho == k * Fraction(1, 1000)


def test_safetab_on_a_private_key_is_refused_before_reading(session, tmp_path):
    """A geography without a public keyset would need partition selection, which the level's
    charge does not cover: refused, nothing charged."""
    text = SAFETAB_DEMO.read_text().replace('table = "persons"', 'table = "establishments"').replace(
        'races = ["race1", "race2", "race3", "race4", "race5", "race6", "race7", "race8"]', 'races = ["naics2"]').replace(
        'geography = "state"', 'geography = "county"').replace(
        'detail_keys = [[], ["sex", "age4"], ["sex", "age9"], ["sex", "age23"]]', 'detail_keys = [[], ["state"], ["state"], ["state"]]')
    with pytest.raises(WorkloadFileError, match="without a public keyset"):
        run(session, spec.parse(text), tmp_path / "out")
    assert session.ledger.spent == 0


@pytest.mark.parametrize("name", ["../elsewhere/x", "a/b", "..", ".", "x\\\\y", "/tmp/x"])
def test_a_workload_name_that_is_not_a_plain_file_name_is_refused(name, session, tmp_path):
    """Issue 29, finding 14: the name names the output files, so ``../elsewhere/x`` wrote outside --out."""
    text = QUERIES.replace('name = "states"', f'name = "{name}"')
    with pytest.raises(WorkloadFileError) as err:
        run(session, spec.parse(text), tmp_path / "out")
    assert err.value.code == "DP501" and "plain file name" in str(err.value)
    assert session.ledger.spent == 0 and not (tmp_path / "out").exists() and not (tmp_path / "elsewhere").exists()


def test_a_plain_workload_name_is_kept():
    assert spec.parse(QUERIES.replace('name = "states"', 'name = "states-2024.v1"')).name == "states-2024.v1"


@pytest.mark.parametrize("old, new, what", [
    ('"R01", "R02"', '"R01", "R02", "R01"', "codes lists 'R01' more than once"),
    ('"race1", "race2"', '"race1", "race2", "race1"', "races lists 'race1' more than once"),
])
def test_a_safetab_file_listing_a_code_twice_is_refused(old, new, what):
    """A code listed 64 times computed 320 stage queries and wrote 64 copies of its groups."""
    text = SAFETAB_DEMO.read_text()
    assert old in text
    with pytest.raises(WorkloadFileError) as err:
        spec.parse(text.replace(old, new, 1))
    assert err.value.code == "DP501" and what in str(err.value)


def test_safetab_on_a_many_row_table_is_refused_before_reading(demo, tmp_path):
    """SafeTab's levels compose on one row per person (paper 004 Lemma 10): a table declaring
    max_groups (many rows per unit) is refused, nothing charged."""
    import dpsql

    db, policy = demo
    text = policy.read_text().replace('[tables.persons]\nprivacy_unit = "person_id"\n',
                                      '[tables.persons]\nprivacy_unit = "person_id"\nmax_groups = 2\nrow_threshold = 3\n')
    assert "max_groups = 2" in text
    many = tmp_path / "many.policy.toml"
    many.write_text(text)
    with dpsql.connect(db, many) as con:
        with pytest.raises(WorkloadFileError, match="max_groups"):
            run(con.session, spec.parse(SAFETAB_DEMO.read_text()), tmp_path / "out")
        assert con.session.ledger.spent == 0
