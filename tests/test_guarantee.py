"""Regression tests for the attacks of issue 12 and for the phases of a query
(docs/privacy.md, "Phases of a query"): refusals are decided before private rows are read; after
that the only outcome is a charged noisy answer, or a charge and a fixed message."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

import dpsql
import dpsql.backends.duckdb
import dpsql.pipeline.domain
from dpsql.errors import BudgetExceededError, DpsqlError, QueryFailed


def _policy(tmp_path: Path, demo_policy: Path, total_rho: str = "1e6", extra: str = "") -> Path:
    text = demo_policy.read_text().replace("total_rho = 10.0", f"total_rho = {total_rho}")
    text = text.replace("[budget]", f"[budget]\nledger = '{tmp_path / 'test.ledger.sqlite'}'", 1)
    path = tmp_path / "p.policy.toml"
    path.write_text(text + extra)
    return path


def _tiny(path: Path, payanns: list[float], payann_type: str = "BIGINT") -> Path:
    """An establishments table of a few rows (plus the demo's other tables, empty)."""
    con = duckdb.connect(str(path))
    con.execute(f"""CREATE TABLE establishments (id BIGINT PRIMARY KEY, firm_id BIGINT, state VARCHAR, county VARCHAR,
                    naics VARCHAR, naics2 VARCHAR, employees BIGINT, payann {payann_type}, payqtr1 BIGINT, opened DATE)""")
    for i, p in enumerate(payanns, start=1):
        con.execute("INSERT INTO establishments VALUES (?, 1, 'CA', '06001', '722511', '72', 3, ?, 1, DATE '2020-01-01')", [i, p])
    con.execute("CREATE TABLE paper_table1 (id BIGINT, industry VARCHAR, employees BIGINT)")
    con.execute("CREATE TABLE paper_table2 (id BIGINT, industry VARCHAR, employees BIGINT, payroll BIGINT)")
    con.execute("CREATE TABLE devices (user_id BIGINT, device_model VARCHAR, latency_ms DOUBLE, first_seen TIMESTAMP)")
    con.execute("CREATE TABLE persons AS SELECT * FROM (SELECT 1::BIGINT AS person_id, 'CA' AS state, 'F' AS sex, "
                "1::INTEGER AS age, '' AS age4, '' AS age9, '' AS age23, " + ", ".join(f"NULL::VARCHAR AS race{i}" for i in range(1, 9))
                + ") WHERE false")
    con.execute("CREATE TABLE states (code VARCHAR, name VARCHAR, fips VARCHAR, region VARCHAR, division VARCHAR)")
    con.execute("CREATE TABLE naics_sectors (naics2 VARCHAR, sector VARCHAR, title VARCHAR)")
    con.close()
    return path


def _outcome(con, sql: str) -> str:
    try:
        con.cursor().execute(sql)
        return "answer"
    except DpsqlError as exc:
        return exc.code


def test_substr_bounds_no_longer_tell_whether_a_row_matched(demo_files, tmp_path):
    """The binary search of issue 12: SUBSTR with a huge literal bound failed only when a row
    reached it, so DP120-or-answer said whether establishment 17 had payann > X, for free."""
    db, policy = demo_files
    raw = duckdb.connect(str(db), read_only=True, config=dict(dpsql.backends.duckdb.LOCKDOWN))
    exact = raw.execute("SELECT payann FROM establishments WHERE id = 17").fetchone()[0]
    raw.close()
    with dpsql.connect(db, _policy(tmp_path, policy)) as con:
        for x in (exact - 1, exact + 1):  # one matches, one does not
            sql = (f"SELECT state, naics2, SUBSTR(state, 9223372036854775807, 1) k, COUNT(*) FROM establishments "
                   f"WHERE id = 17 AND payann > {x} GROUP BY state, naics2, k")
            assert _outcome(con, sql) == "answer"


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM establishments WHERE payann > 0.0000000000000000000000000000001",
    "SELECT COUNT(*) FROM establishments WHERE CAST(county AS INTEGER) > 5",
    "SELECT naics2, SUM(payann) FROM establishments WHERE payann * 1000000 > 1 GROUP BY naics2",
    "SELECT state, COUNT(*) FROM establishments WHERE ABS(payann) > 1 GROUP BY state",
])
def test_conditions_that_fail_on_big_values_answer_on_both_neighbours(demo_files, tmp_path, sql):
    """Each condition fails in DuckDB on a value of 10^7 or more (a cast to DECIMAL(38,31), an
    overflow): the table with that value and its neighbour without it answer alike."""
    _, policy = demo_files
    p = _policy(tmp_path, policy)
    small = _tiny(tmp_path / "small.duckdb", [10, 20])
    big = _tiny(tmp_path / "big.duckdb", [10, 20, 9_000_000_000_000_000_000])
    assert _outcome(dpsql.connect(small, p), sql) == _outcome(dpsql.connect(big, p), sql) == "answer"


def test_a_double_sum_cannot_overflow(demo_files, tmp_path):
    """2 rows of 6e37 answered, 3 rows overflowed HUGEINT: now both answer."""
    _, policy = demo_files
    p = _policy(tmp_path, policy)
    two = _tiny(tmp_path / "two.duckdb", [6e37, 6e37], "DOUBLE")
    three = _tiny(tmp_path / "three.duckdb", [6e37, 6e37, 6e37], "DOUBLE")
    sql = "SELECT SUM(payann), AVG(payann) FROM establishments"
    assert _outcome(dpsql.connect(two, p), sql) == _outcome(dpsql.connect(three, p), sql) == "answer"


def test_errors_that_do_not_depend_on_rows_are_refused_free(demo_files, tmp_path):
    """A query DuckDB cannot bind (a text function of a number) fails on the schema's empty twin:
    refused before any row is read, nothing charged. (DuckDB 1.x also refused a 41-digit literal
    there; 2.0 reads it as a DOUBLE and the query is answered.)"""
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy))
    with pytest.raises(DpsqlError) as err:
        con.cursor().execute("SELECT COUNT(*) FROM establishments WHERE LENGTH(employees) > 1")
    assert err.value.code == "DP120"
    assert con.session.ledger.spent == 0


def test_too_many_groups_is_decided_before_the_data(demo_files, tmp_path, monkeypatch):
    """DP207 was raised after selection, for free: now the public cells are bounded in phase 1
    and the selected private groups are cut to the limit afterwards (post-processing)."""
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy), rho=1)
    monkeypatch.setattr(dpsql.pipeline.domain, "MAX_CELLS", 60)
    with pytest.raises(DpsqlError) as err:  # 51 states x 24 sectors: public, refused free
        con.cursor().execute("SELECT state, naics2, COUNT(*) FROM establishments GROUP BY state, naics2")
    assert err.value.code == "DP207" and con.session.ledger.spent == 0
    cur = con.cursor().execute("SELECT naics2, county, COUNT(*) FROM establishments GROUP BY naics2, county")
    assert len(cur.fetchall()) <= 60  # 24 sectors x at most 2 counties
    assert "at most 2 groups" in cur.receipt.selection["note"]
    assert con.session.ledger.spent == cur.receipt.rho


def test_a_failure_after_the_data_was_read_is_charged_with_a_fixed_message(demo_files, tmp_path, monkeypatch):
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy))

    def fail(sql):
        raise MemoryError("the secret payroll was 123456789")

    monkeypatch.setattr(con.session.engine, "run", fail)
    with pytest.raises(QueryFailed) as err:
        con.cursor().execute("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2")
    assert err.value.code == "DP901" and "123456789" not in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    # Nor is it reachable: the original exception's traceback holds the frames where exact values live.
    assert err.value.__context__ is None
    assert con.session.ledger.spent == con.session.rho  # the full cost


def test_a_failure_in_the_noise_stage_is_charged_too(demo_files, tmp_path, monkeypatch):
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy))
    from dpsql.pipeline import release
    from dpsql.privacy import allocate

    def fail(*a, **k):
        raise RuntimeError("exact value 987654321")

    monkeypatch.setattr(allocate.Allocation, "sample", fail)  # an answer in arrays
    monkeypatch.setattr(release, "scalar_draws", fail)  # a small answer, in lists (release.py)
    for sql in ("SELECT state, COUNT(*) FROM establishments GROUP BY state",
                "SELECT state, naics2, COUNT(*) FROM establishments GROUP BY state, naics2"):
        spent = con.session.ledger.spent
        with pytest.raises(QueryFailed) as err:
            con.cursor().execute(sql)
        assert "987654321" not in str(err.value) and con.session.ledger.spent > spent


def test_an_interrupt_after_the_data_was_read_is_charged(demo_files, tmp_path, monkeypatch):
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy))

    def interrupted(sql):
        raise KeyboardInterrupt

    monkeypatch.setattr(con.session.engine, "run", interrupted)
    with pytest.raises(KeyboardInterrupt) as err:
        con.cursor().execute("SELECT COUNT(*) FROM establishments")
    assert getattr(err.value, "dpsql_charged", False) and con.session.ledger.spent == con.session.rho


def test_an_interrupt_before_the_query_started_is_free(demo_files, tmp_path):
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy))
    con.session.engine.interrupt()  # sticky: stops the next query before DuckDB starts it
    with pytest.raises(KeyboardInterrupt) as err:
        con.cursor().execute("SELECT COUNT(*) FROM establishments")
    assert not getattr(err.value, "dpsql_charged", False) and con.session.ledger.spent == 0
    con.cursor().execute("SELECT COUNT(*) FROM establishments")  # one Ctrl-C cancels one query


def test_threads_sharing_a_connection_never_overspend(demo_files, tmp_path):
    """Twelve threads, one connection, a budget that covers ten queries: exactly ten answers."""
    db, policy = demo_files
    con = dpsql.connect(db, _policy(tmp_path, policy, total_rho="1"), rho="0.1")
    con.execute("SET dpsql.reuse = off")  # each query a fresh, charged release: the threads race for the budget
    answers, refusals, other = [], [], []
    barrier = threading.Barrier(12, timeout=60)

    def work():
        barrier.wait()
        try:
            answers.append(con.cursor().execute("SELECT state, COUNT(*) FROM establishments GROUP BY state").fetchall())
        except BudgetExceededError:
            refusals.append(1)
        except BaseException as exc:  # noqa: BLE001 - any other outcome fails the test below
            other.append(exc)

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert other == [] and len(answers) == 10 and len(refusals) == 2
    assert con.session.ledger.spent == 1


def test_a_huge_geometric_margin_is_refused_not_a_zero_division(demo_files, tmp_path):
    """ε = ln 20·Δ/(MOE+1) rounded to a billionth was 0 for MOE ≈ 1e13: a raw ZeroDivisionError."""
    from dpsql.privacy.allocate import Settings, allocate
    from dpsql.sql.plan import Primitive
    count = Primitive("count")
    settings = Settings(mechanism="geometric", moe={"*": 10**13})
    with pytest.raises(DpsqlError) as err:
        allocate((count,), settings, {count: 1}, {count: 1})
    assert err.value.code == "DP302"


def test_a_split_row_count_past_int64_selects_without_overflow():
    """Split-row counts sum |A(r)| over records and can pass 2^63 (a thousand records of 2^53
    units at T = 1); numpy's int64 would overflow after the data was read."""
    from dpsql.policy.model import Selection
    from dpsql.pipeline.release import select_groups
    from dpsql.testing import seeded_random  # the test-only random source
    counts = {("a",): 2**70, ("b",): 0, ("c",): 1}
    for method in ("optimal", "truncated_geometric"):
        released, _ = select_groups(counts, Selection(method=method, count="split_rows"), seeded_random(1))
        assert ("a",) in released and ("b",) not in released
