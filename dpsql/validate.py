"""Read-only allow-list checks on a parsed statement. Raises, never mutates.

This stage knows the grammar only: which statements and which expression nodes dpsql can
protect. Checks against the policy (which table, which columns, which keys) are the
planner's (``plan.py``). Every refusal carries a stable code and says what to write instead.
"""

from __future__ import annotations

from sqlglot import exp

from .errors import NotSupportedYet, QueryRefused
from .parse import position

#: Aggregates dpsql protects; every other aggregate is "not supported yet".
SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg)

#: Scalar functions allowed in WHERE, in the SELECT list over keys, and over noisy
#: aggregates. None of them reads files or state; casts become TRY_CAST when rewritten.
SCALAR_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Lower, exp.Upper, exp.Length,
    exp.Substring, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.If,
    exp.Cast, exp.TryCast, exp.Trim, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow,
)

#: Every other node class that may appear in an accepted statement.
ALLOWED_NODES: tuple[type[exp.Expression], ...] = (
    exp.Select, exp.From, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered,
    exp.Limit, exp.Offset, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star,
    exp.Alias, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Neg,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.DPipe,
    exp.Case, exp.DataType, exp.DataTypeParam, exp.Distinct,
    *SUPPORTED_AGGREGATES, *SCALAR_FUNCTIONS,
)

_STATEMENT_NAMES: dict[type[exp.Expression], str] = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Create: "CREATE",
    exp.Drop: "DROP", exp.Alter: "ALTER", exp.Copy: "COPY", exp.Set: "SET",
    exp.Pragma: "PRAGMA", exp.Use: "USE", exp.Describe: "DESCRIBE", exp.Merge: "MERGE",
    exp.Attach: "ATTACH", exp.Detach: "DETACH", exp.Export: "EXPORT", exp.Install: "INSTALL",
}


def check_statement(tree: exp.Expression, sql: str) -> exp.Select:
    """Refuse everything that is not one plain SELECT over one table; return the SELECT."""
    if isinstance(tree, exp.SetOperation):
        raise _refuse(tree, sql, "DP103", f"{tree.key.upper()} combines several queries; dpsql answers one SELECT at a time",
                      "run each SELECT on its own.")
    if not isinstance(tree, exp.Select):
        kind = next((name for cls, name in _STATEMENT_NAMES.items() if isinstance(tree, cls)), None)
        if kind is None and isinstance(tree, exp.Command):
            kind = str(tree.this).upper()
        kind = kind or tree.key.upper()
        if kind == "SET":
            hint = "to set the budget of a query use dpsql's own setting (connect(rho=...) or --rho); DuckDB settings cannot be changed."
        else:
            hint = "dpsql answers aggregate SELECT queries only; it never changes or exports the database."
        raise _refuse(tree, sql, "DP102", f"{kind} statements are not allowed", hint)
    if tree.args.get("with_") or tree.args.get("with"):
        raise _refuse(tree, sql, "DP104", "WITH (common table expressions) is not supported yet",
                      "write the filter in the WHERE clause of one SELECT.")
    for node in tree.walk():
        _check_node(node, tree, sql)
    return tree


def _check_node(node: exp.Expression, root: exp.Select, sql: str) -> None:
    if isinstance(node, exp.Select) and node is not root or isinstance(node, exp.Subquery):
        raise _refuse(node, sql, "DP104", "subqueries are not supported",
                      "write one SELECT over one table; filter with WHERE on its columns.")
    if isinstance(node, exp.Join):
        raise _refuse(node, sql, "DP105", "joins are not supported yet", "query one table at a time.")
    if isinstance(node, exp.Window):
        raise _refuse(node, sql, "DP106", "window functions (OVER ...) are not supported",
                      "use GROUP BY with COUNT, SUM or AVG.")
    if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier):
        raise _refuse(node, sql, "DP107", "table functions and file paths cannot be queried",
                      "query a table declared in the policy by its name.")
    if isinstance(node, (exp.ReadCSV, exp.ReadParquet)) or type(node).__name__.startswith("Read"):
        raise _refuse(node, sql, "DP107", "reading files is not allowed", "query a table declared in the policy by its name.")
    if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
        raise _refuse(node, sql, "DP108", "SELECT * would return private rows",
                      "select group keys and aggregates, e.g. SELECT state, COUNT(*) FROM t GROUP BY state.")
    if isinstance(node, exp.AggFunc) and not isinstance(node, SUPPORTED_AGGREGATES):
        name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this).upper()
        raise NotSupportedYet(f"the aggregate {name} is not supported yet", code="DP109",
                              line=position(node, sql)[0], column=position(node, sql)[1],
                              hint="dpsql protects COUNT, SUM and AVG.")
    if isinstance(node, exp.Anonymous):
        raise _refuse(node, sql, "DP110", f"the function {str(node.this).upper()} is not supported",
                      "use comparisons, IN, BETWEEN, LIKE, IS NULL, CASE and simple functions (LOWER, SUBSTR, ROUND, ...).")
    if not isinstance(node, ALLOWED_NODES):
        what = node.sql_name() if isinstance(node, exp.Func) else node.key.upper()
        raise _refuse(node, sql, "DP110", f"{what} is not supported in dpsql queries",
                      "use comparisons, IN, BETWEEN, LIKE, IS NULL, CASE and simple functions (LOWER, SUBSTR, ROUND, ...).")
    if isinstance(node, exp.Select) and node.args.get("distinct"):
        raise _refuse(node, sql, "DP111", "SELECT DISTINCT is not supported", "use GROUP BY over the keys instead.")


def _refuse(node: exp.Expression, sql: str, code: str, message: str, hint: str | None = None) -> QueryRefused:
    line, column = position(node, sql)
    return QueryRefused(message, code=code, line=line, column=column, hint=hint)
