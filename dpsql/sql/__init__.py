"""The SQL stages: from the analyst's text to a plan, and from a plan to the SQL that runs.

parse (sqlglot, DuckDB dialect, one statement, bounded size) -> inline (subqueries and CTEs that
only filter or rename one table) -> validate (the supported subset; every refusal a stable
code) -> plan (checked against the policy: a frozen :class:`~dpsql.sql.plan.Plan`) -> rewrite
(the exact SQL over split records, total by :mod:`~dpsql.sql.totality`; the materialised
reference; the finish SELECT over noisy cells). :func:`dpsql.sql.query.plan_query` runs the
front of it as one call.

Everything here is a pure function of public information (the text, the policy, the schema):
no I/O, no data, no noise. May import: :mod:`dpsql.errors`, :mod:`dpsql.policy.model` and the
modules of this folder.
"""
