"""The PEP 249 surface."""

from __future__ import annotations

import pytest

import dpsql


def test_module_globals_and_exception_tree():
    assert dpsql.apilevel == "2.0" and dpsql.threadsafety == 1 and dpsql.paramstyle == "qmark"
    for name in ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
                 "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"]:
        assert issubclass(getattr(dpsql, name), Exception)
    assert issubclass(dpsql.BudgetExceededError, dpsql.OperationalError)
    assert issubclass(dpsql.QueryRefused, dpsql.ProgrammingError)
    assert issubclass(dpsql.ProgrammingError, dpsql.DatabaseError) and issubclass(dpsql.DatabaseError, dpsql.Error)


def test_connect_without_arguments_opens_the_demo(demo):
    with dpsql.connect() as con:
        assert con.session.database == demo[0]
        rows = con.cursor().execute("SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2").fetchall()
        assert len(rows) == 24


def test_cursor_protocol(con):
    cur = con.cursor()
    assert cur.description is None and cur.rowcount == -1 and cur.receipt is None
    cur.execute("SELECT state, COUNT(*) AS n, AVG(payann) AS avg_pay FROM establishments GROUP BY state")
    assert [d[0] for d in cur.description] == ["state", "n", "avg_pay"]
    assert cur.description[0][1] == dpsql.STRING and cur.description[1][1] == dpsql.NUMBER
    assert all(len(d) == 7 for d in cur.description)
    assert cur.rowcount == 51
    first = cur.fetchone()
    assert first[0] == "AK"
    assert len(cur.fetchmany(10)) == 10
    assert len(cur.fetchmany()) == 1
    assert len(cur.fetchall()) == 39
    assert cur.fetchone() is None and cur.fetchall() == []
    assert cur.receipt.rho == con.session.rho
    cur.close()
    with pytest.raises(dpsql.InterfaceError):
        cur.fetchall()


def test_iteration_and_parameters(con):
    cur = con.cursor()
    cur.execute("SELECT naics2, SUM(payann) FROM establishments WHERE state = ? AND employees > ? GROUP BY naics2", ["CA", 5])
    assert len(list(cur)) == 24
    with pytest.raises(dpsql.ProgrammingError):
        cur.execute("SELECT COUNT(*) FROM establishments WHERE state = ?", ["CA", 1])


def test_explain_touches_nothing(con):
    ex = con.explain("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2")
    assert "SUM(\"payann\")" in ex.exact_sql and "UNNEST(RANGE(" in ex.reference_sql
    assert con.session.ledger.spent == 0


def test_explain_typed_as_sql_answers_the_explanation_for_free(con, capfd):
    """What psql users and BI SQL editors type: the same explanation as con.explain, one line per
    row under PostgreSQL's column name, charging nothing (and no parser warning on stderr)."""
    sql = "SELECT naics2, SUM(payann) FROM establishments WHERE state = ? GROUP BY naics2"
    cur = con.cursor()
    cur.execute("EXPLAIN " + sql.replace("?", "'CA'"))
    assert [d[0] for d in cur.description] == ["QUERY PLAN"]
    lines = [row[0] for row in cur.fetchall()]
    assert "rho for this query: 0.1 (1 noisy aggregate(s))" in lines
    assert any('SUM("payann")' in line for line in lines)
    assert con.session.ledger.spent == 0 and cur.receipt.rho == 0
    assert capfd.readouterr().err == ""
    with pytest.raises(dpsql.ProgrammingError, match="DP201") as refused:
        cur.execute("explain\n  SELECT id FROM establishments")
    assert (refused.value.line, refused.value.column) == (2, 10)  # where `id` stands in the text sent
    with pytest.raises(dpsql.ProgrammingError, match="DP102.*EXPLAIN ANALYZE"):
        cur.execute("EXPLAIN ANALYZE " + sql.replace("?", "'CA'"))
    assert con.session.ledger.spent == 0


def test_closed_connection(demo):
    con = dpsql.connect(*demo)
    con.close()
    with pytest.raises(dpsql.InterfaceError):
        con.cursor().execute("SELECT COUNT(*) FROM establishments")
    con.close()  # closing twice is harmless


def test_rollback_not_supported_and_commit_is_noop(con):
    con.commit()
    with pytest.raises(dpsql.NotSupportedError):
        con.rollback()


def test_bad_rho(demo):
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.connect(*demo, rho="-1")
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.connect(*demo, rho=float("nan"))


def test_missing_database_and_policy(tmp_path, demo):
    with pytest.raises(dpsql.OperationalError, match="does not exist"):
        dpsql.connect(tmp_path / "none.duckdb", demo[1])
    other = tmp_path / "copy.duckdb"
    other.write_bytes(demo[0].read_bytes())
    with pytest.raises(dpsql.OperationalError, match="no policy given"):
        dpsql.connect(other)


# --------------------------------------------------------------------------- PEP 249's remaining surface


def test_the_cursor_is_a_context_manager(con):
    with con.cursor() as cur:
        assert cur.execute("SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2").fetchone()
    with pytest.raises(dpsql.InterfaceError):
        cur.fetchall()  # closed on leaving the block
    with pytest.raises(dpsql.QueryRefused):
        with con.cursor() as cur:
            cur.execute("SELECT id FROM establishments")
    with pytest.raises(dpsql.InterfaceError):
        cur.execute("SELECT COUNT(*) FROM establishments")  # closed though the block raised


def test_executemany_is_refused_and_charges_nothing(con):
    cur = con.cursor()
    with pytest.raises(dpsql.NotSupportedError):
        cur.executemany("SELECT COUNT(*) FROM establishments WHERE state = ?", [["CA"], ["NY"]])
    with pytest.raises(dpsql.NotSupportedError):
        cur.executemany("SELECT COUNT(*) FROM establishments", [])
    assert con.session.ledger.spent == 0 and con.session.ledger.history() == []


def test_nextset_and_lastrowid(con):
    cur = con.cursor()
    with pytest.raises(dpsql.ProgrammingError):
        cur.nextset()  # no statement yet
    cur.execute("SELECT COUNT(*) FROM establishments")
    assert cur.nextset() is None and cur.lastrowid is None
    assert len(cur.fetchall()) == 1  # nextset() leaves the one result set readable


def test_pep249_constructors():
    import datetime
    import time

    assert dpsql.Date(2024, 2, 29) == datetime.date(2024, 2, 29)
    assert dpsql.Time(13, 5, 7) == datetime.time(13, 5, 7)
    assert dpsql.Timestamp(2024, 2, 29, 13, 5, 7) == datetime.datetime(2024, 2, 29, 13, 5, 7)
    ticks = time.mktime((2024, 2, 29, 13, 5, 7, 0, 0, -1))
    assert dpsql.DateFromTicks(ticks) == datetime.date(2024, 2, 29)
    assert dpsql.TimeFromTicks(ticks) == datetime.time(13, 5, 7)
    assert dpsql.TimestampFromTicks(ticks) == datetime.datetime(2024, 2, 29, 13, 5, 7)
    assert dpsql.Binary(b"\x00\xff") == b"\x00\xff" and dpsql.Binary("é") == "é".encode()
    assert dpsql.Binary(bytearray(b"ab")) == b"ab" and dpsql.Binary(memoryview(b"ab")) == b"ab"


@pytest.mark.parametrize("type_name, type_object", [
    ("VARCHAR", dpsql.STRING), ("ENUM('a', 'b')", dpsql.STRING), ("UUID", dpsql.STRING),
    ("BIGINT", dpsql.NUMBER), ("UHUGEINT", dpsql.NUMBER), ("DECIMAL(18,3)", dpsql.NUMBER), ("DOUBLE", dpsql.NUMBER),
    ("DATE", dpsql.DATETIME), ("TIME", dpsql.DATETIME), ("TIMESTAMP WITH TIME ZONE", dpsql.DATETIME),
    ("BLOB", dpsql.BINARY),
])
def test_type_objects_compare_equal_to_their_types(type_name, type_object):
    assert type_name == type_object and type_object == type_name
    others = [t for t in (dpsql.STRING, dpsql.NUMBER, dpsql.DATETIME, dpsql.BINARY) if t is not type_object]
    assert all(type_name != t for t in others)


def _events(tmp_path):
    """A small table with DATE, TIMESTAMP, TIME and BLOB columns, and its policy."""
    import datetime

    import duckdb

    db = tmp_path / "events.duckdb"
    with duckdb.connect(str(db)) as c:
        c.execute("CREATE TABLE events (id BIGINT NOT NULL, region VARCHAR NOT NULL, amount BIGINT NOT NULL, "
                  "day DATE, seen TIMESTAMP, t TIME, tag BLOB)")
        c.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                      [(i, "north" if i % 2 else "south", i, datetime.date(2020, 1, 1) + datetime.timedelta(days=i),
                        datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=i), datetime.time(i % 24), bytes([i % 3]))
                       for i in range(1, 200)])
    policy = tmp_path / "events.policy.toml"
    policy.write_text('[budget]\ndefault_rho = 0.1\ntotal_rho = 100\n\n[tables.events]\nprivacy_unit = "id"\n'
                      '[tables.events.measures]\namount = { threshold = 100 }\n'
                      '[tables.events.keys]\nregion = { keyset = ["north", "south"] }\n')
    return db, policy


def test_dates_times_timestamps_and_binary_bind_as_parameters(tmp_path):
    import datetime
    from decimal import Decimal

    from dpsql.testing import seeded_random

    db, policy = _events(tmp_path)
    sql = ("SELECT region, COUNT(*) FROM events WHERE day >= ? AND seen < ? AND t < ? AND tag = ? AND amount > ? "
           "GROUP BY region")
    params = [dpsql.Date(2020, 1, 2), dpsql.Timestamp(2020, 9, 1, 0, 0, 0), dpsql.Time(23, 0, 0), dpsql.Binary(b"\x01"),
              0]
    with dpsql.connect(db, policy, _random_source=seeded_random(5)) as con:
        cur = con.execute(sql, params)
        assert [r[0] for r in cur.fetchall()] == ["north", "south"]
        exact = con.session.plan(sql, params).where.sql("duckdb")  # the literals, bound in the order written
        assert exact.index("DATE") < exact.index("TIMESTAMP") < exact.index("AS TIME)") < exact.index("BLOB")
        con.execute("SELECT COUNT(*) FROM events WHERE seen >= ?", [datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)])
        con.execute("SELECT COUNT(*) FROM events WHERE amount >= ?", [Decimal("1.50")])
        with pytest.raises(dpsql.ProgrammingError) as err:
            con.execute("SELECT COUNT(*) FROM events WHERE amount > ?", [object()])
        assert err.value.code == "DP118"


def test_parameters_bind_in_the_order_written(con):
    """find_all walked the tree breadth first: `a > ? AND b > ? AND c > ?` bound the last marker first."""
    sql = ("SELECT COUNT(*) FROM establishments WHERE employees > ? AND payann > ? AND payqtr1 > ? "
           "AND state IN (?, ?) AND naics2 BETWEEN ? AND ?")
    where = con.session.plan(sql, [1, 2, 3, "CA", "NY", "11", "99"]).where.sql("duckdb")
    positions = [where.index(text) for text in ("> 1", "> 2", "> 3", "'CA'", "'NY'", "'11'", "'99'")]
    assert positions == sorted(positions), where


def test_count_distinct_of_a_column_has_sensitivity_one(con):
    """One row per unit: a unit adds or removes at most one distinct value (docs/sql.md)."""
    cur = con.cursor()
    cur.execute("SELECT naics2, COUNT(DISTINCT state) AS states, COUNT(*) AS n FROM establishments GROUP BY naics2")
    terms = {t.aggregate: t for t in cur.receipt.noise}
    assert terms["COUNT(DISTINCT state)"].sensitivity == (1.0,) == terms["COUNT(units)"].sensitivity
    assert terms["COUNT(DISTINCT state)"].sigma == terms["COUNT(units)"].sigma  # equal shares, equal noise
    rows = cur.fetchall()
    assert len(rows) == 24 and all(-20 < states < 80 for _, states, _ in rows)  # 51 states at most, σ ≈ 3
