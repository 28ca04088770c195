"""The interface an execution engine implements (:mod:`dpsql.backends`).

Phase 1 of a query (decide, from public information) uses the catalog, the unit check, public
values and :meth:`Engine.check`; phase 2 runs the exact query with :meth:`Engine.run`, which
must be total (docs/privacy.md, "Phases of a query") and must never let the engine's own
error text through (it can quote private rows).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the seam itself does not need numpy
    import numpy as np


@functools.cache  # the machine's memory, read once a process (a system call a query otherwise)
def memory_budget() -> int:
    """The memory one query may take in this process (bytes): half the machine's physical memory
    (public: nothing private decides it), or 2 GiB where the machine does not say. The DuckDB
    engine's ``memory_limit`` and phase 1's bound (dpsql/pipeline/memory.py) both use it."""
    import os

    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 2 << 30


class InterruptedBeforeStart(KeyboardInterrupt):
    """An interrupt that stopped a query before the engine started it: no row was read, so the
    session charges nothing for it."""


class Engine(Protocol):
    """A read-only source of private rows that runs dpsql's SQL and nothing else."""

    #: the data file (shown in messages and recorded with each charge)
    path: Path

    def schema(self, tables: list[str]) -> dict[str, dict[str, str]]:
        """Column names and types of ``tables`` (lower-cased names), from the catalog only."""
        ...

    def not_null_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Columns the schema declares NOT NULL, per table (a schema fact, not a look at rows)."""
        ...

    def nonnegative_columns(self, tables: list[str]) -> dict[str, set[str]]:
        """Columns the schema says cannot be negative (unsigned types, CHECK x >= 0), per table:
        a schema fact, used only to post-process noisy values (clamping, notes)."""
        ...

    def units_unique(self, table: str, unit: str) -> bool:
        """Whether ``unit`` identifies one row of ``table``: the data owner's declaration,
        checked (pass/fail only; the same for every query)."""
        ...

    def public_values(self, table: str, column: str) -> list[Any]:
        """The distinct non-NULL values of a column of a table the policy declares public."""
        ...

    def check(self, sql: str) -> None:
        """Refuse (DP120) what cannot run whatever the rows are, by running ``sql`` on an empty
        twin of the schema; the message may be shown, as no row was read."""
        ...

    #: what decides :meth:`check`'s answer besides the SQL and the schema (the engine and its
    #: version), or None when a pass must not be remembered across processes (dpsql/records/check.py)
    check_identity: str | None

    #: the engine and its version, as records of what it read name it
    engine_version: str

    def catalog(self) -> dict[str, Any] | None:
        """Everything this engine reads from the data file's catalog (JSON values), for the next
        process to :meth:`adopt_catalog` (dpsql/records/catalog.py); None when it cannot be
        remembered."""
        ...

    def adopt_catalog(self, catalog: dict[str, Any]) -> None:
        """Take ``catalog``, as :meth:`catalog` returned it for this very file, instead of reading
        the catalog; raise ValueError (or TypeError, KeyError) when it is not one."""
        ...

    def describe(self, sql: str) -> list[str]:
        """The type names of ``sql``'s result columns, bound without reading a row."""
        ...

    def public_catalog(self, tables: list[str], public: list[str], name: str) -> PublicCatalog:
        """A new, separate database holding only public information: the schema of ``tables``
        with no row, the rows of the ``public`` tables (declared public by the policy), named
        ``name``; locked down like the engine. What runs there can read nothing private."""
        ...

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """Run dpsql's SQL (the exact query, or a read of public tables). Interruptible:
        raises :class:`InterruptedBeforeStart` when stopped before it started, KeyboardInterrupt
        when stopped while it ran. Never passes the engine's own error message on. An engine may
        also have ``run_columns(sql)``: the same rows as exact numpy columns
        (:class:`dpsql.backends.columns.Columns`), or as rows where a type has no exact array
        form; the pipeline fetches a large answer that way where it can (pipeline/columnar.py)."""
        ...

    def run_arrays(self, sql: str) -> list[tuple[Any, ...]]:
        """:meth:`run`, its LIST columns of integers as int64 numpy arrays (None for NULL): a
        quantile's values (``Plan.quantile_values``)."""
        ...

    def interrupt(self) -> None:
        """Stop the running query, or the next one if none runs yet (thread-safe, sticky)."""
        ...

    def clear_interrupt(self) -> bool:
        """Drop a pending :meth:`interrupt`; returns whether one was pending."""
        ...

    @property
    def running(self) -> bool:
        """Whether a query is running."""
        ...

    def close(self) -> None: ...


class PublicCatalog(Protocol):
    """A database of public information only (:meth:`Engine.public_catalog`): any SQL may run,
    and its own error messages may be shown, as nothing in it is private."""

    def run(self, sql: str, parameters: list[Any] | None = None
            ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        """(column names, type names, rows); raises :class:`CatalogQueryError` with the
        engine's message, KeyboardInterrupt when :meth:`interrupt` stopped it."""
        ...

    def view(self) -> PublicCatalog:
        """A handle on the same catalog for one client, so :meth:`interrupt` stops its statements
        only; closing it leaves the catalog open."""
        ...

    def interrupt(self) -> None:
        """Stop the statements running through this handle (thread-safe)."""
        ...

    def define(self, sql: str, rows: list[tuple[Any, ...]] | None = None) -> None:
        """Run one set-up statement of the server (DDL, or an INSERT of each of ``rows``)."""
        ...

    def close(self) -> None: ...


class CatalogQueryError(Exception):
    """A statement failed on the public catalog; its message quotes no private value."""


class Finisher(Protocol):
    """Runs SQL over noisy, already charged cells only (the finish stage), and the images of
    GROUP BY expressions over public keysets."""

    def run(self, columns: dict[str, np.ndarray | list[Any]], sql: str
            ) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
        """(column names, type names, rows) of ``sql`` over the relation ``__noisy`` made of
        ``columns``."""
        ...

    def image(self, columns: dict[str, list[Any]], sql: str) -> tuple[Any, ...]:
        """The sorted values (NULL last) of a one-column ``sql`` over public values."""
        ...

    def close(self) -> None: ...
