"""The durable budget ledger: charges that survive a crash and are never overspent together.

Owns the SQLite ledger (:mod:`~dpsql.ledger.book`: exact :class:`~fractions.Fraction` budgets,
``check`` before the work, ``charge`` in one transaction before any row is returned, the file's
identity checks) and the descriptors it reads its file's header through
(:mod:`~dpsql.ledger.fds`).

May import :mod:`dpsql.errors`, the policy's model, the privacy mathematics (budget values and
accounting) and the modules of this folder.
"""
