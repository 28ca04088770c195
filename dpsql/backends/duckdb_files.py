"""The data owner's side of DuckDB (``dpsql init``): read a CSV, a Parquet file or a folder of
Parquet files into a new DuckDB file, and describe a DuckDB file's tables so that a starter
policy can be drafted from it.

Only the data owner runs this, on their own machine, before any analyst is served: it is not on
the query path and reads the files with DuckDB's own readers (no Python loop over rows). What it
learns from the rows (which column is unique, the values of a column the owner declares public)
goes into the policy only where the owner asked for it (docs/own_data.md, "What comes from
the data").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import duckdb

from dpsql.backends.files import kind_of
from dpsql.errors import DatabaseFileError

def _source_sql(path: Path, kind: str) -> str:
    quoted = str(path).replace("'", "''")
    if kind == "csv":
        return f"read_csv('{quoted}', auto_detect = true, header = true)"
    if path.is_dir():
        files = list(path.rglob("*.parquet"))
        if not files:
            raise DatabaseFileError(f"the folder {path} holds no .parquet file",
                                    hint="point dpsql init at a CSV file, a Parquet file, a folder of Parquet "
                                         "files or a DuckDB file.")
        pattern = str(path / "**" / "*.parquet").replace("'", "''")
        hive = any("=" in p.relative_to(path).parts[0] for p in files if len(p.relative_to(path).parts) > 1)
        return f"read_parquet('{pattern}', union_by_name = true, hive_partitioning = {str(hive).lower()})"
    return f"read_parquet('{quoted}')"


def import_table(source: Path, database: Path, table: str, *, progress: bool = False, public: list[str] | None = None) -> int:
    """Read ``source`` (CSV or Parquet) into a new table ``table`` of a new DuckDB file
    ``database``, written whole: to a temporary file first, renamed into place only when the
    import succeeded, so a failure leaves nothing behind. Returns the number of rows. The
    ``public`` columns (``--public``) that hold no NULL are declared NOT NULL (:func:`not_null`)."""
    kind = kind_of(source)
    if kind == "duckdb":
        raise DatabaseFileError(f"{source} is not a CSV or Parquet file")
    partial = database.with_name(f".{database.name}.{os.getpid()}.partial")
    for leftover in (partial, partial.with_name(partial.name + ".wal")):
        leftover.unlink(missing_ok=True)
    try:
        con = duckdb.connect(str(partial))
        try:
            if progress:  # DuckDB's own bar, on the terminal, for reads that take more than a moment
                con.execute("SET enable_progress_bar = true")
                con.execute("SET enable_progress_bar_print = true")
            con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM {_source_sql(source, kind)}')
            rows = con.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
            not_null(con, table, rows, public or [])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(partial, database)
    except duckdb.Error as exc:
        raise DatabaseFileError(f"DuckDB could not read {source} ({type(exc).__name__}): {str(exc).splitlines()[0]}",
                                hint="check the file's format (a header line for CSV), or convert it with DuckDB "
                                     "first and run dpsql init on the .duckdb file.") from None
    finally:
        for leftover in (partial, partial.with_name(partial.name + ".wal")):
            leftover.unlink(missing_ok=True)
    if progress:
        sys.stderr.flush()
    return int(rows)


def not_null(con: duckdb.DuckDBPyConnection, table: str, rows: int, public: list[str]) -> None:
    """Declare NOT NULL each ``public`` column of a freshly imported table that holds no NULL: a CSV
    has no constraints, and a nullable public key has a NULL group in every answer (issue 32,
    docs/policy.md "NULL keys"). Only the columns the data owner declares public, whose keysets
    are read from the data too (the schema is public: whether a column holds NULL is told by it);
    every other column stays nullable, its NULL a fact of no schema."""
    wanted = {c.lower() for c in public}
    columns = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall() if r[0].lower() in wanted]
    if not columns or not rows:
        return
    counts = con.execute("SELECT " + ", ".join(f'COUNT("{c}")' for c in columns) + f' FROM "{table}"').fetchone()
    for column, count in zip(columns, counts):
        if count == rows:
            con.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET NOT NULL')


def per_unit_table(source: Path, table: str, unit: str, keys: list[str], measures: dict[str, float],
                   target: Path, per_key: list[str] | None = None) -> None:
    """``dpsql advise`` on a many-row table (the data owner's machine): a new DuckDB file
    ``target`` whose table of the same name has one row per non-NULL unit of ``source``'s ``table``: ``unit``, ``groups``
    (its number of distinct values of ``keys`` together), ``rows`` (its most rows in one such
    group) and, per measure ``m``, ``m_<m>``: its largest |total| in one group. Each plus the same
    fraction in [0, 1), of ``granularity`` for a measure, from a hash of the unit: values then tie
    only by chance, so the exponential mechanism's rank error bounds how far a quantile can fall
    (with many units tied at the top, every value above it would score almost as well), and the
    whole part is the statistic. With ``per_key`` (columns among ``keys``), also ``groups_<k>``:
    the unit's number of distinct values of k, NULL one of them (κ_C of ``max_groups_by``), and
    ``rows_<k>``: its most rows in one group of k alone (r_C of ``quantile_rows_by``). One
    unit's rows decide only its own row, so a release over this table is a release about units
    (docs/own_data.md)."""
    q = (lambda c: '"' + c.replace('"', '""') + '"')
    group = ", ".join(["__unit", *(q(k) for k in keys)])
    sums = "".join(f", SUM({q(m)}) AS {q('__s_' + m)}" for m in measures)  # HUGEINT / DOUBLE: no overflow
    j = "(hash(__unit) % 1000) / 1000.0"  # the same fraction for every column of a unit
    tops = "".join(f", MAX(ABS({q('__s_' + m)})) + {j} * {g!r} AS {q('m_' + m)}" for m, g in measures.items())
    tops += "".join(f", COUNT(DISTINCT {q(k)}) + MAX(CASE WHEN {q(k)} IS NULL THEN 1 ELSE 0 END) + {j} AS {q('groups_' + k)}"
                    for k in per_key or [])
    # per key k: the unit's rows per k-group, its largest (one step per key, joined on the unit)
    steps = "".join(f", __k{i} AS (SELECT __unit, MAX(__n) + {j} AS {q('rows_' + k)} FROM (SELECT {q(unit)} AS __unit, "
                    f"COUNT(*) AS __n FROM src.{q(table)} WHERE {q(unit)} IS NOT NULL GROUP BY {q(unit)}, {q(k)}) "
                    "GROUP BY __unit)" for i, k in enumerate(per_key or []))
    con = duckdb.connect(str(target))
    try:
        con.execute(f"ATTACH '{_quote(source)}' AS src (READ_ONLY)")
        con.execute(f"CREATE TABLE {q(table)} AS WITH r AS (SELECT {q(unit)} AS __unit{''.join(', ' + q(k) for k in keys)}, "
                    f"COUNT(*) AS __n{sums} FROM src.{q(table)} WHERE {q(unit)} IS NOT NULL GROUP BY {group}), "
                    f"u AS (SELECT __unit, COUNT(*) + {j} AS groups, MAX(__n) + {j} AS rows{tops} FROM r GROUP BY __unit){steps} "
                    f"SELECT u.__unit AS unit, u.* EXCLUDE (__unit){''.join(f', __k{i}.* EXCLUDE (__unit)' for i in range(len(per_key or [])))} "
                    f"FROM u{''.join(f' JOIN __k{i} USING (__unit)' for i in range(len(per_key or [])))}")
        con.execute("DETACH src")
        con.execute("CHECKPOINT")
    finally:
        con.close()


class Inspector:
    """A DuckDB file opened read-only to draft its policy (its owner's machine)."""

    def __init__(self, database: Path) -> None:
        try:
            self._con = duckdb.connect(str(database), read_only=True)
        except duckdb.Error as exc:
            raise DatabaseFileError(f"cannot open {database} as a DuckDB file ({type(exc).__name__})",
                                    hint="dpsql init reads a CSV file, a Parquet file or folder, or a DuckDB file.") from None

    def close(self) -> None:
        self._con.close()

    def tables(self) -> list[str]:
        rows = self._con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                                 "AND schema_name = 'main' AND NOT temporary ORDER BY table_name").fetchall()
        return [r[0] for r in rows]

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, DuckDB type) of each column, in order."""
        rows = self._con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                                 "AND database_name = current_database() AND schema_name = 'main' "
                                 "ORDER BY column_index", [table]).fetchall()
        return [(r[0], r[1]) for r in rows]

    def identifies_rows(self, table: str, column: str) -> bool:
        """Whether ``column`` has no NULL and no repeated value (a candidate privacy unit)."""
        q = f'SELECT COUNT(*) = COUNT(DISTINCT "{column}") AND COUNT(*) = COUNT("{column}") FROM "{table}"'
        return bool(self._con.execute(q).fetchone()[0])

    def unit_rows(self, table: str, unit: str) -> tuple[int, int, int]:
        """(rows, distinct non-NULL units, rows whose unit is NULL): whether the unit repeats."""
        row = self._con.execute(f'SELECT COUNT(*), COUNT(DISTINCT "{unit}"), COUNT(*) - COUNT("{unit}") '
                                f'FROM "{table}"').fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    def profile(self, table: str, columns: list[str]) -> dict[str, tuple[int, Any, Any]]:
        """column -> (distinct values, lowest, highest) of numeric columns, in one scan (the draft's
        roles of whole-number columns and the ends of measures' quantile ranges)."""
        if not columns:
            return {}
        items = [f'COUNT(DISTINCT "{c}"), MIN("{c}"), MAX("{c}")' for c in columns]
        row = self._con.execute(f'SELECT {", ".join(items)} FROM "{table}"').fetchone()
        return {c: (int(row[3 * i]), row[3 * i + 1], row[3 * i + 2]) for i, c in enumerate(columns)}

    def values(self, table: str, column: str, limit: int) -> list[Any] | None:
        """The distinct non-NULL values of a column the owner declares public, sorted; None when
        there are more than ``limit`` of them."""
        rows = self._con.execute(f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL '
                                 f'ORDER BY 1 LIMIT {int(limit) + 1}').fetchall()
        return None if len(rows) > limit else [r[0] for r in rows]

    def day_range(self, table: str, column: str) -> tuple[Any, Any] | None:
        """The first and last day of a DATE / TIMESTAMP column the owner declares public (its
        finite values); None when it holds none."""
        row = self._con.execute(f'SELECT CAST(MIN("{column}") AS DATE), CAST(MAX("{column}") AS DATE) FROM "{table}" '
                                f'WHERE isfinite("{column}")').fetchone()
        return None if row is None or row[0] is None else (row[0], row[1])


def write_parquet(path: Path, csv_text: str) -> None:
    """Write a released table (CSV text with a header: noisy, already charged values only) as a
    Parquet file at ``path``, by DuckDB's own writer on a fresh in-memory connection. The file is
    written beside ``path`` under a temporary name and renamed into place."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    source = partial.with_name(partial.name + ".csv")
    try:
        source.write_text(csv_text, encoding="utf-8")
        with duckdb.connect() as con:
            con.execute(f"COPY (SELECT * FROM read_csv('{_quote(source)}', header = true, auto_detect = true)) "
                        f"TO '{_quote(partial)}' (FORMAT parquet)")
        os.replace(partial, path)
    finally:
        source.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
