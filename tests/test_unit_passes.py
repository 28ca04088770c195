"""The unit check's passes (dpsql/backends/duckdb_units.py, issue 34): the verdict is the same in
one pass and in several, whichever hash class holds the repeated unit, on Parquet files (a repeat
only across two files) and on a DuckDB table; the number of passes follows the memory DuckDB may
use, and a unit of variable width counts its bytes."""

from __future__ import annotations

import re

import duckdb
import pytest

from dpsql.backends import duckdb_units

ROWS = 1000
#: several passes: the memory for ~150 units a pass (7 passes of 1000 or 1001 rows)
PER_PASS = 150
VALUES = {"BIGINT": "i * 7919 - 500000", "VARCHAR": "'unit-' || i || repeat('x', i % 40)", "DOUBLE": "i / 8.0 - 3.0"}


def _memory(per_pass: int, dtype: str) -> int:
    """Bytes of DuckDB memory for about ``per_pass`` units of ``VALUES[dtype]`` a pass (the pass
    count is then read from the queries run, not from this)."""
    text = 0.0
    if dtype == "VARCHAR":
        text = duckdb.connect().execute(f"SELECT AVG(strlen({VALUES[dtype]})) FROM range({ROWS}) r(i)").fetchone()[0]
    return int(per_pass * (duckdb_units.BYTES_PER_UNIT + duckdb_units.BYTES_PER_TEXT_BYTE * text) / duckdb_units.MEMORY_SHARE)


def _check(con: duckdb.DuckDBPyConnection, source: str, memory: int) -> tuple[bool, int]:
    """The verdict and the passes over hash classes it took (from the queries it ran)."""
    ran: list[str] = []

    def run(sql: str):
        ran.append(sql)
        return con.execute(sql).fetchall()

    verdict = duckdb_units.unique_in_passes(run, source, "u", memory)
    classes = {m.groups() for q in ran for m in [re.search(r"% (\d+) = (\d+)$", q)] if m}
    grouped = [q for q in ran if "COUNT(DISTINCT" in q]
    if not classes:
        return verdict, len(grouped)
    k = {int(c[0]) for c in classes}
    assert len(k) == 1 and len(grouped) <= k.pop()
    return verdict, int(next(iter(classes))[0])


def _in_class(con: duckdb.DuckDBPyConnection, dtype: str, k: int, i: int) -> str:
    """A unit of the table (as a SQL literal) whose hash falls in class ``i`` of ``k``."""
    value = con.execute(f"SELECT ({VALUES[dtype]})::{dtype} AS u FROM range({ROWS}) r(i) "
                        f"WHERE hash(u) % {k} = {i} ORDER BY r.i LIMIT 1").fetchone()[0]
    return repr(value) if dtype != "DOUBLE" else f"{value!r}::DOUBLE"


@pytest.mark.parametrize("dtype", sorted(VALUES))
def test_several_passes_and_one_pass_find_a_repeat_in_every_hash_class_across_parquet_files(tmp_path, dtype):
    """ROWS distinct units in a.parquet; b.parquet holds one more row: a new unit (unique), or a
    unit of a.parquet chosen in each hash class in turn (repeated). Several passes (7) and one
    pass give the verdict the data was built to have, every time."""
    con = duckdb.connect()
    con.execute(f"COPY (SELECT ({VALUES[dtype]})::{dtype} AS u FROM range({ROWS}) r(i)) TO '{tmp_path / 'a.parquet'}' (FORMAT parquet)")
    source = f"read_parquet(['{tmp_path / 'a.parquet'}', '{tmp_path / 'b.parquet'}'])"
    several, one = _memory(PER_PASS, dtype), 1 << 40

    def with_b(literal: str) -> tuple[tuple[bool, int], tuple[bool, int]]:
        con.execute(f"COPY (SELECT ({literal})::{dtype} AS u) TO '{tmp_path / 'b.parquet'}' (FORMAT parquet)")
        return _check(con, source, several), _check(con, source, one)

    fresh = {"BIGINT": "-1", "VARCHAR": "'not-a-unit-yet'", "DOUBLE": "1e300"}[dtype]
    (verdict, k), (verdict_one, passes_one) = with_b(fresh)
    assert (verdict, verdict_one, passes_one) == (True, True, 1)
    assert k == 7
    for i in range(k):
        (verdict, k_i), (verdict_one, _) = with_b(_in_class(con, dtype, k, i))
        assert (verdict, verdict_one, k_i) == (False, False, k), f"hash class {i} of {k}"


def test_a_null_unit_or_a_repeat_in_a_duckdb_table_fails_in_several_passes_and_in_one(tmp_path):
    """On a DuckDB table through the engine's own check: a NULL unit (the counting pass) and a
    unit repeated three times fail; -0.0 beside 0.0, and two NaNs, are one value (as on Spark)."""
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    cases = {"distinct": ("", True), "null": (", (NULL)", False), "thrice": (", (8.0), (8.0)", False),
             "zeros": (", (-0.0)", False), "nans": (", ('nan'), (-('nan'::DOUBLE))", False)}
    for name, (extra, expected) in cases.items():
        con.execute(f"CREATE OR REPLACE TABLE t AS SELECT CAST(i AS DOUBLE) AS u FROM range({ROWS}) r(i)")
        if extra:
            con.execute(f"INSERT INTO t VALUES {extra.lstrip(', ')}")
        several = _check(con, "t", _memory(PER_PASS, "DOUBLE"))
        one = _check(con, "t", 1 << 40)
        assert (several[0], one[0]) == (expected, expected), name
        assert (one[1] == 1 and several[1] == 7) or (name == "null" and several[1] == one[1] == 0), name


def test_the_passes_follow_the_memory_duckdb_may_use():
    """A pass holds a share of DuckDB's memory at BYTES_PER_UNIT a unit, more for long text: 100M
    BIGINT units take one pass in a 64 GiB budget, several in 4 GiB, more again for 200-byte text."""
    per = duckdb_units.units_per_pass
    assert per(64 << 30) >= 100_000_000
    assert 1 < -(-100_000_000 // per(4 << 30)) < -(-100_000_000 // per(4 << 30, 200.0))
    assert per(1) == 1  # never zero units a pass


def test_parquet_units_unique_takes_the_passes_its_memory_allows(tmp_path, monkeypatch):
    """The Parquet check end to end (the one Spark's engine calls) under a memory that forces
    passes: a repeat across the two files fails, distinct units pass."""
    con = duckdb.connect()
    a, b = str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")
    con.execute(f"COPY (SELECT range AS u FROM range({ROWS})) TO '{a}' (FORMAT parquet)")
    monkeypatch.setattr(duckdb_units, "MEMORY", _memory(PER_PASS, "BIGINT"))
    for extra, expected in (("5000", True), ("17", False), ("999", False)):
        con.execute(f"COPY (SELECT range + {extra} AS u FROM range(1)) TO '{b}' (FORMAT parquet)")  # as a's
        assert duckdb_units.parquet_units_unique([a, b], "u", "BIGINT") is expected, extra
