"""The plan cache (Session._planned, shared by the sessions of a process: dpsql/sql/plan_cache.py)
and the probes' shared parse: a repeated statement is planned once, while everything that may
differ between runs of the same text — settings, parameters — is still applied on every run, and
a session on another policy or schema never gets a plan made under the first one. The empty
schema twin is shared by the sessions of one schema too (dpsql/backends/duckdb_local.py)."""

from __future__ import annotations

import shutil
from fractions import Fraction

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.backends import duckdb_local
from dpsql.errors import QueryRefused
from dpsql.intercept import probes
from dpsql.policy.loader import parse_policy
from dpsql.sql import plan_cache


def test_a_repeated_statement_is_planned_once(con, monkeypatch):
    calls = _counting(con.session, monkeypatch)
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


def test_parameter_values_are_part_of_the_plans_key(con, monkeypatch):
    """A parameterised query is planned once per text and values (each value by its type and
    repr: 1, 1.0 and True are three plans); values not in a list or tuple are planned each time
    (and still bound: a generator is read once, by the plan)."""
    calls = _counting(con.session, monkeypatch)
    sql = "SELECT COUNT(*) FROM establishments WHERE employees > ?"
    for values in ([1], [1], (1,), [1.0], [True], [1.0], [2], [True]):
        con.execute(sql, values).fetchall()
    assert len(calls) == 4  # 1, 1.0, True, 2
    assert plan_cache.key(sql, [1]) == plan_cache.key(sql, (1,)) != plan_cache.key(sql, [1.0])
    assert plan_cache.key(sql, iter([1])) is None and plan_cache.key(sql, [[1, 2]]) is None
    con.execute(sql, (v for v in [5])).fetchall()
    con.execute(sql, (v for v in [5])).fetchall()
    assert len(calls) == 6
    assert plan_cache.key(sql, ["x" * plan_cache.TEXT]) is None


def test_the_probes_parse_a_statement_once_per_analyst():
    probes._parsed_cached.cache_clear()
    sql = "SELECT state, COUNT(*) FROM establishments GROUP BY state -- not a probe"
    assert probes.parsed(sql, "alice") is probes.parsed(sql, "alice")
    assert probes._parsed_cached.cache_info().misses == 1
    assert probes.parsed(sql, "bob") is not probes.parsed(sql, "alice")  # no analyst's texts show in another's timing
    long_sql = "SELECT 1" + " " * probes.CACHED_LENGTH
    assert probes.parsed(long_sql, "alice") is not probes.parsed(long_sql, "alice")  # too long to keep


def _counting(session, monkeypatch):
    calls = []
    real_plan = session.plan

    def counting_plan(sql, parameters=None):
        calls.append(sql)
        return real_plan(sql, parameters)

    monkeypatch.setattr(session, "plan", counting_plan)
    return calls


def test_a_new_session_on_the_same_policy_and_schema_reuses_the_plan(demo, monkeypatch):
    """A BI tool that opens a connection per query plans each text once in the process."""
    sql = "SELECT state, COUNT(*) FROM establishments GROUP BY state -- reused across sessions"
    with dpsql.connect(*demo) as first:
        calls = _counting(first.session, monkeypatch)
        first.execute(sql).fetchall()
        assert calls == [sql]
        context = first.session._plan_context
    with dpsql.connect(*demo) as second:
        assert second.session._plan_context == context
        calls = _counting(second.session, monkeypatch)
        assert len(second.execute(sql).fetchall()) == 51
        assert calls == []


def test_a_session_on_another_policy_never_gets_the_plan_made_under_the_first(demo, tmp_path):
    """The data owner edits the policy while a process runs: the same text, planned when county
    was a key, is refused once it is not — the file's bytes (their digest) are in the cache key,
    not only its path."""
    db, policy = demo
    sql = "SELECT county, SUM(payann) FROM establishments GROUP BY county"
    with dpsql.connect(db, policy) as con:
        con.execute(sql).fetchall()
    text = policy.read_text()
    edited = text.replace("county = {}     # private key: no keyset (needs partition selection)\n", "")
    assert edited != text
    policy.write_text(edited)
    with dpsql.connect(db, policy) as con:
        with pytest.raises(QueryRefused):
            con.execute(sql)
    # The same bytes at another path: a context of its own as well (the path is in the key).
    same = tmp_path / "same" / "demo.policy.toml"
    same.parent.mkdir()
    shutil.copyfile(policy, same)
    with dpsql.connect(db, policy) as a, dpsql.connect(db, same) as b:
        assert a.session._plan_context != b.session._plan_context


def test_a_policy_not_read_from_a_file_has_a_context_of_its_own(con):
    session = con.session
    doc = {"tables": {"establishments": {"privacy_unit": "id"}}}
    policy = parse_policy(doc)
    assert policy.digest is None
    first = plan_cache.context(policy, session.schema, session.not_null, session.analyst)
    assert first != plan_cache.context(policy, session.schema, session.not_null, session.analyst)
    assert session._plan_context == plan_cache.context(session.policy, session.schema, session.not_null,
                                                       session.analyst)


def test_analysts_do_not_share_plans(demo, monkeypatch):
    """A cached plan answers faster than a new one: sharing across analysts would tell one
    analyst of a wire server, by timing, which texts another had sent."""
    sql = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2 -- per analyst"
    with dpsql.connect(*demo, analyst="alice") as alice:
        alice.execute(sql).fetchall()
        context = alice.session._plan_context
    with dpsql.connect(*demo, analyst="bob") as bob:
        assert bob.session._plan_context != context
        calls = _counting(bob.session, monkeypatch)
        bob.execute(sql).fetchall()
        assert calls == [sql]


def test_sessions_of_one_schema_share_the_empty_twin_and_see_only_their_own_cells(demo, monkeypatch):
    """One DuckDB instance per schema in the process (a new one cost 15-30 ms per connection):
    each session has its own cursor, the noisy cells one registers are invisible to another, and
    closing one session leaves the other's twin working."""
    monkeypatch.setattr(duckdb_local, "IDLE_TWINS", 0)  # an instance nobody holds is closed at once
    sql = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2"
    a, b = dpsql.connect(*demo), dpsql.connect(*demo)
    try:
        a.execute(sql).fetchall()
        b.execute(sql).fetchall()
        # b may have found a's pass recorded (dpsql/records/check.py) and built no twin: ask both
        a.session.engine._twin_connection(), b.session.engine._twin_connection()
        ta, tb = a.session.engine._twin, b.session.engine._twin
        others = duckdb_local._TWINS._entries[ta._key][1] - 2  # handles other tests left open in this process
        assert ta.con is not tb.con
        ta.con.execute("CREATE TABLE __one_instance (x INTEGER)")  # what one cursor makes, the other sees
        try:
            assert tb.con.execute("SELECT COUNT(*) FROM __one_instance").fetchall() == [(0,)]
        finally:
            ta.con.execute("DROP TABLE __one_instance")
        ta.con.register("__noisy", {"x": np.array([1, 2, 3])})
        with pytest.raises(duckdb.CatalogException):
            tb.con.execute("SELECT * FROM __noisy")
        assert tb.con.execute("SELECT COUNT(*) FROM establishments").fetchall() == [(0,)]
        a.close()
        ta.close()  # a second close of a handle must not release the instance another session holds
        assert tb.con.execute("SELECT COUNT(*) FROM establishments").fetchall() == [(0,)]
        assert len(b.execute(sql).fetchall()) == 24
    finally:
        a.close()
        b.close()
    entry = duckdb_local._TWINS._entries.get(ta._key)
    if others == 0:
        assert entry is None  # no user left, none kept idle: closed
    else:
        assert entry is not None and entry[1] == others


REGIONS = ("SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code "
           "GROUP BY s.region")


def test_public_values_are_shared_by_one_analysts_sessions_of_one_file(demo):
    """A new connection does not read the public tables again; another analyst's does."""
    with dpsql.connect(*demo) as first:
        assert len(first.execute(REGIONS).fetchall()) == 4
    with dpsql.connect(*demo) as second:
        plan, _ = second.session._planned(REGIONS, None)
        assert second.session.domain._images.own == {}
        blocks = second.session.domain.blocks(plan)  # served from the process's values
        assert second.session.domain._images.own == {} and [len(rows) for _, rows in blocks] == [4]
    with dpsql.connect(*demo, analyst="someone else") as other:
        plan, _ = other.session._planned(REGIONS, None)
        other.session.domain.blocks(plan)
        assert len(other.session.domain._images.own) == 1  # read afresh


def test_a_changed_file_is_never_served_the_old_public_values(demo, tmp_path):
    """The data owner edits a public table between two sessions: the next one sees the edit
    (the file's identity is in the key)."""
    import duckdb as duck

    db, policy = demo
    mine = tmp_path / "demo.duckdb"
    shutil.copyfile(db, mine)
    with dpsql.connect(mine, policy) as con:
        assert len(con.execute(REGIONS).fetchall()) == 4
    w = duck.connect(str(mine))
    w.execute("UPDATE states SET region = 'Pacific' WHERE region = 'West'")
    w.close()
    with dpsql.connect(mine, policy) as con:
        assert sorted(r[0] for r in con.execute(REGIONS).fetchall()) == ["Midwest", "Northeast", "Pacific", "South"]
