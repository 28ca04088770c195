"""Start-up: `dpsql query` in a fresh process against a one-shot python + duckdb script.

    python -m benchmarks.bench_fresh [--repeat 9]

Both run the demo query on the demo file; they alternate (and which goes first alternates),
so both see the same load. The policy is a copy with a huge budget beside a throw-away ledger.
dpsql's modules are byte-compiled first, as a regular ``pip install`` does: an editable install
under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile all of them in every process
(about 0.2 s, measured), which is not what a user's installation pays.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_fixed_cost import SQL
from benchmarks.common import benchmark_policy
from dpsql.demo_db import ensure_demo


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    print(line(*measure(args.repeat)))


def line(raw: float, dpsql: float, repeat: int) -> str:
    return (f"fresh process: one-shot python+duckdb {raw * 1e3:.0f} ms, dpsql query {dpsql * 1e3:.0f} ms, "
            f"ratio {dpsql / raw:.2f}x (median of {repeat}, load {os.getloadavg()[0]:.2f})")


def measure(repeat: int = 9) -> tuple[float, float, int]:
    """Median seconds of the one-shot raw script and of ``dpsql query``, alternated."""
    db, policy = ensure_demo()
    import dpsql

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(dpsql.__file__).parent)],
                   check=True, capture_output=True)
    dpsql_cmd = shutil.which("dpsql", path=str(Path(sys.executable).parent)) or "dpsql"
    with tempfile.TemporaryDirectory() as tmp:
        pol = benchmark_policy(Path(policy), Path(tmp))
        raw = [sys.executable, "-c",
               f"import duckdb; duckdb.connect({str(db)!r}, read_only=True).execute({SQL!r}).fetchall()"]
        dp = [dpsql_cmd, "query", SQL, "--db", str(db), "--policy", str(pol)]
        times: dict[str, list[float]] = {"raw": [], "dpsql": []}
        for i in range(repeat):
            order = (("raw", raw), ("dpsql", dp)) if i % 2 else (("dpsql", dp), ("raw", raw))
            for name, cmd in order:
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t0)
    return statistics.median(times["raw"]), statistics.median(times["dpsql"]), repeat


if __name__ == "__main__":
    main()
