"""Rows into a DuckDB table for a test's fixture, in one transaction and a few statements.

``con.executemany("INSERT …", rows)`` runs one statement per row, and on a database file each
is its own transaction written to the file: ~2 ms a row, 2.5 s for the 1,188 visits of
``test_many_rows`` — most of the suite's many-row tests' time went to building their fixtures.
:func:`insert` writes the same rows in multi-row ``VALUES`` statements of :data:`PER` rows inside
one transaction (0.13 s for those visits).

The same values as ``executemany``: a multi-row ``VALUES`` gives each column one type for the
whole statement, which equals the per-row binding only for plain values; so rows holding
anything but None, bool, str, float and ints within BIGINT (a ``Decimal``, a HUGEINT-sized int,
bytes, a date…) take ``executemany``, still in the one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: rows per ``INSERT … VALUES`` statement
PER = 250


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, str, float)):
        return True
    return type(value) is int and -(2**63) <= value < 2**63


def insert(con: Any, table: str, rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` (each a sequence of the table's columns, in order) into ``table``."""
    rows = [tuple(r) for r in rows]
    if not rows:
        return
    width = len(rows[0])
    marks = "(" + ", ".join(["?"] * width) + ")"
    plain = all(len(r) == width and all(_plain(v) for v in r) for r in rows)
    by_type = all(len({type(r[i]) for r in rows} - {type(None)}) <= 1 for i in range(width)) if plain else False
    con.execute("BEGIN TRANSACTION")
    try:
        if plain and by_type:  # one Python type per column (or None): VALUES types it as one row would
            for start in range(0, len(rows), PER):
                chunk = rows[start:start + PER]
                con.execute(f"INSERT INTO {table} VALUES " + ", ".join([marks] * len(chunk)),
                            [v for r in chunk for v in r])
        else:
            con.executemany(f"INSERT INTO {table} VALUES {marks}", rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
