"""SmartNoise SQL's side of benchmarks/smartnoise_suite.py, run by the PEERS' Python (a venv with
smartnoise-sql), never the product's; imports nothing from dpsql:

    /work/peers-venv/bin/python benchmarks/smartnoise_suite_peer.py spec.json out.json

spec.json: {"csv", "metadata", "epsilon", "delta", "reps", "queries": [sql, ...]}. Each query runs
``reps`` times, each on a fresh reader at (epsilon, delta) (snsql.from_df over the CSV with
SmartNoise's own PUMS metadata). Output per query: {"answered": true, "header": [...], "runs":
[[row, ...], ...], "cost": [ε, δ] (``get_privacy_cost``: SmartNoise spends ε per
aggregate it computes, so a query of three aggregates costs 3ε), "seconds": ...} or {"answered": false, "error": "<exception type>: <message>"}.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pandas as pd


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def main(spec_path: str, out_path: str) -> int:
    import snsql
    from snsql import Privacy

    spec = json.load(open(spec_path))
    df = pd.read_csv(spec["csv"])
    out = []
    for sql in spec["queries"]:
        runs, header, cost, start = [], None, None, time.perf_counter()
        try:
            probe = snsql.from_df(df, privacy=Privacy(epsilon=spec["epsilon"], delta=spec["delta"]),
                                  metadata=spec["metadata"])
            cost = [float(x) for x in probe.get_privacy_cost(sql)]  # what one run of it spends, in all
            start = time.perf_counter()
            for _ in range(spec["reps"]):
                reader = snsql.from_df(df, privacy=Privacy(epsilon=spec["epsilon"], delta=spec["delta"]),
                                       metadata=spec["metadata"])
                rows = reader.execute(sql)
                header = [str(h) for h in rows[0]]
                runs.append([[_plain(v) for v in row] for row in rows[1:]])
            out.append({"answered": True, "header": header, "runs": runs, "cost": cost,
                        "seconds": (time.perf_counter() - start) / spec["reps"]})
        except Exception as exc:  # noqa: BLE001 - any refusal or failure is the peer's answer
            out.append({"answered": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    json.dump(out, open(out_path, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
