"""The unit check is paid once per data file (dpsql/records/unit.py): a pass is recorded with the
file's identity, a new session on the unchanged file does not scan it again, and any write to the
file makes the next session check it again (and refuse it if it now breaks the rule)."""

from __future__ import annotations

import json

import duckdb
import pytest

import dpsql
from dpsql.records import unit as unit_record
from dpsql.errors import PolicyFileError

POLICY = """
[budget]
default_rho = 0.1
total_rho = 10.0

[tables.people]
privacy_unit = "id"

[tables.people.measures]
income = { threshold = 100 }

[tables.people.keys]
region = { keyset = ["a", "b"] }
"""
QUERY = "SELECT region, COUNT(*) FROM people GROUP BY region"


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    db, policy = tmp_path / "people.duckdb", tmp_path / "people.policy.toml"
    with duckdb.connect(str(db)) as con:  # no PRIMARY KEY: only a scan can tell
        con.execute("CREATE TABLE people AS SELECT i AS id, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS region, "
                    "i AS income FROM range(1000) t(i)")
    policy.write_text(POLICY)
    return db, policy


def calls_of(obj, name, monkeypatch) -> list:
    """The first argument of each call of ``obj.name`` from now on (the real method still runs)."""
    seen: list = []
    real = getattr(obj, name)

    def counting(first, *rest):
        seen.append(first)
        return real(first, *rest)

    monkeypatch.setattr(obj, name, counting)
    return seen


def _scans(con, monkeypatch) -> list[str]:
    return calls_of(con.session.engine, "units_unique", monkeypatch)


def test_a_pass_is_recorded_and_not_scanned_again(files, monkeypatch):
    with dpsql.connect(*files) as con:
        scans = _scans(con, monkeypatch)
        con.execute(QUERY)
        assert scans == ["people"]
    record = json.loads(unit_record.RECORDS.path.read_text())["records"]
    assert len(record) == 1 and record[0][0] == str(files[0].resolve()) and record[0][-2:] == ["people", "id"]
    with dpsql.connect(*files) as con:  # a new session (as a new process would): no scan
        scans = _scans(con, monkeypatch)
        con.execute(QUERY)
        assert scans == []


def test_a_changed_file_is_checked_again_and_refused(files, monkeypatch):
    with dpsql.connect(*files) as con:
        con.execute(QUERY)
    with duckdb.connect(str(files[0])) as con:  # the owner adds a second row for unit 7
        con.execute("INSERT INTO people VALUES (7, 'a', 5)")
    with dpsql.connect(*files) as con:
        scans = _scans(con, monkeypatch)
        with pytest.raises(PolicyFileError, match="does not identify one row per unit"):
            con.execute(QUERY)
        assert scans == ["people"]
    with dpsql.connect(*files) as con:  # a failure is never recorded: refused again
        with pytest.raises(PolicyFileError):
            con.execute(QUERY)


def test_an_unreadable_record_only_means_checking_again(files, monkeypatch):
    where = unit_record.RECORDS.path
    where.parent.mkdir(parents=True)
    where.write_text("{not json")
    with dpsql.connect(*files) as con:
        scans = _scans(con, monkeypatch)
        con.execute(QUERY)
        assert scans == ["people"]
    assert unit_record.passed(files[0], "people", "id")


@pytest.mark.parametrize("extra, unique", [("", True), (", (17, 1)", False), (", (NULL, 1)", False), (", (999, 1)", True)])
def test_the_scan_in_passes_finds_every_repeat_and_null(tmp_path, monkeypatch, extra, unique):
    """With 10 units a pass, 100 rows take 10+ passes over hash classes: a repeated unit is in one
    class and is found whichever it is; a NULL unit is found by the counting pass."""
    import dpsql.backends.duckdb as engine_module
    from dpsql.backends import duckdb_units

    db = tmp_path / "u.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE t (id BIGINT, v INTEGER); INSERT INTO t SELECT i, 1 FROM range(100) r(i); "
                    f"INSERT INTO t VALUES (5000, 1){extra}")
    monkeypatch.setattr(duckdb_units, "units_per_pass", lambda memory, text_bytes=0.0: 10)
    engine = engine_module.DuckDBEngine(db)
    try:
        assert engine._units_unique_scan("t", "id") is unique
    finally:
        engine.close()


def _new_process_scans(policy, monkeypatch) -> list[str]:
    """The unit scans a session in a new process makes for QUERY over ``policy``'s Parquet."""
    from dpsql.backends import duckdb as duckdb_backend

    duckdb_backend._UNIQUE_UNITS.clear()  # what a new process starts with
    with dpsql.connect(None, str(policy)) as con:
        scans = _scans(con, monkeypatch)
        con.execute(QUERY)
        return scans


def _new_process_refuses(policy) -> None:
    from dpsql.backends import duckdb as duckdb_backend

    duckdb_backend._UNIQUE_UNITS.clear()
    with dpsql.connect(None, str(policy)) as con:
        with pytest.raises(PolicyFileError, match="does not identify one row per unit"):
            con.execute(QUERY)


def test_a_table_read_from_its_own_parquet_file_is_recorded_by_that_file(tmp_path, monkeypatch):
    """Over Parquet (DuckDB here; Spark takes the same path in policy_check) each table's file is
    its identity: recorded after one scan, not scanned by a new session, checked again once the
    file is rewritten (a folder: see the next test)."""

    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    data = tmp_path / "people.parquet"
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT i AS id, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS region, i AS income "
                    f"FROM range(1000) t(i)) TO '{data}' (FORMAT parquet)")
    policy = tmp_path / "people.policy.toml"
    policy.write_text(POLICY.replace('privacy_unit = "id"', 'privacy_unit = "id"\nparquet = "people.parquet"'))

    assert _new_process_scans(policy, monkeypatch) == ["people"]
    assert unit_record.passed(data, "people", "id")
    assert _new_process_scans(policy, monkeypatch) == []
    with duckdb.connect() as con:  # the owner rewrites the file with a repeated unit
        con.execute(f"COPY (SELECT i % 999 AS id, 'a' AS region, i AS income FROM range(1000) t(i)) "
                    f"TO '{data}' (FORMAT parquet)")
    _new_process_refuses(policy)



def test_a_table_read_from_a_folder_is_recorded_by_every_file_below_it(tmp_path, monkeypatch):
    """A folder of Parquet files (Spark's usual input, partition sub-folders included) is checked
    once: a new session does not scan it again; a file added in a sub-folder with a repeated unit
    makes the next session scan again and refuse, and so does a file rewritten in place."""

    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "people"
    (folder / "part=1").mkdir(parents=True)
    with duckdb.connect() as con:
        for name, lo in (("a.parquet", 0), ("part=1/b.parquet", 500)):
            con.execute(f"COPY (SELECT i AS id, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS region, i AS income "
                        f"FROM range({lo}, {lo + 500}) t(i)) TO '{folder / name}' (FORMAT parquet)")
    policy = tmp_path / "people.policy.toml"
    policy.write_text(POLICY.replace('privacy_unit = "id"', 'privacy_unit = "id"\nparquet = "people"'))

    assert _new_process_scans(policy, monkeypatch) == ["people"]
    assert unit_record.passed(folder, "people", "id")
    assert _new_process_scans(policy, monkeypatch) == []
    with duckdb.connect() as con:  # a new file in the sub-folder repeats unit 7
        con.execute(f"COPY (SELECT 7 AS id, 'a' AS region, 1 AS income) TO '{folder / 'part=1' / 'c.parquet'}' "
                    "(FORMAT parquet)")
    assert not unit_record.passed(folder, "people", "id")
    _new_process_refuses(policy)
    (folder / "part=1" / "c.parquet").unlink()
    # the added file removed: the folder is again exactly the one that passed (same files, same
    # identities), so its record holds; a rewrite of a checked file is what must be seen:
    assert _new_process_scans(policy, monkeypatch) == []
    with duckdb.connect() as con:  # rewritten in place, same name: unit 0 twice
        con.execute(f"COPY (SELECT i % 499 AS id, 'a' AS region, i AS income FROM range(500) t(i)) "
                    f"TO '{folder / 'a.parquet'}' (FORMAT parquet)")
    _new_process_refuses(policy)


def test_a_file_written_during_the_scan_is_not_recorded(tmp_path, monkeypatch):
    """The identity is taken before the scan: a Parquet file the owner rewrites while it is
    scanned (nothing locks it) is not recorded as passed under its new identity, which the scan
    did not see; the next session scans the new file and refuses it."""
    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    data = tmp_path / "people.parquet"
    write = ("COPY (SELECT {id} AS id, 'a' AS region, i AS income FROM range(1000) t(i)) "
             f"TO '{data}' (FORMAT parquet)")
    with duckdb.connect() as con:
        con.execute(write.format(id="i"))
    policy = tmp_path / "people.policy.toml"
    policy.write_text(POLICY.replace('privacy_unit = "id"', 'privacy_unit = "id"\nparquet = "people.parquet"'))
    with dpsql.connect(None, str(policy)) as con:
        real = con.session.engine.units_unique

        def scan_while_the_owner_writes(table, unit):
            ok = real(table, unit)  # the scan saw the old file
            with duckdb.connect() as writer:
                writer.execute(write.format(id="i % 999"))  # unit 0 twice now
            return ok

        monkeypatch.setattr(con.session.engine, "units_unique", scan_while_the_owner_writes)
        con.execute(QUERY)
    assert not unit_record.passed(data, "people", "id")


WRITER_DIES_BEFORE_CHECKPOINT = """
import os, sys
import duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SET checkpoint_threshold = '1TB'")  # no automatic checkpoint
con.execute("PRAGMA disable_checkpoint_on_shutdown")
con.execute("INSERT INTO people VALUES (7, 'a', 5)")  # a second row for unit 7, in the WAL only
os._exit(0)  # dies: no checkpoint, no clean close
"""


@pytest.mark.parametrize("new_process", [False, True])
def test_a_row_left_in_the_wal_by_a_dead_writer_is_checked_again(files, monkeypatch, new_process):
    """Issue 29, finding 4: the main file keeps its identity while the row waits in ``.wal``; the
    next reader replays it, so the pass recorded before must not stand (neither the record in
    dpsql's folder nor this process's own memory of the scan)."""
    import subprocess
    import sys

    from dpsql.backends import duckdb as duckdb_backend

    db = files[0]
    with dpsql.connect(*files) as con:
        con.execute(QUERY)
    assert unit_record.passed(db, "people", "id")
    before = unit_record.file_identity(db)
    subprocess.run([sys.executable, "-c", WRITER_DIES_BEFORE_CHECKPOINT, str(db)], check=True)
    wal = db.with_name(db.name + ".wal")
    assert wal.is_file() and wal.stat().st_size > 0
    assert unit_record.file_identity(db) == before  # the main file did not change
    with duckdb.connect(str(db), read_only=True) as raw:  # a reader sees the row
        assert raw.execute("SELECT COUNT(*) FROM people WHERE id = 7").fetchone() == (2,)
    if new_process:
        duckdb_backend._UNIQUE_UNITS.clear()
    assert not unit_record.passed(db, "people", "id")
    with dpsql.connect(*files) as con:
        scans = _scans(con, monkeypatch)
        with pytest.raises(PolicyFileError, match="does not identify one row per unit"):
            con.execute(QUERY)
        assert scans == ["people"]


def test_a_name_that_leads_to_another_file_is_resolved_again(tmp_path):
    """The resolved path is kept per name while the name leads to the same device and inode; a
    symbolic link pointed at another file gives that file's path and inode (os.path.realpath and
    os.stat, computed apart, are the oracle)."""
    import os

    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    a.write_bytes(b"one")
    b.write_bytes(b"two!")
    link = tmp_path / "data.duckdb"
    for target in (a, b, a):
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        for _ in range(2):  # the second read comes from what the first kept
            ident = unit_record.file_identity(str(link))
            st = os.stat(target)
            assert ident is not None
            assert ident[:4] == (os.path.realpath(target), st.st_dev, st.st_ino, st.st_size)
