"""Which expressions may run bare over private rows: the one allow-list (docs/privacy.md,
"The exact query is total").

After private rows are read the only outcome is a charged noisy answer (DESIGN.md, "Phases
of a query"), so the exact query must not fail for any contents of the tables: a failure
that some rows trigger and others do not says, for free, whether such a row exists. Every
condition (WHERE, CASE) and every GROUP BY expression that reaches DuckDB over private rows
is either built only from the forms in :data:`ALLOW_LIST` — each with the reason it cannot
raise for any value of its input types — or runs inside ``TRY()``, which turns a failure into
NULL (the row is filtered out, or falls in the NULL group). ``tests/test_totality.py`` feeds
every entry its types' extremes.

The subtle part is DuckDB's implicit casts: comparing ``BIGINT`` with ``0.000…01`` (scale 31)
casts every BIGINT to DECIMAL(38,31), which fails from 10^7 on; ``DECIMAL(38,0) > 1.5`` casts
to DECIMAL(38,1); a DATE compared with a TIMESTAMP fails for dates past 294247 AD; a VARCHAR
compared with a number casts the text. :func:`comparison_total` decides from the two types
alone whether the common type of a comparison (or of CASE / COALESCE branches) can hold
every value of both.

No I/O; nothing here reads a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

#: integer types: (number of decimal digits of the largest magnitude, signed)
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "HUGEINT": 39,
               "UTINYINT": 3, "USMALLINT": 5, "UINTEGER": 10, "UBIGINT": 20}
_FLOATS = ("DOUBLE", "FLOAT", "REAL")
_TEXT = ("VARCHAR", "TEXT", "STRING", "CHAR")
#: DuckDB's widest DECIMAL
MAX_DECIMAL_WIDTH = 38
#: SUBSTR's offset and length must stay within ±(2^32 − 1) or DuckDB raises per row
SUBSTR_BOUND = 2**32 - 1


@dataclass(frozen=True)
class SqlType:
    """A DuckDB type reduced to what casting cares about. ``kind``: int, decimal, float, text,
    bool or other (compared with nothing but its own ``name``)."""

    kind: str
    name: str = ""
    digits: int = 0  # int: digits of its range; decimal: width
    scale: int = 0


TEXT = SqlType("text", "VARCHAR")
BOOL = SqlType("bool", "BOOLEAN")


def sql_type(name: str) -> SqlType:
    """The :class:`SqlType` of a DuckDB type name from the catalog."""
    upper = name.upper().strip()
    if upper in _INT_DIGITS:
        return SqlType("int", upper, _INT_DIGITS[upper])
    m = re.fullmatch(r"(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", upper)
    if m:
        return SqlType("decimal", upper, int(m.group(1)), int(m.group(2) or 0))
    if upper in _FLOATS:
        return SqlType("float", upper)
    if upper.startswith(_TEXT) and "[" not in upper:
        return TEXT
    if upper in ("BOOLEAN", "BOOL"):
        return BOOL
    return SqlType("other", upper)


def literal_type(node: exp.Literal) -> SqlType | None:
    """The type DuckDB gives a literal: an integer literal the narrowest integer that holds it
    (None past HUGEINT: DuckDB refuses it whatever the rows); ``1.50`` DECIMAL(3,2);
    ``1e5`` DOUBLE; a string literal VARCHAR."""
    if node.is_string:
        return TEXT
    text = node.this.lstrip("+-")
    if re.fullmatch(r"\d+", text):
        value = int(text)
        for name, bits in (("INTEGER", 31), ("BIGINT", 63), ("HUGEINT", 127)):
            if value < 2**bits:
                return SqlType("int", name, _INT_DIGITS[name])
        return None
    m = re.fullmatch(r"(\d*)\.(\d*)", text)
    if m:
        whole, frac = m.group(1).lstrip("0"), m.group(2)
        width = max(len(whole) + len(frac), 1)
        if width > MAX_DECIMAL_WIDTH:
            return SqlType("float", "DOUBLE")
        return SqlType("decimal", f"DECIMAL({width},{len(frac)})", width, len(frac))
    return SqlType("float", "DOUBLE")


def _int_part(t: SqlType) -> int:
    return t.digits if t.kind == "int" else t.digits - t.scale


def common_type(a: SqlType, b: SqlType) -> SqlType | None:
    """The type DuckDB casts both sides to — when casting every value of ``a`` and of ``b`` to
    it cannot fail; else None. Integers widen to integers; integers and decimals meet in a
    DECIMAL that must fit in 38 digits (else DuckDB caps the width and the cast overflows);
    anything numeric meets a float in DOUBLE (every integer and decimal converts)."""
    if a == b:
        return a
    if a.kind == b.kind == "int":
        return a if a.digits >= b.digits else b
    if {a.kind, b.kind} <= {"int", "decimal"}:
        scale = max(a.scale, b.scale)
        width = max(_int_part(a), _int_part(b)) + scale
        return SqlType("decimal", f"DECIMAL({width},{scale})", width, scale) if width <= MAX_DECIMAL_WIDTH else None
    if "float" in (a.kind, b.kind) and {a.kind, b.kind} <= {"int", "decimal", "float"}:
        return SqlType("float", "DOUBLE")
    if a.kind == b.kind and a.kind in ("text", "bool"):
        return a
    return None


def comparison_total(types: list[SqlType | None]) -> bool:
    """Whether comparing (or unifying, as CASE and COALESCE do) values of these types can never
    fail: every pair has a common type that holds both."""
    if any(t is None for t in types):
        return False
    known = list(dict.fromkeys(t for t in types if t is not None))  # distinct: an IN list of 10,000 literals has few types
    return all(common_type(a, b) is not None for i, a in enumerate(known) for b in known[i + 1:])


# ---------------------------------------------------------------------------- the allow-list
Schema = dict[str, str]


@dataclass(frozen=True)
class Rule:
    """One allowed form: the type it yields when it cannot fail (None: it may fail, so it must
    run inside TRY), and why it cannot raise."""

    check: Callable[[exp.Expression, Schema], SqlType | None]
    why: str


def value_type(node: exp.Expression, schema: Schema) -> SqlType | None:
    """The result type of ``node`` if no value of its inputs can make it raise, else None."""
    rule = ALLOW_LIST.get(type(node))
    return rule.check(node, schema) if rule is not None else None


def condition_total(node: exp.Expression, schema: Schema) -> bool:
    """Whether a condition (WHERE conjunct, CASE WHEN) cannot raise for any row."""
    t = value_type(node, schema)
    return t is not None and t.kind == "bool"


def expression_total(node: exp.Expression, schema: Schema) -> bool:
    """Whether a GROUP BY expression cannot raise for any row."""
    return value_type(node, schema) is not None


def _column(node: exp.Expression, schema: Schema) -> SqlType | None:
    t = schema.get(node.name)
    return sql_type(t) if t is not None else None


def _literal(node: exp.Expression, schema: Schema) -> SqlType | None:
    assert isinstance(node, exp.Literal)
    return literal_type(node)


def _neg(node: exp.Expression, schema: Schema) -> SqlType | None:
    # −literal is folded to a constant; −column overflows at the type's minimum.
    return literal_type(node.this) if isinstance(node.this, exp.Literal) and not node.this.is_string else None


def _inner(node: exp.Expression, schema: Schema) -> SqlType | None:
    return value_type(node.this, schema)


def _text_of(node: exp.Expression, schema: Schema) -> SqlType | None:
    return TEXT if value_type(node.this, schema) == TEXT else None


def _length(node: exp.Expression, schema: Schema) -> SqlType | None:
    return SqlType("int", "BIGINT", 19) if value_type(node.this, schema) == TEXT else None


def _int_literal_within(node: exp.Expression | None, bound: int) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this) is not None \
        and int(node.this) <= bound


def _substring(node: exp.Expression, schema: Schema) -> SqlType | None:
    bounds = [node.args.get("start"), node.args.get("length")]
    if value_type(node.this, schema) != TEXT:
        return None
    return TEXT if all(b is None or _int_literal_within(b, SUBSTR_BOUND) for b in bounds) else None


def _trim(node: exp.Expression, schema: Schema) -> SqlType | None:
    others = [v for k, v in node.args.items() if k != "this" and isinstance(v, exp.Expression)]
    ok = all(isinstance(v, exp.Literal) and v.is_string for v in others)
    return TEXT if ok and value_type(node.this, schema) == TEXT else None


def _try_cast(node: exp.Expression, schema: Schema) -> SqlType | None:
    if value_type(node.this, schema) is None:
        return None
    return sql_type(node.to.sql("duckdb"))


def _unify(parts: list[exp.Expression], schema: Schema) -> SqlType | None:
    types = [value_type(p, schema) for p in parts if not isinstance(p, exp.Null)]
    if not types or not comparison_total(types):
        return None
    out = types[0]
    for t in types[1:]:
        out = common_type(out, t) if out is not None and t is not None else None
    return out


def _coalesce(node: exp.Expression, schema: Schema) -> SqlType | None:
    return _unify([node.this, *node.expressions], schema)


def _case(node: exp.Expression, schema: Schema) -> SqlType | None:
    if node.this is not None:  # CASE x WHEN v: comparisons of x with each v
        return None
    ifs = node.args["ifs"]
    if not all(condition_total(i.this, schema) for i in ifs):
        return None
    default = node.args.get("default")
    return _unify([i.args["true"] for i in ifs] + ([default] if default is not None else []), schema)


def _if(node: exp.Expression, schema: Schema) -> SqlType | None:
    if not condition_total(node.this, schema):
        return None
    false = node.args.get("false")
    return _unify([node.args["true"]] + ([false] if false is not None else []), schema)


def _logic(node: exp.Expression, schema: Schema) -> SqlType | None:
    return BOOL if condition_total(node.left, schema) and condition_total(node.right, schema) else None


def _not(node: exp.Expression, schema: Schema) -> SqlType | None:
    return BOOL if condition_total(node.this, schema) else None


def _is(node: exp.Expression, schema: Schema) -> SqlType | None:
    return BOOL if isinstance(node.expression, exp.Null) and value_type(node.this, schema) is not None else None


def _compare(node: exp.Expression, schema: Schema) -> SqlType | None:
    return BOOL if comparison_total([value_type(node.left, schema), value_type(node.right, schema)]) else None


def _like(node: exp.Expression, schema: Schema) -> SqlType | None:
    # No ESCAPE clause (it is exp.Escape around this node): a pattern of any text cannot fail.
    both = [value_type(node.this, schema), value_type(node.expression, schema)]
    return BOOL if both == [TEXT, TEXT] else None


def _in(node: exp.Expression, schema: Schema) -> SqlType | None:
    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        return None
    return BOOL if comparison_total([value_type(e, schema) for e in (node.this, *node.expressions)]) else None


def _between(node: exp.Expression, schema: Schema) -> SqlType | None:
    parts = [node.this, node.args.get("low"), node.args.get("high")]
    return BOOL if all(p is not None for p in parts) and comparison_total([value_type(p, schema) for p in parts]) else None


_COMPARE_WHY = ("a comparison of two values whose common type holds every value of both (comparison_total): "
                "no cast can overflow or fail to parse")

#: The allow-list: node class -> (its type when total, why it cannot raise). A form not here,
#: or here but with arguments that do not qualify, runs inside TRY().
ALLOW_LIST: dict[type[exp.Expression], Rule] = {
    exp.Column: Rule(_column, "reads a stored value; a column of the plan always exists (checked at plan time)"),
    exp.Literal: Rule(_literal, "a constant; one DuckDB cannot represent fails at bind time, for every data alike"),
    exp.Boolean: Rule(lambda n, s: BOOL, "a constant"),
    exp.Null: Rule(lambda n, s: SqlType("other", "NULL"), "a constant"),
    exp.Neg: Rule(_neg, "only the negation of a numeric literal (folded to a constant); -column overflows at the minimum"),
    exp.Paren: Rule(_inner, "grouping only"),
    exp.Lower: Rule(_text_of, "case mapping of valid UTF-8 text (DuckDB validates text on insert) cannot fail"),
    exp.Upper: Rule(_text_of, "case mapping of valid UTF-8 text cannot fail"),
    exp.Length: Rule(_length, "counts the characters of a text: a BIGINT, cannot overflow"),
    exp.Trim: Rule(_trim, "removes characters given as a text literal from a text: cannot fail"),
    exp.Substring: Rule(_substring, f"SUBSTR of a text with literal bounds within ±{SUBSTR_BOUND} (DuckDB raises per row "
                                    "beyond them, so larger bounds run inside TRY)"),
    exp.TryCast: Rule(_try_cast, "TRY_CAST turns a failed conversion into NULL (every CAST is rewritten to it)"),
    exp.Coalesce: Rule(_coalesce, "its arguments unify to a common type that holds all of them"),
    exp.Case: Rule(_case, "searched CASE: total conditions, branches that unify without a failing cast"),
    exp.If: Rule(_if, "IF(total condition, branches that unify without a failing cast)"),
    exp.And: Rule(_logic, "boolean connective of total conditions"),
    exp.Or: Rule(_logic, "boolean connective of total conditions"),
    exp.Not: Rule(_not, "negation of a total condition"),
    exp.Is: Rule(_is, "IS [NOT] NULL of a total expression: no cast"),
    exp.EQ: Rule(_compare, _COMPARE_WHY), exp.NEQ: Rule(_compare, _COMPARE_WHY),
    exp.GT: Rule(_compare, _COMPARE_WHY), exp.GTE: Rule(_compare, _COMPARE_WHY),
    exp.LT: Rule(_compare, _COMPARE_WHY), exp.LTE: Rule(_compare, _COMPARE_WHY),
    exp.Like: Rule(_like, "LIKE of text with a text pattern and no ESCAPE: matching cannot fail"),
    exp.ILike: Rule(_like, "ILIKE of text with a text pattern and no ESCAPE: matching cannot fail"),
    exp.In: Rule(_in, "IN a list whose values and the tested value share a type that holds them all"),
    exp.Between: Rule(_between, "BETWEEN bounds that share a type with the tested value"),
}

#: Forms deliberately left out, and why (they run inside TRY): arithmetic (overflow, division
#: by zero), CAST (now TRY_CAST), ABS/ROUND/LN/SQRT/POW (overflow, domain errors), ``||`` (a
#: result past DuckDB's 4 GiB string limit), CASE x WHEN v (a cast of x per row), LIKE … ESCAPE
#: (an escape string of several characters fails per row).
