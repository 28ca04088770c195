"""The unit check in passes over hash classes of the unit, on a DuckDB file or on the local
Parquet files a Spark session reads (issue 34; docs/scale.md): the privacy unit is unique when
no unit is NULL and none repeats. Split from :mod:`dpsql.backends.duckdb` (its module-size limit);
that module's engine calls :func:`unique_in_passes`, and Spark's calls :func:`parquet_units_unique`.
"""

from __future__ import annotations

from typing import Any

import duckdb

from dpsql.backends import duckdb_local
from dpsql.backends.base import memory_budget

#: DuckDB memory one distinct unit takes in a pass (its hash table and the reader's buffers): at most
#: 46-70 bytes measured for 4- to 16-byte types, 129 for 40-byte text (docs/performance.md, "Passes
#: sized by memory"), rounded up
BYTES_PER_UNIT = 128
#: a unit of variable width (text, blob) also holds its bytes, about twice over (measured: 40-byte text)
BYTES_PER_TEXT_BYTE = 2
#: one pass may fill this fraction of the memory DuckDB may use (the rest: the queries alongside)
MEMORY_SHARE = 0.25
#: the types whose width is fixed (the rest are measured by their text's length)
_FIXED = {"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
          "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "DATE", "TIME", "TIME WITH TIME ZONE", "TIME_NS",
          "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "INTERVAL", "UUID"}
#: the memory DuckDB may take for the Parquet check (as the data file's: backends/duckdb.py LOCKDOWN)
MEMORY = memory_budget()
MEMORY_LIMIT = f"{MEMORY >> 20}MiB"


def _sq(text: str) -> str:
    return text.replace("'", "''")


def units_per_pass(memory: int, text_bytes: float = 0.0) -> int:
    """The distinct units one pass may hold in ``memory`` bytes (DuckDB's limit) when each unit's
    value has ``text_bytes`` bytes beyond a fixed width, on average."""
    return max(1, int(memory * MEMORY_SHARE // (BYTES_PER_UNIT + BYTES_PER_TEXT_BYTE * text_bytes)))


def unique_in_passes(run: Any, source: str, unit: str, memory: int | None = None) -> bool:
    """No NULL ``unit`` in ``source`` and no repeated one, in passes over disjoint hash classes of
    the unit (a repeated value is always in one class), as few as fit in a share of ``memory``
    (the bytes DuckDB may use; :func:`memory_budget` by default): one pass up to ~25M units of
    a fixed-width type in a 12 GiB budget. Each pass compares ``COUNT(*)`` with ``COUNT(DISTINCT)``
    over its class (DuckDB keeps it within its memory limit if the estimate is short; a
    ``GROUP BY unit HAVING COUNT(*) > 1`` was no faster and took more memory: docs/performance.md,
    "Passes sized by memory")."""
    read = str(run(f'DESCRIBE SELECT "{unit}" FROM {source}')[0][1])
    fixed = "[" not in read and read.split("(")[0] in _FIXED  # DECIMAL(p,s); not a list, struct, text
    length = "0" if fixed else f'SUM(strlen(TRY_CAST("{unit}" AS VARCHAR)))'
    rows, non_null, text = run(f'SELECT COUNT(*), COUNT("{unit}"), {length} FROM {source}')[0]
    if rows != non_null:
        return False
    per_pass = units_per_pass(memory or memory_budget(), float(text or 0) / max(1, int(rows)))
    passes = max(1, -(-int(rows) // per_pass))
    where = (lambda i: f' WHERE hash("{unit}") % {passes} = {i}') if passes > 1 else (lambda i: "")
    distinct = (lambda i: f'SELECT COUNT(*) = COUNT(DISTINCT "{unit}") FROM {source}{where(i)}')
    return all(run(distinct(i))[0][0] for i in range(passes))


def parquet_units_unique(files: list[str], unit: str, spark_type: str) -> bool | None:
    """Spark's unit check run by DuckDB over exactly the local Parquet files Spark reads (issue 34;
    the same verdict: docs/scale.md); None when DuckDB might read the column otherwise than Spark
    (not in every file under one name and Parquet type, nested, repeated, another type than
    Spark's, a file DuckDB cannot read): Spark's own check decides then."""
    listed = "[" + ", ".join(f"'{_sq(f)}'" for f in files) + "]"
    con = duckdb.connect(":memory:")
    try:
        for setting, value in {"memory_limit": f"'{MEMORY_LIMIT}'", "allowed_paths": listed,
                               **{k: str(v).lower() for k, v in duckdb_local.LOCKDOWN.items()}}.items():
            con.execute(f"SET {setting} = {value}")
        found: dict[str, list[tuple[Any, ...]]] = {}
        for row in con.execute("SELECT file_name, name, type, converted_type, logical_type, scale, precision, type_length, "
                               f"num_children, repetition_type FROM parquet_schema({listed}) WHERE lower(name) = lower(?)",
                               [unit]).fetchall():
            found.setdefault(row[0], []).append(row[1:])
        if set(found) != set(files) or len({tuple(v) for v in found.values()}) != 1 or len(found[files[0]]) != 1 \
                or found[files[0]][0][7] is not None or found[files[0]][0][8] == "REPEATED":
            return None
        source = f"read_parquet({listed})"
        read = con.execute(f'DESCRIBE SELECT "{unit}" FROM {source}').fetchall()[0][1]
        if {"TIMESTAMP WITH TIME ZONE": "TIMESTAMP"}.get(read, read) != spark_type:  # Spark's name for both
            return None
        return unique_in_passes(lambda q: con.execute(q).fetchall(), source, unit, MEMORY)
    except duckdb.Error:  # a file DuckDB cannot read: Spark's check decides
        return None
    finally:
        con.close()
