"""Aggregates -> primitives, and the analyst's SELECT list, HAVING, ORDER BY, LIMIT and OFFSET
rewritten into the ``finish`` SELECT over the relation of noisy cells.

Rewrite table (paper 000 Table 3, Section 5.3):

====================  =============================================  ==================
analyst writes        primitive(s)                                   per-record cost
====================  =============================================  ==================
COUNT(*), COUNT(1),   count of distinct privacy units                ρ
COUNT(unit),
COUNT(DISTINCT unit)
COUNT(col)            count of distinct units whose col is not NULL  ρ
SUM(m)                SUM of m over split records                    ρ·|A(r)|²
AVG(m)                SUM(m) / COUNT(m), each noisy (COUNT(m) is     ρ_s·|A(r)|² + ρ_c
                      the count of units when m is NOT NULL)
====================  =============================================  ==================

On a table with many rows per unit (``max_groups``) counts are of rows or units and AVG divides
by the rows where the measure is not NULL; quantiles and COUNT(DISTINCT col) read a keyed sample
of each unit's rows per group: :mod:`dpsql.sql.units`.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import NotSupportedYet
from dpsql.policy.model import TablePolicy
from dpsql.sql.derived import derived_form, ranked_by
from dpsql.sql.keys import key_for, keys_by_text
from dpsql.sql.parse import position, written_name
from dpsql.sql.quantiles import is_quantile, quantile_call, quantile_name
from dpsql.sql.plan import NOISY_RELATION, GroupKey, OutputColumn, Primitive, primitive_column
from dpsql.sql.scopes import Scopes, try_casts
from dpsql.sql.spread import SPREAD_AGGREGATES, finish_expr, spread_kind
from dpsql.sql import units


class FinishRewriter:
    """The primitives of one query (each once, whichever aggregates share it) and its
    ``finish`` SELECT: aggregates become noisy columns, GROUP BY keys stay."""

    def __init__(self, scopes: Scopes, table: TablePolicy, keys: list[GroupKey], not_null: dict[str, set[str]]):
        self.scopes = scopes
        self.table = table
        self.not_null = not_null
        self.key_lookup = keys_by_text(keys)
        self.primitives: list[Primitive] = []
        #: the spread (sql/spread.py) the last expression rewritten by :meth:`to_finish` is, if it is one
        self.spread: tuple[int, int, int, str] | None = None

    def primitive(self, p: Primitive) -> int:
        if p not in self.primitives:
            self.primitives.append(p)
        return self.primitives.index(p)

    def finish(self, select: exp.Select, items: list[exp.Expression], aliases: dict[str, exp.Expression]
               ) -> tuple[exp.Select, list[OutputColumn]]:
        """The finish SELECT of ``select`` (``items`` its SELECT list, ``aliases`` the list's
        aliases) and the columns of its result."""
        finish_items: list[exp.Expression] = []
        outputs: list[OutputColumn] = []
        has_aggregate = False
        for i, item in enumerate(items):
            inner = item.this if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else (inner.name if isinstance(inner, exp.Column) else inner.sql("duckdb"))
            if any(isinstance(n, exp.AggFunc) for n in inner.walk()):
                has_aggregate = True
            finished, direct, ratio = self.to_finish(inner.copy(), context="SELECT")
            finish_items.append(exp.alias_(finished, name, quoted=True))
            outputs.append(OutputColumn(name, direct, ratio, self.spread))
            if direct is None and ratio is None and self.spread is None:  # arithmetic over aggregates: sql/derived.py
                form = derived_form(finished, self.primitives, {k.name for k in self.key_lookup.values()})
                outputs[-1] = OutputColumn(name, derived=form)
        not_null = self.not_null.get(self.table.name, set())
        outputs = [OutputColumn(oc.name, oc.primitive, ranked_by=ranked_by(oc.primitive, self.primitives, not_null,
                                                                           self.table.many_rows))
                   if oc.primitive is not None and self.primitives[oc.primitive].kind == "quantile" else oc
                   for oc in outputs]
        if not has_aggregate and not self.key_lookup:
            raise self.scopes.refuse(items[0], "DP201", "the query selects no aggregate, so it would return private rows or keys",
                                     "aggregate with COUNT, SUM or AVG, e.g. SELECT state, COUNT(*) FROM t GROUP BY state, "
                                     "or list groups: SELECT state FROM t GROUP BY state.")
        # Without an aggregate (SELECT k FROM t GROUP BY k, SELECT DISTINCT k): no primitive; the
        # groups are the public keyset (free, no private row read) or partition selection's (its
        # ε²/2 and δ only): pipeline/decide.py.

        finish = exp.select(*finish_items).from_(exp.to_table(NOISY_RELATION))
        having = select.args.get("having")
        if having is not None:
            cond, _, _ = self.to_finish(having.this.copy(), context="HAVING", aliases=set(aliases))
            finish = finish.where(cond)
        order = select.args.get("order")
        if order is not None:
            ordered = []
            for o in order.expressions:
                if isinstance(o.this, exp.Literal) and not o.this.is_string:
                    ordered.append(o.copy())  # ordinal: the finish SELECT keeps the same positions
                    continue
                e, _, _ = self.to_finish(o.this.copy(), context="ORDER BY", aliases=set(aliases))
                ordered.append(exp.Ordered(this=e, desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first")))
            finish = finish.order_by(*ordered)
        for part in ("limit", "offset"):
            node = select.args.get(part)
            if node is None:
                continue
            value = node.args.get("expression") or node.this
            if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                raise self.scopes.refuse(node, "DP113", f"{part.upper()} must be a whole number")
            finish = finish.limit(int(value.this)) if part == "limit" else finish.offset(int(value.this))
        return finish, outputs

    def to_finish(self, tree: exp.Expression, context: str, aliases: set[str] = frozenset()
                  ) -> tuple[exp.Expression, int | None, tuple[int, int] | None]:
        """Rewrite an expression of the analyst's SELECT list / HAVING / ORDER BY into one over
        the noisy relation: aggregates become noisy columns, keys stay."""
        direct: int | None = None
        ratio: tuple[int, int] | None = None
        self.spread = None
        spread: tuple[int, int, int, str] | None = None

        def fix(node: exp.Expression) -> exp.Expression:
            nonlocal direct, ratio, spread
            if isinstance(node, (exp.AggFunc, exp.WithinGroup)):
                call = node.this if isinstance(node, exp.WithinGroup) else node
                inner = [a for k, a in call.args.items() if isinstance(a, exp.Expression)]
                if isinstance(node, exp.WithinGroup):
                    inner.append(node.expression)
                if any(isinstance(n, exp.AggFunc) for a in inner for n in a.walk()):
                    raise self.scopes.refuse(node, "DP115", "aggregates cannot be nested")
                result = self.aggregate(node)
                if isinstance(result, tuple) and len(result) == 4:  # VARIANCE / STDDEV: sql/spread.py
                    spread = result
                    return finish_expr(result[3], *result[:3])
                if isinstance(result, tuple):
                    s, c = result
                    ratio = (s, c)
                    num = exp.column(primitive_column(s), quoted=True)
                    den = exp.column(primitive_column(c), quoted=True)
                    # AVG = noisy SUM / noisy COUNT; undefined (NULL) when the noisy count is below 1.
                    return exp.Paren(this=exp.Case(ifs=[exp.If(this=exp.GTE(this=den.copy(), expression=exp.Literal.number(1)),
                                                                 true=exp.Div(this=num, expression=den))]))
                direct = result
                return exp.column(primitive_column(result), quoted=True)
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                if not node.table and node.name.lower() in aliases:
                    return exp.column(node.name, quoted=True)
                name = self.scopes.column_name(node)
                key = self.key_lookup.get(exp.column(name, quoted=True).sql("duckdb"))
                if key is None:
                    shown = self.scopes.shown(name)
                    hint = (f"add {shown} to GROUP BY (every column of a public table can be grouped by)." if shown != name else
                            f"aggregate it (e.g. SUM({shown}) or COUNT(*)) or add it to GROUP BY if it is a declared key.")
                    raise self.scopes.refuse(node, "DP201", f"column {shown!r} is used outside an aggregate in {context} but is not a GROUP BY key",
                                             hint)
                return exp.column(key.name, quoted=True)
            if not isinstance(node, (exp.Literal, exp.Paren)) and (key := key_for(node, self.scopes, self.key_lookup)) is not None:
                return exp.column(key.name, quoted=True)  # an expression the query groups by
            return node

        # Casts over noisy values become TRY_CAST too: a cast that overflows on a noisy value is
        # NULL rather than a failure after the charge.
        out = try_casts(tree.transform(fix))
        is_single = isinstance(tree, exp.AggFunc)
        self.spread = spread if is_single else None
        return out, (direct if is_single and ratio is None else None), (ratio if is_single else None)

    def aggregate(self, node: exp.Expression) -> int | tuple[int, int] | tuple[int, int, int, str]:
        if self.table.many_rows and isinstance(node, exp.Count):  # sql/units.py
            return self.primitive(units.count(self.scopes, self.table, node, self.not_null.get(self.table.name, set())))
        if is_quantile(node):
            return self.quantile(node)
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            inner = arg.expressions
            if len(inner) != 1:
                raise self.scopes.refuse(node, "DP116", "DISTINCT over several columns is not supported")
            arg = inner[0]
        private_not_null = self.not_null.get(self.table.name, set())
        if isinstance(node, exp.Count):
            if isinstance(arg, exp.Star) or arg is None:
                return self.primitive(Primitive("count"))
            if isinstance(arg, exp.Literal) and not distinct:
                return self.primitive(Primitive("count"))
            if isinstance(arg, exp.Column):
                name = self.scopes.column_name(arg)
                if name == self.table.privacy_unit:
                    return self.primitive(Primitive("count"))
                if distinct:  # one row per unit: a unit adds at most one distinct value (Primitive)
                    return self.primitive(Primitive("count", name, shown=self.scopes.shown(name), distinct=True))
                # A private column the schema declares NOT NULL counts every unit: share COUNT(*)'s primitive.
                # (A joined public column can be NULL whatever its schema says: a LEFT JOIN may not match.)
                if name in private_not_null:
                    return self.primitive(Primitive("count"))
                return self.primitive(Primitive("count", name, shown=self.scopes.shown(name)))
            raise self.scopes.refuse(node, "DP117", "COUNT accepts *, a column or DISTINCT of the privacy unit",
                                     "write COUNT(*) or COUNT(column).")
        fname = written_name(node, self.scopes.sql).upper()
        if distinct and fname in ("SUM", "AVG"):  # docs/privacy.md, "SUM(DISTINCT x) is refused"
            raise self.scopes.refuse(
                node, "DP116", f"{fname}(DISTINCT ...) is not supported: the split threshold that bounds {fname} does "
                "not bound distinct values (a record's pieces would collapse into one), and one unit's rows can add "
                "or remove many distinct values at once",
                f"write {fname}(measure) for the measure over every row (each record split at its threshold); "
                "COUNT(DISTINCT <the privacy unit>) counts units.")
        if distinct:
            raise self.scopes.refuse(node, "DP116", f"{fname}(DISTINCT ...) is not supported", f"write {fname}(measure).")
        if not isinstance(arg, exp.Column):
            measures = ", ".join(sorted(self.table.measures)) or "none"
            raise self.scopes.refuse(node, "DP204", f"{fname} over an expression has no bounded sensitivity",
                                     f"{fname} a declared measure column directly ({measures}).")
        name = self.scopes.column_name(arg)
        if name not in self.table.measures:
            measures = ", ".join(sorted(self.table.measures)) or "none"
            shown = self.scopes.shown(name)
            raise self.scopes.refuse(arg, "DP204", f"{fname}({shown}): column {shown!r} is not a measure of {self.table.name!r} in the policy",
                                     f"measures with split thresholds: {measures}; COUNT(*) counts units.")
        if isinstance(node, SPREAD_AGGREGATES):
            return self.spread_of(node, name)
        s = self.primitive(Primitive("sum", name))
        if isinstance(node, exp.Avg):
            # AVG = SUM / COUNT over the rows where the measure is not NULL (SQL's AVG). When the
            # schema says the column cannot be NULL, that count is the count of units, which
            # COUNT(*) in the same query can share (paper 000 Table 3: SUM / COUNT_DISTINCT(id)).
            counted = None if name in private_not_null else name
            if self.table.many_rows:  # the rows where it is not NULL, split at row_threshold (sql/units.py)
                return s, self.primitive(units.rows(self.scopes, self.table, node, counted))
            return s, self.primitive(Primitive("count", counted))
        return s

    def spread_of(self, node: exp.Expression, name: str) -> tuple[int, int, int, str]:
        """VARIANCE / STDDEV of measure ``name``: its sum of split squares, its SUM and AVG's count
        (``sql/spread.py``), each a primitive shared with any other aggregate of the query."""
        if self.table.many_rows:
            raise self.scopes.refuse(node, "DP211", f"{written_name(node, self.scopes.sql).upper()} is not answered yet on a "
                                     "table with many rows per unit", "ask for SUM, AVG and COUNT per group instead.")
        counted = None if name in self.not_null.get(self.table.name, set()) else name
        q = self.primitive(Primitive("sumsq", name, shown=self.scopes.shown(name)))
        s = self.primitive(Primitive("sum", name))
        return q, s, self.primitive(Primitive("count", counted)), spread_kind(node)

    def quantile(self, node: exp.Expression) -> int:
        """A quantile of a measure whose policy declares its grid (``sql/quantiles.py``)."""
        arg, q = quantile_call(node, self.scopes.sql)
        fname = quantile_name(node, self.scopes.sql)
        measures = ", ".join(sorted(m for m, v in self.table.measures.items() if v.grid)) or "none"
        if isinstance(arg, exp.Distinct) or not isinstance(arg, exp.Column):
            raise self.scopes.refuse(node, "DP204", f"{fname} over an expression has no public grid of candidates",
                                     f"{fname} a declared measure column directly (measures with a quantile range: {measures}).")
        name = self.scopes.column_name(arg)
        shown = self.scopes.shown(name)
        measure = self.table.measures.get(name)
        if measure is None:
            raise self.scopes.refuse(arg, "DP204", f"{fname}({shown}): column {shown!r} is not a measure of {self.table.name!r} in the policy",
                                     f"measures with a quantile range: {measures}.")
        if measure.grid is None:
            raise self.scopes.refuse(arg, "DP204", f"{fname}({shown}): the policy declares no quantile range for measure {shown!r}",
                                     f"the data owner adds range = [lowest, highest] (and grid = \"log\" for skewed values) to "
                                     f"[tables.{self.table.name}.measures.{name}] (docs/policy.md); measures with one: {measures}.")
        return self.primitive(Primitive("quantile", name, q=q))
