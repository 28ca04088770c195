"""Private tables that share the privacy unit (issue 31; docs/privacy.md "Private tables that
share the unit"; dpsql/sql/scopes.py ``add_unit_join``, dpsql/policy/model.py ``joined_table``).

``flights`` (many rows per aircraft, max_groups) joined to ``planes`` (one row per aircraft, or
many) on their privacy units. The oracle is computed here, in plain Python, from the rows: the
inner join on equal, non-NULL units, then the two-level aggregate of tests/test_many_rows.py —
per (unit, group) totals, each unit's κ groups of smallest keyed hash (DuckDB's HASH of (unit,
key, salt), read from the file by a plain query, with the salt the seeded source draws first),
top-coding at max_splits · T. dpsql runs with a huge ρ, so its noise is zero with overwhelming
probability and its answers are the exact values.
"""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.testing import seeded_random
import table_rows

MAKERS = ["AIRBUS", "BOEING", "EMBRAER"]  # the keyset of planes.manufacturer
ORIGINS = ["EWR", "JFK", "LGA"]
KAPPA, R, K, T_DELAY, T_SEATS = 2, 3, 4, 20, 100  # flights: max_groups, row_threshold, max_splits; thresholds

POLICY = """
[budget]
default_rho = 1e12
total_rho = 1e15
[tables.flights]
privacy_unit = "tailnum"
max_groups = {kappa}
row_threshold = {r}
max_splits = {k}
[tables.flights.measures]
dep_delay = {{ threshold = {t_delay} }}
[tables.flights.keys]
origin = {{ keyset = {origins}, null = false }}
[tables.planes]
privacy_unit = "tailnum"
{planes}
[tables.planes.measures]
seats = {{ threshold = {t_seats} }}
[tables.planes.keys]
manufacturer = {{ keyset = {makers}, null = false }}
[tables.engines]
privacy_unit = "tailnum"
"""
#: planes declared with many rows per unit too: the join keeps the smallest κ and R of the two
PLANES_MANY = "max_groups = 3\nrow_threshold = 2"


def _policy(path: Path, planes: str = "") -> Path:
    path.write_text(POLICY.format(kappa=KAPPA, r=R, k=K, t_delay=T_DELAY, t_seats=T_SEATS, origins=ORIGINS,
                                  makers=MAKERS, planes=planes))
    return path


def _database(tmp_path: Path, flights: list[tuple], planes: list[tuple], name: str = "f",
              unit_types: tuple[str, str] = ("VARCHAR", "VARCHAR"), planes_policy: str = "") -> tuple[Path, Path]:
    db = tmp_path / f"{name}.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE flights(tailnum {unit_types[0]}, origin VARCHAR, dep_delay BIGINT)")
    con.execute(f"CREATE TABLE planes(tailnum {unit_types[1]}, manufacturer VARCHAR, seats INTEGER, model VARCHAR)")
    con.execute(f"CREATE TABLE engines(tailnum {unit_types[1]}, thrust INTEGER)")
    if flights:
        table_rows.insert(con, "flights", flights)
    if planes:
        table_rows.insert(con, "planes", planes)
    con.close()
    return db, _policy(tmp_path / f"{name}.policy.toml", planes_policy)


def _fleet(seed: int = 5, planes_many: bool = False) -> tuple[list[tuple], list[tuple]]:
    """Aircraft with a few flights each, one heavy aircraft in every origin, flights and planes
    whose unit is NULL, planes outside the keyset or without a maker, flights of no plane."""
    r = random.Random(seed)
    flights, planes = [], []
    for i in range(60):
        unit = f"N{i}"
        maker = MAKERS[i % 3] if i % 11 else ("CESSNA" if i % 2 else None)
        for _ in range(2 if planes_many and i % 4 == 0 else 1):
            planes.append((unit, maker, r.choice([None, 50, 150, 400]), f"m{i % 5}"))
        for _ in range(r.randint(0, 9)):
            flights.append((unit, r.choice(ORIGINS), None if r.random() < 0.1 else r.randint(-30, 90)))
    flights += [("HEAVY", o, 500) for o in ORIGINS for _ in range(30)]
    planes += [("HEAVY", "BOEING", 300, "m0")] * (3 if planes_many else 1)
    flights += [(None, "JFK", 10**6)] * 4 + [("GHOST", "JFK", 7)] * 3  # no unit; no plane
    if planes_many:
        planes += [(None, "AIRBUS", 10**6, "m1")] * 2
    return flights, planes


def _salt(seed: int) -> int:
    """The salt a fresh connection on ``seeded_random(seed)`` draws for its first query."""
    return int(seeded_random(seed).bits63(1)[0])


def _hashes(db: Path, salt: int, key: str) -> dict[tuple, int]:
    con = duckdb.connect(str(db), read_only=True)
    out = {(u, g): h for u, g, h in con.execute(
        f"SELECT DISTINCT f.tailnum, {key}, HASH(f.tailnum, {key}, {salt}) "
        "FROM flights f JOIN planes p ON f.tailnum = p.tailnum").fetchall()}
    con.close()
    return out


def _oracle(flights, planes, key, keyset, hashes, kappa=KAPPA, r=R):
    """Per group of ``keyset``: (rows, units, SUM(dep_delay), SUM(seats)) of the joined rows after
    bounding and top-coding. ``key(flight, plane)`` is the row's group."""
    records: dict[tuple, list[int]] = {}
    for f in flights:
        for p in planes:
            if f[0] is None or p[0] is None or f[0] != p[0]:
                continue
            g = key(f, p)
            if g not in keyset:  # a group the public keyset cannot release uses up none of κ
                continue
            rec = records.setdefault((f[0], g), [0, 0, 0])
            rec[0] += 1
            rec[1] += f[2] or 0
            rec[2] += p[2] or 0
    kept = set()
    for u in {u for u, _ in records}:
        groups = sorted((g for uu, g in records if uu == u), key=lambda g: (hashes[(u, g)], g))
        kept |= {(u, g) for g in groups[:kappa]}
    out = {}
    for g in keyset:
        cells = [v for (u, gg), v in records.items() if gg == g and (u, gg) in kept]
        out[g] = (sum(min(n, K * r) for n, _, _ in cells), len(cells),
                  sum(max(-K * T_DELAY, min(d, K * T_DELAY)) for _, d, _ in cells),
                  sum(max(-K * T_SEATS, min(s, K * T_SEATS)) for _, _, s in cells))
    return out


def _answer(db: Path, policy: Path, sql: str, seed: int = 11):
    con = dpsql.connect(db, policy, _random_source=seeded_random(seed))
    try:
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall()
    finally:
        con.close()


BY_MAKER = ("SELECT p.manufacturer, COUNT(*), COUNT(DISTINCT f.tailnum), SUM(f.dep_delay), SUM(p.seats) "
            "FROM flights f JOIN planes p ON f.tailnum = p.tailnum {where}GROUP BY p.manufacturer ORDER BY 1")
BY_ORIGIN = ("SELECT origin, COUNT(*), COUNT(DISTINCT tailnum), SUM(dep_delay), SUM(seats) "
             "FROM flights JOIN planes USING (tailnum) {where}GROUP BY origin ORDER BY 1")


@pytest.mark.parametrize("planes_many", [False, True])
@pytest.mark.parametrize("query, key, keyset, column", [
    (BY_MAKER, lambda f, p: p[1], MAKERS, "p.manufacturer"),
    (BY_ORIGIN, lambda f, p: f[1], ORIGINS, "f.origin")])
def test_answers_equal_the_joined_two_level_oracle(tmp_path, planes_many, query, key, keyset, column):
    """Keys and measures from either table; with planes one row per unit the join keeps
    flights' κ and R, with planes many rows per unit too (rows multiply) the smaller of each."""
    flights, planes = _fleet(planes_many=planes_many)
    db, policy = _database(tmp_path, flights, planes, planes_policy=PLANES_MANY if planes_many else "")
    answer = _answer(db, policy, query.format(where=""))
    oracle = _oracle(flights, planes, key, keyset, _hashes(db, _salt(11), column), r=2 if planes_many else R)
    assert [row[0] for row in answer] == sorted(keyset)
    assert {row[0]: tuple(row[1:]) for row in answer} == oracle
    assert sum(o[1] for o in oracle.values()) > 40  # the data reach every group: the comparison means something


def test_where_on_the_joined_table_and_unjoined_flights_dropped(tmp_path):
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    answer = _answer(db, policy, BY_ORIGIN.format(where="WHERE seats > 100 "))
    kept = [p for p in planes if p[2] is not None and p[2] > 100]
    oracle = _oracle(flights, kept, lambda f, p: f[1], ORIGINS, _hashes(db, _salt(11), "f.origin"))
    assert {row[0]: tuple(row[1:]) for row in answer} == oracle


def test_exact_and_reference_sql_agree_and_explain_names_the_join(tmp_path):
    from dpsql.sql.units import SALT

    flights, planes = _fleet(planes_many=True)
    db, policy = _database(tmp_path, flights, planes, planes_policy=PLANES_MANY)
    with dpsql.connect(db, policy, _random_source=seeded_random(1)) as con:
        ex = con.explain(BY_MAKER.format(where=""))
        text = str(con.cursor().execute("EXPLAIN " + BY_MAKER.format(where="")).fetchall())
    assert "joined private table: planes on the privacy units" in text and "joined public tables" not in text
    raw = duckdb.connect(str(db), read_only=True)
    for salt in (0, 4242):
        exact = sorted(raw.execute(ex.exact_sql.replace(SALT, str(salt))).fetchall())
        reference = sorted(raw.execute(ex.reference_sql.replace(SALT, str(salt))).fetchall())
        assert exact == reference and len(exact) == 3
    raw.close()


def _diff(a: list[tuple], b: list[tuple]) -> list[tuple]:
    return [tuple(x - y for x, y in zip(ra[1:], rb[1:])) for ra, rb in zip(a, b) if ra[1:] != rb[1:]]


@pytest.mark.parametrize("drop_from", ["both", "flights", "planes"])
def test_neighbours_differing_by_one_whole_unit(tmp_path, drop_from):
    """D and D without one aircraft — from both tables (the same unit), or from one of them —
    answer with the same shape, differ in at most κ groups, and by at most what one unit may
    contribute to a group: K·R rows, one unit, K·T of each measure. Both tables hold many rows
    per unit (rows multiply in the join) and NULL units."""
    flights, planes = _fleet(planes_many=True)
    queries = [BY_MAKER.format(where=""), BY_ORIGIN.format(where=""),
               "SELECT COUNT(*), SUM(seats) FROM flights JOIN planes USING (tailnum)"]
    r = 2  # the smaller row_threshold of the two
    for unit in ("HEAVY", "N12"):
        fl = [f for f in flights if f[0] != unit] if drop_from in ("both", "flights") else flights
        pl = [p for p in planes if p[0] != unit] if drop_from in ("both", "planes") else planes
        db0, p0 = _database(tmp_path, flights, planes, name=f"a{unit}", planes_policy=PLANES_MANY)
        db1, p1 = _database(tmp_path, fl, pl, name=f"b{unit}", planes_policy=PLANES_MANY)
        for q in queries:
            a, b = _answer(db0, p0, q), _answer(db1, p1, q)
            assert [len(row) for row in a] == [len(row) for row in b] and [row[:1] for row in a if len(row) == 5] == \
                [row[:1] for row in b if len(row) == 5]
            if len(a[0]) == 2:  # no GROUP BY: rows and seats
                a, b = [("",) + a[0]], [("",) + b[0]]
            changed = _diff(a, b)
            assert len(changed) <= KAPPA
            for d in changed:
                if len(d) == 4:
                    rows, units, delay, seats = d
                    assert 0 <= units <= 1 and abs(delay) <= K * T_DELAY
                else:
                    rows, seats = d
                assert 0 <= rows <= K * r and abs(seats) <= K * T_SEATS
        if unit == "HEAVY":
            assert _diff(_answer(db0, p0, queries[0]), _answer(db1, p1, queries[0]))  # the heavy unit is seen


@pytest.mark.parametrize("types, units", [
    (("DECIMAL(10,2)", "DECIMAL(18,4)"), ([Decimal("1.50"), Decimal("2"), Decimal("99999999.99")],
                                          [Decimal("1.5"), Decimal("2.0001"), Decimal("99999999.99")])),
    (("BIGINT", "DECIMAL(38,31)"), ([1, 2, 10**15], [Decimal(1), Decimal("2.5"), Decimal("3")])),
    (("INTEGER", "HUGEINT"), ([1, 2, -7], [1, 2**100, -7])),
    (("UBIGINT", "BIGINT"), ([1, 2**64 - 1, 3], [1, -1, 3])),
])
def test_unit_columns_of_different_numeric_types_join_exactly_and_totally(tmp_path, types, units):
    """Hostile schemas: the unit columns differ in type. The join compares values exactly
    (``rewrite.join_on_sql``: a common type that holds both, or TRY_CAST to one wide DECIMAL or
    HUGEINT); a value one side cannot hold matches nothing and fails no row."""
    fu, pu = units
    flights = [(u, "JFK", 5) for u in fu for _ in range(2)]
    planes = [(u, "BOEING", 100, "m") for u in pu]
    db, policy = _database(tmp_path, flights, planes, unit_types=types)
    (n, units_, seats), = _answer(db, policy, "SELECT COUNT(*), COUNT(DISTINCT f.tailnum), SUM(p.seats) "
                                  "FROM flights f JOIN planes p ON f.tailnum = p.tailnum")
    matched = [u for u in fu if any(Decimal(u) == Decimal(p) for p in pu)]
    assert (n, units_, seats) == (2 * len(matched), len(matched), 200 * len(matched))
    assert matched  # some, not all, units meet
    assert len(matched) < len(fu)


@pytest.mark.parametrize("types", [("INTEGER", "VARCHAR"), ("VARCHAR", "BIGINT"), ("DOUBLE", "BIGINT"),
                                   ("DECIMAL(10,2)", "FLOAT"), ("DATE", "DATE")])
def test_unit_columns_that_cannot_match_exactly_are_refused_before_reading(tmp_path, types):
    """Text with a number, or a floating point unit (two BIGINT units can equal one DOUBLE: a
    unit's joined rows would then be another unit's too), is refused in phase 1 from the schema."""
    db, policy = _database(tmp_path, [], [], unit_types=types)
    with pytest.raises(dpsql.DatabaseError) as err:
        _answer(db, policy, "SELECT COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum")
    assert err.value.code == "DP217" and types[0] in str(err.value) and types[1] in str(err.value)


@pytest.mark.parametrize("sql, code", [
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.origin = p.manufacturer", "DP105"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.model", "DP105"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.origin = p.tailnum", "DP105"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.tailnum = f.tailnum", "DP105"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum AND p.seats > 1", "DP105"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p USING (origin)", "DP105"),
    ("SELECT COUNT(*) FROM flights f LEFT JOIN planes p ON f.tailnum = p.tailnum", "DP217"),
    ("SELECT COUNT(*) FROM flights f JOIN flights g ON f.tailnum = g.tailnum", "DP217"),
    ("SELECT COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum JOIN engines e ON e.tailnum = f.tailnum",
     "DP217"),
    ("SELECT COUNT(*) FROM planes p JOIN engines e ON e.tailnum = p.tailnum", "DP217"),  # both one row per unit
    ("SELECT p.model, COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum GROUP BY p.model", "DP206"),
    ("SELECT p.seats, COUNT(*) FROM flights f JOIN planes p USING (tailnum) GROUP BY 1", "DP206"),
    ("SELECT SUM(p.model) FROM flights f JOIN planes p ON f.tailnum = p.tailnum", "DP204"),
])
def test_joins_of_private_tables_other_than_on_the_units_are_refused_free(tmp_path, sql, code):
    """Refused in phase 1 from the query, the policy and the schema: no ledger entry. A column of
    the joined private table that is no declared key (``model``) is never a public key: its
    values are private, not a keyset to read."""
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    with dpsql.connect(db, policy) as con:
        with pytest.raises(dpsql.DatabaseError) as err:
            con.cursor().execute(sql)
        assert err.value.code == code, str(err.value)
        assert Fraction(con.budget["spent"]) == 0


def test_the_joined_tables_plan_record_reads_back_the_joined_policy(tmp_path):
    """A recorded plan (records/plan.py) rebuilds the joined table's policy from the two tables'."""
    from dpsql.records.plan import decode, encode

    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes, planes_policy=PLANES_MANY)
    with dpsql.connect(db, policy) as con:
        plan = con.session.plan(BY_MAKER.format(where=""))
        back = decode(encode(plan), con.session.policy)
    assert back.table == plan.table and "__j1_seats" in back.table.measures and "__j1_manufacturer" in back.table.keys
    assert (back.table.max_groups, back.table.row_threshold, back.table.max_splits) == (KAPPA, 2, K)
    assert plan.public_columns == {} and "__j1_seats" in plan.public_types


def test_the_joined_sql_passes_the_final_check_and_a_failing_unit_join_does_not(tmp_path):
    """The unit join is written by ``rewrite.join_on_sql`` and checked by the final totality check
    (sql/final_check.py) like any join: with TRY_CAST it passes; the same text with CAST (which
    fails from 10^7 on for a BIGINT cast to DECIMAL(38,31)) is refused."""
    from dpsql.errors import QueryRefused
    from dpsql.sql.final_check import check_final
    from dpsql.sql.rewrite import exact_sql

    db, policy = _database(tmp_path, [(1, "JFK", 5)], [(Decimal(1), "BOEING", 10, "m")], unit_types=("BIGINT", "DECIMAL(38,31)"))
    with dpsql.connect(db, policy) as con:
        s = con.session
        plan = s.plan("SELECT p.manufacturer, COUNT(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum GROUP BY 1")
        types = {**s.schema["flights"], **plan.public_types}
        sql = exact_sql(plan, s.schema["flights"])
    check_final(sql, types)
    assert "TRY_CAST(\"tailnum\" AS DECIMAL(38,31)) = TRY_CAST(\"__j1_tailnum\" AS DECIMAL(38,31))" in sql
    with pytest.raises(QueryRefused) as err:
        check_final(sql.replace("TRY_CAST(\"tailnum\"", "CAST(\"tailnum\"", 1), types)
    assert err.value.code == "DP122"


def test_a_public_table_joined_through_the_joined_private_table_and_an_expression_key(tmp_path):
    """``makers`` (public, key ``code``) joins from ``planes.manufacturer``: a lookup, each joined
    row meets at most one maker; its ``country`` is a public key (the table's values). An
    expression of the joined private table's declared key ranges over the image of its keyset."""
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE makers(code VARCHAR, country VARCHAR)")
    con.execute("INSERT INTO makers VALUES ('AIRBUS', 'EU'), ('BOEING', 'US'), ('EMBRAER', 'BR'), ('CESSNA', 'US')")
    con.close()
    policy.write_text(policy.read_text() + '[public_tables.makers]\nkey = "code"\n')
    by_country = _answer(db, policy, "SELECT m.country, COUNT(DISTINCT f.tailnum) FROM flights f JOIN planes p "
                         "ON f.tailnum = p.tailnum JOIN makers m ON p.manufacturer = m.code GROUP BY m.country ORDER BY 1")
    by_lower = _answer(db, policy, "SELECT LOWER(p.manufacturer) AS m, COUNT(DISTINCT f.tailnum) FROM flights f "
                       "JOIN planes p ON f.tailnum = p.tailnum GROUP BY 1 ORDER BY 1")
    country = {"AIRBUS": "EU", "BOEING": "US", "EMBRAER": "BR", "CESSNA": "US"}
    flown = {f[0] for f in flights if f[0] is not None}
    units = {p[0]: p[1] for p in planes if p[0] in flown and p[1] is not None}  # one group per plane: κ binds nobody
    assert by_country == [(c, sum(1 for m in units.values() if country[m] == c)) for c in ("BR", "EU", "US")]
    assert by_lower == [(m.lower(), sum(1 for v in units.values() if v == m)) for m in MAKERS]


def test_a_joined_table_of_one_row_per_unit_is_checked_as_alone(tmp_path):
    """``planes`` declares one row per unit: a duplicated (or NULL) unit there is refused (DP401)
    when a query joins it, as when it is queried alone — the policy of every table a query reads
    is checked, not only the one in FROM."""
    flights, planes = _fleet()
    for extra in ([planes[0]], [(None, "BOEING", 10, "m0")]):
        db, policy = _database(tmp_path, flights, planes + extra, name=f"d{len(extra[0][0] or '')}")
        with pytest.raises(dpsql.DatabaseError) as err:
            _answer(db, policy, BY_ORIGIN.format(where=""))
        assert err.value.code == "DP401" and "planes" in str(err.value)
    db, policy = _database(tmp_path, flights, planes, name="ok")
    assert len(_answer(db, policy, BY_ORIGIN.format(where=""))) == 3


def test_the_image_of_an_expression_key_is_its_own_tables(tmp_path):
    """``LOWER(__j1_manufacturer) || origin`` is the same text whether ``__j1`` is the private
    ``planes`` (keyset from the policy) or the public ``makers`` (its values): one connection's
    cached image of the first must not answer for the second (pipeline/domain.py)."""
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE makers(code VARCHAR, manufacturer VARCHAR)")
    con.execute("INSERT INTO makers VALUES ('JFK', 'ATR'), ('EWR', 'ATR'), ('LGA', 'DASH')")
    con.close()
    policy.write_text(policy.read_text() + '[public_tables.makers]\nkey = "code"\n')
    with dpsql.connect(db, policy, _random_source=seeded_random(3)) as c:
        cur = c.cursor()
        cur.execute("SELECT LOWER(p.manufacturer) || origin AS g, COUNT(DISTINCT f.tailnum) FROM flights f "
                    "JOIN planes p ON f.tailnum = p.tailnum GROUP BY 1 ORDER BY 1")
        first = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT LOWER(m.manufacturer) || origin AS g, COUNT(DISTINCT f.tailnum) FROM flights f "
                    "JOIN makers m ON f.origin = m.code GROUP BY 1 ORDER BY 1")
        second = [r[0] for r in cur.fetchall()]
    assert first == sorted(m.lower() + o for m in MAKERS for o in ORIGINS)
    assert second == sorted(m + o for m in ("atr", "dash") for o in ORIGINS)


def test_the_joined_tables_unit_is_the_unit(tmp_path):
    """``p.tailnum`` equals ``f.tailnum`` on every joined row (an exact equality), so it is the
    unit: ``COUNT(DISTINCT p.tailnum)`` counts units, and WHERE on it filters units."""
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    (a, b, n), = _answer(db, policy, "SELECT COUNT(DISTINCT p.tailnum), COUNT(DISTINCT f.tailnum), COUNT(*) "
                         "FROM flights f JOIN planes p ON f.tailnum = p.tailnum WHERE p.tailnum <> 'HEAVY'")
    joined = [f for f in flights if f[0] not in (None, "HEAVY") and any(p[0] == f[0] for p in planes)]
    units = {f[0] for f in joined}
    assert a == b == len(units) > 20
    assert n == sum(min(sum(1 for f in joined if f[0] == u), K * R) for u in units)


def test_a_unit_whose_rows_multiply_to_a_million_moves_each_cell_by_its_cap(tmp_path):
    """1,000 flights × 1,000 planes rows of one aircraft are 10^6 joined rows: the answer moves by
    exactly the capped contribution of one unit (K·R rows, one unit, K·T seats) and no more."""
    flights, planes = _fleet(planes_many=True)
    big_f = [("BIG", "JFK", 1)] * 1000
    big_p = [("BIG", "BOEING", 100, "m0")] * 1000
    sql = "SELECT COUNT(*), COUNT(DISTINCT tailnum), SUM(seats) FROM flights JOIN planes USING (tailnum)"
    db0, p0 = _database(tmp_path, flights, planes, name="small", planes_policy=PLANES_MANY)
    db1, p1 = _database(tmp_path, flights + big_f, planes + big_p, name="big", planes_policy=PLANES_MANY)
    (n0, u0, s0), = _answer(db0, p0, sql)
    (n1, u1, s1), = _answer(db1, p1, sql)
    assert (n1 - n0, u1 - u0, s1 - s0) == (K * 2, 1, K * T_SEATS)


def test_a_joined_measures_per_group_threshold_on_its_own_key(tmp_path):
    """``planes.seats`` with a threshold of its own for BOEING (an override on planes'
    ``manufacturer``): grouped by that key, each group's (unit, group) totals are top-coded at K
    times the group's threshold, and its noise is calibrated to it (the receipt says so)."""
    flights, planes = _fleet()
    db, policy = _database(tmp_path, flights, planes)
    text = policy.read_text().replace("seats = { threshold = 100 }",
                                      'seats = { threshold = 100, overrides = { key = "manufacturer", '
                                      'thresholds = { "BOEING" = 300 } } }')
    assert text != policy.read_text()
    policy.write_text(text)
    con = dpsql.connect(db, policy, _random_source=seeded_random(11))
    cur = con.cursor()
    cur.execute("SELECT p.manufacturer, SUM(p.seats) FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
                "GROUP BY p.manufacturer ORDER BY 1")
    answer, receipt = cur.fetchall(), cur.receipt
    con.close()
    records: dict[tuple, int] = {}
    for f in flights:
        for p in planes:
            if f[0] is not None and f[0] == p[0] and p[1] in MAKERS:
                records[(f[0], p[1])] = records.get((f[0], p[1]), 0) + (p[2] or 0)
    cap = {"AIRBUS": K * 100, "BOEING": K * 300, "EMBRAER": K * 100}
    assert answer == [(m, sum(min(v, cap[m]) for (u, g), v in records.items() if g == m)) for m in MAKERS]
    assert any(v > K * 100 for (u, g), v in records.items() if g == "BOEING")  # the larger cap matters
    assert sorted(receipt.noise[0].sensitivity) == [100.0, 300.0]  # the default and BOEING's
