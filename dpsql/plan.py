"""Checks a SELECT against the policy and builds the typed plan of one query.

The plan is data only. It separates what runs on private data (the private table, the WHERE
filter, the group keys and the *primitives*: the per-group noisy quantities) from what runs on
noisy values afterwards (the ``finish`` SELECT over the relation of noisy cells, which carries
the SELECT list, HAVING, ORDER BY and LIMIT of the analyst's query).

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
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from .errors import NotSupportedYet, QueryRefused
from .parse import position
from .policy import Policy, TablePolicy

NOISY_RELATION = "__noisy"


@dataclass(frozen=True)
class Primitive:
    """One per-group quantity noise is added to.

    kind "count": distinct privacy units (``column`` None) or units with ``column`` not NULL.
    kind "sum": the sum of measure ``column`` over split records.
    """

    kind: str
    column: str | None = None

    @property
    def label(self) -> str:
        if self.kind == "count":
            return "COUNT(units)" if self.column is None else f"COUNT({self.column})"
        return f"SUM({self.column})"


@dataclass(frozen=True)
class OutputColumn:
    """A column of the result. ``primitive`` is set when the column is exactly one noisy
    primitive; ``ratio`` when it is AVG = SUM / COUNT of two primitives."""

    name: str
    primitive: int | None = None
    ratio: tuple[int, int] | None = None


@dataclass(frozen=True)
class Plan:
    sql: str
    table: TablePolicy
    where: exp.Expression | None
    keys: tuple[str, ...]
    primitives: tuple[Primitive, ...]
    finish: exp.Select
    outputs: tuple[OutputColumn, ...]
    #: what partition selection counts per group ("units" or "split_rows"); None without private keys
    selection_count: str | None = None

    @property
    def private_keys(self) -> tuple[str, ...]:
        """GROUP BY keys without a public keyset: their groups go through partition selection."""
        return tuple(k for k in self.keys if not self.table.keys[k].public)

    @property
    def split_measures(self) -> tuple[str, ...]:
        """The measures that decide the split count m(r): only those this query sums
        (query-scoped splitting, DESIGN.md)."""
        return tuple(sorted({p.column for p in self.primitives if p.kind == "sum" and p.column}))


def primitive_column(i: int) -> str:
    return f"__p{i}"


def sigma_column(i: int) -> str:
    return f"__s{i}"


def moe_column(i: int) -> str:
    return f"__m{i}"


def hidden_columns(n_primitives: int) -> list[str]:
    """Columns the finish SELECT carries after the visible ones, so that every row keeps its
    own noisy values, σ and MOE through HAVING / ORDER BY / LIMIT: 3 per primitive."""
    return [c for i in range(n_primitives) for c in (primitive_column(i), sigma_column(i), moe_column(i))]


def build_plan(select: exp.Select, sql: str, policy: Policy, schema: dict[str, dict[str, str]],
               not_null: dict[str, set[str]] | None = None) -> Plan:
    """Build the plan of a SELECT that passed ``validate.check_statement``.

    Args:
        select: the statement.
        sql: its text, for error positions.
        policy: the loaded policy.
        schema: table name -> {column name -> DuckDB type} of the tables the policy declares.
        not_null: table name -> columns the schema declares NOT NULL.
    """
    return _Planner(select, sql, policy, schema, not_null or {}).build()


class _Planner:
    def __init__(self, select: exp.Select, sql: str, policy: Policy, schema: dict[str, dict[str, str]],
                 not_null: dict[str, set[str]]):
        self.not_null = not_null
        self.select = select
        self.sql = sql
        self.policy = policy
        self.schema = schema
        self.primitives: list[Primitive] = []

    # ------------------------------------------------------------------ helpers
    def refuse(self, node: exp.Expression, code: str, message: str, hint: str | None = None) -> QueryRefused:
        line, column = position(node, self.sql)
        return QueryRefused(message, code=code, line=line, column=column, hint=hint)

    def primitive(self, p: Primitive) -> int:
        if p not in self.primitives:
            self.primitives.append(p)
        return self.primitives.index(p)

    # ------------------------------------------------------------------ build
    def build(self) -> Plan:
        self.table, qualifiers = self.resolve_table()
        self.qualifiers = qualifiers
        self.columns = self.schema[self.table.name]

        where = self.select.args.get("where")
        where_expr = None
        if where is not None:
            if any(isinstance(n, exp.AggFunc) for n in where.this.walk()):
                raise self.refuse(where, "DP112", "aggregates are not allowed in WHERE", "filter on aggregates with HAVING.")
            where_expr = self.normalise_columns(where.this.copy())

        items = list(self.select.expressions)
        if not items:
            raise self.refuse(self.select, "DP112", "the SELECT list is empty")
        aliases = {item.alias.lower(): item.this for item in items if isinstance(item, exp.Alias)}
        keys = self.group_keys(items, aliases)

        finish_items: list[exp.Expression] = []
        outputs: list[OutputColumn] = []
        has_aggregate = False
        for i, item in enumerate(items):
            inner = item.this if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else (inner.name if isinstance(inner, exp.Column) else inner.sql("duckdb"))
            if any(isinstance(n, exp.AggFunc) for n in inner.walk()):
                has_aggregate = True
            finish_expr, direct, ratio = self.to_finish(inner.copy(), keys, context="SELECT")
            finish_items.append(exp.alias_(finish_expr, name, quoted=True))
            outputs.append(OutputColumn(name, direct, ratio))
        if not has_aggregate:
            raise self.refuse(items[0], "DP201", "the query selects no aggregate, so it would return private rows or keys",
                              "aggregate with COUNT, SUM or AVG, e.g. SELECT state, COUNT(*) FROM t GROUP BY state.")

        finish = exp.select(*finish_items).from_(exp.to_table(NOISY_RELATION))
        having = self.select.args.get("having")
        if having is not None:
            cond, _, _ = self.to_finish(having.this.copy(), keys, context="HAVING", aliases=set(aliases))
            finish = finish.where(cond)
        order = self.select.args.get("order")
        if order is not None:
            ordered = []
            for o in order.expressions:
                if isinstance(o.this, exp.Literal) and not o.this.is_string:
                    ordered.append(o.copy())  # ordinal: the finish SELECT keeps the same positions
                    continue
                e, _, _ = self.to_finish(o.this.copy(), keys, context="ORDER BY", aliases=set(aliases))
                ordered.append(exp.Ordered(this=e, desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first")))
            finish = finish.order_by(*ordered)
        for part in ("limit", "offset"):
            node = self.select.args.get(part)
            if node is None:
                continue
            value = node.args.get("expression") or node.this
            if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                raise self.refuse(node, "DP113", f"{part.upper()} must be a whole number")
            finish = finish.limit(int(value.this)) if part == "limit" else finish.offset(int(value.this))

        private = any(not self.table.keys[k].public for k in keys)
        return Plan(sql=self.sql, table=self.table, where=where_expr, keys=tuple(keys),
                    primitives=tuple(self.primitives), finish=finish, outputs=tuple(outputs),
                    selection_count=self.policy.selection.count if private else None)

    def resolve_table(self) -> tuple[TablePolicy, set[str]]:
        from_ = self.select.args.get("from_") or self.select.args.get("from")
        if from_ is None:
            raise self.refuse(self.select, "DP202", "the query has no FROM clause", "aggregate over a table declared in the policy.")
        table = from_.this
        name = table.name.lower()
        if "." in name or "/" in name:
            raise self.refuse(table, "DP107", "file paths cannot be queried", "query a table declared in the policy by its name.")
        db = table.args.get("db")
        if table.args.get("catalog") is not None or (db is not None and db.name.lower() != "main"):
            raise self.refuse(table, "DP202", f"table {table.sql('duckdb')} is not declared in the policy")
        tp = self.policy.table(name)
        if tp is None:
            declared = ", ".join(sorted(self.policy.tables)) or "none"
            raise self.refuse(table, "DP202", f"table {name!r} is not declared in the policy (declared: {declared})")
        qualifiers = {name}
        if table.alias:
            qualifiers = {table.alias.lower()}  # SQL: once aliased, only the alias qualifies
        return tp, qualifiers

    def column_name(self, col: exp.Column) -> str:
        if col.table and col.table.lower() not in self.qualifiers:
            raise self.refuse(col, "DP203", f"unknown table or alias {col.table!r} in {col.sql('duckdb')}")
        name = col.name.lower()
        if name not in self.columns:
            raise self.refuse(col, "DP203", f"table {self.table.name!r} has no column {name!r}",
                              f"its columns are: {', '.join(self.columns)}.")
        return name

    def normalise_columns(self, tree: exp.Expression) -> exp.Expression:
        """Unqualified, quoted, lower-case column names; casts made total (TRY_CAST) so that
        no row can make the query fail (a failure that depends on the data would leak it)."""

        def columns(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                return exp.column(self.column_name(node), quoted=True)
            return node

        tree = tree.transform(columns)
        # In place, every cast at any depth (transform() would not descend into a replaced node).
        for node in list(tree.find_all(exp.Cast)):
            if not isinstance(node, exp.TryCast):
                replacement = exp.TryCast(this=node.this, to=node.to)
                if node is tree:
                    tree = replacement
                else:
                    node.replace(replacement)
        return tree

    def group_keys(self, items: list[exp.Expression], aliases: dict[str, exp.Expression]) -> list[str]:
        group = self.select.args.get("group")
        if group is None:
            return []
        if group.args.get("all"):
            raise self.refuse(group, "DP114", "GROUP BY ALL is not supported", "list the key columns.")
        keys: list[str] = []
        for g in group.expressions:
            target = g
            if isinstance(g, exp.Literal) and not g.is_string:
                idx = int(g.this) - 1
                if not 0 <= idx < len(items):
                    raise self.refuse(g, "DP114", f"GROUP BY position {g.this} is not in the SELECT list")
                target = items[idx].this if isinstance(items[idx], exp.Alias) else items[idx]
            elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases and g.name.lower() not in self.columns:
                target = aliases[g.name.lower()]
            if not isinstance(target, exp.Column):
                raise self.refuse(g, "DP114", "GROUP BY accepts key columns only (by name, alias or position)",
                                  "group by a key column declared in the policy.")
            name = self.column_name(target)
            key = self.table.keys.get(name)
            if key is None:
                declared = ", ".join(sorted(self.table.keys)) or "none"
                raise self.refuse(g, "DP206", f"column {name!r} is not a group-by key of {self.table.name!r} in the policy",
                                  f"group by one of the declared keys: {declared}.")
            if name not in keys:
                keys.append(name)
        return keys

    def to_finish(self, tree: exp.Expression, keys: list[str], context: str, aliases: set[str] = frozenset()
                  ) -> tuple[exp.Expression, int | None, tuple[int, int] | None]:
        """Rewrite an expression of the analyst's SELECT list / HAVING / ORDER BY into one over
        the noisy relation: aggregates become noisy columns, key columns stay."""
        direct: int | None = None
        ratio: tuple[int, int] | None = None

        def fix(node: exp.Expression) -> exp.Expression:
            nonlocal direct, ratio
            if isinstance(node, exp.AggFunc):
                if any(isinstance(n, exp.AggFunc) for n in node.this.walk() if n is not node) if isinstance(node.this, exp.Expression) else False:
                    raise self.refuse(node, "DP115", "aggregates cannot be nested")
                result = self.aggregate(node)
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
                name = self.column_name(node)
                if name not in keys:
                    raise self.refuse(node, "DP201", f"column {name!r} is used outside an aggregate in {context} but is not a GROUP BY key",
                                      f"aggregate it (e.g. SUM({name}) or COUNT(*)) or add it to GROUP BY if it is a declared key.")
                return exp.column(name, quoted=True)
            return node

        out = tree.transform(fix)
        is_single = isinstance(tree, exp.AggFunc)
        return out, (direct if is_single and ratio is None else None), (ratio if is_single else None)

    def aggregate(self, node: exp.AggFunc) -> int | tuple[int, int]:
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            inner = arg.expressions
            if len(inner) != 1:
                raise self.refuse(node, "DP116", "DISTINCT over several columns is not supported")
            arg = inner[0]
        if isinstance(node, exp.Count):
            if isinstance(arg, exp.Star) or arg is None:
                return self.primitive(Primitive("count"))
            if isinstance(arg, exp.Literal) and not distinct:
                return self.primitive(Primitive("count"))
            if isinstance(arg, exp.Column):
                name = self.column_name(arg)
                if name == self.table.privacy_unit:
                    return self.primitive(Primitive("count"))
                if distinct:
                    raise NotSupportedYet(f"COUNT(DISTINCT {name}) is not supported yet", code="DP116",
                                          line=position(node, self.sql)[0], column=position(node, self.sql)[1],
                                          hint=f"COUNT(*) counts privacy units ({self.table.privacy_unit}).")
                return self.primitive(Primitive("count", name))
            raise self.refuse(node, "DP117", "COUNT accepts *, a column or DISTINCT of the privacy unit",
                              "write COUNT(*) or COUNT(column).")
        fname = node.sql_name()
        if distinct:
            raise self.refuse(node, "DP116", f"{fname}(DISTINCT ...) is not supported", f"write {fname}(measure).")
        if not isinstance(arg, exp.Column):
            measures = ", ".join(sorted(self.table.measures)) or "none"
            raise self.refuse(node, "DP204", f"{fname} over an expression has no bounded sensitivity",
                              f"{fname} a declared measure column directly ({measures}).")
        name = self.column_name(arg)
        if name not in self.table.measures:
            measures = ", ".join(sorted(self.table.measures)) or "none"
            raise self.refuse(arg, "DP204", f"{fname}({name}): column {name!r} is not a measure of {self.table.name!r} in the policy",
                              f"measures with split thresholds: {measures}; COUNT(*) counts units.")
        s = self.primitive(Primitive("sum", name))
        if isinstance(node, exp.Avg):
            # AVG = SUM / COUNT over the rows where the measure is not NULL (SQL's AVG). When the
            # schema says the column cannot be NULL, that count is the count of units, which
            # COUNT(*) in the same query can share (paper 000 Table 3: SUM / COUNT_DISTINCT(id)).
            counted = None if name in self.not_null.get(self.table.name, set()) else name
            return s, self.primitive(Primitive("count", counted))
        return s
