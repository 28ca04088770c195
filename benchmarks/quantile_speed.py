"""Quantiles against DuckDB's own MEDIAN on the same file (issue 34).

    python -m benchmarks.quantile_speed                   # 1M and 10M rows, 7 rounds
    python -m benchmarks.quantile_speed --rows 1000000 --repeat 5
    python -m benchmarks.quantile_speed --rows 1000000 --split   # where dpsql's time goes

For each size (the demo's establishments, built once under benchmarks/data/) and each key —
``state`` (public keyset) and ``county`` (private: partition selection) — it alternates, round
after round, DuckDB's exact ``MEDIAN(payann)`` and dpsql's ``MEDIAN(payann)`` (a fresh charged
answer each time: ``reuse=False``, a throwaway ledger with a large budget), plus dpsql's exact
query alone on the same DuckDB connection, its lists handed over as the engine does (numpy). Both sides share one database instance (DuckDB
allows one configuration per file in a process). Medians of the rounds, of wall time and of the
process's CPU time (every thread's: DuckDB's two as well); the load average is printed beside
each size: the machine is shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from .common import DATA_DIR, benchmark_policy, ensure_data, rows_label


def _clock(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _clocks(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall, CPU) seconds of fn(): CPU time counts every thread of the process (DuckDB's too), and
    the load of a shared machine distorts it less than wall time."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def bench(rows: int, repeat: int, data_dir: Path = DATA_DIR) -> list[dict[str, object]]:
    db, demo_policy = ensure_data(rows, data_dir)
    tmp = tempfile.TemporaryDirectory(prefix="dpsql-quantile-")
    home = os.environ.get("DPSQL_HOME")
    try:
        return _bench(rows, repeat, db, demo_policy, Path(tmp.name))
    finally:  # `benchmarks performance` runs the next section in this process: not in a removed folder
        if home is None:
            os.environ.pop("DPSQL_HOME", None)
        else:
            os.environ["DPSQL_HOME"] = home
        tmp.cleanup()


def _bench(rows: int, repeat: int, db: Path, demo_policy: Path, tmp: Path) -> list[dict[str, object]]:
    import duckdb

    import dpsql
    from dpsql.backends.duckdb import LOCKDOWN
    from dpsql.backends.duckdb_arrays import fetch_arrays

    policy = benchmark_policy(demo_policy, tmp)
    # partition selection spends δ too: a large δ budget for the copy (never the demo's ledger)
    policy.write_text(re.sub(r"(?m)^(\s*total_delta\s*=\s*)[^#\n]*", r"\g<1>0.5", policy.read_text()))
    os.environ["DPSQL_HOME"] = str(tmp / "home")
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    con = dpsql.connect(db, policy, reuse=False)
    out = []
    for key in ("state", "county"):
        sql = f"SELECT {key}, MEDIAN(payann) FROM establishments GROUP BY {key}"
        exact = con.session._planned(sql, None)[1]
        cur = con.cursor()
        times: dict[str, list[float]] = {"raw": [], "dpsql": [], "exact": []}
        cpu: dict[str, list[float]] = {"raw": [], "dpsql": [], "exact": []}
        load = os.getloadavg()[0]
        for rep in range(repeat + 1):  # round 0 warms up, discarded
            runs = [("raw", lambda: raw.execute(sql).fetchall()), ("exact", lambda: fetch_arrays(raw.execute(exact))),
                    ("dpsql", lambda: (cur.execute(sql), cur.fetchall()))]
            for name, fn in (runs if rep % 2 else runs[::-1]):  # alternate who goes first
                t, c = _clocks(fn)
                if rep:
                    times[name].append(t)
                    cpu[name].append(c)
        m = {k: statistics.median(v) for k, v in times.items()}
        mc = {k: statistics.median(v) for k, v in cpu.items()}
        out.append({"rows": rows_label(rows), "key": key, "raw_ms": m["raw"] * 1e3, "exact_ms": m["exact"] * 1e3, "dpsql_ms": m["dpsql"] * 1e3,
                    "ratio": m["dpsql"] / m["raw"], "cpu_ratio": mc["dpsql"] / mc["raw"], "load": (load + os.getloadavg()[0]) / 2})
        print(_row(out[-1]), flush=True)
    con.close()
    raw.close()
    return out


def split(rows: int, repeat: int, data_dir: Path = DATA_DIR) -> None:
    """Each stage of dpsql's MEDIAN alone, by key: DuckDB's MEDIAN; the exact query without and
    with handing its lists to Python (as numpy arrays, as the engine does); then, cumulated as
    the engine runs them (a chunk of groups at a time), the values counted into the grid's bins
    (``em_bins.value_entries``), counted and scored (the runs of equal score:
    ``em_bins.value_runs``), and counted, scored and drawn (``quantile.draw``)."""
    import duckdb

    from dpsql.backends.duckdb_arrays import fetch_arrays
    from dpsql.privacy import em_bins, quantile
    from dpsql.privacy.randomness import SecureRandom
    from dpsql.session import Session

    db, policy = ensure_data(rows, data_dir)
    q, rng = Fraction(1, 2), SecureRandom()
    eps = quantile.epsilon_for_rho(Fraction(1, 10))
    for key in ("state", "county"):
        sql = f"SELECT {key}, MEDIAN(payann) FROM establishments GROUP BY {key}"
        s = Session(db, policy, analyst="bench")
        plan, query = s._planned(sql, None)
        s.close()
        grid = plan.table.measures["payann"].grid
        raw = duckdb.connect(str(db), read_only=True)
        times: dict[str, list[float]] = {}
        for _ in range(repeat):
            res: list = []
            stages = [("median", lambda: raw.execute(sql).fetchall()),
                      ("exact, no hand-over", lambda: raw.execute(f'SELECT SUM(len("__p0")) FROM ({query})').fetchall()),
                      ("exact", lambda: res.append(fetch_arrays(raw.execute(query)))),
                      ("bins", lambda: list(em_bins.value_entries([r[1] for r in res[0]], grid))),
                      ("bins and runs", lambda: list(em_bins.value_runs([r[1] for r in res[0]], grid, q))),
                      ("bins, runs and sampling", lambda: quantile.draw([r[1] for r in res[0]], grid, q, eps, rng, values=True))]
            for name, fn in stages:
                times.setdefault(name, []).append(_clock(fn))
        raw.close()
        print(f"{rows_label(rows)} {key}: " + ", ".join(f"{k} {statistics.median(v) * 1e3:,.0f} ms" for k, v in times.items())
              + f" (load {os.getloadavg()[0]:.1f})", flush=True)


def _row(r: dict[str, object]) -> str:
    return (f"| {r['rows']} | `{r['key']}` | {r['raw_ms']:,.0f} ms | {r['exact_ms']:,.0f} ms | {r['dpsql_ms']:,.0f} ms "
            f"| {r['ratio']:.2f}× | {r['cpu_ratio']:.2f}× | {r['load']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--split", action="store_true", help="time each stage of dpsql's MEDIAN alone instead")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the demo data of each size is built and kept")
    a = p.parse_args(argv)
    if a.split:
        for rows in a.rows:
            split(rows, a.repeat, a.data_dir)
        return 0
    print("| rows | key | DuckDB MEDIAN | dpsql's exact query alone | dpsql MEDIAN | ratio | CPU-time ratio | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for rows in a.rows:
        bench(rows, a.repeat, a.data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
