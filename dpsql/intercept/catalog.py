"""The catalog dpsql shows analysts and tools, described from the policy.

The policy's tables (private and public), what the policy lets an analyst do with each column,
a comment per table, and the names of the one schema and catalog. All public (the policy is),
read from the policy and the schema of the declared tables, never from a row. Used by the probe
answers (:mod:`dpsql.intercept.probes`, :mod:`dpsql.intercept.information_schema`), the
SQLAlchemy dialect's reflection and the REPL's ``\\describe``.
"""

from __future__ import annotations

from pathlib import Path

from dpsql.session import Session

#: DuckDB's name of the one schema dpsql exposes.
SCHEMA = "main"


def catalog_name(session: Session) -> str:
    """DuckDB's catalog name of the attached file: its stem."""
    return Path(session.engine.path).stem


def catalog_tables(session: Session) -> list[str]:
    """The tables an analyst can name: the policy's private tables and its public tables."""
    return sorted([*session.policy.tables, *session.policy.public_tables])


def column_role(session: Session, table: str, column: str) -> str | None:
    """What the policy lets an analyst do with a column, in words (public: the policy is)."""
    public = session.policy.public_table(table)
    if public is not None:
        return ("public key column: join a private table to it" if column == public.key
                else "public: WHERE, COUNT and GROUP BY (keyset: its values) after a join")
    return session.policy.tables[table].role(column)


def table_comment(session: Session, table: str) -> str:
    public = session.policy.public_table(table)
    if public is not None:
        return (f"dpsql: public reference table; join it to a private table on its key {public.key} "
                "and group by any of its columns")
    tp = session.policy.tables[table]
    keys = [k.name for k in tp.keys.values() if k.public]
    return (f"dpsql: one row per {tp.privacy_unit}; answers COUNT/SUM/AVG with noise; "
            f"measures: {', '.join(tp.measures) or 'none'}; GROUP BY keys: {', '.join(keys) or 'none'}")


def keyset(session: Session, table: str, column: str) -> tuple[object, ...] | None:
    """The public keyset of a column an analyst can GROUP BY, for ``\\describe``-style listings:
    a private table's key with a keyset in the policy (its values, as the policy lists them), or
    any column of a public table (its distinct non-NULL values, sorted: the keyset a GROUP BY on
    it uses). None for every other column (private keys go through partition selection, and
    other columns are not keys). Public information only."""
    table, column = table.lower(), column.lower()
    if session.policy.public_table(table) is not None:
        if column not in session.schema.get(table, {}):
            return None
        return tuple(session.engine.public_values(table, column))
    tp = session.policy.table(table)
    key = tp.keys.get(column) if tp is not None else None
    return key.keyset if key is not None and key.public else None
