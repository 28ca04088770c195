"""Opening a connection: ``dpsql.connect`` against ``duckdb.connect(file, read_only=True)`` (issue 34).

    python -m benchmarks.bench_open [--repeat 101] [--database DB --policy P]

One process, interleaved (which side goes first alternates), after one warm-up of each: the raw
side opens and closes a read-only DuckDB connection with dpsql's lockdown settings (DuckDB takes
one configuration per file in a process); the dpsql side opens and closes a DB-API connection
(the DuckDB file, the policy, the catalog, the ledger, the finisher), and, apart, opens one and
answers the demo query on it, as a BI tool that connects per query does. Medians of wall time
and of the process's CPU time (``time.process_time``: all threads, DuckDB's included), with
the 1-minute load average before and after: on a shared machine read the ratios and the
difference, not the absolute times. The policy is a copy with a huge budget beside a throw-away
ledger.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import benchmark_policy

SQL = "SELECT naics2, COUNT(*), SUM(payann), AVG(employees) FROM establishments GROUP BY naics2"


def _timed(fn: Any) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def run(repeat: int = 101, database: Path | None = None, policy: Path | None = None) -> dict[str, Any]:
    import duckdb

    import dpsql
    from dpsql.backends.duckdb import LOCKDOWN

    if database is None or policy is None:
        from dpsql.demo_db import ensure_demo

        database, policy = ensure_demo()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dpsql-bench-open-") as tmp:
        pol = benchmark_policy(Path(policy), Path(tmp))

        def raw_open() -> None:
            duckdb.connect(str(database), read_only=True, config=dict(LOCKDOWN)).close()

        def raw_query() -> None:
            with duckdb.connect(str(database), read_only=True, config=dict(LOCKDOWN)) as con:
                con.execute(SQL).fetchall()

        import dpsql.session

        real_open_engine = dpsql.session.open_engine
        engine_open: list[float] = []

        def open_engine(*args: Any, **kwargs: Any) -> Any:
            t, c = time.perf_counter(), time.thread_time()
            try:
                return real_open_engine(*args, **kwargs)
            finally:
                engine_open.append((time.perf_counter() - t, time.thread_time() - c))

        dpsql.session.open_engine = open_engine  # type: ignore[assignment] - this process only, to time it apart

        def dpsql_open() -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            con = dpsql.connect(database, pol, reuse=False)
            t1, c1 = time.perf_counter(), time.thread_time()
            con.session.engine.close()  # DuckDB's own close, timed apart (closing again is a no-op)
            t2, c2 = time.perf_counter(), time.thread_time()
            con.close()
            own.append((t1 - t0 - engine_open[-1][0]) + (time.perf_counter() - t2))
            own_cpu.append((c1 - c0 - engine_open[-1][1]) + (time.thread_time() - c2))

        own: list[float] = []
        own_cpu: list[float] = []

        def dpsql_query() -> None:
            with dpsql.connect(database, pol, reuse=False) as con:
                con.execute(SQL).fetchall()

        ways = {"raw DuckDB: open + close": raw_open, "dpsql: open + close": dpsql_open,
                "raw DuckDB: open, the query, close": raw_query, "dpsql: open, the query, close": dpsql_query}
        for fn in ways.values():
            fn()  # warm-up: the unit check, the records, the plan
        out: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        names = list(ways)
        for i in range(repeat):
            for name in (names if i % 2 == 0 else names[::-1]):
                out[name].append(_timed(ways[name]))
        dpsql.session.open_engine = real_open_engine  # type: ignore[assignment]
    med = {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in out.items()}
    return {"repeat": repeat, "median": med, "load": (load0, os.getloadavg()[0]), "own": statistics.median(own),
            "own_cpu": statistics.median(own_cpu)}


def render(res: dict[str, Any]) -> str:
    med = res["median"]
    out = [f"Median of {res['repeat']} interleaved runs; load average {res['load'][0]:.1f} before, "
           f"{res['load'][1]:.1f} after.", "",
           "| what | wall ms | CPU ms (process) |", "|---|---:|---:|"]
    out += [f"| {name} | {w * 1e3:.1f} | {c * 1e3:.1f} |" for name, (w, c) in med.items()]
    raw, ours = med["raw DuckDB: open + close"], med["dpsql: open + close"]
    rq, dq = med["raw DuckDB: open, the query, close"], med["dpsql: open, the query, close"]
    out += ["", f"Opening dpsql over opening DuckDB: **{(ours[0] - raw[0]) * 1e3:+.1f} ms** wall, "
                f"{(ours[1] - raw[1]) * 1e3:+.1f} ms CPU; a connection per query: {dq[0] / rq[0]:.2f}× raw "
                f"DuckDB's wall time ({dq[0] * 1e3:.1f} against {rq[0] * 1e3:.1f} ms). dpsql's own work in "
                f"opening and closing, DuckDB's connect and close timed apart and left out: **{res['own'] * 1e3:.1f} ms** "
                f"wall, **{res['own_cpu'] * 1e3:.1f} ms** of the calling thread's CPU (medians; the wall time beyond the "
                "CPU is time the thread waited for a core)."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=101)
    ap.add_argument("--database", type=Path)
    ap.add_argument("--policy", type=Path)
    args = ap.parse_args(argv)
    print(render(run(args.repeat, args.database, args.policy)))


if __name__ == "__main__":
    main()
