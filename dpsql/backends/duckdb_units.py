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

#: the most distinct privacy units one pass of the unit check holds (about 40 bytes each in DuckDB's hash table)
UNITS_PER_PASS = 2_000_000
#: the memory DuckDB may take for the Parquet check (as the data file's: backends/duckdb.py LOCKDOWN)
MEMORY_LIMIT = f"{memory_budget() >> 20}MiB"


def _sq(text: str) -> str:
    return text.replace("'", "''")


def unique_in_passes(run: Any, source: str, unit: str) -> bool:
    """No NULL ``unit`` in ``source`` and no repeated one, in passes over disjoint hash classes
    of the unit (``DuckDBEngine._units_unique_scan``); ``UNITS_PER_PASS`` read at call time."""
    rows, non_null = run(f'SELECT COUNT(*), COUNT("{unit}") FROM {source}')[0]
    if rows != non_null:
        return False
    passes = max(1, -(-int(rows) // UNITS_PER_PASS))
    where = (lambda i: f' WHERE hash("{unit}") % {passes} = {i}') if passes > 1 else (lambda i: "")
    return all(run(f'SELECT COUNT(*) = COUNT(DISTINCT "{unit}") FROM {source}{where(i)}')[0][0] for i in range(passes))


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
        return unique_in_passes(lambda q: con.execute(q).fetchall(), source, unit)
    except duckdb.Error:  # a file DuckDB cannot read: Spark's check decides
        return None
    finally:
        con.close()
