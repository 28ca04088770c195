"""A measure's quantile grid in the policy file: ``range``, ``grid`` and ``points``.

    [tables.establishments.measures.payann]
    threshold = 10000
    range = [0, 100000000]   # public: the lowest and highest value a quantile may return
    grid = "log"             # candidates evenly spaced in log scale (default "linear")
    points = 1000            # how many candidates (default: below)

The grid is public, like the threshold: the data owner declares it from what is known about the
measure (``dpsql init`` drafts powers of ten around the column's values, for review). Without ``range``,
MEDIAN / QUANTILE_CONT of the measure are refused at planning. Values outside the range count
at its ends (a median below 0 is reported as 0).

Without ``points``, a linear range of at most MAX_GRID_POINTS values (in granularity units) has
every one as a candidate (a whole-minute median can then be answered exactly), any other grid
GRID_POINTS: :func:`default_points`, public (range, scale and granularity only).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpsql.errors import PolicyFileError
from dpsql.policy.model import GRID_POINTS, GRID_SCALES, MAX_GRID_POINTS, QuantileGrid

#: grid ends, in granularity units, stay where BIGINT and the exact query's integers hold them
_END = 2**62


def quantile_grid(mdoc: dict[str, Any], granularity: Fraction, where: str, mfield: str) -> QuantileGrid | None:
    """The grid a measure's table declares, or None; raises PolicyFileError naming the field."""
    def err(name: str, reason: str) -> PolicyFileError:
        return PolicyFileError(f"{where}: field '{mfield}.{name}' {reason}")

    if "range" not in mdoc:
        for other in ("grid", "points"):
            if other in mdoc:
                raise err(other, "needs range = [lowest, highest]: the public ends of the measure's quantile grid")
        return None
    raw = mdoc["range"]
    if not isinstance(raw, list) or len(raw) != 2:
        raise err("range", "must be [lowest, highest], two numbers")
    ends = []
    for v in raw:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise err("range", "must be [lowest, highest], two finite numbers")
        u = Fraction(str(v)) / granularity
        if u.denominator != 1:
            raise err("range", f"{v} is not a whole multiple of the granularity {granularity}")
        if abs(u.numerator) > _END:
            raise err("range", f"{v} is beyond what dpsql can represent (2^62 granularity steps)")
        ends.append(u.numerator)
    lo, hi = ends
    if lo >= hi:
        raise err("range", "must have its lowest value below its highest")
    scale = mdoc.get("grid", "linear")
    if scale not in GRID_SCALES:
        raise err("grid", f"must be one of {', '.join(repr(s) for s in GRID_SCALES)}")
    if scale == "log" and lo < 0:
        raise err("grid", "'log' needs a range that starts at 0 or above (use 'linear' for measures that can be negative)")
    points = mdoc.get("points", default_points(lo, hi, scale))
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= MAX_GRID_POINTS:
        raise err("points", f"must be a whole number from 2 to {MAX_GRID_POINTS}")
    return QuantileGrid(lo, hi, scale, points)


def default_points(lo: int, hi: int, scale: str) -> int:
    """A grid's points when the policy writes none (public: the range's ends in granularity units
    and its scale): every value of a linear range that holds at most MAX_GRID_POINTS of them, so
    that each value the measure can take is a candidate (1,000 points over the 1,561 minutes of
    [-120, 1440] are 1.56 minutes apart and miss 561 of them, -2 among them), else GRID_POINTS
    (a log grid, or a range too long to hold every value)."""
    values = hi - lo + 1
    return values if scale == "linear" and values <= MAX_GRID_POINTS else GRID_POINTS
