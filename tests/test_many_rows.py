"""Many rows per privacy unit (issue 31, docs/privacy.md "Many rows per unit"; dpsql/sql/units.py).

A generated DuckDB table of visits with repeated units — most units with a few rows in a few
regions, one heavy unit with many rows in all ten regions, rows with a NULL unit, NULL and
huge amounts — and a policy declaring ``max_groups``. The oracle is computed here, in plain
Python, from the rows: filter, drop NULL units, aggregate per (unit, group), keep each unit's κ
groups of smallest keyed hash (DuckDB's HASH of (unit, region, salt), read from the file by a
plain query, with the salt the seeded source draws first), top-code, sum. dpsql runs with a
huge ρ, so its noise is zero with overwhelming probability (σ ~ 1e-5) and its answers are the
exact values.

The κ > 1 selection here runs the paper's calibration (``kappa_rule = "paper"`` in POLICY: π_opt
at (ε/κ, δ/κ) for κ = 3); the default, Gaussian thresholding at the selection's charge, is
tests/test_selection_charge.py's.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
from test_selection_kappa import pi_theorem1  # paper 002 Theorem 1, written from the paper
import table_rows

REGIONS = list("ABCDEFGHIJ")
KAPPA, ROWS_T, AMOUNT_T, K = 3, 4, 50, 5  # max_groups, row_threshold, amount's threshold, max_splits
HEAVY = 999
HUGE = 2**63 - 1

POLICY = """
[budget]
default_rho = 1e12
total_rho = 1e15
[selection]
epsilon = 1
kappa_rule = "paper"
[tables.visits]
privacy_unit = "pid"
{table}
[tables.visits.measures]
amount = {{ threshold = {t}, range = [0, 1000] }}
[tables.visits.keys]
region = {{ keyset = {regions}, null = false }}
shop = {{}}
"""
MANY = f"max_groups = {KAPPA}\nrow_threshold = {ROWS_T}\nmax_splits = {K}"


def _rows(seed: int = 7, heavy: bool = True) -> list[tuple]:
    r = random.Random(seed)
    rows = []
    for u in range(120):
        for _ in range(r.randint(1, 12)):
            amount = None if r.random() < 0.05 else r.randint(-20, 200)
            rows.append((u, r.choice(REGIONS[:6]), amount, r.choice(["s1", "s2", "s3"])))
    if heavy:  # one unit in all ten regions, 40 rows in each, large amounts
        rows += [(HEAVY, g, 700, "s1") for g in REGIONS for _ in range(40)]
    rows += [(None, "A", 10**6, "s2")] * 5  # no unit: belongs to nobody, dropped
    return rows


def _database(tmp_path: Path, rows: list[tuple], table: str = MANY, name: str = "v") -> tuple[Path, Path]:
    db, policy = tmp_path / f"{name}.duckdb", tmp_path / f"{name}.policy.toml"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE visits(pid INTEGER, region VARCHAR, amount BIGINT, shop VARCHAR)")
    if rows:
        table_rows.insert(con, "visits", rows)
    con.close()
    policy.write_text(POLICY.format(table=table, t=AMOUNT_T, regions=REGIONS))
    return db, policy


def _salt(seed: int) -> int:
    """The salt a fresh connection on ``seeded_random(seed)`` draws for its first query."""
    return int(seeded_random(seed).bits63(1)[0])


def _hashes(db: Path, salt: int, key: str = "region") -> dict[tuple, int]:
    con = duckdb.connect(str(db), read_only=True)
    out = {(u, g): h for u, g, h in con.execute(
        f"SELECT pid, {key}, HASH(pid, {key}, {salt}) FROM (SELECT DISTINCT pid, {key} FROM visits)").fetchall()}
    con.close()
    return out


def _oracle(rows: list[tuple], hashes: dict[tuple, int] | None, keep=lambda row: True, kappa: int = KAPPA,
            max_splits: int | None = K) -> dict[str, tuple]:
    """Per region: (rows, units, SUM(amount), AVG(amount)) after bounding and top-coding."""
    records: dict[tuple, list[int]] = {}
    for row in rows:
        u, g, a, _ = row
        if u is None or not keep(row):
            continue
        rec = records.setdefault((u, g), [0, 0, 0])  # rows, sum of amounts, rows with an amount
        rec[0] += 1
        if a is not None:
            rec[1] += a
            rec[2] += 1
    by_unit: dict[int, list[str]] = {}
    for u, g in records:
        by_unit.setdefault(u, []).append(g)
    kept = set()
    for u, groups in by_unit.items():
        order = sorted(groups, key=lambda g: (hashes[(u, g)], g)) if hashes else sorted(groups)
        kept |= {(u, g) for g in order[:kappa]}
    out = {}
    for g in REGIONS:
        n = s = c = units = 0
        for (u, gg), (rn, rs, rc) in records.items():
            if gg != g or (u, gg) not in kept:
                continue
            cap_rows = max_splits * ROWS_T if max_splits else None
            cap_sum = max_splits * AMOUNT_T if max_splits else None
            n += min(rn, cap_rows) if cap_rows else rn
            s += max(-cap_sum, min(rs, cap_sum)) if cap_sum else rs
            c += min(rc, cap_rows) if cap_rows else rc
            units += 1
        out[g] = (n, units, s, (s / c) if c >= 1 else None)
    return out


QUERY = "SELECT region, COUNT(*), COUNT(DISTINCT pid), SUM(amount), AVG(amount) FROM visits {where}GROUP BY region ORDER BY region"


def assert_refused_by_the_final_check(sql: str, tampered: list[str], types: dict[str, str]) -> None:
    """Each tampered text differs from ``sql`` and the final totality check refuses it (DP122)."""
    from dpsql.errors import QueryRefused
    from dpsql.sql.final_check import check_final

    for bad in tampered:
        assert bad != sql
        with pytest.raises(QueryRefused) as err:
            check_final(bad, types)
        assert err.value.code == "DP122"


def _answer(db: Path, policy: Path, sql: str, seed: int = 11):
    con = dpsql.connect(db, policy, _random_source=seeded_random(seed))
    try:
        con.execute("SET dpsql.reuse = off")  # this seed's own release, not one made before (pipeline/reuse.py)
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall(), cur.receipt
    finally:
        con.close()


def _check(answer: list[tuple], oracle: dict[str, tuple]) -> None:
    assert [r[0] for r in answer] == REGIONS
    for region, n, units, s, avg in answer:
        on, ounits, os_, oavg = oracle[region]
        assert (n, units, s) == (on, ounits, os_), region
        assert avg == (None if oavg is None else pytest.approx(oavg)), region


@pytest.mark.parametrize("where, keep", [("", lambda r: True),
                                         ("WHERE amount > 10 ", lambda r: r[2] is not None and r[2] > 10),
                                         ("WHERE shop = 's1' ", lambda r: r[3] == "s1")])
def test_answers_equal_the_two_level_oracle(tmp_path, where, keep):
    rows = _rows()
    db, policy = _database(tmp_path, rows)
    answer, receipt = _answer(db, policy, QUERY.format(where=where))
    _check(answer, _oracle(rows, _hashes(db, _salt(11)), keep))
    assert receipt.rho == Fraction(10**12)


def test_a_unit_in_ten_groups_with_kappa_three_is_in_exactly_three(tmp_path):
    rows = [(HEAVY, g, 700, "s1") for g in REGIONS for _ in range(40)]
    db, policy = _database(tmp_path, rows)
    for seed in (1, 2, 3):
        answer, _ = _answer(db, policy, QUERY.format(where=""), seed=seed)
        assert sum(r[2] for r in answer) == KAPPA  # the unit counted in exactly κ regions
        assert sum(r[1] for r in answer) == KAPPA * K * ROWS_T  # 40 rows top-coded at K·R in each
        assert sum(r[3] for r in answer) == KAPPA * K * AMOUNT_T
        kept = {r[0] for r in answer if r[2]}
        hashes = _hashes(db, _salt(seed))
        assert kept == set(sorted(REGIONS, key=lambda g: (hashes[(HEAVY, g)], g))[:KAPPA])


def test_the_salt_is_drawn_per_query(tmp_path):
    """Two queries of one connection bound with two salts: over 20 queries a unit in ten groups
    keeps more than one set of three (a fixed salt would keep the same one every time)."""
    db, policy = _database(tmp_path, [(HEAVY, g, 1, "s1") for g in REGIONS])
    con = dpsql.connect(db, policy, _random_source=seeded_random(3))
    con.execute("SET dpsql.reuse = off")  # each query a fresh release, not the one before (pipeline/reuse.py)
    seen = set()
    for _ in range(20):
        cur = con.cursor()
        cur.execute("SELECT region, COUNT(DISTINCT pid) FROM visits GROUP BY region")
        seen.add(frozenset(r[0] for r in cur.fetchall() if r[1]))
    con.close()
    assert all(len(s) == KAPPA for s in seen) and len(seen) > 1


def test_no_group_by_and_no_max_splits(tmp_path):
    """One group needs no bounding; without max_splits the totals are not top-coded, and huge
    amounts (HUGEINT sums) still answer."""
    rows = _rows() + [(HEAVY + 1, "B", HUGE, "s1")] * 3
    db, policy = _database(tmp_path, rows, table=f"max_groups = {KAPPA}\nrow_threshold = {ROWS_T}")
    answer, _ = _answer(db, policy, "SELECT COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits")
    valid = [r for r in rows if r[0] is not None]
    (n, units, total), = answer
    assert (n, units) == (len(valid), len({r[0] for r in valid}))
    assert total == pytest.approx(sum(r[2] for r in valid if r[2] is not None), rel=1e-12)  # beyond BIGINT: a float


def test_exact_and_reference_sql_agree(tmp_path):
    """EXPLAIN's reference (splits materialised, paper 000 Algorithm 1) equals the exact query,
    both run on the file with one salt; EXPLAIN shows the salt's placeholder, never a salt."""
    from dpsql.sql.units import SALT

    db, policy = _database(tmp_path, _rows())
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    ex = con.explain(QUERY.format(where="WHERE amount < 150 "))
    text = str(con.cursor().execute("EXPLAIN " + QUERY.format(where="")).fetchall())
    con.close()
    assert SALT in ex.exact_sql and SALT in ex.reference_sql
    assert "at most 3 groups" in text
    raw = duckdb.connect(str(db), read_only=True)
    for salt in (0, 12345, _salt(1)):
        exact = sorted(raw.execute(ex.exact_sql.replace(SALT, str(salt))).fetchall())
        reference = sorted(raw.execute(ex.reference_sql.replace(SALT, str(salt))).fetchall())
        assert exact == reference and len(exact) == 6  # regions with rows
    raw.close()


def test_receipt_states_the_per_unit_bound_and_row_sensitivity(tmp_path):
    db, policy = _database(tmp_path, _rows())
    _, receipt = _answer(db, policy, "SELECT region, COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits GROUP BY region")
    noise = {n.aggregate: n for n in receipt.noise}
    assert noise["COUNT(*) rows"].sensitivity == (float(ROWS_T),)  # rows split at row_threshold
    assert noise["SUM(amount)"].sensitivity == (float(AMOUNT_T),)
    assert noise["COUNT(units)"].sensitivity == (1.0,)
    split, const = receipt.policy_terms
    rho_split, rho_const = Fraction(split["rho_exact"]), Fraction(const["rho_exact"])
    assert rho_split + rho_const == receipt.rho
    assert split["max_groups"] == const["max_groups"] == KAPPA
    assert Fraction(split["unit_bound_exact"]) == KAPPA * K**2 * rho_split
    assert Fraction(const["unit_bound_exact"]) == KAPPA * rho_const


@pytest.mark.parametrize("table", [MANY, f"max_groups = {KAPPA}\nrow_threshold = {ROWS_T}"])
def test_neighbours_differing_by_one_whole_unit_have_the_same_outcome_kind(tmp_path, table):
    """D and D minus one whole unit (the heavy one; a hostile one with huge amounts and rows in
    every group): every query answers on both, with the same shape."""
    base = _rows(heavy=False)
    hostile = [(HEAVY, g, v, "s9") for g in REGIONS for v in (HUGE, -HUGE, None, 0)] * 50
    heavy = [(HEAVY, g, 700, "s1") for g in REGIONS for _ in range(40)]
    queries = [QUERY.format(where=""), QUERY.format(where="WHERE amount / (amount - 5) > 0 "),
               "SELECT COUNT(*), SUM(amount), AVG(amount) FROM visits",
               "SELECT region, COUNT(DISTINCT pid) FROM visits WHERE region IN ('A', 'B') GROUP BY region"]
    for i, extra in enumerate((heavy, hostile)):
        shapes = []
        for j, rows in enumerate((base, base + extra)):
            db, policy = _database(tmp_path, rows, table=table, name=f"n{i}{j}")
            shapes.append([(len(a), len(a[0])) for a, _ in (_answer(db, policy, q) for q in queries)])
        assert shapes[0] == shapes[1]


def test_repeated_units_without_max_groups_are_still_refused(tmp_path):
    db, policy = _database(tmp_path, _rows(), table="")
    with pytest.raises(dpsql.OperationalError) as e:
        _answer(db, policy, "SELECT COUNT(*) FROM visits")
    assert e.value.code == "DP401" and "max_groups" in (e.value.hint or "")


def test_unique_units_path_is_unchanged(tmp_path):
    """Without max_groups the single-row SQL runs (no bounding, no salt); with it, the policy —
    not the data — picks the many-row path, even when every unit happens to have one row."""
    from dpsql.sql.units import SALT

    rows = [(u, REGIONS[u % 10], u, "s1") for u in range(50)]
    for table, many in (("", False), (MANY, True)):
        db, policy = _database(tmp_path, rows, table=table, name=f"u{many}")
        con = dpsql.connect(db, policy, _random_source=seeded_random(1))
        ex = con.explain("SELECT region, COUNT(*), SUM(amount) FROM visits GROUP BY region")
        con.close()
        assert ("__kept" in ex.exact_sql) is many and (SALT in ex.exact_sql) is many
        answer, _ = _answer(db, policy, "SELECT region, COUNT(*), SUM(amount) FROM visits GROUP BY region ORDER BY region")
        assert answer == [(g, 5, sum(u for u in range(50) if u % 10 == i)) for i, g in enumerate(REGIONS)]


@pytest.mark.parametrize("sql, words", [
    ("SELECT region, COUNT(*) FROM visits GROUP BY region", "row_threshold"),
    ("SELECT region, AVG(amount) FROM visits GROUP BY region", "row_threshold"),
    ("SELECT region, COUNT(DISTINCT shop) FROM visits GROUP BY region", "row_threshold"),
])
def test_forms_not_answered_yet_are_refused_free(tmp_path, sql, words):
    """Counting rows, and distinct values of a column, need the policy's row_threshold (R)."""
    db, policy = _database(tmp_path, _rows(), table=f"max_groups = {KAPPA}\nmax_splits = {K}")
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    with pytest.raises(dpsql.ProgrammingError) as e:
        con.cursor().execute(sql)
    spent = con.budget
    con.close()
    assert e.value.code == "DP211" and words in e.value.message
    assert Fraction(spent["spent"]) == 0


def test_truncated_geometric_selection_with_kappa_above_one_is_refused_free(tmp_path):
    """Its noisy count is a count of units in one group: with κ > 1 it is not answered (DP211)."""
    db, policy = _database(tmp_path, _rows())
    policy.write_text(policy.read_text().replace("epsilon = 1", "epsilon = 1\nmethod = \"truncated_geometric\""))
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    for sql in ("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop",
                "SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop"):
        with pytest.raises(dpsql.ProgrammingError) as e:
            con.cursor().execute(sql)
        assert e.value.code == "DP211" and "selection.method" in e.value.message
    spent = con.budget
    con.close()
    assert Fraction(spent["spent"]) == 0


def test_counting_rows_needs_a_row_threshold(tmp_path):
    db, policy = _database(tmp_path, _rows(), table=f"max_groups = {KAPPA}")
    with pytest.raises(dpsql.ProgrammingError) as e:
        _answer(db, policy, "SELECT AVG(amount) FROM visits")
    assert e.value.code == "DP211" and "row_threshold" in e.value.message
    with pytest.raises(dpsql.ProgrammingError) as e:  # a unit's distinct values are bounded by it (sql/units.py)
        _answer(db, policy, "SELECT COUNT(DISTINCT shop) FROM visits")
    assert e.value.code == "DP211" and "row_threshold" in e.value.message and "COUNT(DISTINCT column)" in e.value.message
    answer, _ = _answer(db, policy, "SELECT COUNT(DISTINCT pid), SUM(amount) FROM visits")
    valid = [r for r in _rows() if r[0] is not None]
    assert answer == [(len({r[0] for r in valid}), sum(r[2] for r in valid if r[2] is not None))]


def test_a_private_key_with_kappa_one(tmp_path):
    """κ = 1: each unit is in one group once bounded, so the single-row partition selection holds."""
    rows = [(u, "A", 1, f"s{u % 2}") for u in range(400) for _ in range(3)]
    db, policy = _database(tmp_path, rows, table=f"max_groups = 1\nrow_threshold = {ROWS_T}")
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid), COUNT(*) FROM visits GROUP BY shop ORDER BY shop")
    assert answer == [("s0", 200, 600), ("s1", 200, 600)]
    assert receipt.selection is not None


@pytest.mark.parametrize("field, value, words", [
    ("max_groups", "0", "max_groups' must be a positive integer"),
    ("max_groups", "\"3\"", "max_groups' must be a positive integer"),
    ("row_threshold", "2.5", "row_threshold' must be a positive integer"),
])
def test_policy_fields_are_validated_at_load(tmp_path, field, value, words):
    table = f"max_groups = {KAPPA}\nrow_threshold = {ROWS_T}".replace(f"{field} = {KAPPA if field == 'max_groups' else ROWS_T}",
                                                                     f"{field} = {value}")
    db, policy = _database(tmp_path, _rows(), table=table)
    with pytest.raises(dpsql.OperationalError) as e:
        dpsql.connect(db, policy).close()
    assert e.value.code == "DP401" and words in e.value.message and "tables.visits" in e.value.message


def test_row_threshold_needs_max_groups(tmp_path):
    db, policy = _database(tmp_path, _rows(), table="row_threshold = 4")
    with pytest.raises(dpsql.OperationalError, match="declare max_groups too"):
        dpsql.connect(db, policy).close()


def test_a_private_key_with_kappa_three(tmp_path):
    """κ > 1 and only private keys: each group kept by pi_opt at (ε/κ, δ/κ); groups of 100+
    units are all kept, and their values are the bounded two-level oracle's."""
    shops = [f"s{i}" for i in range(5)]
    rows = [(u, shops[u % 5], None, shops[u % 5]) for u in range(500) for _ in range(2)]
    rows += [(1000 + u, s, None, s) for u in range(20) for s in shops for _ in range(3)]  # in all 5 shops
    db, policy = _database(tmp_path, rows)
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid), COUNT(*) FROM visits GROUP BY shop ORDER BY shop")
    hashes = _hashes(db, _salt(11), key="shop")
    kept = {(u, s) for u in range(1000, 1020) for s in sorted(shops, key=lambda s: (hashes[(u, s)], s))[:KAPPA]}
    oracle = [(s, 100 + sum(1 for u, ss in kept if ss == s), 200 + 3 * sum(1 for u, ss in kept if ss == s)) for s in shops]
    assert answer == oracle
    assert receipt.selection["per_group"] == "epsilon 0.333334, delta 3.33334e-07 (max_groups = 3)"  # ε/κ, δ/κ rounded up
    from dpsql.privacy.pi_opt import release_probability

    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    mid = con.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop").selection["midpoint"]
    con.close()
    p = release_probability([mid - 1, mid], Fraction(1, 3), Fraction(1, 3 * 10**6))  # π at (ε/κ, δ/κ) crosses 1/2 there
    assert p[0] < 0.5 <= p[1]
    const = receipt.policy_terms[-1]
    assert Fraction(const["unit_bound_exact"]) == Fraction(const["rho_exact"]) + (KAPPA - 1) * (Fraction(const["rho_exact"]) - Fraction(1, 2))


def test_selection_runs_at_epsilon_over_kappa(tmp_path):
    """Groups of 25 units: pi_opt at (ε, δ) = (1, 1e-6) keeps each with probability 0.999996, at
    (ε/3, δ/3) with 0.0035 (paper 002 Theorem 1): with κ = 3 at most one of four is kept (a second
    one has probability below 1e-4)."""
    rows = [(u, "A", 1, f"s{u % 4}") for u in range(100)]
    db, policy = _database(tmp_path, rows)
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop")
    assert len(answer) <= 1 and receipt.selection is not None


def test_public_table_join_and_date_range_keys(tmp_path):
    """A public table joined on its key and a date range's months are public keys on a many-row
    table as on any other: every zone / month is released, and the values are the two-level
    oracle's (no unit is in more than κ of these groups, so bounding keeps every row)."""
    import datetime

    db, policy = tmp_path / "d.duckdb", tmp_path / "d.policy.toml"
    r = random.Random(3)
    rows = []
    for u in range(80):
        months = r.sample(range(1, 13), 2)
        rows += [(u, REGIONS[u % 4], r.randint(0, 90), datetime.date(2024, r.choice(months), r.randint(1, 28)))
                 for _ in range(r.randint(1, 9))]
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE visits(pid INTEGER, region VARCHAR, amount INTEGER, day DATE NOT NULL)")
    table_rows.insert(con, "visits", rows)
    con.execute("CREATE TABLE zones(code VARCHAR, zone VARCHAR)")
    table_rows.insert(con, "zones", [(g, "north" if g in "AB" else "south") for g in REGIONS])
    con.close()
    policy.write_text(f"""
[budget]
default_rho = 1e12
total_rho = 1e15
[tables.visits]
privacy_unit = "pid"
{MANY}
[tables.visits.measures]
amount = {{ threshold = 1000 }}
[tables.visits.keys]
region = {{ keyset = {REGIONS}, null = false }}
day = {{ range = ["2024-01-01", "2024-12-31"] }}
[public_tables.zones]
key = "code"
""")
    by_zone, _ = _answer(db, policy, "SELECT z.zone, COUNT(*), COUNT(DISTINCT v.pid), SUM(v.amount) FROM visits v "
                                     "JOIN zones z ON v.region = z.code GROUP BY z.zone ORDER BY z.zone")
    zone = {g: ("north" if g in "AB" else "south") for g in REGIONS}
    want = []
    for zname in ("north", "south"):
        sel = [x for x in rows if zone[x[1]] == zname]
        per_unit: dict[int, int] = {}
        for u, _, a, _ in sel:
            per_unit[u] = per_unit.get(u, 0) + a
        want.append((zname, sum(min(sum(1 for x in sel if x[0] == u), K * ROWS_T) for u in per_unit), len(per_unit),
                     sum(min(v, K * 1000) for v in per_unit.values())))
    assert by_zone == want
    by_month, _ = _answer(db, policy, "SELECT DATE_TRUNC('month', day) AS m, COUNT(DISTINCT pid), SUM(amount) FROM visits "
                                      "GROUP BY m ORDER BY m")
    assert len(by_month) == 12
    for i, (_, units, total) in enumerate(by_month):
        sel = [x for x in rows if x[3].month == i + 1]
        assert (units, total) == (len({x[0] for x in sel}), sum(x[2] for x in sel))


def test_policy_function_of_a_unit_over_its_groups(tmp_path):
    """`dpsql policy` for a many-row table: P(u) = Σ_g ρ·|A_g(u)|² + ρ_count·(groups), for a unit
    given per group (amount=...,... rows=...,...), and more groups than κ refused."""
    from dpsql.privacy import policy_function as pf

    db, policy = _database(tmp_path, _rows())
    con = dpsql.connect(db, policy, rho=0.3, _random_source=seeded_random(1))
    con.cursor().execute("SELECT region, COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits GROUP BY region")
    terms = pf.collect(con.session.ledger.history())
    con.close()
    text = pf.formula(terms)["visits"]
    assert text.startswith("P(u) = Σ_g 0.2·|A_g(u)|²") and "0.1·(groups of u)" in text
    # amount 120 → ⌈120/50⌉ = 3, rows 2 → 1: |A| = 3; amount 10, rows 9 → ⌈9/4⌉ = 3; amount 400 → 8, capped at K = 5
    total, _ = pf.evaluate(terms, "visits", pf.parse_record(["amount=120,10,400", "rows=2,9,1"]))
    assert total == Fraction(2, 10) * (3**2 + 3**2 + 5**2) + Fraction(1, 10) * 3
    with pytest.raises(dpsql.DpsqlError, match="at most 3 groups"):
        pf.evaluate(terms, "visits", pf.parse_record(["amount=1,2,3,4"]))


def test_hostile_units_at_scale_keep_the_outcome_kind(tmp_path):
    """A unit with 10⁶ rows, a unit in 10⁵ groups of a private key, NULL units: removing either
    whole unit keeps the outcome's kind (answered, same columns, the same groups released)."""
    base = ("SELECT u, 's' || (u % 3), 1, 's' || (u % 3) FROM range(300) t(u)",
            "SELECT NULL, 's0', 10, 's0' FROM range(1000)")
    heavy = f"SELECT {HEAVY}, 's0', {HUGE}, 's0' FROM range(1000000)"
    wide = f"SELECT {HEAVY + 1}, 'z' || g, 1, 'z' || g FROM range(100000) t(g)"
    outcomes = []
    for name, parts in (("all", (*base, heavy, wide)), ("no_heavy", (*base, wide)), ("no_wide", (*base, heavy))):
        db, policy = _database(tmp_path, [], name=name)
        con = duckdb.connect(str(db))
        for part in parts:
            con.execute(f"INSERT INTO visits {part}")
        con.close()
        answer, receipt = _answer(db, policy, "SELECT shop, COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits "
                                              "GROUP BY shop ORDER BY shop")
        outcomes.append(([r[0] for r in answer], len(answer[0]), receipt.selection["released_groups"]))
        heavy_in = name != "no_heavy"
        assert answer[0][1:3] == (100 + heavy_in * K * ROWS_T, 100 + heavy_in)  # 10⁶ rows top-coded at K·R
    assert outcomes[0] == outcomes[1] == outcomes[2] == (["s0", "s1", "s2"], 4, 3)


def test_row_count_noise_has_the_stated_spread(tmp_path):
    """COUNT(*) over many rows gets noise of σ = R/√(2ρ) (a split carries up to R rows): the
    sample standard deviation of 300 seeded releases around the exact count (computed here) is
    within 15% of R/√(2ρ) = 20 (its standard error is about 4%)."""
    import statistics

    rows = _rows()
    db, policy = _database(tmp_path, rows)
    per_unit: dict[int, int] = {}
    for u, *_ in rows:
        if u is not None:
            per_unit[u] = per_unit.get(u, 0) + 1
    exact = sum(min(n, K * ROWS_T) for n in per_unit.values())  # one group: no bounding, rows top-coded at K·R
    con = dpsql.connect(db, policy, rho=0.02, _random_source=seeded_random(5))
    con.execute("SET dpsql.reuse = off")  # independent draws, not the release before (pipeline/reuse.py)
    cur = con.cursor()
    draws = [cur.execute("SELECT COUNT(*) FROM visits").fetchall()[0][0] - exact for _ in range(300)]
    con.close()
    assert abs(statistics.pstdev(draws) / (ROWS_T / (2 * 0.02) ** 0.5) - 1) < 0.15
    assert abs(statistics.mean(draws)) < 4 * 20 / 300**0.5


def test_groups_that_cannot_be_released_do_not_use_up_kappa(tmp_path):
    """A unit in 3 keyset regions and in 3 groups no answer can show (two values outside the
    keyset, NULL) keeps the 3 released ones, whatever the salt: bounding chooses among groups
    the public domain can release."""
    rows = [(HEAVY, g, 10, "s1") for g in ("A", "B", "C", "Y", "Z", None)]
    db, policy = _database(tmp_path, rows)
    for seed in range(1, 9):
        answer, _ = _answer(db, policy, QUERY.format(where=""), seed=seed)
        assert {r[0] for r in answer if r[2]} == {"A", "B", "C"}


def test_the_many_row_sql_passes_the_final_check_and_tampered_forms_do_not(tmp_path):
    """The two-level SQL runs through the same final totality check as every exact query
    (sql/final_check.py): its WITH steps, the bounding's QUALIFY and the re-sum of per-(unit,
    group) partial sums are proven total; the same text with arithmetic on a partial sum, another
    window function, another variable, or a cast of a partial sum is not."""
    from dpsql.sql.final_check import check_final

    db, policy = _database(tmp_path, [(1, "north", 5, "a"), (1, "south", 7, "b"), (2, "north", 3, "a")])
    with dpsql.connect(db, policy) as con:
        s = con.session
        plan = s.plan("SELECT region, SUM(amount) AS s, COUNT(*) AS n FROM visits GROUP BY region")
        from dpsql.sql.rewrite import exact_sql

        types = dict(s.schema["visits"])
        sql = exact_sql(plan, types)
    check_final(sql, types)
    assert "QUALIFY ROW_NUMBER()" in sql and "getvariable('dpsql_secret_salt')" in sql and 'SUM(LEAST(' in sql
    resum = sql[sql.index("SUM(LEAST("):]
    resum = resum[:resum.index(" AS ")]
    tampered = [sql.replace(resum, resum.replace("SUM(", "SUM(2 * ", 1), 1),
                sql.replace(resum, f"SUM(CAST({resum[4:-1]} AS BIGINT))", 1),
                sql.replace("ROW_NUMBER()", "NTILE(2)", 1),
                sql.replace("getvariable('dpsql_secret_salt')", "getvariable('other')", 1)]
    assert_refused_by_the_final_check(sql, tampered, types)


# --- κ > 1: mixed public and private keys; Gaussian thresholding on the query path -----------------

GAUSS_KAPPA = 8  # at ε = 1, δ = 1e-6 the rule picks Gaussian thresholding from κ = 4
GAUSS = f"max_groups = {GAUSS_KAPPA}\nrow_threshold = {ROWS_T}"


def _cell_hashes(db: Path, salt: int) -> dict[tuple, int]:
    con = duckdb.connect(str(db), read_only=True)
    out = {(u, g, s): h for u, g, s, h in con.execute(
        f"SELECT pid, region, shop, HASH(pid, region, shop, {salt}) FROM (SELECT DISTINCT pid, region, shop FROM visits)"
    ).fetchall()}
    con.close()
    return out


def test_mixed_public_and_private_keys_with_kappa_three_equal_the_oracle(tmp_path):
    """GROUP BY region (public keyset), shop (private) with κ = 3: a unit keeps its 3 (region,
    shop) cells of smallest HASH(unit, region, shop, salt); every region is returned for each
    released shop, and each cell's values are the two-level oracle's, computed here."""
    r = random.Random(3)
    shops = ["s0", "s1", "s2"]
    rows = [(u, reg, 1, shops[u % 3]) for u in range(450) for reg in r.sample(REGIONS[:6], r.randint(1, 5))
            for _ in range(r.randint(1, 3))]
    rows += [(1000 + u, r.choice(REGIONS[:6]), 1, r.choice(shops)) for u in range(60) for _ in range(8)]  # across shops
    db, policy = _database(tmp_path, rows)
    answer, receipt = _answer(db, policy, "SELECT region, shop, COUNT(DISTINCT pid), COUNT(*) FROM visits "
                                          "GROUP BY region, shop ORDER BY region, shop")
    hashes = _cell_hashes(db, _salt(11))
    records: dict[tuple, int] = {}
    for u, g, _, s in rows:
        records[(u, g, s)] = records.get((u, g, s), 0) + 1
    kept: set[tuple] = set()
    for u in {k[0] for k in records}:
        cells = sorted((k for k in records if k[0] == u), key=lambda k: (hashes[k], k[1], k[2]))
        kept |= set(cells[:KAPPA])
    oracle = [(g, s, sum(1 for k in kept if k[1:] == (g, s)), sum(min(records[k], K * ROWS_T) for k in kept if k[1:] == (g, s)))
              for g in REGIONS for s in shops]
    assert answer == oracle
    assert receipt.selection["kappa_method"] == "optimal" and receipt.selection["released_groups"] == 3


def test_mixed_keys_select_on_distinct_units_per_private_group(tmp_path):
    """30 units, each in 3 regions of shop s9 (κ = 3 keeps all 3 cells): the selection counts 30
    distinct units, not 90 cells. π_opt at (ε/3, δ/3) keeps a group of 30 with probability
    0.0186 and one of 90 with probability 1 (paper 002 Theorem 1, evaluated here): over 20
    queries s9 is released at most 5 times (P ≈ 3e-6 for a correct release), while 300 units
    in one cell of s0 are always released."""
    from dpsql.privacy.pi_opt import release_probability

    p30, p90 = release_probability([30, 90], Fraction(1, KAPPA), Fraction(1, KAPPA * 10**6))
    assert p30 < 0.02 and p90 == 1.0
    rows = [(u, g, 1, "s9") for u in range(30) for g in "ABC"] + [(100 + u, "A", 1, "s0") for u in range(300)]
    db, policy = _database(tmp_path, rows)
    policy.write_text(policy.read_text().replace("total_rho = 1e15", "total_rho = 1e15\ntotal_delta = 0.001"))
    con = dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(4))  # each query its own draws
    cur = con.cursor()
    released = [{s for _, s, _ in cur.execute("SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop").fetchall()}
                for _ in range(20)]
    con.close()
    assert all("s0" in r for r in released)
    assert sum("s9" in r for r in released) <= 5


def _bw18_delta(sigma: float, eps: float, l2: float) -> float:
    """Balle & Wang 2018 Theorem 8's δ of N(0, σ²) at L2 sensitivity l2, with math.erf."""
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    return phi(l2 / (2 * sigma) - eps * sigma / l2) - math.exp(eps) * phi(-l2 / (2 * sigma) - eps * sigma / l2)


def _dgauss_tail(sigma2: Fraction, a: int) -> float:
    """P[Z ≥ a] for Z ~ N_Z(σ²), summed from its mass over ±(a + 50σ) (naive, in the test)."""
    s2 = float(sigma2)
    reach = abs(a) + int(50 * math.sqrt(s2)) + 5
    w = {x: math.exp(-x * x / (2 * s2)) for x in range(-reach, reach + 1)}
    return sum(v for x, v in w.items() if x >= a) / sum(w.values())


def test_gaussian_thresholding_runs_with_its_stated_parameters_and_charge(tmp_path):
    """κ = 8 at ε = 1, δ = 1e-6: the rule picks Gaussian thresholding (mid-point 67 against π_opt's
    106). The receipt and EXPLAIN state it; σ satisfies Balle-Wang's Theorem 8 at L2 sensitivity
    √κ and (ε, noise δ) and is not 1e-4 larger than needed; the threshold t is the smallest
    with P[Z ≥ t − 1] ≤ 1 − (1 − δ_thr)^(1/κ) (a new group has 1 unit); noise δ + δ_thr ≤ δ; the
    charge is the noise's ρ plus κ/(2σ²), and δ_thr — each recomputed here."""
    rows = [(u, "A", 1, f"s{u % 3}") for u in range(600)]
    db, policy = _database(tmp_path, rows, table=GAUSS)
    answer, receipt = _answer(db, policy, "SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop ORDER BY shop")
    sel = receipt.selection
    assert sel["kappa_method"] == "gaussian" and "per_group" not in sel
    assert [a[0] for a in answer] == ["s0", "s1", "s2"]
    sigma2, t = Fraction(sel["sigma2_exact"]), sel["threshold"]
    nd, td = float(sel["noise_delta"]), float(sel["threshold_delta"])
    sigma = math.sqrt(sigma2)
    assert Fraction(nd) + Fraction(td) <= Fraction(1, 10**6)
    assert _bw18_delta(sigma, 1.0, math.sqrt(GAUSS_KAPPA)) <= nd * (1 + 1e-9)
    assert _bw18_delta(sigma * (1 - 1e-4), 1.0, math.sqrt(GAUSS_KAPPA)) > nd
    p_max = 1 - (1 - td) ** (1 / GAUSS_KAPPA)
    assert _dgauss_tail(sigma2, t - 1) <= p_max < _dgauss_tail(sigma2, t - 2)
    noise_rho = sum((n.rho for n in receipt.noise), Fraction(0))
    rho_sel = Fraction(GAUSS_KAPPA) / (2 * sigma2)
    assert receipt.rho == noise_rho + rho_sel
    assert receipt.delta == Fraction(td)
    const, = receipt.policy_terms  # per unit: the count's ρ in each of ≤ κ groups, the selection's once
    assert Fraction(const["unit_bound_exact"]) == GAUSS_KAPPA * noise_rho + rho_sel
    assert Fraction(const["delta_exact"]) == Fraction(td)
    con = dpsql.connect(db, policy, _random_source=seeded_random(1))
    ex = con.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop")
    con.close()
    assert ex.selection["midpoint"] == t and "Gaussian thresholding" in " ".join(ex.notes)
    assert ex.rho == receipt.rho and ex.delta == receipt.delta


def test_gaussian_selection_rate_matches_the_discrete_gaussian_tail(tmp_path):
    """Groups of n units, n around the threshold t, released over 10 queries (seeded): the rate
    per n is P[n + Z ≥ t] = P[Z ≥ t − n] for the discrete Gaussian of the receipt's σ², summed
    here, within 5 standard errors (400 draws per n)."""
    con0 = dpsql.connect(*_database(tmp_path, [(0, "A", 1, "x")], table=GAUSS, name="probe"))
    t = con0.explain("SELECT shop, COUNT(*) FROM visits GROUP BY shop").selection["threshold"]
    con0.close()
    sizes = [t - 8, t - 3, t, t + 3, t + 8]
    db, policy = _database(tmp_path, [], table=GAUSS)
    raw = duckdb.connect(str(db))
    for k, n in enumerate(sizes):  # 40 groups of n units, one row each
        raw.execute(f"INSERT INTO visits SELECT {k * 10**6} + i * {n} + j, 'A', 1, 'n{n}_' || i "
                    f"FROM range(40) a(i), range({n}) b(j)")
    raw.close()
    con = dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(8))  # each query its own draws
    cur = con.cursor()
    kept = {n: 0 for n in sizes}
    for _ in range(10):
        for (shop, _) in cur.execute("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop").fetchall():
            kept[int(shop[1:shop.index("_")])] += 1
        sigma2 = Fraction(cur.receipt.selection["sigma2_exact"])
    con.close()
    for n in sizes:
        p = _dgauss_tail(sigma2, t - n)
        assert abs(kept[n] / 400 - p) <= 5 * math.sqrt(p * (1 - p) / 400), (n, kept[n], p)


def test_neighbours_with_a_unit_in_1e5_groups_keep_the_outcome_kind_under_gaussian_thresholding(tmp_path):
    """κ = 8, Gaussian thresholding: a unit in 10⁵ groups of a private key, a unit with 10⁵ rows
    and huge amounts, NULL units; removing either whole unit keeps the outcome's kind (answered,
    same columns, the same three groups released), by private keys alone and mixed with a public one."""
    base = ("SELECT u, 'A', 1, 's' || (u % 3) FROM range(900) t(u)",
            "SELECT NULL, 'A', 10, 's0' FROM range(1000)")
    heavy = f"SELECT {HEAVY}, 'B', {HUGE}, 's0' FROM range(100000)"
    wide = f"SELECT {HEAVY + 1}, 'C', 1, 'z' || g FROM range(100000) t(g)"
    queries = ("SELECT shop, COUNT(*), COUNT(DISTINCT pid), SUM(amount) FROM visits GROUP BY shop",
               "SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop")
    outcomes = []
    for name, parts in (("all", (*base, heavy, wide)), ("no_heavy", (*base, wide)), ("no_wide", (*base, heavy))):
        db, policy = _database(tmp_path, [], table=GAUSS, name=name)
        con = duckdb.connect(str(db))
        for part in parts:
            con.execute(f"INSERT INTO visits {part}")
        con.close()
        kinds = []
        for q in queries:
            answer, receipt = _answer(db, policy, q)
            assert receipt.selection["kappa_method"] == "gaussian"
            shop = 0 if q.startswith("SELECT shop") else 1
            kinds.append((sorted({r[shop] for r in answer}), len(answer), len(answer[0])))
        outcomes.append(kinds)
    assert outcomes[0] == outcomes[1] == outcomes[2] == [(["s0", "s1", "s2"], 3, 4), (["s0", "s1", "s2"], 30, 3)]


def test_the_mixed_key_rank_passes_the_final_check_and_tampered_forms_do_not(tmp_path):
    """The rank of mixed public/private keys (``__first``: ROW_NUMBER() OVER (PARTITION BY unit,
    private keys ORDER BY public keys)) and the count of first-ranked records pass the final
    totality check; another window function, a window frame, a partition expression that can fail,
    or arithmetic on the rank do not (DP122)."""
    from dpsql.sql.final_check import check_final
    from dpsql.sql.rewrite import exact_sql

    db, policy = _database(tmp_path, [(1, "A", 5, "a"), (1, "B", 7, "a"), (2, "A", 3, "b")])
    with dpsql.connect(db, policy) as con:
        s = con.session
        plan = s.plan("SELECT region, shop, COUNT(DISTINCT pid) FROM visits GROUP BY region, shop")
        types = dict(s.schema["visits"])
        sql = exact_sql(plan, types)
    check_final(sql, types)
    rank = 'ROW_NUMBER() OVER (PARTITION BY __unit, "shop" ORDER BY "region")'
    count = "SUM(CASE WHEN __r = 1 THEN 1 ELSE 0 END)"
    assert rank in sql and count in sql
    tampered = [sql.replace(rank, 'SUM(__unit) OVER (PARTITION BY __unit, "shop" ORDER BY "region")', 1),
                sql.replace(rank, rank[:-1] + " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)", 1),
                sql.replace(rank, 'ROW_NUMBER() OVER (PARTITION BY __unit, "shop" || \'x\' ORDER BY "region")', 1),
                sql.replace(count, "SUM(CASE WHEN __r = 1 THEN __r * 4611686018427387904 ELSE 0 END)", 1)]
    assert_refused_by_the_final_check(sql, tampered, types)


def test_optimal_selection_rate_with_kappa_three_matches_theorem_1(tmp_path):
    """κ = 3 (the rule keeps π_opt): groups of n units around the mid-point, released over 10
    seeded queries, 400 draws per n; the rate is π_opt(n) at (ε/3, δ/3) (Theorem 1's closed
    form, written here) within 5 standard errors — and far from π_opt(n) at (ε, δ) (≈ 1)."""
    sizes = [33, 38, 42, 48]
    db, policy = _database(tmp_path, [])
    policy.write_text(policy.read_text().replace("total_rho = 1e15", "total_rho = 1e15\ntotal_delta = 0.001"))
    raw = duckdb.connect(str(db))
    for k, n in enumerate(sizes):
        raw.execute(f"INSERT INTO visits SELECT {k * 10**6} + i * {n} + j, 'A', 1, 'n{n}_' || i "
                    f"FROM range(40) a(i), range({n}) b(j)")
    raw.close()
    con = dpsql.connect(db, policy, reuse=False, _random_source=seeded_random(12))  # each query its own draws
    cur = con.cursor()
    kept = {n: 0 for n in sizes}
    for _ in range(10):
        for (shop, _) in cur.execute("SELECT shop, COUNT(DISTINCT pid) FROM visits GROUP BY shop").fetchall():
            kept[int(shop[1:shop.index("_")])] += 1
        assert cur.receipt.selection["kappa_method"] == "optimal"
    con.close()
    for n in sizes:
        p = pi_theorem1(n, 1 / KAPPA, 1e-6 / KAPPA)
        assert abs(kept[n] / 400 - p) <= 5 * math.sqrt(p * (1 - p) / 400) + 1e-9, (n, kept[n], p)
        assert pi_theorem1(n, 1.0, 1e-6) > 0.999999


def test_groups_without_aggregates(tmp_path):
    """Issue 32 on a table with many rows per unit: a public key's groups are its keyset, free
    (no query runs, nothing is recorded); a private key's are partition selection's at (ε/κ, δ/κ)
    per group, charged the selection's ε²/2 = 1/2 (ε = 1 in POLICY) and its δ, nothing else."""
    shops = [f"s{i}" for i in range(5)]
    rows = [(u, shops[u % 5], None, shops[u % 5]) for u in range(500) for _ in range(2)]
    db, policy = _database(tmp_path, rows)
    con = dpsql.connect(db, policy, _random_source=seeded_random(2))
    try:
        cur = con.execute("SELECT DISTINCT region FROM visits ORDER BY region")
        assert [r[0] for r in cur.fetchall()] == REGIONS and cur.receipt.rho == 0 and cur.receipt.charge_id is None
        assert con.session.ledger.charges == []
        cur = con.execute("SELECT shop FROM visits GROUP BY shop ORDER BY shop")
        assert [r[0] for r in cur.fetchall()] == shops  # 100 units each: kept with probability 1 at (1/3, 1e-6/3)
        assert cur.receipt.rho == Fraction(1, 2) and cur.receipt.noise == ()
        [charge] = con.session.ledger.charges
        assert charge.rho == Fraction(1, 2) and charge.delta == Fraction(1, 10**6)  # the default selection.delta
    finally:
        con.close()
