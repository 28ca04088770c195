"""Phase 1's bound on the memory a query's answer takes, from public information only (issue 29).

A refusal that depended on how many groups the data happens to have would tell it, so the
bound is decided from the query, the policy and the schema alone, before any row is read.
What phases 2-3 hold, for every aggregate:

* **the exact query** (DuckDB): per group, a count (8 bytes), a sum (a HUGEINT), or a
  quantile's histogram, which is sparse (``sql/quantiles.py``): one entry per bin its rows fall
  in, so the whole query holds at most one entry per row, whatever the grid. DuckDB's own
  ``HISTOGRAM(v, bounds)`` kept every bound in every group: ~80 KB a group on the demo's grid,
  no bound at all over a private key. A query of quantiles of one measure instead hands each
  group's values over (``quantiles.values_sql``, issue 34): one INTEGER (or BIGINT) a row in DuckDB,
  as its own MEDIAN holds, and one int32 (or int64) a non-NULL row in numpy while ``em_bins`` counts them
  (its working arrays: at most ``VALUES_AT_ONCE`` values at once). Every state is thus at most
  proportional to the rows read, as for any GROUP BY; DuckDB's ``memory_limit`` is the budget
  below and it spills to its temporary folder beyond it (``backends/duckdb.py``).
* **the quantiles' scores and draws** (``privacy/quantile.py``): groups × bins integers, scored
  in chunks of groups, so at most :data:`dpsql.privacy.quantile.DRAW_BYTES` at once.
* **the released cells** (release, finish): keys, noisy values, σ and margins, the finish
  stage's copy — a few hundred bytes a cell, times at most the public cells times the private
  groups shown per public cell: :func:`bound` counts them and caps the private groups shown
  (post-processing of the selection's output, like :data:`dpsql.pipeline.domain.MAX_CELLS`) or,
  when not even the public cells fit, refuses (DP210).

The budget is public configuration: the policy's ``limits.query_memory_mib``, at most
:func:`dpsql.backends.base.memory_budget` (half the machine's memory, the engine's own limit).
"""

from __future__ import annotations

from dpsql.backends.base import memory_budget
from dpsql.errors import QueryRefused
from dpsql.policy.model import Policy
from dpsql.privacy.quantile import DRAW_BYTES
from dpsql.sql.plan import Plan

#: bytes a released cell holds at worst besides its keys and primitives: its row tuple, the
#: answer's row, the finish stage's position column (measured: docs/performance.md, "Memory")
CELL_BYTES = 1000
#: bytes per key value of a cell (a Python object and its place in the finish stage's table)
KEY_BYTES = 200
#: bytes per primitive of a cell: the noisy value, σ and margin in numpy, in the finish stage's
#: table and in the answer's rows
PRIMITIVE_BYTES = 250
#: bytes per output column whose errors are computed per row (AVG, a spread, a derived column, a
#: quantile's rank interval: pipeline/propagate.py). Measured for AVG over 100,000 rows
#: (tracemalloc): its σ and MOE tuples keep 95 bytes a row (139 at the peak of the computation),
#: their JSON in the kept answer 42, the error columns' slots in the answer's rows 16
ERROR_BYTES = 200


def budget(policy: Policy) -> int:
    """The memory a query may take: the policy's limit, at most the engine's (bytes)."""
    machine = memory_budget()
    return machine if policy.query_memory is None else min(machine, policy.query_memory)


def cell_bytes(plan: Plan) -> int:
    """The worst-case bytes one released cell of ``plan`` holds."""
    computed = sum(1 for oc in plan.outputs if oc.ratio or oc.spread or oc.derived or oc.ranked_by is not None
                   or (oc.primitive is not None and plan.primitives[oc.primitive].kind == "quantile"))
    return CELL_BYTES + KEY_BYTES * len(plan.keys) + PRIMITIVE_BYTES * len(plan.primitives) + ERROR_BYTES * computed


def bound(plan: Plan, policy: Policy, public_cells: int, max_private: int) -> int:
    """The most private-key groups shown per public cell so that the answer fits the budget
    (``max_private`` when it fits already; unused without private keys).

    Raises:
        QueryRefused: DP210 when the public cells alone (with one private group each, when the
            query has private keys) do not fit.
    """
    limit = budget(policy)
    fixed = DRAW_BYTES if any(p.kind == "quantile" for p in plan.primitives) else 0
    per_public = cell_bytes(plan) * max(public_cells, 1)
    fits = (limit - fixed) // per_public
    if fits < 1:
        raise QueryRefused(
            f"the answer could take more memory than a query may take here ({limit >> 20} MiB): "
            f"{max(public_cells, 1):,} groups of {len(plan.keys)} keys and {len(plan.primitives)} aggregates"
            + (" with quantiles" if fixed else ""), code="DP210",
            hint="group by a coarser key, filter with WHERE, or ask for fewer aggregates or quantiles in one query.")
    return min(max_private, fits) if plan.private_keys else max_private
