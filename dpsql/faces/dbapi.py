"""PEP 249 (DB-API 2.0) face over :class:`dpsql.session.Session`.

Every ``execute`` is one private release: it is charged to the connection's budget before its
rows reach the cursor, and the cursor's ``receipt`` says what it cost and how noisy it is.
"""

from __future__ import annotations

import dataclasses

import datetime
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dpsql.errors import ConnectionClosedError, NotSupportedError
from dpsql.intercept import execute
from dpsql.pipeline.result import Explanation, Receipt, Result
from dpsql.session import Session

apilevel = "2.0"
threadsafety = 1  # threads may share the module, not connections
paramstyle = "qmark"


class _TypeObject:
    """PEP 249 type objects compare equal to the DuckDB type names they cover."""

    def __init__(self, *prefixes: str) -> None:
        self.prefixes = prefixes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.upper().startswith(self.prefixes)

    def __hash__(self) -> int:
        return hash(self.prefixes)


STRING = _TypeObject("VARCHAR", "CHAR", "TEXT", "STRING", "ENUM", "UUID")
NUMBER = _TypeObject("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                     "UINTEGER", "UBIGINT", "UHUGEINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")
DATETIME = _TypeObject("DATE", "TIME", "TIMESTAMP")
BINARY = _TypeObject("BLOB", "BYTEA", "BINARY", "VARBINARY")
ROWID = _TypeObject("ROWID")

# PEP 249 constructors: Python's own types, which ``execute`` binds as typed literals
# (DATE '...', TIME '...', TIMESTAMP '...', a BLOB).
Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - the name is fixed by PEP 249
    """The local date of ``ticks`` seconds since the epoch (as ``time.localtime``)."""
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802
    """The local time of day of ``ticks`` seconds since the epoch."""
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802
    """The local date and time of ``ticks`` seconds since the epoch."""
    return Timestamp(*time.localtime(ticks)[:6])


def Binary(data: bytes | bytearray | memoryview | str) -> bytes:  # noqa: N802
    """A binary (BLOB) value; text is encoded as UTF-8."""
    return data.encode() if isinstance(data, str) else bytes(data)


def connect(database: str | Path | None = None, policy: str | Path | None = None, *, rho: Any = None,
            analyst: str = "", threads: int | None = None, error_columns: Any = None, clamp_negative: Any = None,
            engine: str | None = None, spark_master: str | None = None, reuse: bool = True,
            _random_source: Any = None) -> Connection:
    """Open a dpsql connection.

    Args:
        database: a DuckDB file; None reads the Parquet files the policy names (docs/policy.md),
            or opens the demo database (built on first use) when there is no such policy.
        policy: the data owner's policy file; None looks for ``<database stem>.policy.toml``
            beside the database (the demo's policy for the demo database).
        rho: zCDP budget of each query's noise (default: the policy's ``budget.default_rho``). A
            GROUP BY on a private key adds its partition selection's epsilon²/2 and delta to the
            charge; the receipt (``cursor.receipt``) shows the total and its parts.
        analyst: a name recorded with each charge.
        threads: DuckDB worker threads (default: all cores).
        error_columns: True (or "on") adds ``<column>_moe95`` for each noisy column, after the columns asked for, of every
            answer; "sigma" (or "all") adds ``<column>_sigma`` too (``SET dpsql.error_columns``).
        clamp_negative: True (or "on") shows negative noisy counts, and sums of measures the
            schema bounds below by 0, as 0 (post-processing; ``SET dpsql.clamp_negative``).
        engine: "duckdb" (default, or $DPSQL_ENGINE) or "spark": Spark SQL over the policy's Parquet files
            (docs/scale.md; needs ``pip install 'dpsql[spark]'``). With no database and no policy,
            the demo tables exported to Parquet.
        spark_master: the Spark master URL (``local[2]``, ``spark://host:7077``, ``sc://host``
            for Spark Connect); default SPARK_REMOTE, else spark.master, else ``local[*]``.
        reuse: False makes each statement a fresh, charged release with new noise, instead of the
            answer released before to this analyst (``SET dpsql.reuse = off``; docs/privacy.md). For
            studies of the noise, which repeat a statement on purpose.
        _random_source: TEST ONLY — a seeded source from :func:`dpsql.testing.seeded_random`.
            The default is the operating system's CSPRNG.
    """
    session = Session(database, policy, rho=rho, random_source=_random_source, threads=threads, analyst=analyst,
                      error_columns=error_columns, clamp_negative=clamp_negative, engine=engine,
                      spark_master=spark_master)
    if not reuse:
        session.default_output = session.output = dataclasses.replace(session.default_output, reuse=False)
    return Connection(session)


class Connection:
    def __init__(self, session: Session) -> None:
        self._session: Session | None = session

    @property
    def session(self) -> Session:
        if self._session is None:
            raise ConnectionClosedError("the connection is closed")
        return self._session

    def cursor(self) -> Cursor:
        return Cursor(self)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def commit(self) -> None:
        """Nothing to commit: dpsql never writes the database. (Charges are recorded when made.)"""
        self.session  # noqa: B018 - raises when closed

    def rollback(self) -> None:
        raise NotSupportedError("dpsql is read-only and a charged release cannot be rolled back")

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        """Shortcut: a new cursor, executed."""
        return self.cursor().execute(sql, parameters)

    def explain(self, sql: str) -> Explanation:
        """The plan of a query, its exact SQL and its noise: costs nothing, touches no data. SQL over
        a released answer: its subquery's, the outer query free (dpsql/intercept/over_answers.py)."""
        from dpsql.intercept.over_answers import explanation

        return explanation(self.session, sql) or self.session.explain(sql)

    def set_rho(self, rho: Any) -> None:
        """Set the zCDP ρ charged for each following query of this connection."""
        self.session.set_rho(rho)

    @property
    def budget(self) -> dict[str, str]:
        """This analyst's budget as text: ρ ``spent`` / ``remaining`` / ``total``, ``delta_spent`` /
        ``delta_remaining`` / ``delta_total`` (partition selection), ``rho_per_query``, and the
        (``epsilon``, ``delta``)-DP guarantee of everything spent (ρ converted at
        ``conversion_delta`` = 1e-6, tight; ``epsilon_analytic`` the analytic bound). That guarantee is a
        record's never split; when the charges include tables with many rows per unit, ``units`` says
        what holds for a unit of each (as ``\\budget`` and ``dpsql ledger`` do: P(u) summed over its groups);
        when every charge is pure ε-DP with δ = 0 (geometric mode), ``pure_epsilon`` is their sum."""
        from dpsql.privacy.accounting import DEFAULT_CONVERSION_DELTA, pure_total
        from dpsql.privacy.budget import fmt, fmt_up
        from dpsql.privacy.policy_function import unit_sentences

        led = self.session.ledger
        out = {**led.summary(), "rho_per_query": fmt(self.session.rho)}
        units = unit_sentences(led.charges, DEFAULT_CONVERSION_DELTA, "dpsql policy")
        if units:
            out["units"] = "; ".join(units)
        if (pure := pure_total(led.charges)) is not None:  # every charge pure epsilon-DP, no selection
            out["pure_epsilon"] = fmt_up(pure)
        return out

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cursor:
    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._result: Result | None = None
        self._pos = 0
        self._closed = False

    # PEP 249 attributes ---------------------------------------------------------
    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        if self._result is None:
            return None
        return [(name, typ, None, None, None, None, None) for name, typ in zip(self._result.columns, self._result.types)]

    @property
    def rowcount(self) -> int:
        return -1 if self._result is None else len(self._result.rows)

    @property
    def receipt(self) -> Receipt | None:
        """What the last query cost and its σ / 95% MOE per column (None before a query)."""
        return None if self._result is None else self._result.receipt

    @property
    def result(self) -> Result | None:
        return self._result

    # PEP 249 methods ------------------------------------------------------------
    def execute(self, operation: str, parameters: Sequence[Any] | None = None) -> Cursor:
        self._check_open()
        self._result = None
        self._result = execute(self.connection.session, operation, parameters)
        self._pos = 0
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> Cursor:
        """Refused (NotSupportedError), whatever the statement: every query is a charged release,
        and PEP 249 leaves the results of ``executemany`` undefined, so all but the last answer
        would be paid for and lost. Call :meth:`execute` once per parameter set and read each
        answer (docs/bi.md, "DB-API")."""
        self._check_open()
        raise NotSupportedError("executemany is not supported: each query is a charged release, and all but the "
                                "last answer would be lost; call execute() once per parameter set")

    def nextset(self) -> None:
        """None: a dpsql statement has one result set."""
        self._rows()  # raises, as PEP 249 asks, when no statement has been executed
        return None

    @property
    def lastrowid(self) -> None:
        """None: dpsql never inserts a row."""
        return None

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._rows()
        if self._pos >= len(rows):
            return None
        self._pos += 1
        return rows[self._pos - 1]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        rows = self._rows()
        n = self.arraysize if size is None else size
        out = rows[self._pos:self._pos + n]
        self._pos += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows()
        out = rows[self._pos:]
        self._pos = len(rows)
        return out

    def close(self) -> None:
        self._closed = True
        self._result = None

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        pass

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def _rows(self) -> list[tuple[Any, ...]]:
        self._check_open()
        if self._result is None:
            from dpsql.errors import ProgrammingError

            raise ProgrammingError("no query has been executed on this cursor")
        return self._result.rows

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionClosedError("the cursor is closed")
        self.connection.session  # noqa: B018 - raises when the connection is closed
