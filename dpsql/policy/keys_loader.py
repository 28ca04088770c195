"""The keys of a private table in the policy file (``[tables.T.keys]``): a public keyset, a
private key, a DATE / TIMESTAMP range enumerated at its grain, or an integer range whose keyset is
every integer of it (docs/policy.md)."""

from __future__ import annotations

from dataclasses import replace

import datetime
import itertools
from typing import Any

from dpsql.policy.fields import err as _err, ident as _ident, is_int as _is_int, only as _only, table as _table
from dpsql.policy.model import GRAINS, Key


#: the most sets ``max_groups_by`` may declare (planning looks for the least product of κ_C over them)
MAX_GROUP_SETS = 64
#: the largest r (``quantile_rows``, ``quantile_rows_by``): a unit's sample per group; beyond it the
#: exponential mechanism at ε/r is nearly uniform over any grid a policy can declare
MAX_QUANTILE_ROWS = 100_000
#: the most instants a declared date/time range may hold (a year by the minute is 527,040)
MAX_RANGE_GRID = 1_000_000
_GRAIN_STEP = {"day": datetime.timedelta(days=1), "hour": datetime.timedelta(hours=1),
               "minute": datetime.timedelta(minutes=1)}


def _day(value: Any, where: str, field: str) -> datetime.date:
    if isinstance(value, datetime.datetime) or not isinstance(value, (str, datetime.date)):
        raise _err(where, field, "must hold two days, as \"YYYY-MM-DD\" strings or TOML dates "
                   "(or two integers, for an integer column)")
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            raise _err(where, field, f"{value!r} is not a day written YYYY-MM-DD") from None
    return value


def _range_key(name: str, kdoc: dict[str, Any], where: str, kfield: str) -> Key:
    """A DATE / TIMESTAMP key with a public range of days: its keyset is every day of the
    range (``grain = "day"``, the default) or every hour or minute of it, as the grid the
    time buckets of a GROUP BY are computed over (their image is their keyset)."""
    if "keyset" in kdoc:
        raise _err(where, kfield, "has both a keyset and a range; give one of them")
    rng = kdoc.get("range")
    if not isinstance(rng, list) or len(rng) != 2:
        raise _err(where, f"{kfield}.range", "must be [first day, last day], e.g. [\"2019-01-01\", \"2024-12-31\"], "
                   "or [lowest, highest] integers, e.g. [0, 120]")
    if any(_is_int(v) for v in rng):
        return _number_range_key(name, kdoc, rng, where, kfield)
    lo, hi = (_day(v, where, f"{kfield}.range") for v in rng)
    if hi < lo:
        raise _err(where, f"{kfield}.range", f"ends ({hi}) before it starts ({lo})")
    grain = kdoc.get("grain", "day")
    if grain not in GRAINS:
        raise _err(where, f"{kfield}.grain", f"must be one of {', '.join(GRAINS)}")
    step = _GRAIN_STEP[grain]
    size = ((hi - lo).days + 1) * (datetime.timedelta(days=1) // step)
    if size > MAX_RANGE_GRID:
        raise _err(where, kfield, f"the range by the {grain} holds {size:,} instants, more than {MAX_RANGE_GRID:,}; "
                   "declare a shorter range or a coarser grain")
    # Built by C-level iterators (date.fromordinal; a running datetime + step): the same values as
    # lo + i days / start + i * step, several times faster, and every policy load pays it (the
    # demo's two ranges are 21,569 instants: ~25 ms of a fresh `dpsql query` as generators).
    if grain == "day":
        keyset: tuple[Any, ...] = tuple(map(datetime.date.fromordinal, range(lo.toordinal(), lo.toordinal() + size)))
    else:
        start = datetime.datetime.combine(lo, datetime.time())
        keyset = tuple(itertools.accumulate(itertools.repeat(step, size - 1), initial=start))
    return Key(name, keyset, range=(lo, hi), grain=grain)


def parse_keys(doc: Any, where: str, prefix: str) -> dict[str, Key]:
    """The ``[tables.T.keys]`` section: each key's keyset (public), a date/time range, or none (private)."""
    keys: dict[str, Key] = {}
    for kname, kdoc in _table(doc, where, f"{prefix}.keys").items():
        kfield = f"{prefix}.keys.{kname}"
        _ident(kname, where, kfield)
        kdoc = _table(kdoc, where, kfield)
        _only(kdoc, {"keyset", "range", "grain", "null"}, where, kfield)
        if not isinstance(null := kdoc.get("null", True), bool):  # docs/policy.md, "NULL keys"
            raise _err(where, f"{kfield}.null", "must be true or false: whether rows whose key is NULL form a group")
        if "range" in kdoc or "grain" in kdoc:
            keys[kname.lower()] = replace(_range_key(kname.lower(), kdoc, where, kfield), null=null)
            continue
        keyset = kdoc.get("keyset")
        if keyset is not None:
            if not isinstance(keyset, list) or not keyset:
                raise _err(where, f"{kfield}.keyset", "must be a non-empty list of values (omit it for a private key)")
            if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in keyset):
                raise _err(where, f"{kfield}.keyset", "values must be strings or integers")
            if len(set(keyset)) != len(keyset):
                raise _err(where, f"{kfield}.keyset", "lists a value twice")
            keyset = tuple(keyset)
        keys[kname.lower()] = Key(kname.lower(), keyset, null=null)
    return keys


def _number_range_key(name: str, kdoc: dict[str, Any], rng: list[Any], where: str, kfield: str) -> Key:
    """An integer key with a public range ``[lowest, highest]``: its keyset is every integer of
    the range (both ends included), the grid whose image a GROUP BY expression of the key
    (``FLOOR(age / 10) * 10``, ``WIDTH_BUCKET``, a ``CASE``) has as its keyset; a row outside
    the range is read as NULL (``sql/time_keys.py``, :func:`bounded`), as a date outside its
    range is. The column must be of an integer type holding both ends (``policy/check.py``)."""
    if not all(_is_int(v) for v in rng):
        raise _err(where, f"{kfield}.range", "must hold two integers [lowest, highest] (or two days)")
    if "grain" in kdoc:
        raise _err(where, f"{kfield}.grain", "applies to a date/time range; an integer range holds every integer of it")
    lo, hi = rng
    if hi < lo:
        raise _err(where, f"{kfield}.range", f"ends ({hi}) before it starts ({lo})")
    size = hi - lo + 1
    if size > MAX_RANGE_GRID:
        raise _err(where, kfield, f"the range holds {size:,} integers, more than {MAX_RANGE_GRID:,}; declare a "
                   "narrower range (rows outside it fall in no group), or keep the column a measure or a private key")
    return Key(name, tuple(range(lo, hi + 1)), range=(lo, hi), grain="integer")


def parse_group_bounds(doc: Any, keys: dict[str, Key], max_groups: int | None, where: str,
                       prefix: str, kind: str = "max_groups_by") -> dict[tuple[str, ...], int]:
    """``max_groups_by = { carrier = 2, "origin,carrier" = 4 }``: κ_C per set C of the table's key
    columns (names joined by commas). Each κ_C is a positive integer at most the table's κ (the
    table's κ bounds every grouping; a larger κ_C would loosen the bound the owner declared), each
    column a declared key (a measure, the unit or an unknown column is refused: a set bounds
    groupings, and only keys are grouped by), each set given once. docs/policy.md, "κ per grouping".
    With ``kind = "quantile_rows_by"``: r_C per set, the same checks but each r_C at most
    :data:`MAX_QUANTILE_ROWS` instead of κ (docs/policy.md, "r per grouping")."""
    field = f"{prefix}.{kind}"
    out: dict[tuple[str, ...], int] = {}
    if len(_table(doc, where, field)) > MAX_GROUP_SETS:
        raise _err(where, field, f"declares more than {MAX_GROUP_SETS} sets")
    for name, value in doc.items():
        cols = [c.strip().lower() for c in str(name).split(",")]
        for c in cols:
            _ident(c, where, f"{field}.{name}")
            if c not in keys:
                raise _err(where, f"{field}.{name}", f"names {c!r}, which is not a key of the table: a set of "
                           f"{kind} holds key columns (those GROUP BY reads)")
        if len(set(cols)) != len(cols):
            raise _err(where, f"{field}.{name}", "names a column twice")
        if not _is_int(value) or value < 1:
            raise _err(where, f"{field}.{name}", "must be a positive integer")
        if kind == "quantile_rows_by" and value > MAX_QUANTILE_ROWS:
            raise _err(where, f"{field}.{name}", f"is {value}, more than {MAX_QUANTILE_ROWS:,}: a quantile's mechanism "
                       "runs at epsilon/r, nearly uniform beyond it; declare a smaller r")
        elif kind == "max_groups_by" and max_groups is not None and value > max_groups:
            raise _err(where, f"{field}.{name}", f"is {value}, more than the table's max_groups = {max_groups}: "
                       "the table's bound holds for every grouping; raise max_groups or lower this one")
        c = tuple(sorted(cols))
        if c in out:
            raise _err(where, f"{field}.{name}", "is the same set of columns as another entry; give each set once")
        out[c] = value
    return out
