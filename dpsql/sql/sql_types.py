"""DuckDB types reduced to what casting cares about, and the common type of a comparison
(:func:`common_type`): whether DuckDB's implicit casts can fail, decided from two types alone
(docs/privacy.md, "The exact query is total"). Used by :mod:`dpsql.sql.totality` and by the
joins dpsql writes (:mod:`dpsql.sql.rewrite`). No I/O; nothing here reads a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

#: integer types: the number of decimal digits of the largest magnitude
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "HUGEINT": 39,
               "UTINYINT": 3, "USMALLINT": 5, "UINTEGER": 10, "UBIGINT": 20, "UHUGEINT": 39}
_FLOATS = ("DOUBLE", "FLOAT", "REAL")
_TEXT = ("VARCHAR", "TEXT", "STRING", "CHAR")
#: DuckDB's widest DECIMAL
MAX_DECIMAL_WIDTH = 38
#: SUBSTR's offset and length must stay within ±(2^32 − 1) or DuckDB raises per row
SUBSTR_BOUND = 2**32 - 1


@dataclass(frozen=True)
class SqlType:
    """A DuckDB type reduced to what casting cares about. ``kind``: int, decimal, float, text,
    bool or other (compared with nothing but its own ``name``)."""

    kind: str
    name: str = ""
    digits: int = 0  # int: digits of its range; decimal: width
    scale: int = 0


TEXT = SqlType("text", "VARCHAR")
BOOL = SqlType("bool", "BOOLEAN")


def sql_type(name: str) -> SqlType:
    """The :class:`SqlType` of a DuckDB type name from the catalog."""
    upper = name.upper().strip()
    if upper in _INT_DIGITS:
        return SqlType("int", upper, _INT_DIGITS[upper])
    m = re.fullmatch(r"(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", upper)
    if m:
        return SqlType("decimal", upper, int(m.group(1)), int(m.group(2) or 0))
    if upper in _FLOATS:
        return SqlType("float", upper)
    if upper.startswith(_TEXT) and "[" not in upper:
        return TEXT
    if upper in ("BOOLEAN", "BOOL"):
        return BOOL
    return SqlType("other", upper)


def literal_type(node: exp.Literal) -> SqlType | None:
    """The type DuckDB gives a literal: an integer literal the narrowest integer that holds it
    (None past HUGEINT: DuckDB refuses it whatever the rows); ``1.50`` DECIMAL(3,2);
    ``1e5`` DOUBLE; a string literal VARCHAR."""
    if node.is_string:
        return TEXT
    text = node.this.lstrip("+-")
    if re.fullmatch(r"\d+", text):
        value = int(text)
        for name, bits in (("INTEGER", 31), ("BIGINT", 63), ("HUGEINT", 127)):
            if value < 2**bits:
                return SqlType("int", name, _INT_DIGITS[name])
        return None
    m = re.fullmatch(r"(\d*)\.(\d*)", text)
    if m:
        whole, frac = m.group(1).lstrip("0"), m.group(2)
        width = max(len(whole) + len(frac), 1)
        if width > MAX_DECIMAL_WIDTH:
            return SqlType("float", "DOUBLE")
        return SqlType("decimal", f"DECIMAL({width},{len(frac)})", width, len(frac))
    return SqlType("float", "DOUBLE")


def _int_part(t: SqlType) -> int:
    return t.digits if t.kind == "int" else t.digits - t.scale


def common_type(a: SqlType, b: SqlType) -> SqlType | None:
    """The type DuckDB casts both sides to — when casting every value of ``a`` and of ``b`` to
    it cannot fail; else None. Integers widen to integers; integers and decimals meet in a
    DECIMAL that must fit in 38 digits (else DuckDB caps the width and the cast overflows);
    anything numeric meets a float in DOUBLE (every integer and decimal converts)."""
    if a == b:
        return a
    if a.kind == b.kind == "int":
        if "UHUGEINT" in (a.name, b.name) and not (a.name.startswith("U") and b.name.startswith("U")):
            return None  # DuckDB casts UHUGEINT and a signed integer to HUGEINT: 2^128 − 1 fails
        return a if a.digits >= b.digits else b
    if {a.kind, b.kind} <= {"int", "decimal"}:
        scale = max(a.scale, b.scale)
        width = max(_int_part(a), _int_part(b)) + scale
        return SqlType("decimal", f"DECIMAL({width},{scale})", width, scale) if width <= MAX_DECIMAL_WIDTH else None
    if "float" in (a.kind, b.kind) and {a.kind, b.kind} <= {"int", "decimal", "float"}:
        return SqlType("float", "DOUBLE")
    if a.kind == b.kind and a.kind in ("text", "bool"):
        return a
    return None


def comparison_total(types: list[SqlType | None]) -> bool:
    """Whether comparing (or unifying, as CASE and COALESCE do) values of these types can never
    fail: every pair has a common type that holds both."""
    if any(t is None for t in types):
        return False
    known = list(dict.fromkeys(t for t in types if t is not None))  # distinct: an IN list of 10,000 literals has few types
    return all(common_type(a, b) is not None for i, a in enumerate(known) for b in known[i + 1:])
