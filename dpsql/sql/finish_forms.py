"""What the finish stage runs, derived from a plan's finish SELECT once, when the plan is made.

The finish stage (:mod:`dpsql.pipeline.finish`) runs on noisy cells after the charge. It reads these forms,
never the tree, so a plan read back from its record (:mod:`dpsql.records.plan`) finishes without
sqlglot:

* the finish SELECT as DuckDB SQL, with the row column appended (each answer row's position in
  the noisy cells, so σ and MOE follow the rows through HAVING / ORDER BY / LIMIT);
* the names of its output columns;
* its *projection*, when the finish query only renames keys and noisy columns and divides for
  AVG — no HAVING, ORDER BY, LIMIT, DISTINCT or other expression: the usual GROUP BY query —
  which the finish stage then computes itself, with DuckDB's own semantics
  (tests/test_finish_projection.py): per output column ``("col", relation column)`` or
  ``("avg", sum column, count column)``; None when DuckDB must run the query.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.sql.plan import ROW_COLUMN, OutputColumn, primitive_column

Projection = tuple[tuple[str, ...], ...]


def forms(finish: exp.Select, outputs: tuple[OutputColumn, ...]) -> tuple[str, tuple[str, ...], Projection | None]:
    """(finish SQL with the row column, output names, projection or None) of a finish SELECT.

    With ORDER BY, LIMIT or OFFSET, the rows are last ordered by the row column: rows the
    analyst's ORDER BY leaves tied come in the order the release made them, whatever the LIMIT
    (DuckDB's top-n sort does not keep ties in input order: page 2 could repeat a row of page 1),
    so every ORDER BY / LIMIT / OFFSET variant of a statement shows the one release the same way
    (pipeline/reuse.py; docs/privacy.md, "Pages of one release")."""
    tree = total_finish(finish).select(exp.column(ROW_COLUMN, quoted=True))
    if any(finish.args.get(a) for a in ("order", "limit", "offset")):
        tree = tree.order_by(exp.column(ROW_COLUMN, quoted=True), append=True)
    return tree.sql("duckdb"), tuple(item.alias for item in finish.expressions), projection(finish, outputs)


def base_sql(finish: exp.Select) -> str:
    """The finish SQL without ORDER BY, LIMIT and OFFSET: what every ORDER BY / LIMIT / OFFSET
    variant of one statement shares, and what a released answer is kept under
    (:func:`dpsql.pipeline.reuse.key`). ORDER BY, LIMIT and OFFSET read only the noisy cells,
    after the charge: they are post-processing of the answer this SQL describes."""
    tree = finish.copy()
    for arg in ("order", "limit", "offset"):
        tree.set(arg, None)
    return total_finish(tree).select(exp.column(ROW_COLUMN, quoted=True)).sql("duckdb")


#: arithmetic that may raise on some values (overflow, division by zero)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Pow, exp.Neg)
#: nodes sqlglot files under Func that are not a call: operators, CASE and its branches
_NOT_CALLS = (exp.Binary, exp.Unary, exp.If, exp.Case, exp.Try, exp.Paren)


def _may_raise(node: exp.Expression) -> bool:
    """Arithmetic, or a function call (a CAST, ROUND, ABS, ...: a failed conversion, an overflow)."""
    return isinstance(node, _ARITHMETIC) or (isinstance(node, exp.Func) and not isinstance(node, _NOT_CALLS))

#: what DuckDB does not allow inside TRY()
_NOT_IN_TRY = (exp.AggFunc, exp.Window, exp.Select, exp.Subquery, exp.Rand)


def total_finish(finish: exp.Select) -> exp.Select:
    """A copy of the finish SELECT in which every operation that may raise on some values runs
    inside ``TRY()`` (NULL instead of an error). The finish runs after the charge, so it must
    return its rows whatever the noisy values are: ``COUNT(*) * 9223372036854775807``, ``// 0``
    and ``% 0`` failed there (issue 29, finding 12). Each operation is wrapped on its own, so an
    error is NULL where it happens and ``NULL OR TRUE`` keeps its SQL meaning — except inside a
    chain of arithmetic, which fails whole anyway and gets one TRY (200 chained ``+`` would nest
    200 TRYs past sqlglot's recursion limit). Aggregates and
    window functions (of a query over a DP subquery) cannot stand inside TRY; the operations
    around them are left as written."""
    tree = finish.copy()
    for node in reversed(list(tree.walk())):  # children before parents: a parent wraps wrapped children
        if not _may_raise(node) or isinstance(node, exp.AggFunc):
            continue
        if node.find(*_NOT_IN_TRY) is not None or node.find(exp.Column) is None:
            continue  # constants fail (or not) whatever the values: phase 1 answers for them
        parent = node.parent
        if isinstance(parent, _ARITHMETIC) and parent.find(*_NOT_IN_TRY) is None:
            continue  # its arithmetic parent fails with it anyway, and is wrapped: one TRY a chain
        wrapper = exp.Try()
        node.replace(wrapper)
        wrapper.set("this", node)
    return tree


def projection(f: exp.Select, outputs: tuple[OutputColumn, ...]) -> Projection | None:
    """The finish query as a projection of the noisy relation's columns, or None."""
    if any(f.args.get(a) for a in ("where", "having", "order", "limit", "offset", "distinct", "group", "joins", "with")):
        return None
    out: list[tuple[str, ...]] = []
    for item, oc in zip(f.expressions, outputs):
        e = item.this if isinstance(item, exp.Alias) else None
        if isinstance(e, exp.Column) and not e.table:
            out.append(("col", e.name))
        elif oc.ratio is not None and e == _avg_tree(*oc.ratio):
            out.append(("avg", primitive_column(oc.ratio[0]), primitive_column(oc.ratio[1])))
        else:
            return None
    return tuple(out) if len(out) == len(outputs) else None


def _avg_tree(s: int, c: int) -> exp.Expression:
    """AVG's finish expression as :mod:`dpsql.sql.aggregates` writes it."""
    num, den = exp.column(primitive_column(s), quoted=True), exp.column(primitive_column(c), quoted=True)
    return exp.Paren(this=exp.Case(ifs=[exp.If(this=exp.GTE(this=den.copy(), expression=exp.Literal.number(1)),
                                                true=exp.Div(this=num, expression=den))]))
