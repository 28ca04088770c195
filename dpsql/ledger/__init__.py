"""The durable budget ledger: charges that survive a crash and are never overspent together.

Owns the SQLite ledger (:mod:`~dpsql.ledger.book`: exact :class:`~fractions.Fraction` budgets,
``check`` before the work, ``charge`` in one transaction before any row is returned, the file's
identity checks), the descriptors it reads its file's header through
(:mod:`~dpsql.ledger.fds`), the charges that arrive together committed together
(:mod:`~dpsql.ledger.group`), a closed ledger's SQLite connection kept for the process's next
ledger on the same files (:mod:`~dpsql.ledger.pool`), and the released answers kept beside their charges so that a repeated
statement is shown again, not re-bought (:mod:`~dpsql.ledger.answers`).

May import :mod:`dpsql.errors`, the policy's model, the privacy mathematics (budget values and
accounting) and the modules of this folder.
"""
