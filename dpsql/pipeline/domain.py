"""The public part of an answer's domain: which groups public keys make, from public data only.

A key with a public keyset is released for every value of its keyset (empty groups as noise on
zero), whatever the rows hold. Its values come from the policy (a key's ``keyset``) or from a
public table the policy declares (the distinct values of a joined column); an expression of
such keys ranges over the expression's image of their product. :class:`PublicDomain` computes
these in phase 1 and keeps them for the connection; no private row is read here.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
from collections import OrderedDict
from operator import itemgetter
from pathlib import Path
from typing import Any

from dpsql.records import unit as unit_record
from dpsql.backends import Engine, Finisher
from dpsql.errors import DpsqlInternalError, QueryRefused
from dpsql.sql.plan import GroupKey, Plan

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
    if groups and all(len(kinds := set(map(type, map(itemgetter(j), groups)))) == 1 and kinds <= _PLAIN
                      for j in range(len(groups[0]))):
        return _sorted_one(groups) if len(groups[0]) == 1 else sorted(groups)
    return sorted(groups, key=sort_key)


def _sorted_one(groups: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Groups of one key, all text or all integers, in order: by the values themselves (a tuple
    comparison per step costs more), integers that fit int64 by numpy's stable argsort."""
    values = list(map(itemgetter(0), groups))
    if type(values[0]) is int and len(values) > 1000:
        import numpy as np

        try:
            order = np.argsort(np.array(values, dtype=np.int64), kind="stable")
        except OverflowError:  # past int64: Python's sort below
            pass
        else:
            return list(map(groups.__getitem__, order.tolist()))
    return sorted(groups, key=itemgetter(0))


class _Shared:
    """Public values kept for the process, under a scope that names everything they depend on
    (the session's plan context — analyst, policy, schema — and the data file's identity): a
    connection per query no longer reads the public tables again (~3-5 ms a join query). Per
    analyst, as plans are (dpsql/sql/plan_cache.py): a hit is faster than a read, so a shared
    entry would tell another analyst which keys one had grouped by. Least recently used first
    out; a keyset of more than SHARED_VALUES values is kept by its session only."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[tuple[Any, Any], tuple[Any, ...]] = OrderedDict()


def file_identity(path: Path) -> tuple[Any, ...] | None:
    """A DuckDB file's identity (:func:`dpsql.records.unit.file_identity`) and its write-ahead
    log's, or None when the file cannot be read. Any write changes it."""
    return unit_record.data_identity(path)


SHARED_ENTRIES = 256
SHARED_VALUES = 100_000
_SHARED = _Shared()


class _Cache:
    """One session's view of public values: its own dict, and the process's under its scope."""

    def __init__(self, scope: Any) -> None:
        self.scope = scope
        self.own: dict[Any, tuple[Any, ...]] = {}

    def get(self, key: Any) -> tuple[Any, ...] | None:
        hit = self.own.get(key)
        if hit is not None or self.scope is None:
            return hit
        with _SHARED.lock:
            hit = _SHARED.entries.get((self.scope, key))
            if hit is not None:
                _SHARED.entries.move_to_end((self.scope, key))
        return hit

    def put(self, key: Any, values: tuple[Any, ...]) -> tuple[Any, ...]:
        self.own[key] = values
        if self.scope is not None and len(values) <= SHARED_VALUES:
            with _SHARED.lock:
                _SHARED.entries[(self.scope, key)] = values
                if len(_SHARED.entries) > SHARED_ENTRIES:
                    _SHARED.entries.popitem(last=False)
        return values


class PublicDomain:
    """The keysets of one connection's public keys, cached (public data does not change while
    the file is open read-only). With a ``scope`` (:class:`_Shared`), they are shared with the
    process's other sessions of the same scope."""

    def __init__(self, engine: Engine, finisher: Finisher, schema: dict[str, dict[str, str]], scope: Any = None) -> None:
        self.engine, self.finisher, self.schema = engine, finisher, schema
        self._public_values = _Cache(scope)
        self._images = _Cache(scope)
        self._wrapped: dict[int, tuple[tuple[Any, ...], list[tuple[Any, ...]]]] = {}

    def source_keyset(self, plan: Plan, column: str) -> tuple[Any, ...]:
        """The public keyset of one column: the policy's list for a key of the private table;
        the distinct values of a column of a joined public table (public data, read directly)."""
        if column in plan.public_columns:
            table, col = plan.public_columns[column]
            left = any(j.side == "LEFT" and j.table == table for j in plan.joins)
            hit = self._public_values.get((table, col, left))
            if hit is None:
                # NULL is a value when the table holds it, or when a LEFT JOIN leaves a row unmatched
                null = left or bool(self.engine.run(f'SELECT 1 FROM "{table}" WHERE "{col}" IS NULL LIMIT 1'))
                values = tuple(self.engine.public_values(table, col)) + ((None,) if null else ())
                hit = self._public_values.put((table, col, left), values)
            return hit
        keyset = plan.table.keys[column].keyset or ()
        # a nullable key column's NULL is a public value (sql/null_keys.py): the NULL group is always released
        return keyset + (None,) if column in plan.null_columns else keyset

    def keyset(self, plan: Plan, key: GroupKey) -> tuple[Any, ...]:
        """A public key's keyset. For an expression of keys it is the expression's image over
        the product of its columns' keysets, computed by DuckDB from public values only (no
        private row is read), so the released groups are exactly what the rows could fall in.

        Raises:
            QueryRefused: DP207 when the product is larger than :data:`MAX_CELLS`.
        """
        if key.plain and key.narrowed is None:
            return self.source_keyset(plan, key.sources[0])
        # the joined tables too: ``__j1_name`` is a column of whichever table a query joins first
        cache = (plan.table.name, key.text, tuple((j.table, j.side) for j in plan.joins), key.narrowed)
        hit = self._images.get(cache)
        if hit is not None:
            return hit
        keysets = [self.source_keyset(plan, c) for c in key.sources]
        size = math.prod(len(ks) for ks in keysets)
        if size > MAX_CELLS:
            raise QueryRefused(f"the GROUP BY expression {key.label} ranges over {size} combinations of public "
                               f"keys, more than {MAX_CELLS}", code="DP207", hint="group by fewer keys.")
        product = list(itertools.product(*keysets))
        if not product:
            return self._images.put(cache, ())
        types = {**self.schema[plan.table.name], **plan.public_types}
        columns = {f"__c{i}": [row[i] for row in product] for i in range(len(key.sources))}
        typed = ", ".join(f'CAST("__c{i}" AS {types[c]}) AS "{c}"' for i, c in enumerate(key.sources))
        # the WHERE's conjuncts on the key's own columns, on the keyset values (sql/narrow.py)
        where = f" WHERE {key.narrowed}" if key.narrowed else ""
        try:
            image = self.finisher.image(columns, f"SELECT DISTINCT {key.tried_sql} FROM (SELECT {typed} FROM __noisy){where}")
        except DpsqlInternalError:  # over public values only, in phase 1: a refusal, and free
            if key.narrowed:  # the conjuncts do not run on the public values: the whole keyset
                return self.keyset(plan, dataclasses.replace(key, narrowed=None))
            raise QueryRefused(f"the GROUP BY expression {key.label} does not run over the public values of its "
                               "keys", code="DP120", hint="group by a simpler expression of the keys.") from None
        return self._images.put(cache, image)

    def _rows(self, values: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """A keyset as rows of one value, made once per keyset object (100,000 tuples a query
        otherwise); a few keysets at a time."""
        hit = self._wrapped.get(id(values))
        if hit is None or hit[0] is not values:
            if len(self._wrapped) >= 16:
                self._wrapped.clear()
            hit = self._wrapped[id(values)] = (values, [(v,) for v in values])
        return hit[1]

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
                blocks.append(([i], self._rows(self.keyset(plan, k))))
        for table, idx in by_table.items():
            keys = [plan.keys[i] for i in idx]
            join = next(j for j in plan.joins if j.table == table)
            narrowed = " AND ".join(k.narrowed for k in keys if k.narrowed)
            cache = (table, tuple(k.text for k in keys), join.side, narrowed)
            hit = self._images.get(cache)
            if hit is None:
                cols = ", ".join(f'"{c}" AS "{join.internal(c)}"' for c in self.schema[table])
                source = f'SELECT {cols} FROM "{table}"'
                if join.side == "LEFT":  # a private row no public row matches: NULL in every column
                    source += " UNION ALL SELECT " + ", ".join(
                        f'CAST(NULL AS {t}) AS "{join.internal(c)}"' for c, t in self.schema[table].items())
                select = f'SELECT DISTINCT {", ".join(k.tried_sql for k in keys)} FROM ({source})'
                try:  # public rows only: their NULLs are groups too; those the WHERE admits (sql/narrow.py)
                    rows = self.engine.run(select + (f" WHERE {narrowed}" if narrowed else ""))
                except QueryRefused:  # the conjuncts do not run on the public rows: all of them
                    if not narrowed:
                        raise
                    rows = self.engine.run(select)
                hit = self._images.put(cache, tuple(sorted_groups(rows)))
            blocks.append((idx, list(hit)))
        return blocks
