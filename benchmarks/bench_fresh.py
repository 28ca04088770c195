"""Start-up: `dpsql query` in a fresh process against a one-shot python + duckdb script (issue 15).

    python -m benchmarks.bench_fresh [--repeat 9]

It first byte-compiles the dpsql package (and its demo builder) as ``pip install`` does: a
machine with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile dpsql's own modules in
every process (~220 ms), which an installed package never does.

Every command runs in a fresh process; the commands alternate (which goes first rotates), so all
see the same load. The policy is a copy with a huge budget beside a throw-away ledger. Printed:
the medians of the raw script and of `dpsql query`, their ratio, and where the time goes, from
the medians of two more fresh processes per round:

* ``dpsql query`` twice: as a script repeating a query runs it (its plan, its empty-twin check and
  the file's catalog recorded by an earlier process: ``dpsql/records/plan.py``,
  ``dpsql/records/check.py``, ``dpsql/records/catalog.py``; no sqlglot is imported), and as a query
  this analyst never asked on this file (the plan and check records deleted before each run, so
  the process imports sqlglot, plans, builds the twin and checks);

* ``python -c "import duckdb"``: the part the raw script and dpsql share (interpreter + duckdb);
* ``python -c "import dpsql.faces.cli, dpsql.faces.dbapi, dpsql.backends.duckdb, dpsql.pipeline.release, dpsql.pipeline.finish"``
  (with the garbage collector paused and one OpenBLAS thread, as the command runs; an older dpsql
  does neither, so its split is approximate): every import a repeated query needs (its answer
  is small, so it is released without numpy: ``dpsql/pipeline/release.py``); ``dpsql query`` minus this
  is the work of the query itself (connections, policy, exact query, noise, durable charge,
  finish, closing).

The commands run with a throw-away ``DPSQL_HOME`` (the records of checks), first warmed by one
``dpsql query`` (the file cache, the unit record, the twin check's record).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dpsql
from benchmarks.bench_fixed_cost import SQL
from benchmarks.common import REPO, benchmark_policy
from dpsql.records import check as check_record
from dpsql.records import plan as plan_record
from dpsql.demo_db import ensure_demo

#: the imports of a repeated query, as ``dpsql query`` ends up with them, and as it makes them: with
#: the garbage collector paused and one OpenBLAS thread (dpsql/faces/startup.py)
QUERY_IMPORTS = ("import gc, os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); gc.disable(); "
                 "import dpsql.faces.cli, dpsql.faces.dbapi, dpsql.backends.duckdb, dpsql.pipeline.release, dpsql.pipeline.finish; gc.freeze()")


def byte_compile() -> None:
    """Write the .pyc files of the dpsql that runs and of this tree's demo builder, as an
    installed package has them."""
    for folder in (Path(dpsql.__file__).parent, REPO / "demo_db"):
        compileall.compile_dir(str(folder), quiet=1)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    print(report(measure(args.repeat), args.repeat))


def measure(repeat: int = 9) -> dict[str, float]:
    """Median milliseconds of each command (raw, dpsql, import duckdb, imports), alternated."""
    byte_compile()
    db, policy = ensure_demo()
    dpsql_cmd = shutil.which("dpsql", path=str(Path(sys.executable).parent)) or "dpsql"
    with tempfile.TemporaryDirectory() as tmp:
        pol = benchmark_policy(Path(policy), Path(tmp))
        env = {**os.environ, "DPSQL_HOME": str(Path(tmp) / "home")}
        checks = Path(tmp) / "home" / check_record.RECORDS.file_name
        plans = Path(tmp) / "home" / plan_record.DOCUMENTS.folder
        query = [dpsql_cmd, "query", SQL, "--db", str(db), "--policy", str(pol), "--fresh"]
        commands = {
            "raw": [sys.executable, "-c",
                    f"import duckdb; duckdb.connect({str(db)!r}, read_only=True).execute({SQL!r}).fetchall()"],
            "dpsql": query,
            "dpsql, new query": query,
            "import duckdb": [sys.executable, "-c", "import duckdb"],
            "imports": [sys.executable, "-c", QUERY_IMPORTS],
        }
        subprocess.run(query, check=True, capture_output=True, env=env)  # warm the file cache, the records
        times: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for i in range(repeat):
            for name in names[i % len(names):] + names[:i % len(names)]:
                if name == "dpsql, new query":  # this analyst never asked it: planned, the twin built and checked
                    checks.unlink()
                    shutil.rmtree(plans)
                t0 = time.perf_counter()
                subprocess.run(commands[name], check=True, capture_output=True, env=env)
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def report(med: dict[str, float], repeat: int) -> str:
    """The ratio and where the time goes, as printed lines."""
    r, d = med["raw"], med["dpsql"]
    return "\n".join([
        f"fresh process: one-shot python+duckdb {r:.0f} ms, dpsql query {d:.0f} ms, "
        f"ratio {d / r:.2f}x (median of {repeat}, load {os.getloadavg()[0]:.2f})",
        f"  a query not asked before (planned, the empty twin built and checked): {med['dpsql, new query']:.0f} ms, "
        f"ratio {med['dpsql, new query'] / r:.2f}x",
        f"  shared: python + import duckdb {med['import duckdb']:.0f} ms; "
        f"the raw script's connect + query {r - med['import duckdb']:.0f} ms",
        f"  dpsql: imports {med['imports']:.0f} ms ({med['imports'] - med['import duckdb']:.0f} ms beyond "
        f"python + duckdb), the query's work {d - med['imports']:.0f} ms"])


if __name__ == "__main__":
    main()
