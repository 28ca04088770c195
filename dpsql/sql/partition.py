"""A workload's secret random partition of the units (docs/workloads.md, "Random-partition
composition"): the condition that keeps the rows of one part (``Session.on_part``)."""

from __future__ import annotations

from sqlglot import exp


def part_condition(unit: str, salt: int, parts: int, part: int) -> exp.Expression:
    """``HASH(XOR(HASH(unit), salt)) % parts = part``: the rows whose unit hashes, with ``salt``,
    to ``part`` modulo ``parts``. A unit's part is a function of its own id and the salt alone,
    so adding or removing a unit changes one part only: the parts compose in parallel. Total (a
    hash of any value, modulo a positive literal).

    The salt is mixed in before the last hash. DuckDB's HASH(unit, salt) combines the two hashes
    by XOR, so its low bits were HASH(unit)'s low bits flipped by the salt's: modulo 2, 4, 8 ...
    every salt gave the same partition."""
    column = exp.column(unit, quoted=True)
    salted = exp.Anonymous(this="XOR", expressions=[exp.Anonymous(this="HASH", expressions=[column]),
                                                    exp.cast(exp.Literal.number(salt), exp.DataType.Type.UBIGINT)])
    hashed = exp.Anonymous(this="HASH", expressions=[salted])
    return exp.EQ(this=exp.Mod(this=hashed, expression=exp.Literal.number(parts)), expression=exp.Literal.number(part))
