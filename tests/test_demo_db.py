"""Tests of the demo database builder (dpsql.demo_db)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dpsql.demo_db.build as build_mod
from dpsql.demo_db import POLICY_PATH, build_database, ensure_demo

ROWS = 200_000
SMALL = 20_000

with open(POLICY_PATH, "rb") as _f:
    POLICY = tomllib.load(_f)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A read-only connection on a default-size (200k rows) build."""
    path = build_database(tmp_path_factory.mktemp("demo") / "demo.duckdb", rows=ROWS)
    c = duckdb.connect(str(path), read_only=True)
    yield c
    c.close()


def one(db, sql):
    return db.execute(sql).fetchone()[0]


def table_hash(path, table, order):
    with duckdb.connect(str(path), read_only=True) as c:
        return one(c, f"SELECT md5(string_agg(t::VARCHAR, ';' ORDER BY {order})) FROM {table} t")


# --- schema -----------------------------------------------------------------

EXPECTED_SCHEMA = {
    "establishments": [("id", "BIGINT"), ("firm_id", "BIGINT"), ("state", "VARCHAR"),
                       ("county", "VARCHAR"), ("naics", "VARCHAR"), ("naics2", "VARCHAR"),
                       ("employees", "BIGINT"), ("payann", "BIGINT"), ("payqtr1", "BIGINT"),
                       ("opened", "DATE")],
    "paper_table1": [("id", "BIGINT"), ("industry", "VARCHAR"), ("employees", "BIGINT")],
    "paper_table2": [("id", "BIGINT"), ("industry", "VARCHAR"), ("employees", "BIGINT"),
                     ("payroll", "BIGINT")],
    "devices": [("user_id", "BIGINT"), ("device_model", "VARCHAR"), ("latency_ms", "DOUBLE"),
                ("first_seen", "TIMESTAMP")],
    "persons": [("person_id", "BIGINT"), ("state", "VARCHAR"), ("sex", "VARCHAR"), ("age", "INTEGER"),
                ("age4", "VARCHAR"), ("age9", "VARCHAR"), ("age23", "VARCHAR")]
               + [(f"race{i}", "VARCHAR") for i in range(1, 9)],
    "states": [("code", "VARCHAR"), ("name", "VARCHAR"), ("fips", "VARCHAR"), ("region", "VARCHAR"),
               ("division", "VARCHAR")],
    "naics_sectors": [("naics2", "VARCHAR"), ("sector", "VARCHAR"), ("title", "VARCHAR")],
    "_dpsql_demo_meta": [("key", "VARCHAR"), ("value", "VARCHAR")],
}
PUBLIC_TABLES = {"states", "naics_sectors"}


def test_schema(db):
    tables = {r[0] for r in db.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
    assert tables == set(EXPECTED_SCHEMA)
    for table, cols in EXPECTED_SCHEMA.items():
        got = db.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position", [table]).fetchall()
        assert got == cols, table


def test_policy_matches_schema():
    """Every table and column the policy names exists; the internal meta table is not declared."""
    assert set(POLICY["tables"]) == set(EXPECTED_SCHEMA) - {"_dpsql_demo_meta"} - PUBLIC_TABLES
    assert set(POLICY["public_tables"]) == PUBLIC_TABLES
    for table, tp in POLICY["tables"].items():
        cols = {c for c, _ in EXPECTED_SCHEMA[table]}
        assert tp["privacy_unit"] in cols
        assert set(tp["measures"]) | set(tp["keys"]) <= cols
        for key in tp["keys"].values():
            if "keyset" in key:
                assert key["keyset"] == sorted(key["keyset"])


def test_privacy_units_unique(db):
    n, distinct, lo, hi = db.execute(
        "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM establishments").fetchone()
    assert (n, distinct, lo, hi) == (ROWS, ROWS, 1, ROWS)
    n, distinct = db.execute("SELECT count(*), count(DISTINCT user_id) FROM devices").fetchone()
    assert n == distinct == max(20_000, ROWS // 10)


def test_no_nulls_and_nonnegative(db):
    cols = [c for c, _ in EXPECTED_SCHEMA["establishments"]]
    nulls = one(db, "SELECT " + " + ".join(f"count(*) - count({c})" for c in cols) + " FROM establishments")
    assert nulls == 0
    assert one(db, "SELECT count(*) FROM establishments WHERE employees < 0 OR payann < 0 OR payqtr1 < 0") == 0
    assert one(db, "SELECT count(*) FROM devices WHERE device_model IS NULL OR NOT latency_ms > 0") == 0


# --- codes --------------------------------------------------------------------

def keyset(table, key):
    return POLICY["tables"][table]["keys"][key]["keyset"]


def test_codes_match_policy_keysets(db):
    states = [r[0] for r in db.execute("SELECT DISTINCT state FROM establishments ORDER BY 1").fetchall()]
    sectors = [r[0] for r in db.execute("SELECT DISTINCT naics2 FROM establishments ORDER BY 1").fetchall()]
    # At 200k rows every state and every sector occurs, so the keysets are exactly the data's values.
    assert states == keyset("establishments", "state")
    assert len(states) == 51
    assert sectors == keyset("establishments", "naics2")


def test_naics_hierarchy(db):
    assert one(db, """SELECT count(*) FROM establishments
                       WHERE NOT regexp_full_match(naics, '[0-9]{6}') OR substr(naics, 1, 2) <> naics2""") == 0
    # Each sector has several 3- and 4-digit levels and many 6-digit codes (except 99, unclassified).
    rows = db.execute("""SELECT naics2, count(DISTINCT substr(naics, 1, 4)), count(DISTINCT naics)
                          FROM establishments WHERE naics2 <> '99' GROUP BY 1""").fetchall()
    assert all(n4 >= 5 and n6 >= 20 for _, n4, n6 in rows), rows
    assert one(db, "SELECT count(*) FROM establishments WHERE naics = '722511'") > 0
    # Skewed within sectors: the most common code holds far more than an even share.
    assert one(db, """SELECT min(top * codes / total) FROM (
                         SELECT naics2, max(n) AS top, count(*) AS codes, sum(n) AS total
                         FROM (SELECT naics2, naics, count(*) AS n FROM establishments GROUP BY ALL)
                         WHERE naics2 <> '99' GROUP BY 1)""") > 3


def test_sector_weights(db):
    share = dict(db.execute("SELECT naics2, count(*) / sum(count(*)) OVER () FROM establishments GROUP BY 1").fetchall())
    for big in ("44", "54", "62", "72"):
        assert share[big] > 0.05
    for small in ("21", "22", "55"):
        assert share[small] < 0.01


def test_states_and_counties(db):
    share = dict(db.execute("SELECT state, count(*) / sum(count(*)) OVER () FROM establishments GROUP BY 1").fetchall())
    assert min(share["CA"], share["TX"], share["FL"], share["NY"]) > 0.05
    assert max(share["WY"], share["VT"]) < 0.005
    # FIPS-like: 5 digits, the state's prefix, odd county numbers.
    assert one(db, """SELECT count(*) FROM establishments
                       WHERE NOT regexp_full_match(county, '[0-9]{4}[13579]')""") == 0
    assert one(db, "SELECT max(n) FROM (SELECT substr(county, 1, 2), count(DISTINCT state) n FROM establishments GROUP BY 1)") == 1
    assert one(db, "SELECT state FROM establishments WHERE county LIKE '06%' LIMIT 1") == "CA"
    n_counties, median, biggest = db.execute(
        "SELECT count(*), median(n), max(n) FROM (SELECT county, count(*) n FROM establishments GROUP BY 1)").fetchone()
    assert 2500 <= n_counties <= 3300
    assert biggest > 100 * median  # a few big metros, many tiny rural counties
    assert one(db, "SELECT count(*) FROM (SELECT county FROM establishments GROUP BY 1 HAVING count(*) <= 5)") > 100


def test_firms(db):
    single = one(db, """SELECT avg((n = 1)::INT) FROM (
                           SELECT count(*) OVER (PARTITION BY firm_id) n FROM establishments)""")
    assert 0.85 <= single <= 0.95
    n, states, sectors = db.execute("""SELECT count(*), count(DISTINCT state), count(DISTINCT naics2)
                                        FROM establishments GROUP BY firm_id ORDER BY 1 DESC LIMIT 1""").fetchone()
    assert n >= 200 and states >= 10 and sectors == 1  # a big chain spans states, in one industry


# --- determinism and atomicity ------------------------------------------------------

def test_determinism(tmp_path):
    a = build_database(tmp_path / "a.duckdb", rows=SMALL, seed=7)
    b = build_database(tmp_path / "b.duckdb", rows=SMALL, seed=7)
    c = build_database(tmp_path / "c.duckdb", rows=SMALL, seed=8)
    for table, order in (("establishments", "id"), ("devices", "user_id")):
        assert table_hash(a, table, order) == table_hash(b, table, order)
        assert table_hash(a, table, order) != table_hash(c, table, order)


def test_chunked_build(tmp_path, monkeypatch):
    """Several chunks: ids stay 1..N, firm ids stay dense and unique across chunks."""
    monkeypatch.setattr(build_mod, "CHUNK_ROWS", 7_000)
    msgs = []
    path = build_database(tmp_path / "chunked.duckdb", rows=SMALL, progress=msgs.append)
    assert sum(m.startswith("establishments:") for m in msgs) == 3
    with duckdb.connect(str(path), read_only=True) as c:
        n, ids, lo, hi, firms, max_firm = c.execute(
            "SELECT count(*), count(DISTINCT id), min(id), max(id), count(DISTINCT firm_id), max(firm_id) "
            "FROM establishments").fetchone()
        assert (n, ids, lo, hi) == (SMALL, SMALL, 1, SMALL)
        assert firms == max_firm
        # a chain never straddles two chunks, so no firm has ids from two chunks
        assert one(c, "SELECT count(*) FROM (SELECT firm_id FROM establishments "
                      "GROUP BY 1 HAVING count(DISTINCT (id - 1) // 7000) > 1)") == 0


def test_failed_build_leaves_old_file(tmp_path, monkeypatch):
    path = build_database(tmp_path / "x.duckdb", rows=SMALL)
    before = table_hash(path, "establishments", "id")

    def boom(db, *args):
        db.execute("CREATE TABLE half (i INT)")
        raise RuntimeError("crash mid-build")

    monkeypatch.setattr(build_mod, "_write", boom)
    with pytest.raises(RuntimeError):
        build_database(path, rows=SMALL, seed=1)
    assert table_hash(path, "establishments", "id") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.duckdb"]


# --- paper tables ---------------------------------------------------------------

def test_paper_tables(db):
    assert db.execute("SELECT * FROM paper_table1 ORDER BY id").fetchall() == [
        (1, "Retail", 5), (2, "Retail", 5), (3, "Retail", 10), (4, "Retail", 1000),
        (5, "Technology", 10000), (6, "Services", 5), (7, "Hospitality", 5)]
    assert db.execute("SELECT * FROM paper_table2 ORDER BY id").fetchall() == [
        (1, "Agriculture", 150, 10_000_000), (2, "Agriculture", 50, 15_000_000),
        (3, "Mining", 100, 10_000_000), (4, "Mining", 50, 10_000_000), (5, "Retail", 20, 1_000_000)]
    for t in ("paper_table1", "paper_table2"):
        got = [r[0] for r in db.execute(f"SELECT DISTINCT industry FROM {t} ORDER BY 1").fetchall()]
        assert got == keyset(t, "industry")


# --- calibration (paper 000 Table 8) ------------------------------------------------

@pytest.mark.parametrize("column,threshold,pct", [
    ("employees", 2, 47), ("employees", 5, 66), ("employees", 100, 97),
    ("payann", 104, 50), ("payann", 500, 79), ("payann", 10000, 99),
    ("payqtr1", 24, 50), ("payqtr1", 125, 80), ("payqtr1", 2500, 99),
])
def test_table8_calibration(db, column, threshold, pct):
    got = 100 * one(db, f"SELECT avg(({column} <= {threshold})::INT) FROM establishments")
    assert abs(got - pct) <= 4, f"{column} <= {threshold}: {got:.2f}% (target {pct}%)"


def test_policy_thresholds_are_table8_conservative():
    m = POLICY["tables"]["establishments"]["measures"]
    assert (m["employees"]["threshold"], m["payann"]["threshold"], m["payqtr1"]["threshold"]) == (100, 10000, 2500)


def test_employee_tail_index(db):
    emp = np.sort(db.execute("SELECT employees FROM establishments").fetchnumpy()["employees"])[::-1]
    k = len(emp) // 100
    top = emp[: k + 1].astype(float)
    alpha = 1 / np.mean(np.log(top[:k] / top[k]))  # Hill estimator on the top 1%
    assert abs(alpha - 1.2) <= 0.25, alpha


def test_payroll_correlated_with_employees(db):
    rank_corr = db.execute("""SELECT corr(re, ra), corr(ra, rq) FROM (
        SELECT rank() OVER (ORDER BY employees) re, rank() OVER (ORDER BY payann) ra,
               rank() OVER (ORDER BY payqtr1) rq FROM establishments)""").fetchone()
    assert rank_corr[0] > 0.5 and rank_corr[1] > 0.5, rank_corr
    # the sector matters: median wage per employee differs a lot between sectors
    wage = dict(db.execute("""SELECT naics2, median(payann / employees) FROM establishments
                               WHERE employees > 0 GROUP BY 1""").fetchall())
    assert wage["22"] > 2.5 * wage["72"]
    assert one(db, "SELECT count(*) FROM establishments WHERE payqtr1 > payann") == 0
    assert one(db, "SELECT quantile_cont(payann, 0.9) FROM establishments WHERE employees = 0") < 104


# --- devices --------------------------------------------------------------------

def test_devices_long_tail(db):
    models, small_share, top_share = db.execute("""
        SELECT count(*), avg((n <= 3)::INT), max(n) / sum(n) FROM (
            SELECT device_model, count(*) n FROM devices GROUP BY 1)""").fetchone()
    assert models >= 1000
    assert small_share >= 0.30
    assert top_share >= 0.05  # a few very popular models


def test_devices_latency(db):
    lat = db.execute("SELECT latency_ms FROM devices").fetchnumpy()["latency_ms"]
    tenths = lat * 10
    assert np.all(np.abs(tenths - np.rint(tenths)) < 1e-6)  # exact multiples of the 0.1 granularity
    median = np.median(lat)
    assert 60 <= median <= 100
    assert np.quantile(lat, 0.999) > 5 * median  # heavy right tail
    gran = POLICY["tables"]["devices"]["measures"]["latency_ms"]["granularity"]
    assert gran == 0.1


# --- ensure_demo --------------------------------------------------------------------

def test_ensure_demo_builds_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSQL_HOME", str(tmp_path))
    db, policy = ensure_demo(rows=SMALL)
    assert db == tmp_path / f"demo-{SMALL}.duckdb"
    assert policy == tmp_path / f"demo-{SMALL}.policy.toml"
    assert policy.read_bytes() == POLICY_PATH.read_bytes()
    with duckdb.connect(str(db), read_only=True) as c:
        meta = dict(c.execute("SELECT * FROM _dpsql_demo_meta").fetchall())
        assert one(c, "SELECT count(*) FROM establishments") == SMALL
    assert meta == {"generator_version": build_mod.GENERATOR_VERSION,
                    "seed": str(build_mod.DEFAULT_SEED), "rows": str(SMALL)}
    mtime = db.stat().st_mtime_ns

    policy.write_text("stale")
    time.sleep(0.01)
    assert ensure_demo(rows=SMALL) == (db, policy)
    assert db.stat().st_mtime_ns == mtime  # not rebuilt
    assert policy.read_bytes() == POLICY_PATH.read_bytes()  # but the policy copy is refreshed
    # only the database, the policy copy and the lock file: no temp or WAL files
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [db.name, policy.name, f"{db.name}.lock"])


def test_ensure_demo_default_name(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(build_mod, "build_database", lambda path, *a, **k: calls.append(path))
    monkeypatch.setattr(build_mod, "_is_current", lambda db, want: False)
    db, policy = ensure_demo(home=tmp_path)
    assert (db.name, policy.name) == ("demo.duckdb", "demo.policy.toml")
    assert calls == [db]


def test_ensure_demo_rebuilds_stale(tmp_path):
    db, _ = ensure_demo(rows=SMALL, home=tmp_path)
    with duckdb.connect(str(db)) as c:
        c.execute("UPDATE _dpsql_demo_meta SET value = '0' WHERE key = 'generator_version'")
    ensure_demo(rows=SMALL, home=tmp_path)
    with duckdb.connect(str(db), read_only=True) as c:
        assert one(c, "SELECT value FROM _dpsql_demo_meta WHERE key = 'generator_version'") \
            == build_mod.GENERATOR_VERSION
    db.write_bytes(b"not a database")
    ensure_demo(rows=SMALL, home=tmp_path)
    with duckdb.connect(str(db), read_only=True) as c:
        assert one(c, "SELECT count(*) FROM establishments") == SMALL


def test_ensure_demo_concurrent_processes_build_once(tmp_path):
    """Two processes blocked on the lock at once: exactly one builds."""
    script = textwrap.dedent(f"""
        from dpsql.demo_db import ensure_demo
        ensure_demo(rows={SMALL}, home={str(tmp_path)!r}, progress=print)
    """)
    lock_path = tmp_path / f"demo-{SMALL}.duckdb.lock"
    procs = []
    try:
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # hold the lock so both children queue on it
            procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                      env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}) for _ in range(2)]
            _wait_for_waiters(lock_path, 2)
        outs = [p.communicate(timeout=60)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    assert all(p.returncode == 0 for p in procs)
    assert sum(o.count("demo database written") for o in outs) == 1, outs


def _wait_for_waiters(path, n: int, limit: float = 30.0) -> None:
    """Until ``n`` processes wait for the flock on ``path``: read from /proc/locks (Linux), where
    a waiter's line has "->"; elsewhere a fixed pause, as the test had."""
    locks = Path("/proc/locks")
    if not locks.exists():
        time.sleep(1.5)
        return
    inode = f":{path.stat().st_ino} "
    deadline = time.monotonic() + limit
    while sum("->" in line and inode in line for line in locks.read_text().splitlines()) < n:
        assert time.monotonic() < deadline, f"fewer than {n} processes ever waited for the lock"
        time.sleep(0.01)


def test_public_tables_cover_the_codes_the_private_table_uses(db):
    """Every state and 2-digit NAICS code of establishments has exactly one row in the public
    reference tables, so an inner join to them loses no establishment."""
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT code) FROM states").fetchone() == (51, 51)
    missing = db.execute("SELECT COUNT(*) FROM establishments e LEFT JOIN states s ON e.state = s.code "
                         "LEFT JOIN naics_sectors n ON e.naics2 = n.naics2 WHERE s.code IS NULL OR n.naics2 IS NULL").fetchone()
    assert missing == (0,)
    assert db.execute("SELECT COUNT(DISTINCT region), COUNT(DISTINCT division) FROM states").fetchone() == (4, 9)
    assert db.execute("SELECT title FROM naics_sectors WHERE naics2 = '32'").fetchone() == ("Manufacturing",)


def test_persons_race_codes(db):
    """persons (the SafeTab example): 1 to 8 distinct race codes per person, filled from race1 on."""
    n, bad_gap, dup, max_k, one = db.execute("""
        WITH p AS (SELECT [race1, race2, race3, race4, race5, race6, race7, race8] AS r FROM persons),
        q AS (SELECT r, len(list_filter(r, lambda x: x IS NOT NULL)) AS k FROM p)
        SELECT count(*),
               count(*) FILTER (WHERE list_filter(r[1:k], lambda x: x IS NULL) != [] OR r[1] IS NULL),
               count(*) FILTER (WHERE len(list_distinct(list_filter(r, lambda x: x IS NOT NULL))) != k),
               max(k), avg((k = 1)::INT)
        FROM q""").fetchone()
    assert n == 60_000 and bad_gap == 0 and dup == 0 and max_k == 8
    assert 0.75 < one < 0.85  # 80% have one code
