"""The faces: how people and programs reach dpsql.

The PEP 249 DB-API (:mod:`~dpsql.faces.dbapi`, behind :func:`dpsql.connect`), the SQLAlchemy
dialect for BI tools and pandas (:mod:`~dpsql.faces.sqlalchemy`), the ``dpsql`` command
(:mod:`~dpsql.faces.cli`) and its interactive prompt (:mod:`~dpsql.faces.repl`). Each sends
statements through :func:`dpsql.intercept.execute` (dpsql's own statements first, then the
session's private pipeline) and shows :class:`~dpsql.pipeline.result.Result` values.

A face never plans, runs, noises or charges anything itself. May import: the session and the
intercept dispatch, results and their formatting, errors, budget values and accounting for
display, the ledger and policy files for the data owner's commands, the demo builder, and the
other faces.
"""
