"""dpsql: GROUP BY aggregates over confidential, skewed data with a differential-privacy guarantee.

    >>> import dpsql
    >>> con = dpsql.connect()            # the demo database and its policy
    >>> cur = con.cursor().execute("SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2")
    >>> rows, receipt = cur.fetchall(), cur.receipt
"""

from __future__ import annotations

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

__all__ = [
    "connect", "Connection", "Cursor", "apilevel", "threadsafety", "paramstyle",
    "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks", "Binary",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "DpsqlError", "QueryRefused", "BudgetExceededError", "LedgerError", "QueryFailed",
]
