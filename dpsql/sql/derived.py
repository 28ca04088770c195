"""Derived columns: a SELECT-list expression that is arithmetic over noisy aggregates, in the
small form the finish stage propagates their noise through (:mod:`dpsql.pipeline.propagate`).

``SUM(a) / SUM(b)``, ``100.0 * COUNT(*) / SUM(x)``, ``SUM(a) - SUM(b)``, ``AVG(x) * 2``,
``ROUND(SUM(a) / COUNT(*), 1)``: each is a function of the query's noisy primitives, whose noise
distributions are public (each cell's σ). Its ± is post-processing of those (docs/privacy.md,
"Derived columns"). The form is nested tuples of plain values, so a plan read back from its
record (:mod:`dpsql.records.plan`) carries it without sqlglot:

* ``("p", i)`` primitive ``i``'s noisy value; ``("c", x)`` a number; ``("k", name)`` a GROUP
  BY key's value (released, exact for the row: no noise);
* ``("avg", s, c)`` AVG = noisy SUM ``s`` / noisy COUNT ``c`` (NULL when the count is below 1);
* ``("+", a, b)``, ``("-", a, b)``, ``("*", a, b)``, ``("/", a, b)``, ``("neg", a)``,
  ``("abs", a)``, ``("same", a)`` (ROUND, a numeric CAST: the ± of the value before rounding).

Anything else (a quantile, whose error is in ranks; a variance; CASE; a text function) has no
form, and the column no ±.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from dpsql.sql.plan import Primitive, primitive_column

Form = tuple[Any, ...]

_BINARY = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}


def derived_form(tree: exp.Expression, primitives: list[Primitive], keys: set[str]) -> Form | None:
    """The form of a finish expression over the noisy relation (:func:`FinishRewriter.to_finish`),
    or None when it is not arithmetic over noisy aggregates (or reads none)."""
    index = {primitive_column(i): i for i in range(len(primitives))}

    def form(node: exp.Expression) -> Form | None:
        if isinstance(node, exp.Paren):
            return form(node.this)
        if isinstance(node, exp.Column):
            if node.name in index:
                i = index[node.name]
                return ("p", i) if primitives[i].kind != "quantile" else None
            return ("k", node.name) if node.name in keys else None
        if isinstance(node, exp.Literal):
            if node.is_string:
                return None
            try:
                return ("c", float(node.this))
            except ValueError:
                return None
        if isinstance(node, exp.Case):  # AVG's own form (aggregates.py): CASE WHEN c >= 1 THEN s / c END
            ifs = node.args.get("ifs") or []
            if len(ifs) == 1 and node.args.get("default") is None:
                cond, then = ifs[0].this, ifs[0].args.get("true")
                if (isinstance(cond, exp.GTE) and isinstance(then, exp.Div) and cond.expression == exp.Literal.number(1)
                        and cond.this == then.expression):
                    s, c = form(then.this), form(then.expression)
                    if s is not None and c is not None and s[0] == "p" and c[0] == "p":
                        return ("avg", s[1], c[1])
            return None
        op = _BINARY.get(type(node))
        if op is not None:
            a, b = form(node.this), form(node.expression)
            return None if a is None or b is None else (op, a, b)
        if isinstance(node, exp.Neg):
            a = form(node.this)
            return None if a is None else ("neg", a)
        if isinstance(node, exp.Abs):
            a = form(node.this)
            return None if a is None else ("abs", a)
        if isinstance(node, exp.Round):
            a = form(node.this)
            return None if a is None else ("same", a)
        if isinstance(node, exp.Cast):  # CAST and TRY_CAST to a number
            to = node.args.get("to")
            a = form(node.this)
            return None if a is None or to is None or not to.is_type(*exp.DataType.NUMERIC_TYPES) else ("same", a)
        return None

    out = form(tree)
    return out if out is not None and noisy(out) else None


def noisy(f: Form) -> bool:
    """Whether a form reads a noisy value."""
    if f[0] in ("p", "avg"):
        return True
    return any(noisy(x) for x in f[1:] if isinstance(x, tuple))


def ranked_by(q: int, primitives: list[Primitive], not_null: set[str], many_rows: bool) -> int | None:
    """The query's noisy count of the values quantile primitive ``q`` ranks, or of fewer (its
    rank interval is then wider, never narrower), or None. One row per unit: ``COUNT(m)``, or
    ``COUNT(*)`` when the schema says m is NOT NULL — exactly the values ranked. Many rows per
    unit (sql/units.py): each kept (unit, group) record adds 1 to ``quantile_rows`` values of
    m, so when m is NOT NULL its ``COUNT(DISTINCT unit)`` (one per kept record) is a lower bound;
    when m may be NULL no count of the query bounds them from below."""
    m = primitives[q].column
    for i, p in enumerate(primitives):
        if p.kind != "count" or p.distinct:
            continue
        if (p.column is None and m in not_null) or (p.column == m and not many_rows):
            return i
    return None
