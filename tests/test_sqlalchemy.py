"""The SQLAlchemy dialect and the probes BI tools send, proven with the real clients.

SQLAlchemy (Core, reflection, the engine's pool) and pandas.read_sql run against the demo
database; every statement still goes through dpsql's session: same refusals, noise and budget.
Noise makes exact numbers meaningless here, so the tests check structure and privacy
properties (noisy against the exact values, within the receipt's error bars), except where a
seeded test-only random source is passed through ``connect_args``.
"""

from __future__ import annotations

from fractions import Fraction
from importlib.metadata import entry_points
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy import MetaData, Table, func, inspect, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy import types as sqltypes

import dpsql
from dpsql.faces.sqlalchemy import DpsqlDialect, budget, last_receipt, sqlalchemy_type
from dpsql.testing import seeded_random

POLICY_TABLES = ["devices", "establishments", "naics_sectors", "paper_table1", "paper_table2", "persons", "states"]  # private and public
PAY_BY_SECTOR = "SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2"


def url(demo: tuple[Path, Path], **query: str) -> sa.engine.URL:
    db, policy = demo
    return sa.engine.URL.create("dpsql", database=str(db), query={"policy": str(policy), **query})


@pytest.fixture()
def engine(demo):
    eng = sa.create_engine(url(demo))
    yield eng
    eng.dispose()


@pytest.fixture()
def establishments(engine) -> Table:
    return Table("establishments", MetaData(), autoload_with=engine)


def spent(bind) -> str:
    return budget(bind)["spent"]


# --------------------------------------------------------------------------- URL and entry point


def test_the_entry_point_registers_the_dialect():
    names = {ep.name: ep.value for ep in entry_points(group="sqlalchemy.dialects")}
    assert names.get("dpsql") == "dpsql.faces.sqlalchemy:DpsqlDialect"
    assert sa.dialects.registry.load("dpsql") is DpsqlDialect
    assert DpsqlDialect.import_dbapi() is dpsql


def test_a_url_string_opens_the_database_and_policy(demo):
    db, policy = demo
    eng = sa.create_engine(f"dpsql:///{db}?policy={policy}&rho=0.5&analyst=ana&threads=2")
    with eng.connect() as conn:
        session = conn.connection.dbapi_connection.session
        assert session.database == db
        assert session.policy.path == policy
        assert session.rho == Fraction(1, 2)
        assert session.analyst == "ana"
    eng.dispose()


def test_dpsql_with_no_path_opens_the_demo(demo):
    eng = sa.create_engine("dpsql://")  # the demo fixture pointed DPSQL_HOME at its build
    try:
        with eng.connect() as conn:
            assert conn.connection.dbapi_connection.session.database == demo[0]
        assert inspect(eng).get_table_names() == POLICY_TABLES
    finally:
        eng.dispose()


@pytest.mark.parametrize("bad, says", [
    ("dpsql://localhost/x.duckdb", "no host"),
    ("dpsql:///x.duckdb?polcy=p.toml", "polcy"),
    ("dpsql:///x.duckdb?threads=many", "threads"),
])
def test_bad_urls_are_refused_with_a_reason(bad, says):
    with pytest.raises(sa_exc.ArgumentError, match=says):
        sa.create_engine(bad).connect()


# --------------------------------------------------------------------------- reflection


def test_reflection_lists_the_policy_tables_only(engine):
    insp = inspect(engine)
    assert insp.get_schema_names() == ["main"]
    assert insp.default_schema_name == "main"
    assert insp.get_table_names() == POLICY_TABLES  # not _dpsql_demo_meta, which the file also holds
    assert insp.get_table_names(schema="other") == []
    assert insp.get_view_names() == []
    assert insp.has_table("establishments") and insp.has_table("ESTABLISHMENTS")
    assert not insp.has_table("_dpsql_demo_meta")
    assert not insp.has_table("establishments", schema="other")


def test_reflection_of_columns_types_and_roles(engine):
    insp = inspect(engine)
    cols = {c["name"]: c for c in insp.get_columns("establishments")}
    with engine.connect() as conn:
        schema = conn.connection.dbapi_connection.session.schema["establishments"]
    assert list(cols) == list(schema)
    assert isinstance(cols["state"]["type"], sqltypes.String)
    assert isinstance(cols["payann"]["type"], sqltypes.BigInteger)
    assert cols["id"]["nullable"] is False
    assert cols["id"]["comment"].startswith("privacy unit")
    assert cols["payann"]["comment"].startswith("measure")
    assert cols["state"]["comment"].startswith("public key")
    assert cols["county"]["comment"].startswith("private key")
    assert cols["firm_id"]["comment"] == "private: WHERE only"
    assert insp.get_pk_constraint("establishments")["constrained_columns"] == []
    assert insp.get_foreign_keys("establishments") == []
    assert insp.get_indexes("establishments") == []
    assert insp.get_unique_constraints("establishments") == []
    assert "one row per id" in insp.get_table_comment("establishments")["text"]
    with pytest.raises(sa_exc.NoSuchTableError):
        insp.get_columns("_dpsql_demo_meta")


def test_metadata_reflect_loads_every_policy_table(engine):
    md = MetaData()
    md.reflect(engine)
    assert sorted(md.tables) == POLICY_TABLES
    assert isinstance(md.tables["devices"].c.latency_ms.type, sqltypes.Double)


@pytest.mark.parametrize("duckdb_type, expected", [
    ("BIGINT", sqltypes.BigInteger),
    ("INTEGER", sqltypes.Integer),
    ("VARCHAR", sqltypes.String),
    ("DOUBLE", sqltypes.Double),
    ("BOOLEAN", sqltypes.Boolean),
    ("DATE", sqltypes.Date),
    ("TIMESTAMP", sqltypes.DateTime),
    ("INTEGER[]", sqltypes.NullType),
    ("STRUCT(a INTEGER)", sqltypes.NullType),
])
def test_duckdb_types_map_to_sqlalchemy_types(duckdb_type, expected):
    assert type(sqlalchemy_type(duckdb_type)) is expected


def test_decimal_and_time_zone_types_keep_their_parameters():
    dec = sqlalchemy_type("DECIMAL(18,3)")
    assert isinstance(dec, sqltypes.Numeric) and (dec.precision, dec.scale) == (18, 3)
    assert sqlalchemy_type("TIMESTAMP WITH TIME ZONE").timezone is True


# --------------------------------------------------------------------------- Core statements


def test_core_select_group_by_is_answered_with_noise(engine, establishments):
    t = establishments
    q = (select(t.c.naics2, func.count().label("n"), func.sum(t.c.payann).label("pay"))
         .where(t.c.state == "CA").group_by(t.c.naics2).order_by(t.c.naics2))
    with engine.connect() as conn:
        rows = conn.execute(q).all()
        receipt = last_receipt(conn)
        session = conn.connection.dbapi_connection.session
    keyset = session.policy.tables["establishments"].keys["naics2"].keyset
    assert [r.naics2 for r in rows] == sorted(keyset)  # every public key, empty groups too
    assert receipt.rho == Fraction(1, 10) and receipt.table == "establishments"
    assert set(receipt.columns) == {"n", "pay"}
    assert budget(engine)["spent"] == "0.1"


def test_core_join_to_a_public_table_and_group_by_its_column(engine, establishments):
    """SQLAlchemy's own JOIN ... ON rendering of a join to a public table (reflected like any
    other), grouped by the public column; pandas reads the same statement."""
    states = Table("states", MetaData(), autoload_with=engine)
    t = establishments
    q = (select(states.c.region, func.count().label("n"), func.sum(t.c.payann).label("pay"))
         .select_from(t.join(states, t.c.state == states.c.code))
         .group_by(states.c.region).order_by(states.c.region))
    assert "JOIN states ON establishments.state = states.code" in str(q.compile(engine))
    with engine.connect() as conn:
        rows = conn.execute(q).all()
        frame = pd.read_sql(q, conn)
    assert [r.region for r in rows] == ["Midwest", "Northeast", "South", "West"]
    assert list(frame["region"]) == ["Midwest", "Northeast", "South", "West"]


def test_core_limit_and_offset_are_inline_integers_and_cache_safely(engine, establishments):
    t = establishments
    base = select(t.c.state, func.count().label("n")).group_by(t.c.state).order_by(t.c.state)
    sql = str(base.limit(3).offset(2).compile(engine))
    assert "LIMIT ?" not in sql and "OFFSET ?" not in sql
    assert "LIMIT -1" not in str(base.offset(2).compile(engine))
    with engine.connect() as conn:
        # Same statement shape twice: the cached compiled form must not freeze the first LIMIT.
        three = conn.execute(base.limit(3).offset(2)).all()
        five = conn.execute(base.limit(5)).all()
        fetched = conn.execute(base.fetch(2)).all()
    assert [r.state for r in three] == ["AR", "AZ", "CA"]
    assert len(five) == 5 and len(fetched) == 2


def test_core_ilike_renders_natively(engine, establishments):
    t = establishments
    q = select(func.count().label("n")).where(t.c.naics2.ilike("5%"))
    assert "ILIKE" in str(q.compile(engine))
    with engine.connect() as conn:
        assert len(conn.execute(q).all()) == 1


def test_refused_core_query_is_a_sqlalchemy_programming_error(engine, establishments):
    t = establishments
    with engine.connect() as conn:
        with pytest.raises(sa_exc.ProgrammingError) as info:
            conn.execute(select(t.c.payann))  # raw rows of a private column
        assert info.value.orig.code == "DP201"
        assert "DP201" in str(info.value)
        with pytest.raises(sa_exc.NotSupportedError) as info:  # PEP 249's sibling class, kept as is
            conn.execute(select(func.max(t.c.payann)))
        assert isinstance(info.value.orig, dpsql.NotSupportedError) and info.value.orig.code == "DP109"
        with pytest.raises(sa_exc.ProgrammingError) as info:
            conn.execute(select(func.count().label("n")).select_from(t.join(t.alias(), t.c.id == t.c.id)))
        assert info.value.orig.code == "DP217"  # a private table joined to itself on its unit
        # the connection is still usable after a refusal (rollback is a no-op), and nothing was charged
        assert conn.execute(select(func.count().label("n")).select_from(t)).all()
        assert spent(conn) == "0.1"


# --------------------------------------------------------------------------- pandas


def test_pandas_read_sql_returns_noisy_values_within_their_error_bars(engine):
    df = pd.read_sql(PAY_BY_SECTOR, engine)
    receipt = last_receipt(engine)
    assert list(df.columns) == ["naics2", "pay"] and len(df) == 24
    assert receipt.rho == Fraction(1, 10)
    with engine.connect() as conn:
        exact = dict(conn.connection.dbapi_connection.session.engine.run(
            "SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2"))
    noisy = dict(zip(df["naics2"], df["pay"], strict=True))
    moe = dict(zip(df["naics2"], receipt.columns["pay"].moe95, strict=True))
    assert any(noisy[k] != exact.get(k, 0) for k in noisy)  # noise is present
    assert all(abs(noisy[k] - exact.get(k, 0)) <= 5 * moe[k] for k in noisy)  # ~10σ: never fails by chance


def test_pandas_read_sql_with_parameters_and_a_core_select(engine, establishments):
    df = pd.read_sql("SELECT state, COUNT(*) AS n FROM establishments WHERE naics2 = ? GROUP BY state",
                     engine, params=("52",))
    assert len(df) == 51 and list(df.columns) == ["state", "n"]
    t = establishments
    df2 = pd.read_sql(select(t.c.state, func.avg(t.c.employees).label("avg_emp")).group_by(t.c.state), engine)
    assert len(df2) == 51
    assert spent(engine) == "0.2"


def test_a_seeded_source_through_connect_args_makes_noise_reproducible(demo):
    frames = []
    for _ in range(2):
        eng = sa.create_engine(url(demo), connect_args={"_random_source": seeded_random(7)})
        frames.append(pd.read_sql(PAY_BY_SECTOR, eng))
        eng.dispose()
    pd.testing.assert_frame_equal(frames[0], frames[1])


def test_pandas_surfaces_a_refusal_with_our_code(engine):
    with pytest.raises(Exception) as info:
        pd.read_sql("SELECT * FROM establishments", engine)
    cause = info.value.__cause__ or info.value
    assert isinstance(cause, sa_exc.ProgrammingError) and cause.orig.code == "DP108"


def test_budget_refusal_is_an_operational_error_and_charges_nothing(demo):
    eng = sa.create_engine(url(demo, rho="4"))  # the demo's total is 10: the third query does not fit
    try:
        pd.read_sql(PAY_BY_SECTOR, eng)
        pd.read_sql(PAY_BY_SECTOR.replace("GROUP BY", "WHERE employees > 1 GROUP BY"), eng)  # another statement
        # (a repeat, or another ORDER BY / LIMIT of the same one, would be shown from its release, free)
        assert spent(eng) == "8"
        with eng.connect() as conn:
            with pytest.raises(sa_exc.OperationalError) as info:
                conn.exec_driver_sql(PAY_BY_SECTOR.replace("GROUP BY", "WHERE employees > 2 GROUP BY"))  # a third statement
            assert isinstance(info.value.orig, dpsql.BudgetExceededError) and info.value.orig.code == "DP301"
            assert spent(conn) == "8"
            # probes still answer, for free, once the budget is gone
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        eng.dispose()


def test_the_budget_is_the_analysts_across_engines_and_pooled_connections(demo):
    first, second = sa.create_engine(url(demo)), sa.create_engine(url(demo))
    try:
        with first.connect() as a, first.connect() as b:  # two DB-API connections of one pool
            a.exec_driver_sql(PAY_BY_SECTOR)
            b.exec_driver_sql("SET dpsql.reuse = off")  # a fresh release, not a's answer again (pipeline/reuse.py)
            b.exec_driver_sql(PAY_BY_SECTOR)
            assert a.connection.dbapi_connection is not b.connection.dbapi_connection
        assert budget(second)["spent"] == "0.2"  # the durable ledger beside the policy
    finally:
        first.dispose()
        second.dispose()


def test_set_dpsql_rho_through_sqlalchemy(engine):
    with engine.connect() as conn:
        conn.exec_driver_sql("SET dpsql.rho = 0.5")
        assert last_receipt(conn).rho == 0
        conn.exec_driver_sql(PAY_BY_SECTOR)
        assert last_receipt(conn).rho == Fraction(1, 2)
        assert spent(conn) == "0.5"


# --------------------------------------------------------------------------- probes


PROBES = [
    ("SELECT 1", [(1,)]),
    ("select 1 as ok", [(1,)]),
    ("SELECT version()", [(f"dpsql {dpsql.__version__}",)]),
    ("SELECT current_schema()", [("main",)]),
    ("SELECT current_database()", [("demo",)]),
    ("SELECT 'x' AS a, -2, NULL, true", [("x", -2, None, True)]),
    ("SHOW TABLES", [(t,) for t in POLICY_TABLES]),
    ("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name",
     [(t,) for t in POLICY_TABLES]),
    ("SELECT schema_name FROM information_schema.schemata", [("main",)]),
    ("SELECT column_name, data_type FROM information_schema.columns"
     " WHERE table_name = 'devices' ORDER BY ordinal_position",
     [("user_id", "BIGINT"), ("device_model", "VARCHAR"), ("latency_ms", "DOUBLE"), ("first_seen", "TIMESTAMP")]),
    ("SELECT DISTINCT c.table_name FROM information_schema.columns AS c "
     "WHERE c.column_name ILIKE 'EMP%' AND c.table_name NOT IN ('paper_table2') ORDER BY 1 DESC LIMIT 1",
     [("paper_table1",)]),
]


@pytest.mark.parametrize("sql, rows", PROBES, ids=[p[0][:50] for p in PROBES])
def test_probes_answer_through_sqlalchemy_and_charge_nothing(engine, sql, rows):
    with engine.connect() as conn:
        assert [tuple(r) for r in conn.exec_driver_sql(sql).all()] == rows
        assert last_receipt(conn).rho == 0
        assert spent(conn) == "0"


@pytest.mark.parametrize("sql, rows", PROBES, ids=[p[0][:50] for p in PROBES])
def test_probes_answer_through_the_dbapi(con, sql, rows):
    cur = con.cursor().execute(sql)
    assert cur.fetchall() == rows
    assert cur.receipt.rho == 0 and con.budget["spent"] == "0"


def test_describe_shows_the_columns_and_their_roles(con):
    cur = con.cursor().execute("DESCRIBE establishments")
    assert [d[0] for d in cur.description] == ["column_name", "column_type", "null", "key", "default", "extra"]
    rows = {r[0]: r for r in cur.fetchall()}
    assert rows["payann"][1] == "BIGINT" and rows["payann"][5].startswith("measure")
    assert con.budget["spent"] == "0"


def test_information_schema_hides_tables_outside_the_policy(con):
    rows = con.cursor().execute("SELECT table_name FROM information_schema.columns").fetchall()
    assert {r[0] for r in rows} == set(POLICY_TABLES)


def test_the_dialect_pings_and_probes_without_sql_or_charge(engine):
    eng = sa.create_engine(engine.url, pool_pre_ping=True)
    try:
        with eng.connect() as conn:
            assert eng.dialect.server_version_info == tuple(int(p) for p in dpsql.__version__.split("."))
            conn.rollback()  # dpsql's Connection.rollback raises; the dialect's is a no-op
        with eng.connect() as conn:  # pre-ping on checkout
            assert last_receipt(conn) is None  # nothing was executed as SQL
            assert spent(conn) == "0"
    finally:
        eng.dispose()


@pytest.mark.parametrize("sql, code", [
    ("SELECT 1 FROM establishments", "DP201"),            # reads a private table: never a probe
    ("SELECT version(), COUNT(*) FROM establishments", None),  # a real query; it goes to the pipeline
    ("SELECT 1 + 1", "DP202"),                            # not an exact probe shape
    ("SELECT * FROM information_schema.key_column_usage", "DP202"),
    ("SELECT count(*) FROM information_schema.tables", "DP110"),
    ("SELECT nope FROM information_schema.tables", "DP203"),
    ("SELECT table_name FROM information_schema.tables, establishments", "DP110"),
    ("SELECT table_name FROM information_schema.tables WHERE table_name IN (SELECT naics2 FROM establishments)",
     "DP110"),
])
def test_probes_match_narrowly(con, sql, code):
    if code is None:
        with pytest.raises(dpsql.ProgrammingError):  # version() is not allowed in an aggregate query
            con.cursor().execute(sql)
    else:
        with pytest.raises(dpsql.ProgrammingError) as info:
            con.cursor().execute(sql)
        assert info.value.code == code
    assert con.budget["spent"] == "0"


def test_probes_do_not_answer_statements_with_parameters(con):
    with pytest.raises(dpsql.ProgrammingError) as info:
        con.cursor().execute("SELECT ?", [1])
    assert info.value.code == "DP202"


def test_text_probe_through_core(engine):
    with engine.connect() as conn:
        assert conn.execute(text("SELECT current_schema()")).scalar() == "main"
        assert conn.execute(select(func.version())).scalar().startswith("dpsql ")
        assert spent(conn) == "0"
