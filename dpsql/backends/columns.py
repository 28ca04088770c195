"""The exact query's rows as columns (issue 34): one numpy array per column, holding exactly the
values a fetch of rows gives (``Engine.run``), for the release of a large answer without a Python
object per value (dpsql/pipeline/columnar.py).

Only result types whose array form is exact are fetched as columns: integers of up to 64 bits,
BOOLEAN, DOUBLE and VARCHAR. HUGEINT (DuckDB's SUM of integers) is fetched as BIGINT where it fits,
with its decimal text beside it where not (a float64, numpy's form of HUGEINT, is not exact past
2^53). With any other type (DATE, DECIMAL, lists, ...) the rows are fetched as rows. The choice is
made from the result's types, bound before a row is read: the query text and the schema, public.
NULLs are masked (``numpy.ma``); :meth:`Columns.rows` gives the rows a row fetch gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: result types fetched as columns: their arrays hold exactly the values of a row fetch
EXACT_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                         "UINTEGER", "UBIGINT", "DOUBLE", "VARCHAR", "HUGEINT"})


class Columns:
    """The exact rows as columns: ``names`` and ``types`` (DuckDB's) and one array per column
    (masked where NULL; an object array of Python ints for a HUGEINT column past int64)."""

    def __init__(self, names: list[str], types: list[str], arrays: list[np.ndarray]) -> None:
        self.names, self.types, self.arrays = names, types, arrays

    def __len__(self) -> int:
        return len(self.arrays[0]) if self.arrays else 0

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows, as a row fetch gives them (Python values, None for NULL)."""
        return list(zip(*[a.tolist() for a in self.arrays]))


def columns_sql(sql: str, types: list[str]) -> str | None:
    """The SQL that fetches ``sql``'s result as exact columns (named c0, c1, ...; a HUGEINT column
    i as ci, BIGINT or NULL, and ti, its text where it does not fit BIGINT), or None when a type
    has no exact array form. Every expression it adds is total: TRY_CAST, CAST of HUGEINT to
    VARCHAR, IS NULL, CASE."""
    if not types or not set(types) <= EXACT_TYPES:
        return None
    parts = []
    for i, t in enumerate(types):
        if t == "HUGEINT":
            parts += [f"TRY_CAST(c{i} AS BIGINT) AS c{i}",
                      f"CASE WHEN TRY_CAST(c{i} AS BIGINT) IS NULL THEN CAST(c{i} AS VARCHAR) END AS t{i}"]
        else:
            parts.append(f"c{i}")
    names = ", ".join(f"c{i}" for i in range(len(types)))
    return f"SELECT {', '.join(parts)} FROM ({sql}) AS __exact({names})"


def assemble(names: list[str], types: list[str], fetched: dict[str, np.ndarray]) -> Columns:
    """:class:`Columns` from the arrays of :func:`columns_sql`'s result: a HUGEINT column whose
    every value fits BIGINT stays int64; one with a value past it becomes an object array of
    Python ints (the text read back exactly), None where NULL."""
    import numpy as np

    arrays = []
    for i, t in enumerate(types):
        a = fetched[f"c{i}"]
        if t == "HUGEINT":
            text = fetched[f"t{i}"]
            big = np.flatnonzero(~np.ma.getmaskarray(text)) if text.dtype == object else np.arange(0)
            if big.size:
                values = a.tolist()
                for j in big.tolist():
                    values[j] = int(text[j])
                a = np.array(values + [None], dtype=object)[:-1]  # Python ints, any size
        arrays.append(a)
    return Columns(names, types, arrays)
