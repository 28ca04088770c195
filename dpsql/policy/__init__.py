"""The data owner's policy: what may be released, and how.

Owns the frozen policy objects (:mod:`~dpsql.policy.model`: tables, privacy units, measures and
their thresholds, keys and their public keysets, budget), the TOML file format and its validation
(:mod:`~dpsql.policy.loader`; keys in :mod:`~dpsql.policy.keys_loader`, shared field checks in
:mod:`~dpsql.policy.fields`; once per content of a file in a process, :mod:`~dpsql.policy.memo`),
the public grids of measures and keys (:mod:`~dpsql.policy.grid`),
and the checks of a policy against the data file's schema and its unit column
(:mod:`~dpsql.policy.check`, whose passes are remembered by :mod:`dpsql.records.unit`).

May import :mod:`dpsql.errors`, budget values (:mod:`dpsql.privacy.budget`), the engine seam
(:mod:`dpsql.backends`, for the unit check), the unit record, and the modules of this folder.
Nothing here is imported on package import: each module is named in full where it is used.
"""
