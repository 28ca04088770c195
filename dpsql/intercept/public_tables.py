"""Queries that read public tables only, answered exactly and at zero charge.

A table the policy declares public (``[public_tables.states]``: a code list, a geography) holds
no private data, so ``SELECT * FROM states``, ``SELECT DISTINCT region FROM states`` or a join of
two public tables is answered as it is, with its exact rows and a receipt that charges nothing.

Two walls keep a private row out of such an answer:

1. **The proof, from the text.** The statement must be one query (SELECT, or a UNION / INTERSECT /
   EXCEPT of them, with CTEs) in which every table reference is a plain name of a public table
   (bare, ``main.``-qualified, or qualified by the database's own catalog name) or of a CTE of the
   statement; no table function (``read_csv``, ``query``, ``range``), no file path, no other
   schema or catalog. Anything else, and anything that does not parse, is not answered here: it
   goes on to the private pipeline, which refuses what it does not protect.
2. **Where it runs.** It runs on a separate in-memory DuckDB that holds the public tables' rows
   and nothing else (:meth:`dpsql.backends.base.Engine.public_catalog`: no private table exists
   there, not even empty), locked down like the engine (no file access, no extensions, no
   settings). So a statement that fooled the proof (sqlglot and DuckDB reading a text
   differently) still finds no private table to read.

Its error messages come from a database with nothing private in it and are shown as they are
(DP120). It is built on the first public query of a session and closed with it.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from dpsql.backends import CatalogQueryError
from dpsql.errors import QueryRefused
from dpsql.intercept.catalog import SCHEMA, catalog_name
from dpsql.intercept.probes import only_args, parsed
from dpsql.intercept.public import public_result
from dpsql.pipeline.result import Result
from dpsql.session import Session

#: What the receipt of such an answer says.
NOTE = "public tables only: exact rows, nothing charged"


def reads_only_public(tree: exp.Expression, sql: str, session: Session) -> bool:
    """Whether ``tree`` provably reads nothing but the policy's public tables (module docstring)."""
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return False
    public = {name.lower() for name in session.policy.public_tables}
    catalog = catalog_name(session).lower()
    tables = 0
    for node in tree.walk():
        if isinstance(node, (exp.Command, exp.DDL, exp.DML, exp.Pragma, exp.Set, exp.Copy, exp.Use)):
            return False
        if not isinstance(node, exp.Table):
            continue
        if not isinstance(node.this, exp.Identifier) or not only_args(node, "this", "db", "catalog", "alias"):
            return False  # a table function, a file, a sample, a time travel ...
        start = node.this.meta.get("start")
        if start is not None and sql[start:start + 1] == "'":
            return False  # FROM 'file.csv' reads a file
        name = node.name.lower()
        db, cat = node.args.get("db"), node.args.get("catalog")
        if db is None and cat is None and _names_a_cte(node):
            continue
        if (db is not None and node.db.lower() != SCHEMA) or (cat is not None and node.catalog.lower() != catalog):
            return False
        if name not in public:
            return False
        tables += 1
    return tables > 0


def _names_a_cte(table: exp.Table) -> bool:
    """Whether a bare table name refers to a CTE in scope where it stands: one of an enclosing
    query's WITH, seen from its body, or one defined earlier in the same WITH, seen from a
    later CTE. A CTE does not see itself (WITH RECURSIVE is not read as one) nor later ones,
    and a CTE inside a subquery is not seen from outside it: there the name is a table's."""
    name = table.name.lower()
    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):  # we come from one of its CTEs: only the earlier ones are seen
            index = next(i for i, cte in enumerate(node.expressions) if cte is child)
            if name in {cte.alias_or_name.lower() for cte in node.expressions[:index]}:
                return True
            child, node = node.parent, node.parent.parent if node.parent is not None else None
            continue
        with_ = next((v for v in node.args.values() if isinstance(v, exp.With)), None)
        if with_ is not None and with_ is not child and \
                name in {cte.alias_or_name.lower() for cte in with_.expressions}:
            return True
        child, node = node, node.parent
    return False


def answer_public_query(session: Session, sql: str, parameters: Any = None) -> Result | None:
    """The exact answer of a query over public tables only, at zero charge; None for any other
    statement (the private pipeline answers or refuses it)."""
    if not session.policy.public_tables:
        return None
    tree = parsed(sql, session.analyst)
    if tree is None or not reads_only_public(tree, sql, session):
        return None
    try:
        names, types, rows = session.public_database().run(sql, list(parameters) if parameters is not None else None)
    except CatalogQueryError as exc:
        raise QueryRefused(f"the query over public tables failed: {exc}", code="DP120",
                           hint="this database holds the public tables only, so its message is shown as it is.") from None
    return public_result(session, names, types, rows, notes=(NOTE,))
