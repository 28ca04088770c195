"""dpsql: GROUP BY aggregates over confidential, skewed data with a differential-privacy guarantee.

    >>> import dpsql
    >>> con = dpsql.connect()            # the demo database and its policy
    >>> cur = con.cursor().execute("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2")
    >>> rows, receipt = cur.fetchall(), cur.receipt
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpsql.errors import (
    BudgetExceededError,
    DatabaseError,
    DataError,
    DpsqlError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    LedgerError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    QueryFailed,
    QueryRefused,
    Warning,
)

from dpsql.version import __version__

if TYPE_CHECKING:
    from dpsql.faces.dbapi import (
        BINARY,
        DATETIME,
        NUMBER,
        ROWID,
        STRING,
        Binary,
        Connection,
        Cursor,
        Date,
        DateFromTicks,
        Time,
        TimeFromTicks,
        Timestamp,
        TimestampFromTicks,
        apilevel,
        connect,
        paramstyle,
        threadsafety,
    )

#: the PEP 249 names of :mod:`dpsql.faces.dbapi`, imported on first use (PEP 562): `import dpsql`
#: alone, and every `dpsql` command that opens no database (ledger, convert, --help), then loads
#: neither sqlglot, numpy, DuckDB nor the query pipeline.
_DBAPI_NAMES = frozenset({
    "connect", "Connection", "Cursor", "apilevel", "threadsafety", "paramstyle",
    "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks", "Binary",
})


def __getattr__(name: str) -> Any:
    """The DB-API's names (``dpsql.connect``, ``dpsql.paramstyle``, ...), from
    :mod:`dpsql.faces.dbapi` on first use; kept as module globals after that."""
    if name not in _DBAPI_NAMES:
        raise AttributeError(f"module 'dpsql' has no attribute {name!r}")
    from dpsql.faces import dbapi

    globals().update({n: getattr(dbapi, n) for n in _DBAPI_NAMES})
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | _DBAPI_NAMES)


__all__ = [
    "connect", "Connection", "Cursor", "apilevel", "threadsafety", "paramstyle",
    "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks", "Binary",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "DpsqlError", "QueryRefused", "BudgetExceededError", "LedgerError", "QueryFailed",
]
