"""The public part of an answer's domain: which groups public keys make, from public data only.

A key with a public keyset is released for every value of its keyset (empty groups as noise on
zero), whatever the rows hold. Its values come from the policy (a key's ``keyset``) or from a
public table the policy declares (the distinct values of a joined column); an expression of
such keys ranges over the expression's image of their product. :class:`PublicDomain` computes
these in phase 1 and keeps them for the connection; no private row is read here.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from dpsql.backends import Engine, Finisher
from dpsql.errors import QueryRefused
from dpsql.sql.plan import GroupKey, Plan
from dpsql.sql.rewrite import key_sql

#: the most cells an answer holds; the public part is refused above it in phase 1, the private
#: groups selection releases are cut to it (post-processing)
MAX_CELLS = 2_000_000

Blocks = list[tuple[list[int], list[tuple[Any, ...]]]]


def sort_key(group: tuple[Any, ...]) -> tuple[Any, ...]:
    """A total order on groups of mixed types with NULLs (the order answers are released in)."""
    return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in group)


_PLAIN = {str, int}  # one of these per position, no NULL: the groups compare as they are


def sorted_groups(groups: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``groups`` in :func:`sort_key`'s order. When every position holds values of one type, text
    or integers, and no NULL, that order is the tuples' own: sorted without a key (in C; the key
    cost ~3 ms for 3,000 counties)."""
    if groups and all(len(kinds := set(map(type, column))) == 1 and kinds <= _PLAIN for column in zip(*groups)):
        return sorted(groups)
    return sorted(groups, key=sort_key)


class PublicDomain:
    """The keysets of one connection's public keys, cached (public data does not change while
    the file is open read-only)."""

    def __init__(self, engine: Engine, finisher: Finisher, schema: dict[str, dict[str, str]]) -> None:
        self.engine, self.finisher, self.schema = engine, finisher, schema
        self._public_values: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._images: dict[tuple[str, Any], tuple[Any, ...]] = {}

    def source_keyset(self, plan: Plan, column: str) -> tuple[Any, ...]:
        """The public keyset of one column: the policy's list for a key of the private table;
        the distinct values of a column of a joined public table (public data, read directly)."""
        if column in plan.public_columns:
            table, col = plan.public_columns[column]
            if (table, col) not in self._public_values:
                self._public_values[(table, col)] = tuple(self.engine.public_values(table, col))
            return self._public_values[(table, col)]
        return plan.table.keys[column].keyset or ()

    def keyset(self, plan: Plan, key: GroupKey) -> tuple[Any, ...]:
        """A public key's keyset. For an expression of keys it is the expression's image over
        the product of its columns' keysets, computed by DuckDB from public values only (no
        private row is read), so the released groups are exactly what the rows could fall in.

        Raises:
            QueryRefused: DP207 when the product is larger than :data:`MAX_CELLS`.
        """
        if key.plain:
            return self.source_keyset(plan, key.sources[0])
        cache = (plan.table.name, key.expr.sql("duckdb"))
        if cache not in self._images:
            keysets = [self.source_keyset(plan, c) for c in key.sources]
            size = math.prod(len(ks) for ks in keysets)
            if size > MAX_CELLS:
                raise QueryRefused(f"the GROUP BY expression {key.label} ranges over {size} combinations of public "
                                   f"keys, more than {MAX_CELLS}", code="DP207", hint="group by fewer keys.")
            product = list(itertools.product(*keysets))
            if not product:
                self._images[cache] = ()
                return ()
            types = {**self.schema[plan.table.name], **plan.public_types}
            columns = {f"__c{i}": [row[i] for row in product] for i in range(len(key.sources))}
            typed = ", ".join(f'CAST("__c{i}" AS {types[c]}) AS "{c}"' for i, c in enumerate(key.sources))
            self._images[cache] = self.finisher.image(columns, f"SELECT DISTINCT {key_sql(key)} FROM "
                                                      f"(SELECT {typed} FROM __noisy)")
        return self._images[cache]

    def blocks(self, plan: Plan) -> Blocks:
        """The public keys' values, in blocks whose product is the public part of the domain:
        (positions in ``plan.keys``, rows of values). Keys that read columns of one joined
        public table form one block of the combinations that table holds (region and division
        of ``states`` give its 9 pairs, not 4 × 9); each other key is a block of its keyset."""
        blocks: Blocks = []
        by_table: dict[str, list[int]] = {}
        for i, k in enumerate(plan.keys):
            if not k.public:
                continue
            tables = {plan.public_columns[c][0] if c in plan.public_columns else None for c in k.sources}
            if len(tables) == 1 and None not in tables:
                by_table.setdefault(tables.pop(), []).append(i)
            else:
                blocks.append(([i], [(v,) for v in self.keyset(plan, k)]))
        for table, idx in by_table.items():
            keys = [plan.keys[i] for i in idx]
            cache = (table, tuple(k.expr.sql("duckdb") for k in keys))
            if cache not in self._images:
                join = next(j for j in plan.joins if j.table == table)
                cols = ", ".join(f'"{c}" AS "{join.internal(c)}"' for c in self.schema[table])
                plain = [k.expr.sql("duckdb") for k in keys if k.plain]
                where = f" WHERE {' AND '.join(f'{c} IS NOT NULL' for c in plain)}" if plain else ""
                rows = self.engine.run(f'SELECT DISTINCT {", ".join(key_sql(k) for k in keys)} '
                                       f'FROM (SELECT {cols} FROM "{table}"){where}')  # public rows only
                self._images[cache] = tuple(sorted_groups(rows))
            blocks.append((idx, list(self._images[cache])))
        return blocks
