"""κ per grouping (``max_groups_by``, issue 31; docs/privacy.md "κ per grouping", docs/policy.md).

The visits of ``test_many_rows`` with a policy that declares, beside the table's κ = 3, a
smaller κ_C for sets of key columns. The oracle is the two-level aggregation of
``test_many_rows._oracle`` (plain Python over the rows, DuckDB's HASH read by a plain query)
run at the κ the test expects for the grouping, never read from dpsql.
"""

from __future__ import annotations

from fractions import Fraction

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
from test_many_rows import (AMOUNT_T, HEAVY, K, KAPPA, QUERY, REGIONS, ROWS_T, _answer, _check, _database,
                            _hashes, _oracle, _rows, _salt)

BY = f"{{ region = 2, shop = 1, \"region,shop\" = {KAPPA} }}"
TABLE = f"max_groups = {KAPPA}\nmax_groups_by = {BY}\nrow_threshold = {ROWS_T}\nmax_splits = {K}"


@pytest.mark.parametrize("where, keep", [("", lambda r: True),
                                         ("WHERE amount > 10 ", lambda r: r[2] is not None and r[2] > 10)])
def test_a_grouping_by_a_declared_set_is_bounded_at_its_kappa(tmp_path, where, keep):
    rows = _rows()
    db, policy = _database(tmp_path, rows, table=TABLE)
    answer, receipt = _answer(db, policy, QUERY.format(where=where))
    _check(answer, _oracle(rows, _hashes(db, _salt(11)), keep, kappa=2))
    assert answer != [(g, *_oracle(rows, _hashes(db, _salt(11)), keep)[g]) for g in REGIONS]  # κ = 3 differs here
    assert {t["max_groups"] for t in receipt.policy_terms} == {2}
    assert {t["max_groups_by"] for t in receipt.policy_terms} == {"region"}
    split = next(t for t in receipt.policy_terms if t["scale"] != "1")
    assert Fraction(split["unit_bound_exact"]) == 2 * K**2 * Fraction(split["rho_exact"])


def test_a_heavy_unit_keeps_kappa_c_groups_of_a_function_of_the_set(tmp_path):
    """GROUP BY LOWER(region) reads only region: a function of the set's columns has at most as
    many groups per unit, so κ_region = 2 bounds it (the projection argument)."""
    db, policy = _database(tmp_path, [(HEAVY, g, 700, "s1") for g in REGIONS for _ in range(40)], table=TABLE)
    for seed in (1, 2):
        answer, receipt = _answer(db, policy, "SELECT LOWER(region) AS r, COUNT(DISTINCT pid), COUNT(*) FROM visits "
                                  "GROUP BY LOWER(region)", seed=seed)
        assert sum(r[1] for r in answer) == 2 and sum(r[2] for r in answer) == 2 * K * ROWS_T
        raw = duckdb.connect(str(db), read_only=True)
        hashes = {(u, g): h for u, g, h in raw.execute(f"SELECT pid, g, HASH(pid, g, {_salt(seed)}) FROM "
                                                         "(SELECT DISTINCT pid, LOWER(region) AS g FROM visits)").fetchall()}
        raw.close()
        kept = sorted((g.lower() for g in REGIONS), key=lambda g: (hashes[(HEAVY, g)], g))[:2]
        assert {r[0] for r in answer if r[1]} == set(kept)
        assert {t["max_groups"] for t in receipt.policy_terms} == {2}


@pytest.mark.parametrize("by, kappa, of", [
    (BY, 2, "region × shop"),  # κ_region·κ_shop = 2 < κ_{region,shop} = 3
    ("{ \"region,shop\" = 3, region = 3 }", 3, "region,shop"),
    ("{ region = 2 }", KAPPA, None),  # region alone does not cover (region, shop): the table's κ
    ("{ region = 2, \"region,shop\" = 2 }", 2, "region,shop"),
])
def test_the_kappa_of_a_grouping_is_the_least_cover(tmp_path, by, kappa, of):
    """(region, shop) is bounded by a declared set holding both columns, or by the product of the
    κ_C of sets whose union holds both (a unit with ≤ a regions and ≤ b shops has ≤ a·b pairs),
    the least of them and of the table's κ; a set covering only some of the columns never applies."""
    table = f"max_groups = {KAPPA}\nmax_groups_by = {by}\nrow_threshold = {ROWS_T}"
    db, policy = _database(tmp_path, _rows(), table=table)
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    ex = con.explain("SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop")
    text = str(con.cursor().execute("EXPLAIN SELECT region, shop, COUNT(*) FROM visits GROUP BY region, shop").fetchall())
    con.close()
    assert {t["max_groups"] for t in ex.policy_terms} == {kappa}
    assert {t.get("max_groups_by") for t in ex.policy_terms} == {of}
    assert f"<= {kappa}\n" in ex.exact_sql
    assert f"at most {kappa} groups" + (f" (max_groups_by {of})" if of else ",") in text


def test_selection_runs_at_the_kappa_of_the_set(tmp_path):
    """GROUP BY shop with κ_shop = 1: each unit is bounded to one shop, and selection runs the
    single-unit π_opt at (ε, δ) = (1, 1e-6): groups of 25 units are kept with probability
    0.999996 each (paper 002 Theorem 1), where at κ = 3 (ε/3, δ/3) at most one of four is
    (test_many_rows.test_selection_runs_at_epsilon_over_kappa)."""
    rows = [(u, "A", 1, f"s{u % 4}") for u in range(100)]
    rows += [(200, "A", 1, s) for s in ("s0", "s1", "s2", "s3")]  # one unit in four shops: kept in one
    db, policy = _database(tmp_path, rows, table=TABLE)
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop ORDER BY shop")
    assert len(answer) == 4 and sum(r[1] for r in answer) == 101
    assert "per_group" not in receipt.selection  # no division by κ
    assert {t["max_groups"] for t in receipt.policy_terms} == {1}


def test_neighbours_differing_by_one_whole_unit_have_the_same_outcome_kind(tmp_path):
    base = _rows(heavy=False)
    heavy = [(HEAVY, g, 700, s) for g in REGIONS for s in ("s1", "s2") for _ in range(40)]
    queries = [QUERY.format(where=""), "SELECT shop, COUNT(*), SUM(amount) FROM visits GROUP BY shop",
               "SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop"]
    shapes = []
    for j, rows in enumerate((base, base + heavy)):
        db, policy = _database(tmp_path, rows, table=TABLE, name=f"n{j}")
        out = [_answer(db, policy, q) for q in queries]
        shapes.append([(len(a[0]), a[1].rho, [(t["max_groups"], t.get("max_groups_by")) for t in a[1].policy_terms])
                       for a in out])
        heavy_in = [r for r in out[0][0]]
        assert all(n <= 2 * K * ROWS_T * 200 for _, n, *_ in heavy_in)
    assert shapes[0][0][2] == shapes[1][0][2] and [s[2] for s in shapes[0]] == [s[2] for s in shapes[1]]
    assert [s[1] for s in shapes[0]] == [s[1] for s in shapes[1]]


@pytest.mark.parametrize("by, words", [
    (f"{{ region = {KAPPA + 1} }}", "more than the table's max_groups"),
    ("{ amount = 1 }", "'amount', which is not a key"),
    ("{ pid = 1 }", "'pid', which is not a key"),
    ("{ nowhere = 1 }", "'nowhere', which is not a key"),
    ("{ region = 0 }", "must be a positive integer"),
    ("{ region = \"2\" }", "must be a positive integer"),
    ("{ \"region,region\" = 2 }", "names a column twice"),
    ("{ \"region,shop\" = 2, \"shop, region\" = 3 }", "same set of columns"),
    ("{ \"region;shop\" = 2 }", "not a plain identifier"),
    ("3", "must be a table"),
])
def test_hostile_sets_are_refused_at_load(tmp_path, by, words):
    db, policy = _database(tmp_path, _rows(), table=f"max_groups = {KAPPA}\nmax_groups_by = {by}\nrow_threshold = 4")
    with pytest.raises(dpsql.OperationalError) as e:
        dpsql.connect(db, policy).close()
    assert words in e.value.message and "max_groups_by" in e.value.message


def test_sets_need_max_groups(tmp_path):
    db, policy = _database(tmp_path, _rows(), table="max_groups_by = { region = 1 }")
    with pytest.raises(dpsql.OperationalError, match="declare max_groups too"):
        dpsql.connect(db, policy).close()


def test_a_recorded_plan_keeps_the_kappa_of_its_grouping(tmp_path):
    """A later process decides a statement from its record (records/plan.py): the plan read back
    bounds and selects at the κ_C planning chose, not the table's κ."""
    from dpsql.records.plan import decode, encode

    db, policy = _database(tmp_path, _rows(), table=TABLE)
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    plan = con.session.plan(QUERY.format(where=""))
    back = decode(encode(plan), con.session.policy)
    con.close()
    assert (back.table.max_groups, back.table.max_groups_set) == (2, ("region",))


def test_dpsql_policy_states_each_querys_kappa_c(tmp_path):
    """`dpsql policy`'s P(u) keeps each query's κ_q with its terms: by region (κ_region = 2) and by
    shop (κ_shop = 1) are two terms, each summed over at most its own κ groups of u."""
    from dpsql.privacy import policy_function as pf

    db, policy = _database(tmp_path, _rows(), table=TABLE)
    con = dpsql.connect(db, policy, rho=0.3, _random_source=seeded_random(1))
    con.cursor().execute("SELECT region, SUM(amount) FROM visits GROUP BY region")
    con.cursor().execute("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop")
    terms = pf.collect(con.session.ledger.history())
    con.close()
    text = pf.formula(terms)["visits"]
    assert "Σ_g 0.3·|A_g(u)|²" in text and "[u in at most 2 groups of each query]" in text
    assert "[u in at most 1 groups of each query]" in text
    assert sorted(t.max_groups for t in terms) == [1, 2]
    # amount 120 → ⌈120/50⌉ = 3 splits, 10 → 1: two groups of the region query
    amount_terms = [t for t in terms if t.split]
    total, _ = pf.evaluate(amount_terms, "visits", pf.parse_record(["amount=120,10"]))
    assert total == Fraction(3, 10) * (3**2 + 1**2)
    with pytest.raises(dpsql.DpsqlError, match="at most 2 groups"):
        pf.evaluate(amount_terms, "visits", pf.parse_record(["amount=1,2,3"]))
