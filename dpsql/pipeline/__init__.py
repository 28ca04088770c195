"""The stages of one query that :class:`dpsql.session.Session` runs in order, after planning.

1 decide: :mod:`~dpsql.pipeline.decide` (the charge, the policy terms, each primitive's budget
  share, DP207), :mod:`~dpsql.pipeline.domain` (public keysets and their images) and
  :mod:`~dpsql.pipeline.memory` (the answer's worst-case memory against a public budget, DP210);
3 release: :mod:`~dpsql.pipeline.release` (partition selection and noise per cell);
5 finish: :mod:`~dpsql.pipeline.finish` (HAVING / ORDER BY / LIMIT / AVG on noisy cells) and
  :mod:`~dpsql.pipeline.output` (error columns, clamping, notes);
a released answer reused, not re-bought: :mod:`~dpsql.pipeline.reuse` (its key, in phase 1; the
  finished answer kept and shown again);
and what a query returns: :mod:`~dpsql.pipeline.result` (``Result``, ``Receipt``,
``Explanation``), :mod:`~dpsql.pipeline.format` (text and JSON), :mod:`~dpsql.pipeline.explain`
(what a query would cost and release, from public information).
Phase 2 (the exact query) is the engine's (:mod:`dpsql.backends`); phase 4 (the charge) the
ledger's (:mod:`dpsql.ledger`).

May import :mod:`dpsql.errors`, the policy's model, :mod:`dpsql.sql` (the plan and its SQL), the
privacy mathematics, the engine seam (:mod:`dpsql.backends`), the records, and the modules of this
folder.
"""
