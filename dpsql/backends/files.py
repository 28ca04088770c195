"""What kind of file a data path is: a DuckDB database, or data (CSV, Parquet) that ``dpsql
init`` reads into one. Path names only: nothing is opened here."""

from __future__ import annotations

from pathlib import Path

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
