"""A session's ``SET dpsql.max_groups = k`` (issue 31: "a query may ask for less"; docs/sql.md,
"Asking for a smaller κ"): each following query on a table with many rows per unit is bounded at
κ_q = min(k, the κ the policy gives its grouping).

The cap is a field of the session's policy object (:attr:`Policy.max_groups_cap`, set by
``Session.set_max_groups``), never of the file, so everything keyed by the policy — the
process's plan cache and the recorded plans (``sql/plan_cache.context``), the answer reuse key
(it hashes the plan's table, which carries κ_q) — tells a capped plan from the policy's own. Planning applies it after the grouping's κ
(:func:`cap_table`); the bounding, the selection, the noise per cell, P(u) and the receipt then
follow from ``plan.table.max_groups`` as for a κ the policy declares, so the privacy argument is
unchanged: the bounding keeps at most κ_q of a unit's groups whatever the data, and a smaller κ_q
is a stronger bound. A larger k changes nothing (never more than the policy's κ).
"""

from __future__ import annotations

from dataclasses import replace

from dpsql.policy.model import Policy, TablePolicy

#: ``max_groups_set`` of a plan whose κ is the session's cap (EXPLAIN and the receipt say so)
SESSION_CAP = "SET dpsql.max_groups"


def cap_table(table: TablePolicy, policy: Policy) -> TablePolicy:
    """The grouping's table (``sql/units.grouping_table``) with κ at most the session's cap."""
    cap = policy.max_groups_cap
    if cap is not None and table.max_groups is not None and cap < table.max_groups:
        return replace(table, max_groups=cap, max_groups_set=(SESSION_CAP,))
    return table
