"""The secret per-query salt of the bounding transformation (many rows per unit, sql/units.py):
its placeholder in the exact SQL, and the substitution when the query runs. Imports nothing
heavy: a recorded plan runs without sqlglot (records/plan.py)."""

from __future__ import annotations

from typing import Any

#: The salt's place in the exact SQL until the query runs: valid SQL (NULL on the empty twin),
#: and what EXPLAIN shows. :func:`salted` puts the per-query secret there.
SALT = "getvariable('dpsql_secret_salt')"


def salted(query: str, rng: Any) -> str:
    """``query`` with a fresh salt from ``rng`` (the session's random source: secure, or the
    tests' seeded one) in place of :data:`SALT`. Called when the exact query runs, never before;
    the salt is a 63-bit integer, drawn whether or not the query needs it (each query the same)."""
    salt = int(rng.bits63(1)[0])
    return query.replace(SALT, str(salt))
