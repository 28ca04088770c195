"""PostgreSQL's catalog, answered from the schema and the policy alone (docs/server.md, "What the
catalog answers").

``schema`` declares PostgreSQL 15's catalog relations and built-in types; ``views`` its
functions (DuckDB macros) and ``information_schema``; ``build`` creates and fills them in the
public catalog twin; ``rules`` and ``casts`` rewrite a client's statement to run there;
``catalog`` is :class:`PgCatalog`, what the server answers catalog statements with.

May import what :mod:`dpsql.faces.server` may, and the server's own ``pgsession`` and ``pgtypes``.
"""

from dpsql.faces.server.pgcatalog.casts import array_casts
from dpsql.faces.server.pgcatalog.catalog import PgCatalog, policy_comments

__all__ = ["PgCatalog", "array_casts", "policy_comments"]
