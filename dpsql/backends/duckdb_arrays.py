"""The exact rows of a query whose LIST columns hold integers, with those lists as numpy arrays
(issue 34: a quantile's values, ``sql/quantiles.py`` values_sql). ``fetchall`` builds one
Python int per value (~0.2 s a million); ``fetchnumpy`` hands each list over as one int64
array (int32 for an INTEGER list: values_sql's when the grid's ends fit one). The other columns
are read as ``fetchall`` reads them: through numpy only for the types whose numpy values become
the same Python values (``tolist``), else by ``fetchall`` with the lists turned into arrays after
(a DATE, for one, comes out of numpy as a datetime)."""

from __future__ import annotations

from typing import Any

#: the column types whose ``fetchnumpy(...).tolist()`` values equal ``fetchall``'s (NULL: None)
_SAME = {"VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
         "UBIGINT", "DOUBLE", "FLOAT"}
_LISTS = {"BIGINT[]", "INTEGER[]"}


def fetch_arrays(cur: Any) -> list[tuple[Any, ...]]:
    """All rows of the DuckDB result ``cur``, its integer LIST columns as int64 arrays (int32 for
    an INTEGER list; None for NULL)."""
    import numpy as np

    types = [str(d[1]) for d in cur.description]
    if all(t in _SAME or t in _LISTS for t in types):
        columns = [c.tolist() for c in cur.fetchnumpy().values()]  # a masked entry (NULL) is None
        return list(zip(*columns)) if columns and columns[0] else []
    lists = [(i, np.int32 if t == "INTEGER[]" else np.int64) for i, t in enumerate(types) if t in _LISTS]
    out = []
    for row in cur.fetchall():
        row = list(row)
        for i, dtype in lists:
            row[i] = None if row[i] is None else np.array(row[i], dtype=dtype)
        out.append(tuple(row))
    return out
