"""Refusals: stable codes, helpful text, never a value from the data, never a charge."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.backends.duckdb import DuckDBEngine
from dpsql.errors import DpsqlError, PolicyFileError
from dpsql.ledger.book import Charge, Ledger
from dpsql.policy.model import Budget
from dpsql.testing import seeded_random
import table_rows

CASES = [
    ("SELECT id, payann FROM establishments", "DP201"),
    ("SELECT * FROM establishments", "DP108"),
    ("SELECT firm_id, COUNT(*) FROM establishments GROUP BY firm_id", "DP206"),
    ("SELECT MAX(payann) FROM establishments", "DP109"),
    ("SELECT COVAR_POP(payann, employees) FROM establishments", "DP109"),
    ("SELECT MEDIAN(payqtr1) FROM establishments", "DP204"),  # a measure whose policy declares no quantile range
    ("SELECT STDDEV(firm_id) FROM establishments", "DP204"),  # a spread of a column that is not a measure
    ("SELECT SUM(firm_id) FROM establishments", "DP204"),
    ("SELECT SUM(payann * 2) FROM establishments", "DP204"),
    ("SELECT SUM(DISTINCT payann) FROM establishments", "DP116"),
    ("SELECT SUM(DISTINCT payann) FROM establishments", "DP116"),
    ("SELECT COUNT(*) FROM nope", "DP202"),
    ("SELECT COUNT(*) FROM _dpsql_demo_meta", "DP202"),
    ("SELECT SUM(nope) FROM establishments", "DP203"),
    ("SELECT COUNT(*) FROM establishments WHERE nope = 1", "DP203"),
    ("SELECT COUNT(*) FROM establishments; SELECT 1", "DP101"),
    ("", "DP101"),
    ("SELEC COUNT(*) FROM establishments", "DP100"),
    ("SELECT COUNT(*) FROM establishments UNION SELECT COUNT(*) FROM devices", "DP103"),
    ("DROP TABLE establishments", "DP102"),
    ("INSERT INTO establishments VALUES (1)", "DP102"),
    ("COPY establishments TO '/tmp/x.csv'", "DP102"),
    ("ATTACH '/tmp/x.db'", "DP102"),
    ("INSTALL httpfs", "DP102"),
    ("PRAGMA version", "DP102"),
    ("SET threads = 1", "DP102"),
    ("SELECT COUNT(*) FROM read_csv('/etc/passwd')", "DP107"),
    ("SELECT COUNT(*) FROM '/etc/passwd'", "DP107"),
    ("SELECT COUNT(*) FROM glob('*')", "DP107"),
    ("SELECT COUNT(*) FROM establishments e JOIN devices d ON e.state = d.device_model", "DP105"),
    ("SELECT COUNT(*) FROM establishments e JOIN devices d ON e.id = d.user_id", "DP217"),  # both one row per unit
    ("SELECT COUNT(*) FROM (SELECT * FROM establishments ORDER BY payann LIMIT 10)", "DP104"),  # aggregating: over_answers
    ("WITH x AS (SELECT payann * 2 AS p FROM establishments) SELECT SUM(p) FROM x", "DP104"),
    ("SELECT COUNT(*) FROM establishments WHERE payann > (SELECT 1)", "DP104"),
    ("SELECT SUM(payann) OVER () FROM establishments", "DP106"),
    ("SELECT COUNT(*) FROM establishments WHERE my_udf(state)", "DP110"),
    ("SELECT COUNT(*) FROM establishments WHERE SUM(payann) > 1", "DP112"),
    ("SELECT state, payann FROM establishments GROUP BY state", "DP201"),
    ("SELECT state, COUNT(*) FROM establishments", "DP201"),
    ("SELECT COUNT(*) FROM establishments GROUP BY 5", "DP114"),
    ("SELECT COUNT(*) FROM establishments WHERE state = ?", "DP118"),
]


@pytest.mark.parametrize("sql, code", CASES)
def test_refused_with_stable_code(con, sql, code):
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert err.value.code == code, str(err.value)
    assert isinstance(err.value, (dpsql.ProgrammingError, dpsql.NotSupportedError))
    assert con.session.ledger.spent == 0


def test_refusal_points_at_line_and_column(con):
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT naics2,\n       MAX(payann)\nFROM establishments GROUP BY naics2")
    assert (err.value.line, err.value.column) == (2, 8)
    assert err.value.hint


#: text planted in a private column of a small database: no refusal and no answer may quote it
SECRETS = ["zq-7781-secret", "mx-0042-hidden", "2020-13-45", "Could not convert"]


def small_database(tmp_path: Path, tables: dict[str, tuple[str, list[tuple]]], policy_tables: str,
                   total_rho: str = "100") -> tuple[Path, Path]:
    """A DuckDB file of the given tables (``name: (column DDL, rows)``) and its policy, whose
    ledger lives in ``tmp_path``."""
    db = tmp_path / "small.duckdb"
    con = duckdb.connect(str(db))
    for name, (ddl, rows) in tables.items():
        con.execute(f"CREATE TABLE {name} ({ddl})")
        if rows:
            table_rows.insert(con, name, rows)
    con.close()
    delta = "total_delta = 0.5\n" if "total_delta" in {f.name for f in dataclasses.fields(Budget)} else ""
    policy = tmp_path / "small.policy.toml"
    policy.write_text(f"[budget]\ndefault_rho = 0.1\ntotal_rho = {total_rho}\n{delta}"
                      f"ledger = {json.dumps(str(tmp_path / 'small.ledger.sqlite'))}\n\n" + policy_tables)
    return db, policy


PEOPLE_POLICY = """
[tables.people]
privacy_unit = "id"

[tables.people.measures]
amount = { threshold = 100 }

[tables.people.keys]
region = { keyset = ["north", "south"] }
"""


def _quoted(text: str, sql: str) -> list[str]:
    return [s for s in SECRETS if s in text and s not in sql]


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM people WHERE CAST(note AS INTEGER) = 5",
    "SELECT COUNT(*) FROM people WHERE CAST(note AS DATE) > DATE '2020-01-01'",
    "SELECT region, SUM(amount) FROM people WHERE CAST(SUBSTR(note, 4, 4) AS INTEGER) > 100 GROUP BY region",
    "SELECT AVG(amount) FROM people WHERE amount / CAST(note AS INTEGER) > 1",
    "SELECT COUNT(*) FROM people WHERE note = 5",
    "SELECT COUNT(*) FROM people WHERE note + 1 > 0",
    "SELECT COUNT(*) FROM people WHERE note LIKE 5",
    "SELECT region, COUNT(*) FROM people WHERE note = 'zq-7781-secret' GROUP BY region",
    "SELECT note, COUNT(*) FROM people GROUP BY note",
    "SELECT CAST(note AS INTEGER) AS x, COUNT(*) FROM people GROUP BY x",
    "SELECT MAX(note) FROM people",
    "SELECT SUM(CAST(note AS INTEGER)) FROM people",
])
def test_refusals_and_answers_never_quote_planted_secrets(tmp_path, sql):
    """A cast or comparison that fails on some row must neither fail the query (that would leak
    the row) nor quote it; and what an accepted query returns — rows, column names, receipt —
    holds no value of a private column either (only values the SQL itself wrote)."""
    rows = [(i, "north" if i % 2 else "south", 10 * i, SECRETS[i % len(SECRETS)]) for i in range(1, 41)]
    db, policy = small_database(tmp_path, {"people": ("id BIGINT PRIMARY KEY, region VARCHAR, amount BIGINT, "
                                                      "note VARCHAR", rows)}, PEOPLE_POLICY)
    with dpsql.connect(db, policy, _random_source=seeded_random(5)) as con:
        cur = con.cursor()
        try:
            cur.execute(sql)
        except DpsqlError as exc:
            assert not _quoted(str(exc) + json.dumps(exc.to_dict()), sql), str(exc)
            return
        shown = json.dumps({"rows": [[str(v) for v in r] for r in cur.fetchall()],
                            "description": [str(d) for d in cur.description],
                            "receipt": cur.receipt.to_dict()}, default=str)
        assert not _quoted(shown, sql), shown


def test_refusals_never_quote_data(con, session):
    """A cast that fails on some row must not fail the query (that would leak the row) nor
    quote it: casts become TRY_CAST and the WHERE runs inside TRY(). Accepted or refused, what
    comes back (rows, receipt, message) quotes no value of the data."""
    cur = con.execute("SELECT COUNT(*) FROM establishments WHERE CAST(state AS INTEGER) = 5")
    assert cur.fetchone() is not None
    with pytest.raises(DpsqlError) as err:  # would cast every state to a number: refused from the schema
        con.execute("SELECT COUNT(*) AS n FROM establishments WHERE state = 5")
    assert err.value.code == "DP110" and session.ledger.spent == cur.receipt.rho
    values = {r[0] for r in session.engine.run("SELECT DISTINCT county FROM establishments UNION ALL "
                                               "SELECT DISTINCT state FROM establishments")}
    for sql in ["SELECT COUNT(*) FROM establishments WHERE state + 1 > 0",
                "SELECT COUNT(*) FROM establishments WHERE CAST(county AS DATE) > DATE '2020-01-01'",
                "SELECT COUNT(*) FROM establishments WHERE county + 1 > 0",
                "SELECT naics2, SUM(payann) FROM establishments WHERE CAST(naics AS DATE) IS NULL GROUP BY naics2",
                "SELECT COUNT(*) FROM establishments WHERE naics2 LIKE 5"]:
        try:
            cur = con.execute(sql)
        except DpsqlError as exc:
            shown = str(exc)
        else:
            shown = json.dumps({"rows": cur.fetchall(), "receipt": cur.receipt.to_dict()}, default=str)
        assert not any(f"'{v}'" in shown or f'"{v}"' in shown for v in values), shown


def test_engine_withholds_duckdb_messages(tmp_path):
    """DuckDB quotes the value a cast failed on; the engine must pass on a fixed message only
    (defence in depth: the rewrite already makes such casts TRY_CAST)."""
    db, _ = small_database(tmp_path, {"people": ("id BIGINT PRIMARY KEY, note VARCHAR", [(1, SECRETS[0])])}, "")
    sql = "SELECT CAST(note AS INTEGER) FROM people"
    raw = duckdb.connect(str(db), read_only=True)
    with pytest.raises(duckdb.Error, match=SECRETS[0]):  # what would leak
        raw.execute(sql).fetchall()
    raw.close()
    engine = DuckDBEngine(db)
    try:
        with pytest.raises(DpsqlError) as err:
            engine.run(sql)
        assert err.value.code == "DP120"
        assert SECRETS[0] not in str(err.value) and SECRETS[0] not in json.dumps(err.value.to_dict())
    finally:
        engine.close()


def test_engine_lockdown_holds_even_if_validation_were_bypassed(demo):
    """Defence in depth: the engine's connection cannot read files or reconfigure itself."""
    engine = DuckDBEngine(demo[0])
    try:
        for sql in ["SELECT * FROM read_csv('/etc/passwd')", "COPY establishments TO '/tmp/dpsql_leak.csv'",
                    "ATTACH '/tmp/dpsql_leak.db'", "SET enable_external_access = true", "INSTALL httpfs",
                    "CREATE TABLE x AS SELECT 1"]:
            with pytest.raises(DpsqlError) as err:
                engine.run(sql)
            assert err.value.code == "DP120"
    finally:
        engine.close()


def test_too_many_groups_is_refused_before_any_charge(con, monkeypatch):
    """DP207 depends only on the policy's keysets (and the released private groups), never on
    which public keys occur in the data."""
    import dpsql.pipeline.domain

    monkeypatch.setattr(dpsql.pipeline.domain, "MAX_CELLS", 10)
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state")
    assert err.value.code == "DP207"
    assert con.session.ledger.spent == 0


@pytest.mark.parametrize("sql, code, line, column", [
    ("EXPORT DATABASE 'dump'", "DP102", 1, 1),
    ("  -- a comment\n  LOAD httpfs", "DP102", 2, 3),
    ("SELECT *\nFROM 'file.csv'", "DP107", 2, 6),
    ("SELECT COUNT(*) FROM establishments\nGROUP BY ALL", "DP114", 2, 1),
    ("SELECT COUNT(*)\nFROM establishments WHERE EXISTS (SELECT 1)", "DP104", 2, 27),
    ("SELECT COUNT(*) FROM establishments WHERE state = ?", "DP118", 1, 51),
    ("SELECT COUNT(*) FROM establishments\nWHERE naics2 = '11' AND state = $1", "DP118", 2, 33),
    ("SELECT COUNT(*) FROM establishments WHERE state = :st", "DP118", 1, 51),
    ("SELECT COUNT(*) FROM establishments e\n  RIGHT JOIN states s ON e.state = s.code", "DP105", 2, 3),
    ("SELECT s.name, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code\nGROUP BY s.region",
     "DP201", 1, 8),
    ("SELECT COUNT(*) FROM establishments GROUP BY\n  payann > 10", "DP206", 2, 3),
])
def test_precise_refusals_point_at_the_statement(con, sql, code, line, column):
    # (a numbered parameter is refused even with values: $1 / :name would bind by position, not by name)
    with pytest.raises(DpsqlError) as err:
        con.execute(sql)
    assert (err.value.code, err.value.line, err.value.column) == (code, line, column), str(err.value)
    assert err.value.hint


def test_numbered_parameters_are_refused_even_with_values(con):
    """``$2 ... $1`` bound in order of appearance would silently swap the values."""
    with pytest.raises(DpsqlError) as err:
        con.execute("SELECT COUNT(*) FROM establishments WHERE state = $2 AND naics2 = $1", ["11", "CA"])
    assert err.value.code == "DP118" and "qmark" in err.value.hint
    assert con.session.ledger.spent == 0


# ----------------------------------------------------------------------------- the privacy unit


def test_repeated_units_refuse_every_query_and_charge_nothing(tmp_path):
    """A private table whose privacy unit repeats (no PRIMARY KEY, one unit in two rows) breaks
    every sensitivity dpsql assumes: every query on it is refused with the policy error, before
    anything is charged. A NULL unit likewise. A table with one row per unit still answers."""
    rows = [(i, "north" if i % 2 else "south", 10 * i, str(i)) for i in range(1, 31)]
    ddl = "id BIGINT, region VARCHAR, amount BIGINT, code VARCHAR"
    tables = {"people": (ddl, rows + [(7, "south", 5000, "7")]),  # unit 7 has two rows
              "nulls": (ddl, rows + [(None, "north", 1, "x")]),
              "fine": (ddl, rows)}
    policy = "".join(PEOPLE_POLICY.replace("people", t).replace('region = { keyset = ["north", "south"] }',
                                                                'region = { keyset = ["north", "south"] }\ncode = {}')
                     for t in tables)
    db, policy_path = small_database(tmp_path, tables, policy)
    with dpsql.connect(db, policy_path, rho="0.5", _random_source=seeded_random(6)) as con:
        for table in ("people", "nulls"):
            for sql in [f"SELECT COUNT(*) FROM {table}", f"SELECT SUM(amount) FROM {table}",
                        f"SELECT AVG(amount) FROM {table} WHERE region = 'north'",
                        f"SELECT region, COUNT(*), SUM(amount) FROM {table} GROUP BY region",
                        f"SELECT code, COUNT(*) FROM {table} GROUP BY code",
                        f"SELECT COUNT(*) FROM {table}"]:  # again: a refusal is not remembered as a pass
                cur = con.cursor()
                with pytest.raises(dpsql.OperationalError) as err:
                    cur.execute(sql)
                assert isinstance(err.value, PolicyFileError) and err.value.code == "DP401", str(err.value)
                assert cur.description is None and cur.receipt is None
        assert con.session.ledger.spent == 0 and con.session.ledger.history() == []
        assert con.execute("SELECT region, COUNT(*) FROM fine GROUP BY region").fetchall()
        assert len(con.session.ledger.history()) == 1


# ----------------------------------------------------------------------------- the binding budget check


def _one_query_budget(demo, tmp_path) -> Path:
    """The demo policy with a budget that covers exactly one query at the default ρ = 0.1."""
    policy = Path(demo[1])
    text = policy.read_text()
    assert text.count("total_rho = 10.0") == 1
    policy.write_text(text.replace("total_rho = 10.0", "total_rho = 0.1"))
    return policy


SQL_ONE = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"


def test_charge_is_binding_when_two_sessions_pass_the_early_check(demo, tmp_path):
    """The early ``Ledger.check`` is advisory; the check inside ``Ledger.charge`` binds. Session A
    passes its early check, then — before A charges — session B (same analyst, same ledger)
    passes its own and is answered. A must then be refused DP301 with nothing released and
    nothing charged: exactly one release for a budget of one."""
    policy = _one_query_budget(demo, tmp_path)
    a = dpsql.connect(demo[0], policy, analyst="ann", _random_source=seeded_random(21))
    b = dpsql.connect(demo[0], policy, analyst="ann", _random_source=seeded_random(22))
    try:
        answered = {}
        real_check = a.session.ledger.check

        def check_then_b_runs(*args, **kwargs):
            real_check(*args, **kwargs)  # A passes: the whole budget is left
            answered["b"] = b.execute(SQL_ONE).fetchall()  # B passes its check, charges, is answered

        a.session.ledger.check = check_then_b_runs
        cur = a.cursor()
        with pytest.raises(dpsql.BudgetExceededError) as err:
            cur.execute(SQL_ONE)
        assert err.value.code == "DP301" and isinstance(err.value, dpsql.OperationalError)
        assert len(answered["b"]) == 24  # the hook ran: B got the one release
        assert cur.description is None and cur.receipt is None
        with pytest.raises(dpsql.Error):
            cur.fetchall()
        history = a.session.ledger.history()
        assert [c.session for c in history] == [b.session.session_id]
        assert a.session.ledger.spent == b.session.ledger.spent == Fraction(1, 10)
    finally:
        a.close()
        b.close()


def test_charge_is_binding_when_the_early_check_is_bypassed(demo, tmp_path, monkeypatch):
    """With the early check gone entirely, the second of two sessions still gets DP301 and no rows."""
    policy = _one_query_budget(demo, tmp_path)
    monkeypatch.setattr(Ledger, "check", lambda self, *args, **kwargs: None)
    with dpsql.connect(demo[0], policy, analyst="ann", _random_source=seeded_random(23)) as a, \
            dpsql.connect(demo[0], policy, analyst="ann", _random_source=seeded_random(24)) as b:
        assert len(a.execute(SQL_ONE).fetchall()) == 24
        b.execute("SET dpsql.reuse = off")  # a fresh release, not a's answer again (pipeline/reuse.py)
        cur = b.cursor()
        with pytest.raises(dpsql.BudgetExceededError) as err:
            cur.execute(SQL_ONE)
        assert err.value.code == "DP301"
        assert cur.description is None and cur.receipt is None
        assert [c.session for c in b.session.ledger.history()] == [a.session.session_id]
        assert b.session.ledger.spent == Fraction(1, 10)


def test_ledger_charge_refuses_over_budget_and_records_nothing(tmp_path):
    """``Ledger.charge`` itself refuses what the remaining budget cannot cover — per analyst and
    for the data set — and records nothing: no charge row, no change of the totals."""
    path = tmp_path / "l.ledger.sqlite"
    ann = Ledger(path, "ann", Fraction(1, 10), Fraction(3, 20))
    bob = Ledger(path, "bob", Fraction(1), Fraction(3, 20))
    try:
        def charge(ledger: Ledger, query: str, rho: Fraction) -> int:
            return ledger.charge(Charge(query=query, rho=rho, mechanism="discrete_gaussian"))

        charge(ann, "q1", Fraction(1, 10))
        for over in (Fraction(1, 10**9), Fraction(1, 10)):
            with pytest.raises(dpsql.BudgetExceededError) as err:
                charge(ann, "over", over)
            assert err.value.code == "DP301"
        assert ann.spent == Fraction(1, 10) and ann.remaining == 0
        charge(bob, "q2", Fraction(1, 20))  # bob's own budget is 1, but the data set's 3/20 is now spent
        with pytest.raises(dpsql.BudgetExceededError):
            charge(bob, "over the data set", Fraction(1, 10**9))
        assert bob.spent == Fraction(1, 20) and bob.remaining == 0
        reopened = Ledger(path, "ann", Fraction(1, 10))  # what another process sees
        try:
            assert [c.query for c in reopened.history()] == ["q1", "q2"]
            assert reopened.spent == Fraction(1, 10)
        finally:
            reopened.close()
    finally:
        ann.close()
        bob.close()
