"""The tables one query reads and how its column names resolve.

The private table in FROM, the public tables joined to it on their key and at most one other
private table joined on the privacy units (each a *scope*); every column the query names
resolves here to its internal name (a joined table's column is ``__j1_col``), and the checks
that need the columns' types (join kinds, text compared with a number) are made here, from the
query, the policy and the schema alone.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import QueryRefused
from dpsql.policy.model import Policy, PublicTable, TablePolicy, joined_table
from dpsql.sql.parse import position
from dpsql.sql.plan import Join
from dpsql.sql.sql_types import sql_type


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


class Scope:
    """A table the query reads: the private one (``alias`` None) or a joined public one, whose
    columns the plan names ``alias_column``."""

    def __init__(self, name: str, qualifiers: set[str], columns: dict[str, str], alias: str | None = None):
        self.name, self.qualifiers, self.columns, self.alias = name, qualifiers, columns, alias

    def internal(self, column: str) -> str:
        return column if self.alias is None else f"{self.alias}_{column}"


def _numeric(sql_type: str) -> bool:
    return sql_type.upper().startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UHUGEINT", "UTINYINT", "USMALLINT",
                                        "UINTEGER", "UBIGINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL"))


def _text(sql_type: str) -> bool:
    return sql_type.upper().startswith(("VARCHAR", "TEXT", "STRING", "CHAR"))


class Scopes:
    """The scopes of one query, filled by ``resolve_tables``; what the query reads of the
    public tables is noted as its columns resolve (the join projects only those)."""

    def __init__(self, select: exp.Select, sql: str, policy: Policy, schema: dict[str, dict[str, str]]):
        self.select = select
        self.sql = sql
        self.policy = policy
        self.schema = schema
        self.scopes: list[Scope] = []
        self.columns: dict[str, str] = {}  # internal name -> type, of every table in scope
        self.public_names: dict[str, tuple[Scope, str]] = {}  # internal name -> (public table, column)
        self.private_names: dict[str, tuple[Scope, str]] = {}  # the same, of a private table joined on the unit
        self.shared_unit: tuple[TablePolicy, str] | None = None  # that table's policy and alias
        self.joins: list[Join] = []
        self.using: set[str] = set()
        self.used_public: dict[str, list[str]] = {}  # public table -> columns read

    def refuse(self, node: exp.Expression, code: str, message: str, hint: str | None = None) -> QueryRefused:
        line, column = position(node, self.sql)
        return QueryRefused(message, code=code, line=line, column=column, hint=hint)

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
        self.add_scope(Scope(name, {table.alias.lower()} if table.alias else {name}, self.schema[name]))
        for i, join in enumerate(joins, start=1):
            self.add_join(join, i)
        return tp if self.shared_unit is None else joined_table(tp, *self.shared_unit)

    def add_join(self, join: exp.Join, i: int) -> None:
        table = join.this
        name = self.check_table_name(table)
        if self.policy.table(name) is not None:
            return self.add_unit_join(join, i)
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
        scope = Scope(name, qualifiers, self.schema[name], alias)
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

    def add_unit_join(self, join: exp.Join, i: int) -> None:
        """A second private table, joined to the one in FROM on their privacy units (issue 31;
        docs/privacy.md, "Private tables that share the unit"). An inner equality of the two unit
        columns keeps every joined row attributed to the one unit both of its rows hold, so
        removing a unit from either table (or both) removes exactly that unit's joined rows. A
        join on any other column (a row would then meet rows of other units), a LEFT join (a
        unit of the joined table would change other rows' values, not remove its own) and unit
        columns whose equality is not exact (floating point, text with a number) are refused,
        from the query, the policy and the schema alone."""
        table, first = join.this, self.policy.tables[self.scopes[0].name]
        name, other = table.name.lower(), self.policy.tables[table.name.lower()]
        both = f"{first.name}.{first.privacy_unit} = {name}.{other.privacy_unit}"
        hint = (f"join two private tables on their privacy units only: ... JOIN {name} ON {both} "
                "(other conditions go in WHERE; docs/sql.md, \"Private tables that share the unit\").")
        if self.shared_unit is not None or name == first.name:
            what = "joined to itself" if name == first.name else "a third private table of the query"
            raise self.refuse(table, "DP217", f"the private table {name!r} is {what}: a query reads at most two "
                              "private tables, each once", "query at most two private tables, joined on their units.")
        if (join.side or "").upper() == "LEFT":
            raise self.refuse(join, "DP217", f"a LEFT JOIN of the private table {name!r} is not supported", hint)
        qualifiers = {table.alias.lower()} if table.alias else {name}
        if qualifiers & {q for sc in self.scopes for q in sc.qualifiers}:
            raise self.refuse(table, "DP105", f"the name {sorted(qualifiers)[0]!r} names two tables of the join",
                              "give each table its own alias (FROM flights f JOIN planes p ON ...).")
        scope = Scope(name, qualifiers, self.schema[name], f"__j{i}")
        using, cond = join.args.get("using"), join.args.get("on")
        while isinstance(cond, exp.Paren):
            cond = cond.this
        if using:
            sides = [exp.column(u.name, table=sorted(sc.qualifiers)[0]) for u in using[:1] for sc in (self.scopes[0], scope)]
            sides = sides if len(using) == 1 else []
        else:
            sides = [cond.this, cond.expression] if isinstance(cond, exp.EQ) else []
        if not all(isinstance(c, exp.Column) and not isinstance(c.this, exp.Star) for c in sides):
            sides = []
        mine = [c for c in sides if (c.table.lower() in qualifiers if c.table
                                     else c.name.lower() in scope.columns and not self.in_scopes(c.name.lower()))]
        theirs = [c for c in sides if c not in mine]
        left = self.resolve(theirs[0], self.scopes) if len(mine) == len(theirs) == 1 else None
        if left != first.privacy_unit or mine[0].name.lower() != other.privacy_unit:
            raise self.refuse(join, "DP105", f"a join of the private tables {first.name!r} and {name!r} must match their "
                              f"privacy units ({both}): on any other column a row meets rows of other units", hint)
        a, b = sql_type(self.columns[left]), sql_type(scope.columns[other.privacy_unit])
        if not (a.kind == b.kind == "text" or {a.kind, b.kind} <= {"int", "decimal"}):
            raise self.refuse(join, "DP217", f"the units {first.name}.{first.privacy_unit} ({a.name}) and "
                              f"{name}.{other.privacy_unit} ({b.name}) cannot be matched exactly",
                              "units are joined when both are text, or both integers or decimals: the data owner "
                              "declares unit columns of such types.")
        if first.max_groups is None and other.max_groups is None:
            raise self.refuse(table, "DP217", f"a join of {first.name!r} and {name!r}, both one row per unit, is not answered yet",
                              "query each table on its own, or the data owner declares max_groups on one of them (docs/policy.md).")
        if using:
            self.using.add(other.privacy_unit)
        self.joins.append(Join(name, scope.alias or "", "INNER", left, other.privacy_unit, ()))
        self.shared_unit = (other, scope.alias or "")
        self.add_scope(scope, private=True)

    def add_scope(self, scope: Scope, private: bool = False) -> None:
        self.scopes.append(scope)
        for column, sql_type in scope.columns.items():
            self.columns[scope.internal(column)] = sql_type
            if scope.alias is not None:
                (self.private_names if private else self.public_names)[scope.internal(column)] = (scope, column)

    def in_scopes(self, column: str) -> bool:
        return any(column in sc.columns for sc in self.scopes)

    def resolve(self, col: exp.Column, scopes: list[Scope]) -> str:
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
        if self.shared_unit is not None and found.alias == self.shared_unit[1] and name == self.shared_unit[0].privacy_unit:
            # the joined table's unit equals the first table's on every joined row (an exact equality): one unit column
            return self.policy.tables[self.scopes[0].name].privacy_unit
        self.note_public(found.internal(name))
        return found.internal(name)

    def note_public(self, internal: str) -> None:
        """Remember that the query reads a joined table's column (the join projects only those)."""
        if internal in self.public_names or internal in self.private_names:
            scope, column = self.public_names.get(internal) or self.private_names[internal]
            cols = self.used_public.setdefault(scope.alias, [])
            if column not in cols:
                cols.append(column)

    def shown(self, internal: str) -> str:
        """How an internal column name is shown to the analyst: ``__j1_region`` -> ``states.region``."""
        if internal in self.public_names or internal in self.private_names:
            scope, column = self.public_names.get(internal) or self.private_names[internal]
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
