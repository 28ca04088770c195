"""End-to-end cost of dpsql against raw DuckDB on the demo ``establishments`` table.

For each table size and query: the median time of dpsql (``cursor.execute`` + ``fetchall``,
connection opening excluded) divided by the median time of the same query run exactly on a
raw DuckDB connection to the same file, in the same process, with the runs interleaved so
both see the same machine noise. Also reported: dpsql's median time per stage, the one-time
privacy-unit uniqueness check, the materialised-split reference query, the row expansion of
unit splitting and the peak RSS.

    python benchmarks/bench_engine.py                       # 1M and 10M rows, 7 runs
    python benchmarks/bench_engine.py --rows 1000000 --repeat 9 --markdown results.md
    python benchmarks/bench_engine.py --diagnose            # also time alternative SQL / finish set-ups

The demo databases are built once into ``benchmarks/data/`` (gitignored; ``--data-dir``).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import duckdb
import numpy as np

import dpsql
from dpsql.demo_db import ensure_demo
from dpsql.engine import LOCKDOWN
from dpsql.session import Session

HERE = Path(__file__).resolve().parent
STAGES = ("plan", "execute", "noise", "charge", "finish")

QUERIES: list[tuple[str, str]] = [
    ("by naics2", "SELECT naics2, COUNT(*), SUM(payann), AVG(employees) FROM establishments GROUP BY naics2"),
    ("national", "SELECT COUNT(*), SUM(payann), AVG(employees) FROM establishments"),
    ("state x naics2, WHERE", "SELECT state, naics2, SUM(payann) FROM establishments WHERE employees > 10 "
                              "GROUP BY state, naics2"),
]
UNIT_CHECK_SQL = 'SELECT COUNT(*) = COUNT(DISTINCT "id") AND COUNT("id") = COUNT(*) FROM "establishments"'


def clock(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def ms(seconds: float) -> str:
    v = seconds * 1e3
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (a high-water mark: it never goes down)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def machine_info(raw: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = raw.execute("SELECT current_setting('threads')").fetchone()[0] if raw else "?"
    return [f"machine: {nproc} CPUs available (nproc), {cpu or 'unknown CPU'}, {mem:.0f} GiB RAM, "
            f"{platform.system()} {platform.release()}",
            f"software: python {platform.python_version()}, duckdb {duckdb.__version__} ({threads} threads), "
            f"numpy {np.__version__}, dpsql {dpsql.__version__}"]


def expansion_sql(session: Session, sql: str) -> str:
    """Σ_r max(1, ceil(|m|/T(m)) over the query's summed measures) / N over the rows the query reads.
    A data-owner statistic: it reads private data and is never shown to analysts."""
    plan = session.plan(sql)
    parts = ["1"]
    for name in plan.split_measures:
        m = plan.table.measures[name]
        assert m.granularity == 1 and m.override is None, "the demo measures are integers with one threshold"
        parts.append(f'CEIL(ABS("{name}") / {m.threshold})')
    where = f" WHERE {plan.where.sql('duckdb')}" if plan.where is not None else ""
    return f'SELECT SUM(GREATEST({", ".join(parts)})) / COUNT(*) FROM "{plan.table.name}"{where}'


def bench_size(rows: int, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    # Build (or validate) the demo file in a child process, so its memory is not in our peak RSS.
    build = ("import sys; from dpsql.demo_db import ensure_demo; "
             "ensure_demo(rows=int(sys.argv[1]), home=sys.argv[2], progress=lambda m: print('  [build]', m, file=sys.stderr))")
    subprocess.run([sys.executable, "-c", build, str(rows), str(args.data_dir)], check=True)
    db, policy = ensure_demo(rows=rows, home=args.data_dir)  # current now: returns the paths
    # DuckDB allows one configuration per database file in a process: the raw connection uses
    # dpsql's (lockdown only; no performance setting), so both share one database instance and
    # one buffer pool, and each fresh dpsql connection starts with a warm cache.
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    n = raw.execute("SELECT COUNT(*) FROM establishments").fetchone()[0]
    session = Session(db, policy)  # for explain(): reference SQL and plans; charges nothing
    out: dict[str, Any] = {"rows": n, "db": db, "queries": [], "raw_con": raw}

    # The one-time check of the privacy unit, run directly, and as seen by a fresh connection.
    # Peak RSS is a high-water mark, so it is read at checkpoints in increasing order of need:
    # raw queries only, + the unit check, + the dpsql runs, + the reference queries.
    for _, sql in QUERIES:
        raw.execute(sql).fetchall()
    out["rss"] = {"raw": peak_rss_mib()}
    raw.execute(UNIT_CHECK_SQL).fetchall()  # warm-up
    unit_direct = [clock(lambda: raw.execute(UNIT_CHECK_SQL).fetchall()) for _ in range(args.ref_repeat)]
    out["unit_check"] = med(unit_direct)
    out["rss"]["unit check"] = peak_rss_mib()

    per_q: list[dict[str, list[float]]] = [{"raw": [], "dpsql": [], **{s: [] for s in STAGES}} for _ in QUERIES]
    first_query: list[float] = []
    first_plan: list[float] = []
    for rep in range(args.repeat + 1):  # rep 0 is the warm-up, discarded
        con = dpsql.connect(db, policy)
        # The first query of a connection runs the unit check: time it, it is not in the samples.
        cur = con.cursor()
        first_query.append(clock(lambda: (cur.execute(QUERIES[0][1]), cur.fetchall())))
        first_plan.append(cur.result.timings["plan"])  # the unit check runs in the plan stage
        for qi, (_, sql) in enumerate(QUERIES):
            def run_raw() -> float:
                return clock(lambda: raw.execute(sql).fetchall())

            def run_dp() -> tuple[float, dict[str, float]]:
                c = con.cursor()
                t = clock(lambda: (c.execute(sql), c.fetchall()))
                return t, c.result.timings

            # Alternate which side goes first, so neither always follows the other.
            if rep % 2:
                t_dp, stages = run_dp()
                t_raw = run_raw()
            else:
                t_raw = run_raw()
                t_dp, stages = run_dp()
            if rep == 0:
                continue
            per_q[qi]["raw"].append(t_raw)
            per_q[qi]["dpsql"].append(t_dp)
            for s in STAGES:
                per_q[qi][s].append(stages.get(s, 0.0))
        con.close()
        log(f"  {rows:,} rows: run {rep}/{args.repeat} done" + (" (warm-up)" if rep == 0 else ""))

    q0_later = med(per_q[0]["dpsql"])
    out["first_query"] = med(first_query[1:])
    out["first_query_extra"] = out["first_query"] - q0_later
    out["first_plan"] = med(first_plan[1:])
    out["rss"]["dpsql"] = peak_rss_mib()

    for qi, (label, sql) in enumerate(QUERIES):
        ref = session.explain(sql).reference_sql
        raw.execute(ref).fetchall()  # warm-up
        ref_t = [clock(lambda: raw.execute(ref).fetchall()) for _ in range(args.ref_repeat)]
        expansion = float(raw.execute(expansion_sql(session, sql)).fetchone()[0])
        d = per_q[qi]
        keysets = session.policy.tables["establishments"].keys
        out["queries"].append({
            "label": label, "sql": sql,
            "raw": med(d["raw"]), "dpsql": med(d["dpsql"]), "ratio": med(d["dpsql"]) / med(d["raw"]),
            "stages": {s: med(d[s]) for s in STAGES}, "reference": med(ref_t), "expansion": expansion,
            "cells": math.prod(len(keysets[k].keyset) for k in session.plan(sql).keys),
        })
    out["exact_sql"] = [session.explain(sql).exact_sql for _, sql in QUERIES]
    session.close()
    out["rss"]["reference"] = peak_rss_mib()
    return out


def diagnose(res: dict[str, Any], repeat: int) -> list[tuple[str, float]]:
    """Time building blocks of dpsql's overhead directly, A/B interleaved: its exact SQL vs the
    raw SQL, the TRY() wrapper of the WHERE filter, the noise stage's per-cell σ², and the fresh
    in-memory DuckDB the finish stage opens per query vs a reused one."""
    # Internal APIs, imported here so that the main benchmark does not depend on them.
    from fractions import Fraction

    from dpsql.engine import finish
    from dpsql.mechanisms import gaussian_sigma2, sample_discrete_gaussian
    from dpsql.randomness import default_random

    raw = res["raw_con"]
    rows: list[tuple[str, float]] = []

    def t(label: str, fn: Callable[[], Any], n: int = repeat) -> None:
        fn()
        rows.append((label, med([clock(fn) for _ in range(n)])))

    def ab(pairs: list[tuple[str, str]], n: int = 2 * repeat) -> None:
        times: list[list[float]] = [[] for _ in pairs]
        for _, sql in pairs:
            raw.execute(sql).fetchall()
        for _ in range(n):
            for i, (_, sql) in enumerate(pairs):
                times[i].append(clock(lambda: raw.execute(sql).fetchall()))
        rows.extend((label, med(ts)) for (label, _), ts in zip(pairs, times))

    base = 'SELECT "state", "naics2", SUM("payann") FROM "establishments" WHERE {} GROUP BY "state", "naics2"'
    ab([("Q3 exact SQL with WHERE employees > 10 (no TRY)", base.format('"employees" > 10')),
        ("Q3 exact SQL with WHERE TRY(employees > 10) (as run)", base.format('TRY("employees" > 10)'))])
    tenth = res["rows"] // 10  # id is in file order: zone maps can skip 90% of the row groups
    ab([(f"Q3 exact SQL with WHERE id <= {tenth} (no TRY)", base.format(f'"id" <= {tenth}')),
        (f"Q3 exact SQL with WHERE TRY(id <= {tenth}) (as dpsql would run it)", base.format(f'TRY("id" <= {tenth})'))])
    ab([("Q1 raw SQL", QUERIES[0][1]), ("Q1 dpsql exact SQL (from explain)", res["exact_sql"][0])])
    t("duckdb.connect(':memory:') + close", lambda: duckdb.connect(":memory:").close(), 15)
    data = {"k": np.array([f"{i:04d}" for i in range(1224)], dtype=object),
            "__p0": np.arange(1224, dtype=np.int64), "__s0": np.ones(1224)}

    def finish_fresh() -> None:
        finish(dict(data), 'SELECT "k", "__p0", "__s0" FROM __noisy')

    locked = duckdb.connect(":memory:")
    for k, v in LOCKDOWN.items():
        locked.execute(f"SET {k} = {str(v).lower()}")

    def finish_reused() -> None:
        c = locked.cursor()  # a connection to the same in-memory instance; views are per connection
        try:
            c.register("__noisy", data)
            c.execute('SELECT "k", "__p0", "__s0" FROM __noisy').fetchall()
        finally:
            c.close()

    rng, rho = default_random(), Fraction(1, 10)

    def noise_per_cell() -> None:  # what the noise stage does today: Fractions built per cell
        sigma2 = [gaussian_sigma2(10000, rho) for _ in range(1224)]
        sample_discrete_gaussian(sigma2, rng)
        [math.sqrt(s2) for s2 in sigma2]

    def noise_once() -> None:  # one σ² per distinct sensitivity, broadcast
        s2 = gaussian_sigma2(10000, rho)
        sample_discrete_gaussian(s2, rng, size=1224)
        np.full(1224, math.sqrt(s2))

    t("noise today: sigma2 per cell, 1224 cells", noise_per_cell, 15)
    t("noise alt: sigma2 once, size=1224", noise_once, 15)
    t("finish today: fresh :memory: DuckDB, 1224 cells", finish_fresh, 15)
    t("finish alt: cursor of one locked :memory: DuckDB + register, 1224 cells", finish_reused, 15)
    locked.close()
    return rows


def render(results: list[dict[str, Any]], header: list[str], markdown: bool) -> str:
    cols = ["rows", "query", "cells", "raw ms", "dpsql ms", "dpsql/raw", *(f"{s} ms" for s in STAGES),
            "reference ms", "ref/raw", "expansion"]
    table = []
    for r in results:
        for q in r["queries"]:
            table.append([f"{r['rows'] / 1e6:g}M", q["label"], str(q["cells"]), ms(q["raw"]), ms(q["dpsql"]),
                          f"{q['ratio']:.2f}x", *(ms(q["stages"][s]) for s in STAGES), ms(q["reference"]),
                          f"{q['reference'] / q['raw']:.1f}x", f"{q['expansion']:.3f}"])
    notes = [f"{r['rows'] / 1e6:g}M rows: unit-uniqueness check {ms(r['unit_check'])} ms direct; first query of a "
             f"fresh connection {ms(r['first_query'])} ms = {ms(r['first_query_extra'])} ms more than later ones "
             f"(its plan stage, which runs the check: {ms(r['first_plan'])} ms); "
             "peak RSS (MiB) after " + ", ".join(f"{k} {v:.0f}" for k, v in r["rss"].items()) for r in results]
    if markdown:
        lines = [*(f"* {h}" for h in header), "",
                 "| " + " | ".join(cols) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(cols))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        lines += ["", *(f"* {n}" for n in notes)]
        return "\n".join(lines) + "\n"
    widths = [max(len(c), *(len(row[i]) for row in table)) for i, c in enumerate(cols)]
    fmt_row = lambda row: "  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths)))  # noqa: E731
    return "\n".join([*header, "", fmt_row(cols), fmt_row(["-" * w for w in widths]), *map(fmt_row, table), "",
                      *notes]) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table sizes (default 1M 10M)")
    p.add_argument("--repeat", type=int, default=7, help="timed runs per query and side, after one warm-up (default 7)")
    p.add_argument("--ref-repeat", type=int, default=3, help="timed runs of the reference query and unit check (default 3)")
    p.add_argument("--data-dir", type=Path, default=HERE / "data", help="where the demo databases are built")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the results table as Markdown to FILE")
    p.add_argument("--diagnose", action="store_true", help="also time alternative SQL and finish set-ups at each size")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")

    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    results = []
    for rows in sorted(args.rows):
        log(f"{rows:,} rows ...")
        res = bench_size(rows, args, log)
        if args.diagnose:
            res["diagnose"] = diagnose(res, args.repeat)
        results.append(res)
    header = machine_info(results[0]["raw_con"])
    header.append(f"method: median of {args.repeat} runs per query and side after one warm-up, raw and dpsql "
                  f"interleaved; reference and unit check: median of {args.ref_repeat}")
    print(render(results, header, markdown=False))
    for r in results:
        for label, secs in r.get("diagnose", []):
            print(f"  diagnose {r['rows'] / 1e6:g}M: {label}: {ms(secs)} ms")
    if args.markdown:
        text = render(results, header, markdown=True)
        if any("diagnose" in r for r in results):
            text += "\n| rows | diagnostic | ms |\n|---|---|---:|\n" + "".join(
                f"| {r['rows'] / 1e6:g}M | {label} | {ms(secs)} |\n" for r in results for label, secs in r.get("diagnose", []))
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)
        log(f"wrote {args.markdown}")
    for r in results:
        r["raw_con"].close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
