"""A data file's catalog is remembered across processes (dpsql/records/catalog.py): a new session
on the unchanged file adopts it instead of reading the catalog; any write to the file, or a
damaged record, means reading it again; and what was adopted is exactly what would be read."""

from __future__ import annotations

import json

import duckdb
import pytest

import dpsql
from dpsql.records import catalog as catalog_record
from dpsql.backends.duckdb import DuckDBEngine
from tests.test_unit_record import QUERY, files  # noqa: F401 - files: the people database fixture


def _session_reads(files, monkeypatch) -> tuple[list, dict]:
    """Open a session on ``files``: (the catalog reads it made, its schema and check identity)."""
    reads: list = []
    real = DuckDBEngine.catalog
    monkeypatch.setattr(DuckDBEngine, "catalog", lambda self: reads.append(self.path) or real(self))
    with dpsql.connect(*files) as con:
        s = con.session
        seen = {"schema": s.schema, "not_null": s.not_null, "nonnegative": s.nonnegative,
                "identity": s.engine.check_identity, "rows": len(con.execute(QUERY).fetchall())}
    return reads, seen


def test_a_new_session_on_the_unchanged_file_adopts_the_catalog(files, monkeypatch):
    reads, first = _session_reads(files, monkeypatch)
    assert len(reads) == 1
    reads, second = _session_reads(files, monkeypatch)
    assert reads == [] and second == first


def test_a_written_file_is_read_again(files, monkeypatch):
    _session_reads(files, monkeypatch)
    with duckdb.connect(str(files[0])) as con:
        con.execute("ALTER TABLE people RENAME TO old")
        con.execute("CREATE TABLE people (id BIGINT, region VARCHAR, income BIGINT, age INTEGER NOT NULL CHECK (age >= 0))")
        con.execute("INSERT INTO people SELECT id, region, income, 1 FROM old")
        con.execute("DROP TABLE old")
    reads, seen = _session_reads(files, monkeypatch)
    assert len(reads) == 1
    assert seen["schema"]["people"]["age"] == "INTEGER" and "age" in seen["not_null"]["people"]
    assert "age" in seen["nonnegative"]["people"]


@pytest.mark.parametrize("catalog", [None, [], {}, {"columns": [["people", "id"]], "constraints": [], "ddl": []},
                                     {"columns": [], "constraints": [], "ddl": 7}])
def test_a_damaged_record_is_read_again(files, monkeypatch, catalog):
    _, first = _session_reads(files, monkeypatch)
    key = catalog_record.key(DuckDBEngine.engine_version, files[0])
    catalog_record.DOCUMENTS.path(key).write_text(json.dumps({"version": catalog_record.VERSION, "catalog": catalog}))
    catalog_record._SEEN.clear()  # as a new process: nothing kept in memory
    reads, seen = _session_reads(files, monkeypatch)
    assert len(reads) == 1 and seen == first


def test_a_process_keeps_the_record_it_read(files, monkeypatch):
    """A second session of the process adopts the catalog from memory: with the record file gone
    it reads no catalog; after a write to the data file it reads again (the test above)."""
    _, first = _session_reads(files, monkeypatch)
    catalog_record.DOCUMENTS.path(catalog_record.key(DuckDBEngine.engine_version, files[0])).unlink()
    reads, seen = _session_reads(files, monkeypatch)
    assert reads == [] and seen == first
    catalog_record._SEEN.clear()
    reads, _ = _session_reads(files, monkeypatch)
    assert len(reads) == 1  # the same process without the memory: the record is gone, so it reads


def test_another_duckdb_reads_again(files, monkeypatch):
    _session_reads(files, monkeypatch)
    monkeypatch.setattr(DuckDBEngine, "engine_version", "duckdb 0.0.0")
    reads, _ = _session_reads(files, monkeypatch)
    assert len(reads) == 1


def test_only_a_file_has_a_record(tmp_path):
    assert catalog_record.key(DuckDBEngine.engine_version, tmp_path) is None  # a folder (of Parquet files)
    assert catalog_record.key(DuckDBEngine.engine_version, tmp_path / "missing.duckdb") is None
