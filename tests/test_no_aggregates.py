"""Groups without aggregates (issue 32): ``SELECT k FROM t GROUP BY k`` and ``SELECT DISTINCT k``.

Public keys only: the answer is the policy's keyset, free — the exact query never runs and the
ledger records nothing. A private key: the groups partition selection keeps, charged exactly the
selection's ε²/2 and δ. The oracles are the policy file read here with ``tomllib`` and the
selection parameters written by the test, never dpsql's own accounting.
"""

from __future__ import annotations

import shutil
import tomllib
from fractions import Fraction

import duckdb
import pytest

import dpsql
from dpsql.privacy.pi_opt import release_probability
from dpsql.testing import seeded_random


def _keyset(policy, table: str, key: str) -> list[str]:
    return tomllib.loads(policy.read_text())["tables"][table]["keys"][key]["keyset"]


def _counting_runs(session) -> list[str]:
    """Every query the engine runs on the data file, recorded as it runs (a spy, not a stand-in)."""
    ran: list[str] = []

    def spy(real):
        def run(sql, *args, **kwargs):
            ran.append(sql)
            return real(sql, *args, **kwargs)
        return run

    for name in ("run", "run_columns", "run_arrays"):  # rows, a large answer's columns, a quantile's values
        if hasattr(session.engine, name):
            setattr(session.engine, name, spy(getattr(session.engine, name)))
    return ran


def test_public_keys_without_aggregate_are_the_keyset_free_and_read_nothing(demo):
    states = sorted(_keyset(demo[1], "establishments", "state"))
    with dpsql.connect(*demo, _random_source=seeded_random(3)) as con:
        ran = _counting_runs(con.session)
        cur = con.execute("SELECT state FROM establishments GROUP BY state ORDER BY state DESC LIMIT 3")
        assert [r[0] for r in cur.fetchall()] == states[::-1][:3]
        assert cur.receipt.rho == 0 and cur.receipt.delta == 0 and cur.receipt.charge_id is None
        cur = con.execute("SELECT DISTINCT state, naics2 FROM establishments WHERE employees > 5")
        naics2 = _keyset(demo[1], "establishments", "naics2")
        assert sorted(cur.fetchall()) == sorted((s, n) for s in states for n in naics2)
        assert ran == []  # no query read the private table
        assert con.session.ledger.charges == [] and con.session.ledger.spent == 0


def test_public_keys_without_aggregate_do_not_depend_on_the_rows(demo, tmp_path):
    """On a copy of the database whose private table is empty, the answer is the same keyset."""
    db = tmp_path / "empty.duckdb"
    shutil.copyfile(demo[0], db)
    raw = duckdb.connect(str(db))
    raw.execute("DELETE FROM establishments")
    raw.close()
    policy = tmp_path / "empty.policy.toml"
    shutil.copyfile(demo[1], policy)
    with dpsql.connect(db, policy) as con:
        rows = con.execute("SELECT DISTINCT state FROM establishments ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == sorted(_keyset(demo[1], "establishments", "state"))


def _selection_policy(demo, tmp_path, epsilon: str, delta: str):
    policy = tmp_path / "sel.policy.toml"
    policy.write_text(demo[1].read_text() + f"\n[selection]\nepsilon = {epsilon}\ndelta = {delta}\n")
    return demo[0], policy


@pytest.mark.parametrize("sql", ["SELECT county FROM establishments GROUP BY county",
                                 "SELECT DISTINCT county FROM establishments"])
def test_private_key_without_aggregate_charges_only_the_selection(demo, tmp_path, sql):
    db, policy = _selection_policy(demo, tmp_path, "0.7", "1e-7")
    with dpsql.connect(db, policy, _random_source=seeded_random(11)) as con:
        ran = _counting_runs(con.session)
        cur = con.execute(sql)
        released = {r[0] for r in cur.fetchall()}
        exact = dict(con.session.engine.run("SELECT county, COUNT(*) FROM establishments GROUP BY county"))
        assert len(ran) == 2  # the exact query (selection counts), then this test's own oracle
        rc = cur.receipt
        assert rc.rho == Fraction(7, 10) ** 2 / 2 and rc.delta == Fraction(1, 10**7)
        assert rc.noise == () and rc.charge_id is not None
        [charge] = con.session.ledger.charges
        assert charge.rho == Fraction(49, 200) and charge.delta == Fraction(1, 10**7)
    assert released < set(exact)  # selected, not listed: a strict subset of the true counties
    sure = {c for c, n in exact.items() if release_probability(n, 0.7, 1e-7) == 1.0}
    assert sure and sure <= released
    singles = [c for c, n in exact.items() if n == 1]
    assert sum(c in released for c in singles) <= max(1, len(singles) // 100)


def test_distinct_is_planned_as_group_by(session):
    """SELECT DISTINCT k is GROUP BY k: the same exact SQL and the same finish (the selection
    itself is not compared draw for draw: DuckDB returns groups in no fixed order)."""
    from dpsql.sql.rewrite import exact_sql

    for key in ("device_model", "SUBSTR(device_model, 1, 3)"):
        a = session.plan(f"SELECT {key} FROM devices GROUP BY {key}")
        b = session.plan(f"SELECT DISTINCT {key} FROM devices")
        assert exact_sql(a, session.schema["devices"]) == exact_sql(b, session.schema["devices"])
        assert a.finish_sql == b.finish_sql and a.private_keys and not a.primitives


def test_explain_says_a_public_query_without_aggregate_reads_nothing(con):
    ex = con.explain("SELECT DISTINCT state FROM establishments")
    assert ex.rho == 0 and ex.noise == () and any("no private row is read" in n for n in ex.notes)
    ex = con.explain("SELECT DISTINCT county FROM establishments")
    assert ex.rho == con.session.policy.selection.epsilon ** 2 / 2 and ex.selection["keys"] == ["county"]
