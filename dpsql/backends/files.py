"""What kind of file a data path is: a DuckDB database, or data (CSV, Parquet) that ``dpsql
init`` reads into one, by its name; and what a reader of it sees, as stamps (nothing is opened)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: file suffixes read as data (not as a DuckDB database), with the reader DuckDB uses
READERS = {".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv", ".gz": "read_csv",
           ".parquet": "read_parquet", ".pq": "read_parquet"}


def kind_of(path: Path) -> str:
    """``csv``, ``parquet`` (a file or a folder of them) or ``duckdb``."""
    if path.is_dir():
        return "parquet"
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and READERS.get(suffixes[-1]) == "read_parquet":
        return "parquet"
    if suffixes and (suffixes[-1] in (".csv", ".tsv", ".txt") or suffixes[-2:] in ([".csv", ".gz"], [".tsv", ".gz"])):
        return "csv"
    return "duckdb"


def file_stamps(paths: list[Path]) -> tuple[Any, ...]:
    """(path, size, mtime, ctime) of each file that each path names (itself, every file below a
    folder, or a glob's matches): changes when the data a reader sees does (a rewrite of a file
    deep in a folder of Parquet files included). The change time moves on any write or rename."""
    out: list[Any] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else sorted(path.parent.glob(path.name))
        for f in files:
            stat = f.stat()
            out += [str(f.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
    return tuple(out)
