"""Error bars on everything shown (issue 33): derived columns and quantile rank intervals
(dpsql/sql/derived.py, dpsql/pipeline/propagate.py; docs/privacy.md, "Derived columns").

A generated DuckDB table of GROUPS groups × PER_GROUP units, two measures a and b within their
thresholds (so a group's SUM over split records is its plain SUM), and a few groups built to be
hard: ``z*`` whose b is 0 (a denominator at 0) and ``s*`` of three units (a quantile's rank
error wider than the group). Truths are computed here from the rows (DuckDB on the file, plain
Python), never by dpsql. Statistical tests are seeded and state their tolerance.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random

GROUPS, PER_GROUP, T = 1000, 100, 100
HARD = ["z0", "z1", "z2", "s0", "s1", "s2"]

POLICY = """
[budget]
default_rho = {rho}
total_rho = 1e15
[tables.t]
privacy_unit = "id"
[tables.t.measures]
a = {{ threshold = {t}, range = [0, {t}] }}
b = {{ threshold = {t} }}
[tables.t.keys]
g = {{ keyset = [{keys}] }}
"""


def _database(tmp_path: Path, rho: str = "0.05") -> tuple[Path, Path]:
    db, policy = tmp_path / "d.duckdb", tmp_path / "d.policy.toml"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t AS SELECT i AS id, printf('g%04d', i % {GROUPS}) AS g, "
                f"CAST(HASH(i, 'a') % {T + 1} AS BIGINT) AS a, CAST(HASH(i, 'b') % {T + 1} AS BIGINT) AS b "
                f"FROM range({GROUPS * PER_GROUP}) r(i)")
    base = GROUPS * PER_GROUP
    # z*: 100 units whose b is 0; s*: 3 units
    con.execute(f"INSERT INTO t SELECT {base} + i, 'z' || (i % 3), 50, 0 FROM range(300) r(i)")
    con.execute(f"INSERT INTO t SELECT {base} + 300 + i, 's' || (i % 3), i, 1 FROM range(9) r(i)")
    con.execute("ALTER TABLE t ALTER COLUMN g SET NOT NULL")  # no NULL group (tests/test_null_keys.py)
    con.close()
    keys = ", ".join(f'"{k}"' for k in [f"g{i:04d}" for i in range(GROUPS)] + HARD)
    policy.write_text(POLICY.format(rho=rho, t=T, keys=keys))
    return db, policy


def _truth(db: Path, sql: str) -> dict[str, tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0]: r[1:] for r in con.execute(sql).fetchall()}
    finally:
        con.close()


DERIVED = ("SELECT g, SUM(a) / SUM(b) AS ratio, 100.0 * COUNT(*) / SUM(b) AS pct, SUM(a) - SUM(b) AS diff, "
           "AVG(a) * 2 AS twice_avg, ROUND(SUM(a) / SUM(b), 2) AS rounded, SUM(a) AS sa, SUM(b) AS sb, AVG(a) AS avg_a "
           "FROM t GROUP BY g")
TRUE_DERIVED = ("SELECT g, SUM(a) / SUM(b), 100.0 * COUNT(*) / SUM(b), SUM(a) - SUM(b), AVG(a) * 2, SUM(a) / SUM(b) "
                "FROM t GROUP BY g")


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    """One seeded release of DERIVED with error columns (GROUPS + 6 independent cells each)."""
    tmp = tmp_path_factory.mktemp("derived")
    db, policy = _database(tmp)
    with dpsql.connect(db, policy, error_columns="all", _random_source=seeded_random(11)) as con:
        cur = con.execute(DERIVED)
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        receipt = cur.receipt
    return db, names, rows, receipt, _truth(db, TRUE_DERIVED)


def test_derived_columns_carry_error_columns(derived):
    _, names, _, receipt, _ = derived
    for col in ("ratio", "pct", "diff", "twice_avg", "rounded"):  # after all the columns asked for
        assert names[names.index(f"{col}_moe95"): names.index(f"{col}_moe95") + 2] == [f"{col}_moe95", f"{col}_sigma"]
        assert names.index(f"{col}_moe95") > max(names.index(c) for c in ("ratio", "pct", "diff", "twice_avg", "rounded"))
        assert receipt.columns[col].note.startswith("approximate (delta method")


def test_linear_forms_have_their_closed_form_error(derived):
    """SUM(a) − SUM(b): σ = √(σ_a² + σ_b²) exactly (independent noise); AVG(a) * 2: twice AVG's σ
    and MOE; ROUND(x, 2): x's σ (the ± of the value before rounding)."""
    _, _, rows, _, _ = derived
    for r in rows:
        assert r["diff_sigma"] == pytest.approx(math.hypot(r["sa_sigma"], r["sb_sigma"]), rel=1e-12)
        assert r["diff_moe95"] == pytest.approx(1.96 * r["diff_sigma"], rel=1e-12)
        if r["avg_a_sigma"] is not None:
            assert r["twice_avg_sigma"] == pytest.approx(2 * r["avg_a_sigma"], rel=1e-12)
            assert r["twice_avg_moe95"] == pytest.approx(2 * r["avg_a_moe95"], rel=1e-12)
        assert r["rounded_sigma"] == r["ratio_sigma"]


def test_ratio_sigma_is_the_delta_method_at_the_noisy_values(derived):
    """σ(S_a / S_b) = √(σ_a² + (S_a/S_b)² σ_b²) / |S_b|, written here from the row's own columns."""
    _, _, rows, _, _ = derived
    checked = 0
    for r in rows:
        if r["ratio_sigma"] is None:
            continue
        sa, sb = r["sa"], r["sb"]
        assert r["ratio_sigma"] == pytest.approx(math.sqrt(r["sa_sigma"] ** 2 + (sa / sb) ** 2 * r["sb_sigma"] ** 2) / abs(sb),
                                                 rel=1e-9)
        checked += 1
    assert checked >= GROUPS


def test_the_95_percent_margin_covers_the_true_ratio(derived):
    """Over GROUPS independent cells (median relative error of SUM(b) 13%), each derived column's
    stated 95% MOE covers the true value (computed from the rows) in 92%–98% of cells: the
    binomial sd at 1,000 is 0.69%, so that is ±4.3 sd (measured with this seed: 94.5%, 94.3%,
    93.3%, 94.9%). Leaving the denominator's noise out of the ratio's ± covers about 83%."""
    _, _, rows, _, truth = derived
    for j, col in enumerate(("ratio", "pct", "diff", "twice_avg")):
        covered = n = 0
        for r in rows:
            if not r["g"].startswith("g"):
                continue
            n += 1
            moe = r[f"{col}_moe95"]
            covered += moe is not None and abs(r[col] - float(truth[r["g"]][j])) <= moe
        assert n == GROUPS
        assert 0.92 <= covered / n <= 0.98, (col, covered / n)


def test_a_denominator_near_zero_is_flagged_not_given_a_tiny_margin(derived):
    """Exactly the rows whose noisy SUM(b) lies within its own 95% MOE of 0 have no ± for the
    ratios over it (NULL), and the receipt says how many: here the z* groups (b = 0) at least."""
    _, _, rows, receipt, _ = derived
    near = {r["g"] for r in rows if abs(r["sb"]) <= r["sb_moe95"]}
    assert {"z0", "z1", "z2"} <= near
    for col in ("ratio", "pct", "rounded"):
        assert {r["g"] for r in rows if r[f"{col}_moe95"] is None} == near, col
        assert {r["g"] for r in rows if r[f"{col}_sigma"] is None} == near, col
    shown = {r["g"] for r in rows if r["sb"] != 0} & near  # a divisor of exactly 0 gives no value at all
    assert any(f"ratio: no ± in {len(shown)} row" in n and "95% margin of 0" in n for n in receipt.notes)
    assert receipt.columns["ratio"].flagged == len(shown)


def test_derived_errors_follow_having_order_and_limit(tmp_path):
    """The ± of a derived column follows its row through ORDER BY / LIMIT (looked up by row):
    the same cells drawn with the same seed, with and without them."""
    db, policy = _database(tmp_path)
    sql = "SELECT g, SUM(a) / SUM(b) AS ratio FROM t GROUP BY g"
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(5)) as con:
        plain = {r[0]: r for r in con.execute(sql).fetchall()}
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(5)) as con:
        sorted_rows = con.execute(sql + " HAVING SUM(b) > 100 ORDER BY ratio DESC LIMIT 50").fetchall()
    assert len(sorted_rows) == 50
    for r in sorted_rows:
        assert r == plain[r[0]]


def test_describe_names_the_derived_and_rank_columns(tmp_path):
    db, policy = _database(tmp_path)
    sql = "SELECT g, SUM(a) / SUM(b) AS ratio, MEDIAN(a) AS med, COUNT(a) AS n FROM t GROUP BY g"
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(6)) as con:
        names, types = con.session.describe(sql)
        cur = con.execute(sql)
        assert names == [d[0] for d in cur.description] and types == [d[1] for d in cur.description]
    assert names == ["g", "ratio", "med", "n", "ratio_moe95", "med_moe95", "med_rank_lo", "med_rank_hi", "n_moe95"]


def test_quantile_rank_interval(tmp_path):
    """With COUNT(a) in the query, a quantile row carries [rank_lo, rank_hi]: q ∓ r/n, n the noisy
    count less its MOE, clipped to [0, 1] (written here from the receipt's rank_error95 and the
    count's columns). The released value's share of the group's values lies within it (up to the
    grid's spacing and ties: its share below and at-or-below bracket it) in at least 95% of the
    large groups; the three-unit groups' intervals are [0, 1], and the receipt says so."""
    db, policy = _database(tmp_path, rho="0.5")
    values: dict[str, list[int]] = {}
    con = duckdb.connect(str(db), read_only=True)
    for g, a in con.execute("SELECT g, a FROM t").fetchall():
        values.setdefault(g, []).append(a)
    con.close()
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(8)) as con:
        cur = con.execute("SELECT g, MEDIAN(a) AS med, COUNT(a) AS n FROM t GROUP BY g")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        receipt = cur.receipt
    r95 = next(t.rank_error95 for t in receipt.noise if t.rank_error95 is not None)
    covered = big = 0
    for r in rows:
        n = r["n"] - r["n_moe95"]
        width = r95 / n if n > 0 else math.inf
        assert r["med_rank_lo"] == pytest.approx(max(0.0, 0.5 - width), abs=1e-12)
        assert r["med_rank_hi"] == pytest.approx(min(1.0, 0.5 + width), abs=1e-12)
        xs = values[r["g"]]
        if r["g"].startswith("g"):
            big += 1
            below = sum(x < r["med"] for x in xs) / len(xs)
            at_most = sum(x <= r["med"] for x in xs) / len(xs)
            covered += at_most >= r["med_rank_lo"] and below <= r["med_rank_hi"]
    assert big == GROUPS and covered / big >= 0.95, covered / big
    small = [r for r in rows if r["g"].startswith("s")]
    assert all((r["med_rank_lo"], r["med_rank_hi"]) == (0.0, 1.0) for r in small)
    whole = sum(1 for r in rows if (r["med_rank_lo"], r["med_rank_hi"]) == (0.0, 1.0))
    assert whole >= 3 and receipt.columns["med"].flagged == whole
    assert any(n.startswith(f"med: in {whole} row") and "as large as the group" in n for n in receipt.notes)


def test_quantile_without_its_count_has_a_null_interval_and_says_why(tmp_path):
    db, policy = _database(tmp_path)
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(9)) as con:
        cur = con.execute("SELECT g, MEDIAN(a) AS med, COUNT(b) AS nb FROM t WHERE g LIKE 's%' GROUP BY g")
        rows = cur.fetchall()
        note = cur.receipt.columns["med"].note
    assert [d[0] for d in cur.description][3:7] == ["med_moe95", "med_rank_lo", "med_rank_hi", "nb_moe95"]
    assert all(r[4] is None and r[5] is None for r in rows)
    assert "no COUNT(a)" in note


def test_derived_error_columns_through_a_real_server(start_server, tmp_path):
    """psycopg against a real dpsql serve: the ratio's ± travels in the rows, NULL where its
    denominator is within its margin of 0, and it costs nothing beyond the query's charge."""
    import psycopg

    db, policy = _database(tmp_path)
    srv = start_server(users=("dana",), policy=policy, database=db)
    with psycopg.connect(srv.dsn("dana"), autocommit=True) as conn:
        conn.execute("SET dpsql.error_columns = on")
        cur = conn.execute("SELECT g, SUM(a) / SUM(b) AS ratio, SUM(b) AS sb FROM t GROUP BY g ORDER BY g")
        names = [d.name for d in cur.description]
        rows = cur.fetchall()
    assert names == ["g", "ratio", "sb", "ratio_moe95", "sb_moe95"]
    assert len(rows) == GROUPS + len(HARD)
    for g, ratio, sb, moe, sb_moe in rows:
        if abs(sb) <= sb_moe:
            assert moe is None, g
        else:
            assert moe is not None and moe > 0, g
    assert any(r[3] is None for r in rows if r[0].startswith("z"))
    assert srv.spent("dana") == Fraction(1, 20)


def test_row_by_row_and_array_propagation_agree():
    """A small answer's lists are propagated row by row in Python floats (no numpy: it is released
    without it), a large one's in numpy arrays: the same operations, so the same σ, MOE and flags,
    on values that reach every branch (a divisor at 0, near 0, NULL, a count below 1, ±)."""
    import random

    from dpsql.pipeline.propagate import derived_errors

    rng = random.Random(3)
    n = 400
    cols = {"__p0": [rng.choice([None, 0, rng.randint(-50, 50), rng.uniform(-1e4, 1e4)]) for _ in range(n)],
            "__p1": [rng.choice([0, 1, -1, rng.randint(-20, 20), rng.uniform(-300, 300)]) for _ in range(n)],
            "__p2": [rng.uniform(-5, 5) for _ in range(n)], "k": [rng.choice([2, 3.5, None, "x"]) for _ in range(n)]}
    for i in range(3):
        cols[f"__s{i}"] = [rng.uniform(0.5, 9) for _ in range(n)]
        cols[f"__m{i}"] = [1.96 * s for s in cols[f"__s{i}"]]
    forms = [("/", ("p", 0), ("p", 1)), ("avg", 0, 1), ("*", ("c", 100.0), ("/", ("p", 1), ("+", ("p", 0), ("p", 2)))),
             ("-", ("abs", ("p", 0)), ("neg", ("same", ("p", 2)))), ("*", ("k", "k"), ("/", ("p", 2), ("k", "k"))),
             ("/", ("p", 0), ("-", ("p", 1), ("p", 1)))]
    for form in forms:
        by_rows = derived_errors(form, cols.__getitem__, n, arrays=False)
        by_arrays = derived_errors(form, cols.__getitem__, n, arrays=True)
        assert by_rows[2] == by_arrays[2], form
        for a, b in zip(by_rows[:2], by_arrays[:2]):
            assert [x is None for x in a] == [x is None for x in b], form
            assert [x for x in a if x is not None] == pytest.approx([x for x in b if x is not None], rel=1e-12), form
    flagged = derived_errors(forms[0], cols.__getitem__, n, arrays=False)[2]
    assert 0 < flagged < n


MANY_POLICY = """
[budget]
default_rho = 0.5
total_rho = 1e15
[tables.visits]
privacy_unit = "pid"
max_groups = 1
row_threshold = 3
quantile_rows = 4
[tables.visits.measures]
amount = { threshold = 50, range = [0, 200] }
[tables.visits.keys]
region = { keyset = ["A", "B", "C"] }
"""


@pytest.mark.parametrize("not_null", [True, False], ids=["not-null", "nullable"])
def test_many_rows_quantile_interval_uses_the_count_of_units_when_it_is_a_lower_bound(tmp_path, not_null):
    """Many rows per unit: a kept unit adds 1 to quantile_rows values of a NOT NULL measure, so its
    COUNT(DISTINCT pid) stands for n (q ∓ r/(n − MOE), written here); a measure that may be NULL
    has no count bounding its values from below: NULL, and the column note says so."""
    db, policy = tmp_path / "v.duckdb", tmp_path / "v.policy.toml"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE visits(pid INTEGER, region VARCHAR NOT NULL, amount BIGINT {'NOT NULL' if not_null else ''})")
    con.execute("INSERT INTO visits SELECT i // 5, ['A', 'B', 'C'][1 + (i // 5) % 3], i % 200 FROM range(3000) r(i)")
    con.execute("INSERT INTO visits VALUES (9000, 'C', 7)")
    con.close()
    policy.write_text(MANY_POLICY)
    with dpsql.connect(db, policy, error_columns="on", _random_source=seeded_random(12)) as c:
        cur = c.execute("SELECT region, MEDIAN(amount) AS med, COUNT(DISTINCT pid) AS n FROM visits GROUP BY region")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        receipt = cur.receipt
    assert names == ["region", "med", "n", "med_moe95", "med_rank_lo", "med_rank_hi", "n_moe95"]
    r95 = next(t.rank_error95 for t in receipt.noise if t.rank_error95 is not None)
    for r in rows:
        if not_null:
            width = r95 / (r["n"] - r["n_moe95"])
            assert (r["med_rank_lo"], r["med_rank_hi"]) == pytest.approx((max(0, 0.5 - width), min(1, 0.5 + width)))
            assert 0 < r["med_rank_lo"] < 0.5 < r["med_rank_hi"] < 1  # 200 units a group: informative
        else:
            assert r["med_rank_lo"] is None and r["med_rank_hi"] is None
    if not not_null:
        assert "COUNT(DISTINCT pid)" in receipt.columns["med"].note
