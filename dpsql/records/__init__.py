"""What dpsql remembers across processes, each record keyed by everything it depends on.

Owns one small JSON store in dpsql's per-user folder (:mod:`~dpsql.records.store`: one document
per key, written whole) and the four kinds of record kept in it: passes of the unit check with the
data file's identity (:mod:`~dpsql.records.unit`), passes of the empty-twin check per analyst,
policy, DDL, DuckDB version and SQL (:mod:`~dpsql.records.check`), plans without their sqlglot
trees per analyst, policy, schema, code and text (:mod:`~dpsql.records.plan`), and a data file's
catalog by its identity (:mod:`~dpsql.records.catalog`). A record that cannot be read, or whose
key does not match, only means the work is done again: a record never widens what is released.

May import :mod:`dpsql.home`, :mod:`dpsql.version`, the policy's model, the plan's data types
(:mod:`dpsql.sql.plan`), the engine seam (:mod:`dpsql.backends`) and the modules of this folder.
"""
