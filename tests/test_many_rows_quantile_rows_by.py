"""r per grouping (``quantile_rows_by``, issue 31; docs/policy.md and docs/privacy.md "r per
grouping"): a quantile on a many-row table samples at most r rows of a kept (unit, group), r the
least r_C of a declared set C whose columns the query's bare keys fix, else the table's
``quantile_rows``; its exponential mechanism runs at ε/r with that same r.

The oracle is a second implementation in plain Python over the rows (two levels: the κ groups a
unit keeps by the keyed hash of (unit, keys, salt), then per kept (unit, group) the r values of
smallest keyed hash of (unit, keys, value, n, salt), n numbering a unit's rows of one value in
the group); the hashes are DuckDB's HASH read from the file
by plain queries, and which r applies is written here from the rule, not read from dpsql.
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
from test_many_rows_quantiles import REGIONS, _answer, _bins, _database, _eps

KAPPA = 3  # max_groups of test_many_rows_quantiles' policy
BY = 'quantile_rows_by = { region = 2, shop = 4, "region,shop" = 5 }'
TABLE_R = 1


def _rows(seed: int = 11) -> list[tuple]:
    r = random.Random(seed)
    rows = []
    for u in range(60):
        for _ in range(r.randint(1, 25)):  # many units with more than 5 rows in a group
            amount = None if r.random() < 0.1 else r.randint(0, 220)
            rows.append((u, r.choice(REGIONS[:4]), amount, r.choice(["s1", "s2", "s3", None])))
    rows += [(999, g, 5 + i % 7, f"s{1 + i % 3}") for g in REGIONS[:6] for i in range(40)]  # beyond κ
    rows += [(None, "A", 150, "s1")] * 4  # no unit: dropped
    return rows


def _oracle(db: Path, rows: list[tuple], keys: list[str], salt: int, r: int) -> dict[tuple, Counter]:
    """Per group (a tuple of the keys' values): the multiset of sampled amounts."""
    col = {"region": 1, "shop": 3}
    ks = ", ".join(keys)
    raw = duckdb.connect(str(db), read_only=True)
    group_hash = {tuple(x[:-1]): x[-1] for x in raw.execute(
        f"SELECT DISTINCT pid, {ks}, HASH(pid, {ks}, {salt}) FROM visits WHERE pid IS NOT NULL").fetchall()}
    value_hash = {tuple(x[:-1]): x[-1] for x in raw.execute(  # (unit, keys, value, n): the n-th row of that value
        f"SELECT pid, {ks}, amount, n, HASH(pid, {ks}, amount, n, {salt}) FROM (SELECT pid, {ks}, amount, "
        f"CAST(ROW_NUMBER() OVER (PARTITION BY pid, {ks}, amount) AS BIGINT) AS n FROM visits "
        "WHERE pid IS NOT NULL AND amount IS NOT NULL)").fetchall()}
    raw.close()
    per_unit: dict[object, dict[tuple, list[int]]] = {}
    for row in rows:
        if row[0] is None:
            continue
        g = tuple(row[col[k]] for k in keys)
        values = per_unit.setdefault(row[0], {}).setdefault(g, [])
        if row[2] is not None:
            values.append(row[2])
    out: dict[tuple, Counter] = {}
    for u, groups in per_unit.items():
        kept = sorted(groups, key=lambda g: group_hash[(u, *g)])[:KAPPA]  # 64-bit hashes: no ties here
        for g in kept:
            each = [(v, n) for v, count in Counter(groups[g]).items() for n in range(1, count + 1)]
            sample = sorted(each, key=lambda vn: (value_hash[(u, *g, *vn)], vn[0]))[:r]
            out.setdefault(g, Counter()).update(v for v, _ in sample)
    return out


#: (GROUP BY keys, the r the rule gives with BY, the set it comes from)
CASES = [(["region"], 2, "region"),  # {region} ⊆ {region}; "region,shop" holds shop, which the query does not fix
         (["shop"], 4, "shop"),
         (["region", "shop"], 2, "region")]  # region (2), shop (4) and region,shop (5) all fixed: the least


@pytest.mark.parametrize("keys,r,of", CASES, ids=lambda c: str(c))
def test_each_grouping_samples_its_own_r_as_the_two_level_oracle(tmp_path, keys, r, of):
    from dpsql.sql.units import SALT

    rows = _rows()
    db, policy = _database(tmp_path, rows, extra=f"quantile_rows = {TABLE_R}\n{BY}")
    ks = ", ".join(keys)
    sql = f"SELECT {ks}, MEDIAN(amount) FROM visits GROUP BY {ks}"
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        ex = con.explain(sql)
        text = str(con.cursor().execute("EXPLAIN " + sql).fetchall())
        bounds = con.session.policy.tables["visits"].measures["amount"].grid.bounds()
    (term,) = ex.policy_terms
    assert (term["quantile_rows"], term["quantile_rows_by"]) == (r, of)
    raw = duckdb.connect(str(db), read_only=True)
    for salt in (0, 987654321, 2**62 + 17):
        got = {tuple(row[:len(keys)]): row[len(keys)] for row in raw.execute(ex.exact_sql.replace(SALT, str(salt))).fetchall()}
        oracle = _oracle(db, rows, keys, salt, r)
        assert set(oracle) <= set(got)
        for g, hist in got.items():
            bins = {} if hist is None or hist[0] is None else dict(zip(hist[0], hist[1]))
            assert bins == _bins(oracle.get(g, Counter()), bounds), g
        assert any(sum(v.values()) < sum(len([x for x in rows if x[0] == u]) for u in range(60)) for v in oracle.values())
    raw.close()
    assert f"quantiles read at most {r} rows of a unit per group (quantile_rows_by {of})" in text


def test_a_grouping_no_set_is_fixed_by_uses_the_tables_r(tmp_path):
    """An expression of region (its groups are unions of region groups) and no GROUP BY: no set
    is fixed, so the table's r, and the policy terms name no set."""
    db, policy = _database(tmp_path, _rows(), extra=f"quantile_rows = 3\n{BY}")
    with dpsql.connect(db, policy) as con:
        for sql in ("SELECT MEDIAN(amount) FROM visits",
                    "SELECT LOWER(region) AS r, MEDIAN(amount) FROM visits GROUP BY LOWER(region)"):
            (term,) = con.explain(sql).policy_terms
            assert term["quantile_rows"] == 3 and "quantile_rows_by" not in term, sql
        (term,) = con.explain("SELECT region, COUNT(DISTINCT pid) FROM visits GROUP BY region").policy_terms
        assert "quantile_rows" not in term  # no quantile: no r stated


@pytest.mark.parametrize("keys,r,of", CASES, ids=lambda c: str(c))
def test_the_sampler_receives_epsilon_over_the_groupings_r(tmp_path, monkeypatch, keys, r, of):
    from dpsql.privacy import quantile

    seen: list[Fraction] = []
    real = quantile.draw

    def draw(hists, grid, q, epsilon, rng, *values):
        seen.append(epsilon)
        return real(hists, grid, q, epsilon, rng, *values)

    monkeypatch.setattr(quantile, "draw", draw)
    db, policy = _database(tmp_path, _rows(), rho="0.3", extra=f"quantile_rows = {TABLE_R}\n{BY}")
    ks = ", ".join(keys)
    _, receipt = _answer(db, policy, f"SELECT {ks}, MEDIAN(amount) FROM visits GROUP BY {ks}")
    assert seen == [_eps(Fraction(3, 10)) / r]
    (noise,) = [n for n in receipt.noise if n.aggregate == "MEDIAN(amount)"]
    assert noise.sensitivity == (r * 0.5,)
    assert {(t.get("quantile_rows"), t.get("quantile_rows_by")) for t in receipt.policy_terms} == {(r, of)}


def test_neighbours_differing_by_one_whole_heavy_unit_have_the_same_outcome_kind(tmp_path):
    """D and D plus one unit of 10^5 rows over every region and shop (NULL amounts and shops, values
    off the grid): each grouping answers on both with the same shape and the same charge."""
    heavy = ("INSERT INTO visits SELECT 5000, 'ABCDEFGHIJ'[1 + i % 10], CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1000003 END, "
             "CASE WHEN i % 5 = 0 THEN NULL ELSE 's' || (i % 4) END FROM range(100000) t(i)")
    queries = ["SELECT region, MEDIAN(amount) FROM visits GROUP BY region",
               "SELECT region, shop, QUANTILE_CONT(amount, 0.9) FROM visits GROUP BY region, shop",
               "SELECT shop, MEDIAN(amount) FROM visits GROUP BY shop"]
    outcomes = []
    for j, extra in enumerate((None, heavy)):
        db, policy = _database(tmp_path, _rows(), name=f"n{j}", extra=f"quantile_rows = {TABLE_R}\n{BY}")
        if extra:
            con = duckdb.connect(str(db))
            con.execute(extra)
            con.close()
        outs = []
        for q in queries:
            answer, receipt = _answer(db, policy, q)
            outs.append((receipt.rho, [(t.get("quantile_rows"), t.get("quantile_rows_by")) for t in receipt.policy_terms],
                         len(answer) if "shop" not in q else None))  # private key: which groups are released is noisy
        outcomes.append(outs)
    assert outcomes[0] == outcomes[1]
    assert [o[1][0][0] for o in outcomes[0]] == [2, 2, 4]


@pytest.mark.parametrize("table,words", [
    ("quantile_rows_by = { amount = 2 }", "not a key"),
    ("quantile_rows_by = { pid = 2 }", "not a key"),
    ("quantile_rows_by = { nope = 2 }", "not a key"),
    ("quantile_rows_by = { region = 0 }", "positive integer"),
    ("quantile_rows_by = { region = -3 }", "positive integer"),
    ("quantile_rows_by = { region = true }", "positive integer"),
    ('quantile_rows_by = { region = "2" }', "positive integer"),
    ("quantile_rows_by = { region = 100001 }", "100,000"),
    ('quantile_rows_by = { "region,region" = 2 }', "twice"),
    ('quantile_rows_by = { "region,shop" = 2, "shop,region" = 3 }', "same set"),
    ("quantile_rows_by = 4", "table"),
    ("quantile_rows = 100001", "100,000"),
    ("quantile_rows_by = { " + ", ".join(f'"region,shop{i}" = 1' for i in range(65)) + " }", "more than 64"),
])
def test_hostile_quantile_rows_by_is_refused_at_load(tmp_path, table, words):
    db, policy = _database(tmp_path, [], extra=table)
    with pytest.raises(dpsql.Error) as e:
        dpsql.connect(db, policy).close()
    assert e.value.code == "DP401" and words in str(e.value), str(e.value)
    assert "quantile_rows" in str(e.value)


def test_quantile_rows_by_needs_max_groups(tmp_path):
    db, policy = _database(tmp_path, [], extra="quantile_rows_by = { region = 2 }")
    policy.write_text(policy.read_text().replace("max_groups = 3\nrow_threshold = 2\n", ""))
    with pytest.raises(dpsql.Error) as e:
        dpsql.connect(db, policy).close()
    assert "quantile_rows_by" in str(e.value) and "max_groups" in str(e.value)


def test_a_plan_read_back_keeps_the_groupings_r(tmp_path):
    from dpsql.records.plan import decode, encode

    db, policy = _database(tmp_path, _rows(), extra=f"quantile_rows = {TABLE_R}\n{BY}")
    with dpsql.connect(db, policy) as con:
        plan = con.session.plan("SELECT shop, MEDIAN(amount) FROM visits GROUP BY shop")
        back = decode(encode(plan), con.session.policy)
    assert (back.table.quantile_rows, back.table.quantile_rows_set) == (4, ("shop",))


def test_a_join_of_two_private_tables_keeps_quantile_rows():
    """``joined_table`` (a join on the unit) samples the least r of the tables with many rows per
    unit; a one-row table's default r = 1 says nothing about the joined rows."""
    from dpsql.policy.model import TablePolicy, joined_table

    flights = TablePolicy("flights", "tailnum", max_groups=4, row_threshold=10, quantile_rows=7,
                          quantile_rows_by={("carrier",): 40})
    planes = TablePolicy("planes", "tailnum")
    busy = TablePolicy("legs", "tailnum", max_groups=2, quantile_rows=3)
    assert joined_table(flights, planes, "p").quantile_rows == 7
    assert joined_table(planes, flights, "f").quantile_rows == 7
    assert joined_table(flights, busy, "l").quantile_rows == 3
    assert joined_table(flights, planes, "p").quantile_rows_by == {}  # one table's sets do not describe the join


def test_dpsql_policy_states_the_r_of_each_quantile(tmp_path):
    """`dpsql policy`'s P(u) lists the r the charged quantiles read per (unit, group): by region
    r_region = 2, by shop r_shop = 4 (both κ = 3 here, so one constant term lists both)."""
    from dpsql.privacy import policy_function as pf

    db, policy = _database(tmp_path, _rows(), extra=f"quantile_rows = {TABLE_R}\n{BY}")
    con = dpsql.connect(db, policy, rho=0.3, _random_source=seeded_random(1))
    con.cursor().execute("SELECT region, MEDIAN(amount) FROM visits GROUP BY region")
    con.cursor().execute("SELECT shop, MEDIAN(amount) FROM visits GROUP BY shop")
    con.cursor().execute("SELECT region, COUNT(DISTINCT pid) FROM visits GROUP BY region")
    terms = pf.collect(con.session.ledger.history())
    con.close()
    assert [t.quantile_rows for t in terms if not t.split] == [("2 (region)", "4 (shop)")]
    assert "quantiles read at most r = 2 (region), 4 (shop) rows of u per group" in pf.formula(terms)["visits"]
