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

from dataclasses import dataclass, field

from sqlglot import exp

from dpsql.errors import NotSupportedYet, QueryRefused
from dpsql.sql.parse import position
from dpsql.policy import Policy, PublicTable, TablePolicy

NOISY_RELATION = "__noisy"


@dataclass(frozen=True)
class Primitive:
    """One per-group quantity noise is added to.

    kind "count": distinct privacy units (``column`` None) or units with ``column`` not NULL.
    kind "sum": the sum of measure ``column`` over split records.
    """

    kind: str
    column: str | None = None
    #: how the column is shown (a joined public column is ``states.region``, not its internal name)
    shown: str | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        if self.kind == "count":
            return "COUNT(units)" if self.column is None else f"COUNT({self.shown or self.column})"
        return f"SUM({self.column})"


def try_casts(tree: exp.Expression) -> exp.Expression:
    """Every CAST at any depth becomes TRY_CAST (in place: transform() would not descend into a
    replaced node), so a value that does not convert is NULL instead of a failure."""
    for node in list(tree.find_all(exp.Cast)):
        if not isinstance(node, exp.TryCast):
            replacement = exp.TryCast(this=node.this, to=node.to)
            if node is tree:
                tree = replacement
            else:
                node.replace(replacement)
    return tree


@dataclass(frozen=True)
class Join:
    """A public table joined to the query's private table (or to a public table joined before
    it) on the public table's unique key: a lookup, so every private row still contributes
    to at most one row of the joined relation and its sensitivity is unchanged. Its columns
    appear in the plan under internal names (``alias_column``), so they can never be
    confused with the private table's columns."""

    table: str  # the public table
    alias: str  # internal, "__j1"
    side: str  # "INNER" or "LEFT"
    left: str  # the (internal) column it joins from
    key: str  # the public table's key column
    columns: tuple[str, ...]  # the public table's columns the query reads (key first)

    def internal(self, column: str) -> str:
        return f"{self.alias}_{column}"


@dataclass(frozen=True, eq=False)
class GroupKey:
    """One GROUP BY key: a declared key column, a column of a joined public table, or an
    expression of keys (``SUBSTR(naics, 1, 3)``). Public when every column it reads has a
    public keyset: its keyset is then the expression's image over theirs (computed from
    public values only, ``session.py``); otherwise its groups go through partition selection."""

    name: str  # its column in the exact result and the noisy relation
    expr: exp.Expression  # over the (joined) row, columns internal: what GROUP BY runs
    label: str  # as shown in receipts and explain
    sources: tuple[str, ...]  # the internal names of the columns it reads
    public: bool
    column: str | None = None  # the private table's key column, when the key is exactly that column

    @property
    def plain(self) -> bool:
        return isinstance(self.expr, exp.Column)


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
    keys: tuple[GroupKey, ...]
    primitives: tuple[Primitive, ...]
    finish: exp.Select
    outputs: tuple[OutputColumn, ...]
    #: what partition selection counts per group ("units" or "split_rows"); None without private keys
    selection_count: str | None = None
    joins: tuple[Join, ...] = ()
    #: internal name -> DuckDB type of every joined public column the plan may read
    public_types: dict[str, str] = field(default_factory=dict)
    #: internal name -> (public table, column)
    public_columns: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    @property
    def private_keys(self) -> tuple[GroupKey, ...]:
        """GROUP BY keys without a public keyset: their groups go through partition selection."""
        return tuple(k for k in self.keys if not k.public)

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


class _Scope:
    """A table the query reads: the private one (``alias`` None) or a joined public one, whose
    columns the plan names ``alias_column``."""

    def __init__(self, name: str, qualifiers: set[str], columns: dict[str, str], alias: str | None = None):
        self.name, self.qualifiers, self.columns, self.alias = name, qualifiers, columns, alias

    def internal(self, column: str) -> str:
        return column if self.alias is None else f"{self.alias}_{column}"


def _numeric(sql_type: str) -> bool:
    return sql_type.upper().startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                                        "UINTEGER", "UBIGINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL"))


def _text(sql_type: str) -> bool:
    return sql_type.upper().startswith(("VARCHAR", "TEXT", "STRING", "CHAR"))


class _Planner:
    def __init__(self, select: exp.Select, sql: str, policy: Policy, schema: dict[str, dict[str, str]],
                 not_null: dict[str, set[str]]):
        self.not_null = not_null
        self.select = select
        self.sql = sql
        self.policy = policy
        self.schema = schema
        self.primitives: list[Primitive] = []
        self.scopes: list[_Scope] = []
        self.columns: dict[str, str] = {}  # internal name -> type, of every table in scope
        self.public_names: dict[str, tuple[_Scope, str]] = {}  # internal name -> (public table, column)
        self.joins: list[Join] = []
        self.using: set[str] = set()
        self.used_public: dict[str, list[str]] = {}  # public table -> columns read
        self.key_lookup: dict[str, GroupKey] = {}

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
        self.table = self.resolve_tables()
        for join in self.joins:  # the join keys are read whatever the query selects
            self.note_public(join.left)
            self.note_public(join.internal(join.key))

        where = self.select.args.get("where")
        where_expr = None
        if where is not None:
            if any(isinstance(n, exp.AggFunc) for n in where.this.walk()):
                raise self.refuse(where, "DP112", "aggregates are not allowed in WHERE", "filter on aggregates with HAVING.")
            where_expr = self.normalise_columns(where.this.copy())
            self.check_ordering_types(where_expr)

        items = list(self.select.expressions)
        if not items:
            raise self.refuse(self.select, "DP112", "the SELECT list is empty")
        aliases = {item.alias.lower(): item.this for item in items if isinstance(item, exp.Alias)}
        keys = self.group_keys(items, aliases)
        self.key_lookup = {k.expr.sql("duckdb"): k for k in keys}

        finish_items: list[exp.Expression] = []
        outputs: list[OutputColumn] = []
        has_aggregate = False
        for i, item in enumerate(items):
            inner = item.this if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else (inner.name if isinstance(inner, exp.Column) else inner.sql("duckdb"))
            if any(isinstance(n, exp.AggFunc) for n in inner.walk()):
                has_aggregate = True
            finish_expr, direct, ratio = self.to_finish(inner.copy(), context="SELECT")
            finish_items.append(exp.alias_(finish_expr, name, quoted=True))
            outputs.append(OutputColumn(name, direct, ratio))
        if not has_aggregate:
            raise self.refuse(items[0], "DP201", "the query selects no aggregate, so it would return private rows or keys",
                              "aggregate with COUNT, SUM or AVG, e.g. SELECT state, COUNT(*) FROM t GROUP BY state.")

        finish = exp.select(*finish_items).from_(exp.to_table(NOISY_RELATION))
        having = self.select.args.get("having")
        if having is not None:
            cond, _, _ = self.to_finish(having.this.copy(), context="HAVING", aliases=set(aliases))
            finish = finish.where(cond)
        order = self.select.args.get("order")
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
            node = self.select.args.get(part)
            if node is None:
                continue
            value = node.args.get("expression") or node.this
            if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                raise self.refuse(node, "DP113", f"{part.upper()} must be a whole number")
            finish = finish.limit(int(value.this)) if part == "limit" else finish.offset(int(value.this))

        joins = tuple(Join(j.table, j.alias, j.side, j.left, j.key,
                           tuple(dict.fromkeys([j.key, *self.used_public.get(j.alias, [])]))) for j in self.joins)
        public_types = {j.internal(c): self.columns[j.internal(c)] for j in joins for c in j.columns}
        public_columns = {j.internal(c): (j.table, c) for j in joins for c in j.columns}
        private = any(not k.public for k in keys)
        return Plan(sql=self.sql, table=self.table, where=where_expr, keys=tuple(keys),
                    primitives=tuple(self.primitives), finish=finish, outputs=tuple(outputs),
                    selection_count=self.policy.selection.count if private else None,
                    joins=joins, public_types=public_types, public_columns=public_columns)

    # ------------------------------------------------------------------ tables
    def check_table_name(self, table: exp.Table) -> str:
        name = table.name.lower()
        if "." in name or "/" in name:
            raise self.refuse(table, "DP107", "file paths cannot be queried", "query a table declared in the policy by its name.")
        db = table.args.get("db")
        if table.args.get("catalog") is not None or (db is not None and db.name.lower() != "main"):
            raise self.refuse(table, "DP202", f"table {table.sql('duckdb')} is not declared in the policy")
        if self.policy.table(name) is None and self.policy.public_table(name) is None:
            declared = ", ".join(sorted(self.policy.tables)) or "none"
            public = sorted(self.policy.public_tables)
            raise self.refuse(table, "DP202", f"table {name!r} is not declared in the policy (declared: {declared}"
                              + (f"; public, to join: {', '.join(public)})" if public else ")"))
        return name

    def resolve_tables(self) -> TablePolicy:
        """The private table in FROM and the public tables joined to it (validation has
        already refused every join form but [LEFT] JOIN ... ON / USING)."""
        from_ = self.select.args.get("from_") or self.select.args.get("from")
        if from_ is None:
            raise self.refuse(self.select, "DP202", "the query has no FROM clause", "aggregate over a table declared in the policy.")
        table = from_.this
        name = self.check_table_name(table)
        joins = self.select.args.get("joins") or []
        tp = self.policy.table(name)
        if tp is None:
            private = next((j.this for j in joins if self.policy.table(j.this.name.lower())), None)
            if private is not None:
                raise self.refuse(table, "DP105", f"the private table {private.name.lower()!r} must come first, joined to public tables",
                                  f"write FROM {private.name.lower()} JOIN {name} ON ... = ...")
            tables = ", ".join(sorted(self.policy.tables)) or "none"
            raise self.refuse(table, "DP208", f"table {name!r} is public reference data: dpsql answers aggregates over a "
                              f"private table, to which public tables are joined",
                              f"aggregate over a private table ({tables}) and join {name} to it on its key "
                              f"{self.policy.public_table(name).key!r}.")
        # SQL: once aliased, only the alias qualifies
        self.add_scope(_Scope(name, {table.alias.lower()} if table.alias else {name}, self.schema[name]))
        for i, join in enumerate(joins, start=1):
            self.add_join(join, i)
        return tp

    def add_join(self, join: exp.Join, i: int) -> None:
        table = join.this
        name = self.check_table_name(table)
        if self.policy.table(name) is not None:
            raise self.refuse(table, "DP105", f"joins of two private tables ({self.scopes[0].name} and {name}) are not supported",
                              "join public tables declared in the policy's [public_tables] only; query each private table on its own.")
        public: PublicTable = self.policy.public_table(name)
        if any(sc.name == name for sc in self.scopes):
            raise self.refuse(table, "DP105", f"the public table {name!r} is joined twice", "join each public table once.")
        qualifiers = {table.alias.lower()} if table.alias else {name}
        taken = {q for sc in self.scopes for q in sc.qualifiers}
        if qualifiers & taken:
            raise self.refuse(table, "DP105", f"the name {sorted(qualifiers)[0]!r} names two tables of the join",
                              "give each table its own alias (FROM establishments e JOIN states s ON ...).")
        side = "LEFT" if (join.side or "").upper() == "LEFT" else "INNER"
        alias = f"__j{i}"
        scope = _Scope(name, qualifiers, self.schema[name], alias)
        key_hint = (f"join on the public table's key: ... JOIN {name} ON <column> = "
                    f"{sorted(qualifiers)[0]}.{public.key} (other conditions go in WHERE).")
        using = join.args.get("using")
        if using:
            if len(using) != 1 or using[0].name.lower() != public.key:
                raise self.refuse(join, "DP105", f"USING must name the key column of {name!r} ({public.key}) alone", key_hint)
            left = self.resolve(exp.column(public.key), self.scopes)  # the column of an earlier table
            self.using.add(public.key)
        else:
            cond = join.args.get("on")
            while isinstance(cond, exp.Paren):
                cond = cond.this
            sides = [cond.this, cond.expression] if isinstance(cond, exp.EQ) else []
            if not all(isinstance(c, exp.Column) and not isinstance(c.this, exp.Star) for c in sides):
                raise self.refuse(join, "DP105", f"the join of {name!r} must be one equality of a column with its key "
                                  f"{public.key!r}", key_hint)
            mine = [c for c in sides if (c.table.lower() in qualifiers if c.table
                                         else c.name.lower() in scope.columns and not self.in_scopes(c.name.lower()))]
            if len(mine) != 1 or mine[0].name.lower() != public.key:
                raise self.refuse(join, "DP105", f"the join of {name!r} must match its key column {public.key!r} "
                                  "(a lookup: every private row then meets at most one of its rows)", key_hint)
            other = sides[1] if mine[0] is sides[0] else sides[0]
            left = self.resolve(other, self.scopes)
        left_type = self.columns[left]
        key_type = scope.columns[public.key]
        if not ((_text(left_type) and _text(key_type)) or (_numeric(left_type) and _numeric(key_type))):
            raise self.refuse(join, "DP105", f"the join compares {left_type} with {key_type} ({name}.{public.key})",
                              "join columns of the same kind: text with text, numbers with numbers.")
        self.joins.append(Join(name, alias, side, left, public.key, ()))
        self.add_scope(scope)

    def add_scope(self, scope: _Scope) -> None:
        self.scopes.append(scope)
        for column, sql_type in scope.columns.items():
            self.columns[scope.internal(column)] = sql_type
            if scope.alias is not None:
                self.public_names[scope.internal(column)] = (scope, column)

    def in_scopes(self, column: str) -> bool:
        return any(column in sc.columns for sc in self.scopes)

    def resolve(self, col: exp.Column, scopes: list[_Scope]) -> str:
        """The internal name of a column of one of ``scopes`` (DP203 when there is none, or
        when an unqualified name is in several tables)."""
        name = col.name.lower()
        if col.table:
            scope = next((sc for sc in scopes if col.table.lower() in sc.qualifiers), None)
            if scope is None:
                raise self.refuse(col, "DP203", f"unknown table or alias {col.table!r} in {col.sql('duckdb')}")
            if name not in scope.columns:
                raise self.refuse(col, "DP203", f"table {scope.name!r} has no column {name!r}",
                                  f"its columns are: {', '.join(scope.columns)}.")
            found = scope
        else:
            having = [sc for sc in scopes if name in sc.columns]
            if not having:
                private = scopes[0]
                hint = f"its columns are: {', '.join(private.columns)}." if len(scopes) == 1 else \
                    "; ".join(f"{sc.name}: {', '.join(sc.columns)}" for sc in scopes) + "."
                raise self.refuse(col, "DP203", f"table {private.name!r} has no column {name!r}"
                                  if len(scopes) == 1 else f"no table of the query has a column {name!r}", hint)
            if len(having) > 1 and name not in self.using:
                names = " or ".join(f"{sorted(sc.qualifiers)[0]}.{name}" for sc in having)
                raise self.refuse(col, "DP203", f"column {name!r} is in several tables of the join", f"qualify it: {names}.")
            found = having[0]
        self.note_public(found.internal(name))
        return found.internal(name)

    def note_public(self, internal: str) -> None:
        """Remember that the query reads a public column (the join projects only those)."""
        if internal in self.public_names:
            scope, column = self.public_names[internal]
            cols = self.used_public.setdefault(scope.alias, [])
            if column not in cols:
                cols.append(column)

    def shown(self, internal: str) -> str:
        """How an internal column name is shown to the analyst: ``__j1_region`` -> ``states.region``."""
        if internal in self.public_names:
            scope, column = self.public_names[internal]
            return f"{scope.name}.{column}"
        return internal

    def column_name(self, col: exp.Column) -> str:
        return self.resolve(col, self.scopes)

    def normalise_columns(self, tree: exp.Expression) -> exp.Expression:
        """Internal, quoted, lower-case column names; casts made total (TRY_CAST) so that
        no row can make the query fail (a failure that depends on the data would leak it)."""

        def columns(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                return exp.column(self.column_name(node), quoted=True)
            return node

        return try_casts(tree.transform(columns))

    def check_ordering_types(self, tree: exp.Expression) -> None:
        """Refuse ``<``, ``>``, ``BETWEEN``, ``=``, ``<>`` and ``IN`` between a text column and a
        number. The orderings do not bind; the equalities do, but cast the text of every row to a
        number, so inside TRY() each row that is not a number costs DuckDB an exception: seconds
        on a large table, in proportion to how many rows fail — a timing signal of the data, and
        an easy way to slow a server. Decided from the query and the schema alone."""

        def kind(node: exp.Expression) -> str | None:
            if isinstance(node, exp.Column):
                return "text" if _text(self.columns.get(node.name, "")) else None
            if isinstance(node, exp.Neg):
                node = node.this
            return "number" if isinstance(node, exp.Literal) and not node.is_string else None

        for node in tree.walk():
            if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ)):
                sides = [node.this, node.expression]
            elif isinstance(node, exp.Between):
                sides = [node.this, node.args["low"], node.args["high"]]
            elif isinstance(node, exp.In) and not node.args.get("query"):
                sides = [node.this, *node.expressions]
            else:
                continue
            kinds = [kind(side) for side in sides]
            if "text" in kinds and "number" in kinds:
                column = self.shown(next(side.name for side, k in zip(sides, kinds) if k == "text"))
                what = "orders" if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)) else "compares"
                raise self.refuse(node, "DP110", f"{node.sql('duckdb')} {what} the text column {column!r} with a number; "
                                  "dpsql compares text with text and numbers with numbers",
                                  f"compare with text ({column} {'>' if what == 'orders' else '='} '50') or cast the column "
                                  f"(CAST({column} AS INTEGER) {'>' if what == 'orders' else '='} 50).")

    # ------------------------------------------------------------------ GROUP BY
    def group_keys(self, items: list[exp.Expression], aliases: dict[str, exp.Expression]) -> list[GroupKey]:
        group = self.select.args.get("group")
        if group is None:
            return []
        if group.args.get("all"):
            raise self.refuse(group, "DP114", "GROUP BY ALL is not supported", "list the key columns.")
        keys: list[GroupKey] = []
        for g in group.expressions:
            target = g
            if isinstance(g, exp.Literal) and not g.is_string:
                idx = int(g.this) - 1
                if not 0 <= idx < len(items):
                    raise self.refuse(g, "DP114", f"GROUP BY position {g.this} is not in the SELECT list")
                target = items[idx].this if isinstance(items[idx], exp.Alias) else items[idx]
            elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases and not self.in_scopes(g.name.lower()):
                target = aliases[g.name.lower()]
            if any(isinstance(n, exp.AggFunc) for n in target.walk()):
                raise self.refuse(g, "DP114", "GROUP BY cannot contain an aggregate", "group by key columns; filter on aggregates with HAVING.")
            expr = self.normalise_columns(target.copy())
            sources = list(dict.fromkeys(c.name for c in expr.find_all(exp.Column)))
            if not sources:
                raise self.refuse(g, "DP114", "GROUP BY a constant groups nothing",
                                  "group by key columns (by name, alias or position) or expressions of them.")
            public = True
            for name in sources:
                if name in self.table.keys:
                    public = public and self.table.keys[name].public
                elif name not in self.columns or name in self.scopes[0].columns:
                    declared = ", ".join(sorted(self.table.keys)) or "none"
                    joined = [f"{sc.name}.*" for sc in self.scopes[1:]]
                    raise self.refuse(g, "DP206", f"column {name!r} is not a group-by key of {self.table.name!r} in the policy",
                                      f"group by the declared keys ({declared}){', columns of ' + ', '.join(joined) if joined else ''}"
                                      " or expressions of them.")
            if expr.sql("duckdb") in {k.expr.sql("duckdb") for k in keys}:
                continue
            if isinstance(expr, exp.Column):
                name = expr.name
                key = GroupKey(name, expr, self.shown(name), (name,), public, name if name in self.table.keys else None)
            else:
                key = GroupKey(f"__k{len(keys)}", expr, target.sql("duckdb"), tuple(sources), public)
            keys.append(key)
        return keys

    def key_for(self, node: exp.Expression) -> GroupKey | None:
        """The GROUP BY key ``node`` is (a key column or the same expression), if any."""
        if not any(isinstance(n, exp.Column) for n in node.walk()) or any(isinstance(n, exp.AggFunc) for n in node.walk()):
            return None
        try:
            text = self.normalise_columns(node.copy()).sql("duckdb")
        except QueryRefused:
            return None  # an alias or an unknown column: not a key (refused below if it matters)
        return self.key_lookup.get(text)

    def to_finish(self, tree: exp.Expression, context: str, aliases: set[str] = frozenset()
                  ) -> tuple[exp.Expression, int | None, tuple[int, int] | None]:
        """Rewrite an expression of the analyst's SELECT list / HAVING / ORDER BY into one over
        the noisy relation: aggregates become noisy columns, keys stay."""
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
                key = self.key_lookup.get(exp.column(name, quoted=True).sql("duckdb"))
                if key is None:
                    shown = self.shown(name)
                    hint = (f"add {shown} to GROUP BY (every column of a public table can be grouped by)." if shown != name else
                            f"aggregate it (e.g. SUM({shown}) or COUNT(*)) or add it to GROUP BY if it is a declared key.")
                    raise self.refuse(node, "DP201", f"column {shown!r} is used outside an aggregate in {context} but is not a GROUP BY key",
                                      hint)
                return exp.column(key.name, quoted=True)
            if not isinstance(node, (exp.Literal, exp.Paren)) and (key := self.key_for(node)) is not None:
                return exp.column(key.name, quoted=True)  # an expression the query groups by
            return node

        # Casts over noisy values become TRY_CAST too: a cast that overflows on a noisy value is
        # NULL rather than a failure after the charge.
        out = try_casts(tree.transform(fix))
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
        private_not_null = self.not_null.get(self.table.name, set())
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
                    raise NotSupportedYet(f"COUNT(DISTINCT {self.shown(name)}) is not supported yet", code="DP116",
                                          line=position(node, self.sql)[0], column=position(node, self.sql)[1],
                                          hint=f"COUNT(*) counts privacy units ({self.table.privacy_unit}).")
                # A private column the schema declares NOT NULL counts every unit: share COUNT(*)'s primitive.
                # (A joined public column can be NULL whatever its schema says: a LEFT JOIN may not match.)
                if name in private_not_null:
                    return self.primitive(Primitive("count"))
                return self.primitive(Primitive("count", name, shown=self.shown(name)))
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
            shown = self.shown(name)
            raise self.refuse(arg, "DP204", f"{fname}({shown}): column {shown!r} is not a measure of {self.table.name!r} in the policy",
                              f"measures with split thresholds: {measures}; COUNT(*) counts units.")
        s = self.primitive(Primitive("sum", name))
        if isinstance(node, exp.Avg):
            # AVG = SUM / COUNT over the rows where the measure is not NULL (SQL's AVG). When the
            # schema says the column cannot be NULL, that count is the count of units, which
            # COUNT(*) in the same query can share (paper 000 Table 3: SUM / COUNT_DISTINCT(id)).
            counted = None if name in private_not_null else name
            return s, self.primitive(Primitive("count", counted))
        return s
