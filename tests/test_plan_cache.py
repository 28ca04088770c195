"""The per-session plan cache (Session._planned) and the probes' shared parse: a repeated
statement is planned once, while everything that may differ between runs of the same text —
settings, parameters — is still applied on every run."""

from __future__ import annotations

from fractions import Fraction

from dpsql.intercept import probes


def test_a_repeated_statement_is_planned_once(con, monkeypatch):
    session = con.session
    calls = []
    real_plan = session.plan

    def counting_plan(sql, parameters=None):
        calls.append(sql)
        return real_plan(sql, parameters)

    monkeypatch.setattr(session, "plan", counting_plan)
    sql = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"
    first = con.execute(sql).fetchall()
    second = con.execute(sql).fetchall()
    assert calls == [sql]
    assert [r[0] for r in first] == [r[0] for r in second]  # the same public groups, fresh noise


def test_settings_apply_to_a_cached_plan(con):
    sql = "SELECT COUNT(*) FROM establishments"
    assert con.execute(sql).receipt.rho == Fraction(1, 10)
    con.execute("SET dpsql.rho = 0.05")
    assert con.execute(sql).receipt.rho == Fraction(1, 20)


def test_parameters_are_bound_on_every_run(con):
    """The text of a parameterised query does not say its values: it is never served from the
    cache. California holds far more establishments than Wyoming; noise (sigma about 2.2) cannot
    bridge that."""
    sql = "SELECT COUNT(*) FROM establishments WHERE state = ?"
    ca = con.execute(sql, ["CA"]).fetchall()[0][0]
    wy = con.execute(sql, ["WY"]).fetchall()[0][0]
    assert ca > 10 * max(wy, 1)
    assert con.execute(sql, ["CA"]).fetchall()[0][0] > 10 * max(wy, 1)


def test_the_probes_parse_a_statement_once():
    probes._parsed_cached.cache_clear()
    sql = "SELECT state, COUNT(*) FROM establishments GROUP BY state -- not a probe"
    assert probes.parsed(sql) is probes.parsed(sql)
    assert probes._parsed_cached.cache_info().misses == 1
    long_sql = "SELECT 1" + " " * probes.CACHED_LENGTH
    assert probes.parsed(long_sql) is not probes.parsed(long_sql)  # too long to keep
