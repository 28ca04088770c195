"""Read-only allow-list checks on a parsed statement. Raises, never mutates.

This stage knows the grammar only: which statements and which expression nodes dpsql can
protect. Checks against the policy (which table, which columns, which keys) are the
planner's (``planner.py``). Every refusal carries a stable code and says what to write instead.
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import NotSupportedYet, QueryRefused
from dpsql.sql.quantiles import QUANTILE_AGGREGATES, is_quantile, quantile_call, refuse_extreme
from dpsql.sql.parse import keyword_position, position, refuse_statement, statement_keyword, written_name
from dpsql.sql.spread import SPREAD_AGGREGATES

#: Aggregates dpsql protects; every other aggregate is "not supported yet".
SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg) + QUANTILE_AGGREGATES + SPREAD_AGGREGATES

#: Scalar functions allowed in WHERE, in the SELECT list over keys, and over noisy
#: aggregates. None of them reads files or state; casts become TRY_CAST when rewritten.
SCALAR_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Lower, exp.Upper, exp.Length,
    exp.Substring, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.If,
    exp.Cast, exp.TryCast, exp.Trim, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow, exp.Concat, exp.Pi, exp.Sign,
    # dates and times (docs/sql.md, "Dates and times"; time buckets of keys: sql/time_keys.py)
    exp.TimestampTrunc, exp.DateTrunc, exp.Extract, exp.TimeToStr, exp.Interval, exp.Year, exp.Quarter,
    exp.Month, exp.Week, exp.WeekOfYear, exp.Day, exp.DayOfWeek, exp.DayOfWeekIso, exp.DayOfYear,
    exp.Hour, exp.Minute, exp.StrToDate, exp.StrToTime,  # TO_DATE / TO_TIMESTAMP of literals: sql/pg_dates.py
)

#: functions sqlglot does not model, allowed by name: date_part('year', d) is EXTRACT(year FROM d)
NAMED_FUNCTIONS = ("date_part", "datepart")

#: nodes whose ``Var`` child is a unit name (EXTRACT(year FROM d), INTERVAL 1 DAY), not a column
_UNIT_PARENTS = (exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.Interval)

#: Every other node class that may appear in an accepted statement.
ALLOWED_NODES: tuple[type[exp.Expression], ...] = (
    exp.Select, exp.From, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered,
    exp.Limit, exp.Offset, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star,
    exp.Alias, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Neg,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.DPipe,
    exp.Case, exp.DataType, exp.DataTypeParam, exp.Distinct, exp.Join, exp.WithinGroup,
    *SUPPORTED_AGGREGATES, *SCALAR_FUNCTIONS,
)

_STATEMENT_NAMES: dict[type[exp.Expression], str] = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Create: "CREATE",
    exp.Drop: "DROP", exp.Alter: "ALTER", exp.Copy: "COPY", exp.Set: "SET",
    exp.Pragma: "PRAGMA", exp.Use: "USE", exp.Describe: "DESCRIBE", exp.Merge: "MERGE",
    exp.Attach: "ATTACH", exp.Detach: "DETACH", exp.Export: "EXPORT", exp.Install: "INSTALL",
}

_SUBQUERY_HINT = ("a subquery or CTE may only filter and rename columns of one table, used once in FROM "
                  "(WITH t AS (SELECT a AS b FROM tbl WHERE ...) SELECT SUM(b) FROM t); aggregate in the outer query.")
_SUBQUERY_NODES = (exp.Subquery, exp.Exists, exp.Lateral, exp.Values)
_GROUPING_NODES = (exp.Rollup, exp.Cube, exp.GroupingSets)


def check_statement(tree: exp.Expression, sql: str) -> exp.Select:
    """Refuse everything that is not one plain SELECT over one table; return the SELECT.

    The checks run in a fixed order, each over the whole tree, so a query breaking several
    rules always gets the same, most specific code (a file read before ``SELECT *``, a
    subquery before the nodes inside it), whatever the order of its clauses."""
    if isinstance(tree, exp.SetOperation):
        raise _refuse(tree, sql, "DP103", f"{tree.key.upper()} combines several queries; dpsql answers one SELECT at a time",
                      "run each SELECT on its own.")
    if not isinstance(tree, exp.Select):
        raise refuse_statement(_statement_kind(tree, sql), sql)
    if tree.args.get("with_") or tree.args.get("with"):
        raise _refuse(tree, sql, "DP104", "this WITH (common table expression) is not supported",
                      _SUBQUERY_HINT)
    nodes = list(tree.walk())
    for rule in RULES:
        for node in nodes:
            rule(node, tree, sql)
    return tree


def _statement_kind(tree: exp.Expression, sql: str) -> str:
    kind = next((name for cls, name in _STATEMENT_NAMES.items() if isinstance(tree, cls)), None)
    if kind is None and isinstance(tree, exp.Command):
        kind = str(tree.this).upper()
    return kind or statement_keyword(sql) or tree.key.upper()


# ---------------------------------------------------------------------- rules, in order
def _no_subqueries(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.Select) and node is not root or isinstance(node, _SUBQUERY_NODES):
        what = {exp.Exists: "EXISTS subqueries", exp.Lateral: "LATERAL subqueries",
                exp.Values: "VALUES lists in FROM"}.get(type(node), "subqueries")
        raise _refuse(node, sql, "DP104", f"{what} are not supported", _SUBQUERY_HINT)


_JOIN_HINT = ("join public tables declared in the policy to the private table on their key: "
              "FROM establishments e [LEFT] JOIN states s ON e.state = s.code (or USING (key)).")


def _plain_joins(node: exp.Expression, root: exp.Select, sql: str) -> None:
    """Only ``[INNER | LEFT [OUTER]] JOIN table ON ... / USING (...)`` passes; whether the joined
    table is public and the condition a lookup on its key is the planner's check."""
    if not isinstance(node, exp.Join):
        return
    method, kind, side = (str(node.args.get(k) or "").upper() for k in ("method", "kind", "side"))
    if method or kind in ("CROSS", "SEMI", "ANTI") or side in ("RIGHT", "FULL") or kind not in ("", "INNER", "OUTER"):
        what = " ".join(w for w in (method, side, kind) if w) or "this"
        raise _refuse(node, sql, "DP105", f"{what} JOIN is not supported", _JOIN_HINT)
    if not isinstance(node.this, exp.Table):
        raise _refuse(node, sql, "DP105", "only a table declared in the policy can be joined", _JOIN_HINT)
    if node.args.get("on") is None and not node.args.get("using"):
        raise _refuse(node, sql, "DP105", "a join without a condition (a comma or CROSS join) is not supported", _JOIN_HINT)


def _no_files(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.Table):
        if not isinstance(node.this, exp.Identifier):
            raise _refuse(node, sql, "DP107", "table functions and file paths cannot be queried",
                          "query a table declared in the policy by its name.")
        start = node.this.meta.get("start")
        if start is not None and sql[start:start + 1] == "'":
            raise _refuse(node, sql, "DP107", "a string in FROM reads a file; file paths cannot be queried",
                          "query a table declared in the policy by its name, unquoted or in double quotes.")
    if isinstance(node, (exp.ReadCSV, exp.ReadParquet)) or type(node).__name__.startswith("Read"):
        raise _refuse(node, sql, "DP107", "reading files is not allowed", "query a table declared in the policy by its name.")


def _no_windows(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, (exp.Window, exp.Qualify)):
        what = "QUALIFY (a filter on window functions) is" if isinstance(node, exp.Qualify) else "window functions (OVER ...) are"
        raise _refuse(node, sql, "DP106", f"{what} not supported",
                      "use GROUP BY with COUNT, SUM or AVG; filter groups with HAVING.")


def _no_star(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
        raise _refuse(node, sql, "DP108", "SELECT * would return private rows",
                      "select group keys and aggregates, e.g. SELECT state, COUNT(*) FROM t GROUP BY state.")


def _supported_aggregates(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, (exp.Min, exp.Max)):
        raise refuse_extreme(node, sql)
    if is_quantile(node) and not isinstance(node.parent, exp.WithinGroup):
        quantile_call(node, sql)  # its q: one number strictly between 0 and 1 (refused here, before ARRAY is)
    if isinstance(node, exp.AggFunc) and not isinstance(node, SUPPORTED_AGGREGATES):
        name = written_name(node, sql)
        line, column = position(node, sql)
        raise NotSupportedYet(f"the aggregate {name} is not supported yet", code="DP109", line=line, column=column,
                              hint="dpsql protects COUNT, SUM, AVG, VARIANCE / STDDEV and quantiles (MEDIAN, QUANTILE_CONT).")
    if isinstance(node, exp.Filter):
        raise _refuse(node, sql, "DP110", "FILTER (WHERE ...) on an aggregate is not supported",
                      "move the condition into the query's WHERE clause, or run one query per condition.")


def _plain_grouping(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, _GROUPING_NODES):
        raise _refuse(node, sql, "DP114", f"GROUP BY {node.key.upper()} is not supported",
                      "list the key columns, and run one query per grouping.")
    if isinstance(node, exp.Group) and node.args.get("all"):
        raise _refuse(node, sql, "DP114", "GROUP BY ALL is not supported", "list the key columns.")


def _whole_number_limits(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, (exp.Limit, exp.Offset)) and node.parent is root:
        value = node.args.get("expression") or node.this
        extra = any(v for k, v in node.args.items() if k not in ("this", "expression"))
        if extra or not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
            raise _refuse(node, sql, "DP113", f"{node.key.upper()} must be a whole number",
                          f"write {node.key.upper()} 10 (no percent, expression or ALL).")


def _no_table_column_aliases(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.TableAlias) and node.args.get("columns"):
        raise _refuse(node, sql, "DP110", "column aliases on the table (AS t(a, b)) are not supported",
                      "alias the table only (FROM t AS e) and name outputs in the SELECT list (SUM(x) AS total).")


def _allowed_nodes(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.Var) and isinstance(node.parent, _UNIT_PARENTS):
        return
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in NAMED_FUNCTIONS:
        args = node.expressions
        if len(args) == 2 and isinstance(args[0], exp.Literal) and args[0].is_string:
            return
        raise _refuse(node, sql, "DP110", f"{written_name(node, sql)} takes a part name and a date: "
                      f"{written_name(node, sql)}('year', d)", "write the part as a string literal, e.g. date_part('month', d).")
    if isinstance(node, exp.Anonymous):
        raise _refuse(node, sql, "DP110", f"the function {written_name(node, sql)} is not supported in dpsql queries",
                      "use comparisons, IN, BETWEEN, LIKE, IS NULL, CASE and simple functions (LOWER, SUBSTR, ROUND, ...).")
    if not isinstance(node, ALLOWED_NODES):
        what = f"the function {written_name(node, sql)} is" if isinstance(node, exp.Func) else \
            f"{node.key.upper()} is"
        raise _refuse(node, sql, "DP110", f"{what} not supported in dpsql queries",
                      "use comparisons, IN, BETWEEN, LIKE, IS NULL, CASE and simple functions (LOWER, SUBSTR, ROUND, ...).")


#: the strftime / strptime specifiers DuckDB knows (``%-x``: without padding, for the second set);
#: any other fails when DuckDB binds the call, so a key over it failed in the finisher's image of
#: its public values as "DP900 post-processing failed" (issue 29, finding 13)
TIME_FORMAT_CODES = frozenset("abcdfghjmnpuwxyzABGHIMSTUVWXYZ%")
UNPADDED_TIME_FORMAT_CODES = frozenset("djmyHIMS")


def bad_time_format(fmt: str) -> str | None:
    """The first specifier of a strftime / strptime format that DuckDB does not know, or None."""
    i = 0
    while (i := fmt.find("%", i)) >= 0:
        code = fmt[i + 1:i + 3] if fmt[i + 1:i + 2] == "-" else fmt[i + 1:i + 2]
        if code[-1:] not in (UNPADDED_TIME_FORMAT_CODES if len(code) == 2 else TIME_FORMAT_CODES):
            return "%" + code
        i += 1 + len(code)
    return None


def _known_time_formats(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if not isinstance(node, (exp.TimeToStr, exp.StrToTime, exp.StrToDate)):
        return
    fmt = node.args.get("format")
    if isinstance(fmt, exp.Literal) and fmt.is_string and (bad := bad_time_format(fmt.this)) is not None:
        raise _refuse(node, sql, "DP123", f"{written_name(node, sql)}: the format {fmt.this!r} holds {bad!r}, "
                      "which is not a DuckDB date format specifier",
                      "use DuckDB's specifiers (%Y %m %d %H %M %S %j %a %b ...; docs/sql.md, \"Dates and times\").")


def _no_select_distinct(node: exp.Expression, root: exp.Select, sql: str) -> None:
    """SELECT DISTINCT over keys alone is GROUP BY them (``planner.distinct_as_group``); with
    GROUP BY, an aggregate or DISTINCT ON it would dedupe noisy rows: refused."""
    if node is root and (distinct := node.args.get("distinct")):
        if distinct.args.get("on") is not None or root.args.get("group") or root.args.get("having") or any(
                isinstance(n, exp.AggFunc) for item in root.expressions for n in item.walk()):
            raise _refuse(node, sql, "DP111", "SELECT DISTINCT is only supported over group keys, without GROUP BY, HAVING or aggregates",
                          "write SELECT DISTINCT key FROM t, or GROUP BY the keys (SELECT key, COUNT(*) FROM t GROUP BY key).")


#: The checks of a SELECT, most specific first (each one sees the whole tree before the next).
RULES = (_plain_joins, _no_subqueries, _no_files, _no_windows, _no_star, _supported_aggregates,
         _plain_grouping, _whole_number_limits, _no_table_column_aliases, _allowed_nodes, _known_time_formats,
         _no_select_distinct)


def _refuse(node: exp.Expression, sql: str, code: str, message: str, hint: str | None = None) -> QueryRefused:
    line, column = position(node, sql)
    if line is None:  # some clauses carry no position: point at their keyword
        line, column = keyword_position(sql, node.key)
    return QueryRefused(message, code=code, line=line, column=column, hint=hint)
