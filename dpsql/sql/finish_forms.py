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
    """(finish SQL with the row column, output names, projection or None) of a finish SELECT."""
    sql = finish.copy().select(exp.column(ROW_COLUMN, quoted=True)).sql("duckdb")
    return sql, tuple(item.alias for item in finish.expressions), projection(finish, outputs)


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
