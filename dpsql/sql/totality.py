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

import sqlglot
from sqlglot import exp

from dpsql.sql import totality_bins as bins
from dpsql.sql.sql_types import (  # noqa: F401 - re-exported: the allow-list's vocabulary
    BOOL, MAX_DECIMAL_WIDTH, SUBSTR_BOUND, TEXT, SqlType, common_type, comparison_total, literal_type, sql_type)


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
    ifs = node.args["ifs"]
    if node.this is not None:  # CASE x WHEN v: x compared with each v, in their common type
        if not comparison_total([value_type(node.this, schema)] + [value_type(i.this, schema) for i in ifs]):
            return None
    elif not all(condition_total(i.this, schema) for i in ifs):
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


# -------------------------------------------- the forms dpsql itself writes (rewrite.py, quantiles.py)
_NUMBERS = ("int", "decimal", "float")
DOUBLE = SqlType("float", "DOUBLE")
BIGINT = SqlType("int", "BIGINT", 19)
HUGEINT = SqlType("int", "HUGEINT", 39)
_OTHER = SqlType("other", "LIST")
_BIGINT_MAX = 2**63 - 1


def _cast(node: exp.Expression, schema: Schema) -> SqlType | None:
    # A bare CAST only widens: to a type that holds every value of its input (BIGINT to DOUBLE).
    inner, to = value_type(node.this, schema), sql_type(node.to.sql("duckdb"))
    return to if inner is not None and common_type(inner, to) == to else None


def _float_arithmetic(node: exp.Expression, schema: Schema) -> SqlType | None:
    # IEEE arithmetic on a DOUBLE or FLOAT gives ±inf or NaN, never an error (DuckDB 2.0).
    types = [value_type(node.left, schema), value_type(node.right, schema)]
    if any(t is None or t.kind not in _NUMBERS for t in types) or not any(t.kind == "float" for t in types if t):
        return None
    return DOUBLE


def _divide(node: exp.Expression, schema: Schema) -> SqlType | None:
    # DuckDB's `/` divides numbers as DOUBLE: x/0 is ±inf (0/0 NaN), never an error.
    types = [value_type(node.left, schema), value_type(node.right, schema)]
    return DOUBLE if all(t is not None and t.kind in _NUMBERS for t in types) else None


def _of_floats(node: exp.Expression, schema: Schema) -> SqlType | None:
    t = value_type(node.this, schema)
    return t if t is not None and t.kind == "float" and node.args.get("decimals") is None else None


def _round(node: exp.Expression, schema: Schema) -> SqlType | None:
    # ROUND of a DECIMAL(w, s) is a DECIMAL(w, 0): its integer part gains at most the digit its
    # fraction gave up. ROUND of a float is a float.
    t = value_type(node.this, schema)
    if t is None or node.args.get("decimals") is not None or t.kind not in _NUMBERS:
        return None
    return SqlType("decimal", f"DECIMAL({t.digits},0)", t.digits, 0) if t.kind == "decimal" else t


def _extreme(node: exp.Expression, schema: Schema) -> SqlType | None:
    return _unify([node.this, *node.expressions], schema)


def _sum(node: exp.Expression, schema: Schema) -> SqlType | None:
    # DuckDB sums integers of at most 64 bits in HUGEINT: fewer than 2^64 rows cannot overflow it.
    t = value_type(node.this, schema)
    return HUGEINT if t is not None and t.kind == "int" and t.digits <= 19 else None


def _count(node: exp.Expression, schema: Schema) -> SqlType | None:
    inner = node.this
    parts = inner.expressions if isinstance(inner, exp.Distinct) else [inner]
    return BIGINT if all(isinstance(p, exp.Star) or value_type(p, schema) is not None for p in parts) else None


def _mod(node: exp.Expression, schema: Schema) -> SqlType | None:
    # x % n of an integer by a positive integer literal: no division by zero, no MIN % -1.
    t = value_type(node.left, schema)
    n = node.right
    ok = t is not None and t.kind == "int" and isinstance(n, exp.Literal) and _int_literal_within(n, _BIGINT_MAX) \
        and int(n.this) > 0
    return t if ok else None


def _bigint_list(node: exp.Expression) -> bool:
    """``CAST('[1, -2, ...]' AS BIGINT[])`` (or of an array of literals): integers that fit a
    BIGINT, read here, so the cast of this constant cannot fail."""
    if not isinstance(node, exp.Cast) or node.to.sql("duckdb") != "BIGINT[]":
        return False
    if isinstance(node.this, exp.Array):
        return all(_int_literal_within(e, _BIGINT_MAX) for e in node.this.expressions)
    text = node.this.this if isinstance(node.this, exp.Literal) and node.this.is_string else ""
    m = re.fullmatch(r"\[(-?\d+(?:, -?\d+)*)\]", text)
    return m is not None and all(abs(int(v)) <= _BIGINT_MAX for v in m.group(1).split(", "))


def _function(node: exp.Expression, schema: Schema) -> SqlType | None:
    """HASH of total arguments (a UBIGINT); HISTOGRAM(BIGINT, literal BIGINT bounds) and
    MAP_ENTRIES of it (quantiles.histogram_sql): counting into fixed bins cannot fail."""
    name, args = node.name.upper(), node.expressions
    if name == "HASH" and args and all(value_type(a, schema) is not None for a in args):
        return SqlType("int", "UBIGINT", 20)
    if name == "HISTOGRAM" and len(args) == 2 and value_type(args[0], schema) == BIGINT and _bigint_list(args[1]):
        return SqlType("other", "MAP")
    if name == "GETVARIABLE" and len(args) == 1 and isinstance(args[0], exp.Literal) and args[0].is_string \
            and args[0].this == "dpsql_secret_salt":
        return BIGINT  # units.SALT: replaced by a 63-bit integer literal when the query runs (NULL before)
    if name == "HISTOGRAM" and len(args) == 1 and _is_bin(args[0], schema):
        return SqlType("other", "MAP")
    if name in ("MAP_ENTRIES", "MAP_KEYS", "MAP_VALUES") and len(args) == 1 \
            and value_type(args[0], schema) == SqlType("other", "MAP"):
        return _OTHER
    return None


def _is_bin(node: exp.Expression, schema: Schema) -> bool:
    """Exactly quantiles.bin_sql's text for a total BIGINT ``v`` and literal BIGINT bounds: a
    binary search over a constant array (comparisons and sums of small integers; an index past
    the end is NULL, then the last bin), rebuilt here from its own ``v`` and bounds and compared."""
    from dpsql.sql.quantiles import bin_sql  # the one writer of the form

    try:
        v = node.args["ifs"][0].this.this.this  # CASE WHEN <v> IS NOT NULL ...
        listed = node.args["ifs"][0].args["true"].this.expressions[0]  # COALESCE(array_extract(<bounds>, ...
        text = listed.this.this if listed.this.is_string else ""
        bounds = [int(b) for b in text.strip("[]").split(", ")]
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return False
    if value_type(v, schema) != BIGINT or any(abs(b) > _BIGINT_MAX for b in bounds):
        return False
    rebuilt = sqlglot.parse_one(f"SELECT {bin_sql(v.sql('duckdb'), bounds)}", read="duckdb").expressions[0]
    return rebuilt.sql("duckdb") == node.sql("duckdb")


def _array(node: exp.Expression, schema: Schema) -> SqlType | None:
    # [a, b] of total elements (the sparse histogram's [bins, counts]): building a list cannot fail.
    return _OTHER if node.expressions and all(value_type(e, schema) is not None for e in node.expressions) else None


def _map_keys(node: exp.Expression, schema: Schema) -> SqlType | None:
    # MAP_KEYS of a MAP (sqlglot's own node; MAP_VALUES stays a plain function): reads a map.
    return _OTHER if value_type(node.this, schema) == SqlType("other", "MAP") else None


def _list_filter(node: exp.Expression, schema: Schema) -> SqlType | None:
    # LIST_FILTER(entries, LAMBDA e: e.value > 0): compares each count (a BIGINT) with 0.
    fn = node.expression
    ok = isinstance(fn, exp.Lambda) and fn.this.sql("duckdb") == "e.value > 0"
    return _OTHER if ok and value_type(node.this, schema) == _OTHER else None


def _try(node: exp.Expression, schema: Schema) -> SqlType | None:
    # TRY(x) turns any failure of x into NULL. Its type matters only where it is a condition.
    inner = node.this
    # a bare number as a condition (WHERE married): its cast to BOOLEAN (x <> 0) cannot fail; a text's can ('abc')
    number = isinstance(inner, exp.Column) and getattr(value_type(inner, schema), "kind", "") in ("int", "float", "bool")
    return BOOL if number or isinstance(inner, (exp.Predicate, exp.Connector, exp.Not, exp.Boolean)) else SqlType("other", "TRY")


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
    exp.Pi: Rule(lambda n, s: DOUBLE, "a constant"),
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
    # forms dpsql writes into the exact query (rewrite.py, quantiles.py), checked on its final text
    exp.Try: Rule(_try, "TRY() turns any failure into NULL"),
    exp.Cast: Rule(_cast, "a CAST to a type that holds every value of its input (BIGINT to DOUBLE)"),
    exp.Mul: Rule(_float_arithmetic, "IEEE arithmetic on a float gives ±inf or NaN, never an error"),
    exp.Add: Rule(_float_arithmetic, "IEEE arithmetic on a float gives ±inf or NaN, never an error"),
    exp.Sub: Rule(_float_arithmetic, "IEEE arithmetic on a float gives ±inf or NaN, never an error"),
    exp.Div: Rule(_divide, "DuckDB's / divides as DOUBLE: x/0 is ±inf, never an error"),
    exp.Round: Rule(_round, "ROUND of a float, or of a DECIMAL(w,s) into DECIMAL(w,0), which holds it"),
    exp.Ceil: Rule(_of_floats, "CEIL of a float is a float"),
    exp.Floor: Rule(_of_floats, "FLOOR of a float is a float"),
    exp.ArrayAgg: Rule(lambda n, s: bins.list_agg(n, s, value_type), "LIST of total values (ORDER BY total values): collecting values cannot fail"),
    exp.Filter: Rule(lambda n, s: bins.filtered(n, s, value_type), "an aggregate's FILTER (WHERE total condition)"),
    exp.Abs: Rule(_of_floats, "ABS of a float is a float (of an integer it overflows at the minimum)"),
    exp.Greatest: Rule(_extreme, "its arguments unify to a common type that holds all of them"),
    exp.Least: Rule(_extreme, "its arguments unify to a common type that holds all of them"),
    exp.Sum: Rule(_sum, "SUM of integers of at most 64 bits accumulates in HUGEINT: no overflow below 2^64 rows"),
    exp.Count: Rule(_count, "counts rows or values: cannot fail"),
    exp.Mod: Rule(_mod, "an integer modulo a positive integer literal"),
    exp.Anonymous: Rule(_function, "HASH; HISTOGRAM of a BIGINT into literal BIGINT bounds, or of quantiles.bin_sql's bin, and its MAP_ENTRIES / MAP_KEYS / MAP_VALUES"),
    exp.MapKeys: Rule(_map_keys, "the keys of the histogram's map"),
    exp.Array: Rule(_array, "a list of total elements (the sparse histogram's bins and counts)"),
    exp.ArrayFilter: Rule(_list_filter, "keeps the histogram's bins whose count is above 0"),
}

#: Forms deliberately left out, and why (they run inside TRY): integer and DECIMAL arithmetic
#: (overflow), a narrowing CAST (an analyst's CAST is a TRY_CAST), ABS of an integer, LN/SQRT/POW
#: (domain errors), ``||`` and CONCAT (a result past DuckDB's 4 GiB string limit), LIKE … ESCAPE (an escape
#: string of several characters fails per row).
