"""PEP 249 exception tree and dpsql's stable error codes.

Every error dpsql raises on purpose is a :class:`DpsqlError` carrying a stable ``code``
(match on it, never on message text) and subclasses the PEP 249 class generic client code
expects: an unsupported query is a ``ProgrammingError`` / ``NotSupportedError``, a refused
budget an ``OperationalError``.

Codes:
    DP1xx  grammar: the SQL is outside the supported subset
    DP2xx  policy: the SQL is well-formed but the privacy policy does not allow it
    DP3xx  budget
    DP4xx  configuration: policy file, database file
    DP9xx  internal: a bug in dpsql, never the user's fault

Messages never quote a value from the private data: they are built only from the SQL text,
the policy and the schema.

This module imports nothing of dpsql.
"""

from __future__ import annotations


class Warning(Exception):  # noqa: A001 - the name is fixed by PEP 249
    """PEP 249 Warning."""


class Error(Exception):
    """PEP 249 base of all errors."""


class InterfaceError(Error):
    """PEP 249: an error of the interface rather than the database."""


class DatabaseError(Error):
    """PEP 249: an error related to the database."""


class DataError(DatabaseError):
    """PEP 249: a problem with the processed data."""


class OperationalError(DatabaseError):
    """PEP 249: an error in the database's operation (budget, files)."""


class IntegrityError(DatabaseError):
    """PEP 249: relational integrity."""


class InternalError(DatabaseError):
    """PEP 249: the database hit an internal error."""


class ProgrammingError(DatabaseError):
    """PEP 249: a programming error (bad SQL, unknown table)."""


class NotSupportedError(DatabaseError):
    """PEP 249: a method or query the database does not support."""


class DpsqlError(Error):
    """Mixin base of every error dpsql raises deliberately.

    Attributes:
        code: stable code such as ``"DP201"``.
        message: what was wrong and what to write instead.
        line, column: 1-based position in the SQL text, when known.
        hint: an extra line of advice, when there is one.
    """

    code = "DP900"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        if code is not None:
            self.code = code
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line else ""
        text = f"{self.code}: {self.message}{where}"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"code": self.code, "message": self.message}
        if self.line:
            out["line"] = self.line
            out["column"] = self.column
        if self.hint:
            out["hint"] = self.hint
        return out


class QueryRefused(DpsqlError, ProgrammingError):
    """The query is outside what dpsql can protect (grammar DP1xx, policy DP2xx)."""

    code = "DP100"


class NotSupportedYet(DpsqlError, NotSupportedError):
    """A well-formed query using a feature dpsql does not protect yet (e.g. MIN, MAX)."""

    code = "DP109"


class BudgetExceededError(DpsqlError, OperationalError):
    """The remaining privacy budget cannot cover the query; nothing was charged or released."""

    code = "DP301"


class QueryCostCapError(DpsqlError, OperationalError):
    """The query would cost more than the policy's per-query cap (``budget.max_query_rho``);
    nothing was charged or released."""

    code = "DP303"


class BudgetValueError(DpsqlError, ProgrammingError):
    """A budget value given by the caller is not a finite positive number."""

    code = "DP302"


class WorkloadFileError(DpsqlError, ProgrammingError):
    """A workload file (docs/workloads.md) cannot be read or asks for something dpsql cannot
    do; refused before any private row is read, nothing charged."""

    code = "DP501"


class PolicyFileError(DpsqlError, OperationalError):
    """The policy file is missing or invalid: carries file, field and reason."""

    code = "DP401"


class DatabaseFileError(DpsqlError, OperationalError):
    """The database file cannot be opened or does not match the policy."""

    code = "DP402"


class ConnectionClosedError(DpsqlError, InterfaceError):
    """Use of a closed connection or cursor."""

    code = "DP403"


class LedgerError(DpsqlError, OperationalError):
    """The budget ledger cannot record a charge (missing, replaced, corrupt, unwritable or
    closed); nothing was charged and nothing released."""

    code = "DP404"


class EngineUnavailable(DpsqlError, OperationalError):
    """The execution engine asked for cannot run here: an unknown name, pyspark not installed,
    no Parquet data for Spark, a Spark session that does not start."""

    code = "DP405"


class DpsqlInternalError(DpsqlError, InternalError):
    """A bug in dpsql. The message never carries data values."""

    code = "DP900"


class QueryFailed(DpsqlInternalError):
    """A failure after private rows were read (out of memory, a bug): the query's full cost was
    charged and the message is fixed text (docs/privacy.md, "Phases of a query")."""

    code = "DP901"


class PostProcessingFailed(DpsqlError, DataError):
    """SQL over a released answer failed on its noisy rows, after the release was charged (DP125,
    dpsql/intercept/over_answers.py): the charge stands, the message quotes no value."""

    code = "DP125"


__all__ = [
    "WorkloadFileError",
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
    "DpsqlError",
    "QueryRefused",
    "NotSupportedYet",
    "BudgetExceededError",
    "BudgetValueError",
    "PolicyFileError",
    "DatabaseFileError",
    "ConnectionClosedError",
    "LedgerError",
    "EngineUnavailable",
    "DpsqlInternalError",
    "QueryFailed",
    "PostProcessingFailed",
]
