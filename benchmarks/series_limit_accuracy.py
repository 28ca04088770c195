"""How often a series limit keeps the true top n: one release (the ranking summed from the
chart's released cells) against two (the subquery released on its own). docs/bi.md, "A series
limit read from one release", has the numbers.

    python3 benchmarks/series_limit_accuracy.py [--runs 200] [--rho 0.1]

The query is the demo dashboard's series chart as Superset sends it (tests/fixtures/pgwire/
superset/series_limit.sql: months of 2015 by naics2, top 5 sectors by COUNT(*)). Each run is a
fresh seeded release (``SET dpsql.reuse = off``) on a copy of the demo policy with a budget large
enough for all of them; the exact top 5 is read from the demo database directly (the data owner's
view, for the comparison only).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import duckdb

import dpsql
from dpsql.demo_db import ensure_demo
from dpsql.testing import seeded_random

ROOT = Path(__file__).resolve().parents[1]
SQL = (ROOT / "tests/fixtures/pgwire/superset/series_limit.sql").read_text().split("\n\n", 1)[1].rstrip().rstrip(";")
EXACT = ("SELECT naics2 FROM establishments WHERE opened >= DATE '2015-01-01' AND opened < DATE '2016-01-01' "
         "GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 5")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--rho", type=float, default=0.1)
    args = p.parse_args()
    home = Path(tempfile.mkdtemp())
    db, policy = ensure_demo(home=home)
    mine = home / "accuracy.policy.toml"
    mine.write_text(Path(policy).read_text().replace("total_rho = 10.0", "total_rho = 1e9"))
    with duckdb.connect(str(db), read_only=True) as raw:
        exact = {r[0] for r in raw.execute(EXACT).fetchall()}
    for mode in ("derived", "separate"):
        same = 0
        for seed in range(args.runs):
            with dpsql.connect(db, mine, rho=args.rho, _random_source=seeded_random(1000 + seed)) as c:
                c.execute("SET dpsql.reuse = off")
                c.execute(f"SET dpsql.series_limit = '{mode}'")
                same += {r[1] for r in c.execute(SQL).fetchall()} == exact
        print(f"rho={args.rho} {mode}: the exact top 5 kept in {same} of {args.runs} runs")


if __name__ == "__main__":
    main()
