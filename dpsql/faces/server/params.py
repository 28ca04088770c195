"""The types of a prepared statement's ``$n`` parameters that the client left unspecified.

PostgreSQL infers them from where each parameter stands; clients such as asyncpg then encode
their values by the types the server describes. dpsql reads them from the schema the same
way, from public information only: a parameter compared with a column (``=``, ``<``, ``IN``,
``BETWEEN``, ``LIKE``) takes that column's type, one in ``= ANY($n)`` an array of it, one in
``LIMIT``/``OFFSET`` is a bigint, and anything else is text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp

from dpsql.faces.server import pgtypes
from dpsql.faces.server.pgcatalog.casts import array_casts

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between, exp.Like, exp.ILike)


def infer_types(sql: str, given: list[int], column_type: Callable[[str], str | None]) -> list[int]:
    """``given`` (one type OID per parameter, 0 where unspecified) with the zeros filled in;
    ``column_type`` names a served column's DuckDB type."""
    out = list(given)
    try:
        tree = sqlglot.parse_one(array_casts(sql), read="postgres")
    except sqlglot.errors.SqlglotError:
        tree = None
    found: dict[int, int] = {}
    if tree is not None:
        for node in tree.find_all(exp.Parameter):
            try:
                n = int(node.name)
            except ValueError:
                continue
            oid = _from_context(node, column_type)
            if oid is not None:
                found.setdefault(n, oid)
    for i, oid in enumerate(out):
        if oid == 0:
            out[i] = found.get(i + 1, pgtypes.TEXT)
    return out


def _from_context(node: exp.Expression, column_type: Callable[[str], str | None]) -> int | None:
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, (exp.Any, exp.All)) or (isinstance(parent, exp.Anonymous) and parent.name.upper() == "ALL"):
        # `col = ANY($1)`: an array of the column's type (text[] when the column is not known)
        element = _from_context(parent, column_type)
        return pgtypes.ARRAYS.get(element if element is not None else pgtypes.TEXT, pgtypes.ARRAYS[pgtypes.TEXT])
    if isinstance(parent, (exp.Limit, exp.Offset)):
        return pgtypes.INT8
    if isinstance(parent, exp.Cast):  # UINTEGER: PostgreSQL's oid, as the catalog rewrite spells it
        duck = parent.to.sql("duckdb")
        return pgtypes.oid_of({"UINTEGER": "OID", "UINTEGER[]": "OID[]"}.get(duck, duck))
    if isinstance(parent, _COMPARISONS):
        for side in parent.iter_expressions():
            if isinstance(side, exp.Column):
                duck = column_type(side.name)
                if duck is not None:
                    return pgtypes.oid_of(duck)
    return None


def placeholder_value(oid: int) -> Any:
    """A stand-in value of type ``oid``, to describe a statement before its values are bound
    (the shape of an answer never depends on a WHERE value)."""
    if oid in (pgtypes.INT2, pgtypes.INT4, pgtypes.INT8, pgtypes.OID):
        return 1
    if oid in (pgtypes.FLOAT4, pgtypes.FLOAT8, pgtypes.NUMERIC):
        return 1.0
    if oid == pgtypes.BOOL:
        return True
    if oid in pgtypes.ELEMENTS:
        return []
    if oid == pgtypes.DATE:
        return "2000-01-01"
    if oid in (pgtypes.TIMESTAMP, pgtypes.TIMESTAMPTZ):
        return "2000-01-01 00:00:00"
    return ""
