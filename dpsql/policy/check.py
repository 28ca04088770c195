"""The data owner's policy checked against the data file it governs, when a session opens.

Every table, column, measure type and keyset type the policy names must exist in the file's
catalog, and a public table's key must identify its rows (a join to it is then a lookup). The
privacy unit of a private table must identify one row per unit (:func:`check_units`) unless the
table declares ``max_groups`` (many rows per unit, ``sql/units.py``): the single-row sensitivity
analysis assumes it, so a file that breaks it is refused for every query alike.
These are configuration errors for the data owner, decided the same way for every query.
"""

from __future__ import annotations

from pathlib import Path

from dpsql.records import unit as unit_record
from dpsql.backends import Engine
from dpsql.errors import DatabaseFileError, PolicyFileError
from dpsql.policy.model import INTEGER_TYPES, Policy

NUMERIC_TYPES = INTEGER_TYPES + ("DOUBLE", "FLOAT", "REAL")


def check_catalog(policy: Policy, engine: Engine, schema: dict[str, dict[str, str]]) -> None:
    """Refuse a policy that does not fit the file (:class:`PolicyFileError` naming the field,
    :class:`DatabaseFileError` for a missing table)."""
    where = str(policy.path or "<policy>")
    for name, tp in policy.tables.items():
        cols = schema.get(name) or {}
        if not cols:
            raise DatabaseFileError(f"{where}: table {name!r} of the policy does not exist in {engine.path}")
        for col, role in [(tp.privacy_unit, "privacy_unit"), *((m, "measures") for m in tp.measures),
                          *((k, "keys") for k in tp.keys)]:
            if col not in cols:
                raise PolicyFileError(f"{where}: field 'tables.{name}.{role}' names column {col!r}, "
                                      f"which table {name!r} does not have (columns: {', '.join(cols)})")
        for m in tp.measures.values():
            if not cols[m.name].upper().startswith(NUMERIC_TYPES) and not cols[m.name].upper().startswith("DECIMAL"):
                raise PolicyFileError(f"{where}: field 'tables.{name}.measures.{m.name}': column type "
                                      f"{cols[m.name]} is not numeric")
            if m.override and m.override.key not in cols:
                raise PolicyFileError(f"{where}: field 'tables.{name}.measures.{m.name}.overrides.key' is not a column")
        for k in tp.keys.values():
            if k.numeric:
                _check_number_range(where, name, k.name, k.range, cols[k.name])  # type: ignore[arg-type]
                continue
            if k.range is not None:
                _check_range_key(where, name, k.name, k.grain, cols[k.name])
                continue
            if not k.public:
                continue
            is_int = cols[k.name].upper() in INTEGER_TYPES
            if not all(isinstance(v, int) == is_int for v in k.keyset or ()):
                want = "integers" if is_int else "strings"
                raise PolicyFileError(f"{where}: field 'tables.{name}.keys.{k.name}.keyset' must hold {want} "
                                      f"(column type {cols[k.name]})")

    for name, pt in policy.public_tables.items():
        cols = schema.get(name) or {}
        if not cols:
            raise DatabaseFileError(f"{where}: public table {name!r} of the policy does not exist in {engine.path}")
        if pt.key not in cols:
            raise PolicyFileError(f"{where}: field 'public_tables.{name}.key' names column {pt.key!r}, "
                                  f"which table {name!r} does not have (columns: {', '.join(cols)})")
        # A join is a lookup only if the key is unique: else one private row would meet
        # several public rows and be counted several times. The table is public: say so plainly.
        if not engine.units_unique(name, pt.key):
            raise PolicyFileError(f"{where}: field 'public_tables.{name}.key': column {pt.key!r} has repeated or "
                                  "NULL values, so a private row could join several of its rows",
                                  hint="declare a column that identifies one row of the public table.")


def _check_range_key(where: str, table: str, column: str, grain: str, sql_type: str) -> None:
    """A declared range fits a DATE column by the day, or a TIMESTAMP column (no time zone:
    its buckets would depend on the session's zone)."""
    field = f"tables.{table}.keys.{column}"
    kind = sql_type.upper()
    if kind == "DATE" and grain != "day":
        raise PolicyFileError(f"{where}: field '{field}.grain': column {column!r} is a DATE, so its grain is the day "
                              f"(not {grain!r})")
    if kind not in ("DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"):
        raise PolicyFileError(f"{where}: field '{field}.range': column {column!r} is {sql_type}; a range is declared "
                              "for DATE or TIMESTAMP columns (without time zone)")


#: the values each integer type holds (DuckDB's), for an integer range's ends
_INTEGER_SPANS = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128,
                  "UTINYINT": -8, "USMALLINT": -16, "UINTEGER": -32, "UBIGINT": -64, "UHUGEINT": -128}


def _check_number_range(where: str, table: str, column: str, ends: tuple[int, int], sql_type: str) -> None:
    """An integer range fits an integer column that holds both of its ends: a DOUBLE or a DECIMAL
    holds values between the integers, which the keyset would not hold; an end past the type
    would make every expression of the key fail on its own keyset."""
    field = f"tables.{table}.keys.{column}.range"
    bits = _INTEGER_SPANS.get(sql_type.upper())
    if bits is None:
        raise PolicyFileError(f"{where}: field '{field}': column {column!r} is {sql_type}; an integer range is declared "
                              "for integer columns (a DATE or TIMESTAMP range is written with days)",
                              hint="declare the column a measure, a private key ({}), or a keyset of its values.")
    lo, hi = (0, 2 ** -bits - 1) if bits < 0 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= ends[0] <= ends[1] <= hi:
        raise PolicyFileError(f"{where}: field '{field}': [{ends[0]}, {ends[1]}] does not fit column {column!r} of "
                              f"type {sql_type} (from {lo} to {hi})")


def check_units(policy: Policy, engine: Engine, table: str) -> None:
    """Refuse a private table whose privacy unit does not identify one row per unit. A pass is
    remembered with the data file's identity (:mod:`dpsql.records.unit`), so the scan it may need
    (no PRIMARY KEY in the catalog) is paid once per file, not once per process."""
    tp = policy.tables[table]
    if tp.many_rows:  # many rows per unit, declared: nothing to check (docs/privacy.md "Many rows per unit")
        if not getattr(engine, "many_rows", True):
            raise PolicyFileError(f"table {table!r} declares max_groups (many rows per unit), which this engine "
                                  "does not answer yet", hint="run it with the DuckDB engine (the default).")
        return
    # The file that holds the table: the database, or (DuckDB or Spark over Parquet) the table's
    # own Parquet file or folder (every file below it). A glob or a URI has no identity: checked
    # per process.
    source = Path(policy.parquet[table]) if policy.parquet else engine.path
    before = unit_record.identity(source, table, tp.privacy_unit)
    if before is not None and unit_record.passed(source, table, tp.privacy_unit):
        return
    if not engine.units_unique(table, tp.privacy_unit):
        raise PolicyFileError(
            f"table {table!r}: the privacy unit {tp.privacy_unit!r} does not identify one row per unit; "
            "dpsql refuses to answer because the policy declares one row per unit",
            hint=f"if a unit may have many rows, the data owner adds max_groups = N (the groups a unit keeps in a "
                 f"query) and row_threshold = R to [tables.{table}] (docs/policy.md, \"Many rows per unit\"); "
                 "else declare the right unit column.")
    unit_record.remember(source, table, tp.privacy_unit, before)
