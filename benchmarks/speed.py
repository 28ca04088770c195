"""End-to-end cost of dpsql against raw DuckDB on the demo ``establishments`` table.

For each table size and query: the median time of dpsql (``cursor.execute`` + ``fetchall``,
connection opening excluded) divided by the median time of the same query run exactly on a raw
DuckDB connection to the same file, in the same process, with the runs interleaved so both see
the same machine noise. Also: dpsql's median time per stage (``cursor.result.timings``), the
one-time privacy-unit check, the materialised-split reference query, the row expansion of unit
splitting and the peak RSS. Each table size runs in its own child process, so its peak RSS and
its DuckDB instance are its own.

    python -m benchmarks speed                      # 1M, 10M and 100M rows, 7 runs
    python -m benchmarks speed --rows 1000000 --repeat 9 --diagnose
    python benchmarks/bench_engine.py ...           # the same, under its old name

The demo databases are built once into ``benchmarks/data/`` (gitignored; ``--data-dir``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from .common import (
    DATA_DIR,
    REPO,
    benchmark_policy,
    clock,
    ensure_data,
    log,
    machine_info,
    md_table,
    med,
    ms,
    peak_rss_mib,
    rows_label,
)

STAGE_ORDER = ("plan", "charge", "finish")  # the only stages Result.timings holds


@dataclass(frozen=True)
class Query:
    label: str
    sql: str


QUERIES: tuple[Query, ...] = (
    Query("national", "SELECT COUNT(*), SUM(payann), AVG(employees) FROM establishments"),
    Query("by naics2 (public key)",
          "SELECT naics2, COUNT(*), SUM(payann), AVG(employees) FROM establishments GROUP BY naics2"),
    Query("state x naics2", "SELECT state, naics2, COUNT(*), SUM(payann) FROM establishments GROUP BY state, naics2"),
    Query("state x naics2, WHERE",
          "SELECT state, naics2, SUM(payann) FROM establishments WHERE employees > 10 GROUP BY state, naics2"),
    Query("county (private key, selection)", "SELECT county, SUM(payann) FROM establishments GROUP BY county"),
    Query("region x sector (joins to public tables)",
          "SELECT s.region, n.sector, COUNT(*), SUM(payann) FROM establishments e JOIN states s ON e.state = s.code "
          "JOIN naics_sectors n ON e.naics2 = n.naics2 GROUP BY s.region, n.sector"),
    Query("3-digit NAICS (expression of a private key)",
          "SELECT SUBSTR(naics, 1, 3) AS n3, COUNT(*), SUM(payann) FROM establishments GROUP BY n3"),
)
HEADLINE = 1  # each connection's first query; in the warm-up it is the file's first (it pays the unit check)
#: dpsql's unit check (in passes over hash classes of the unit: bounded memory) in a process of
#: its own, so that its peak RSS is the check's alone: prints seconds and peak MiB
UNIT_CHECK = ("import sys, time; from dpsql.backends.duckdb import DuckDBEngine; "
              "from benchmarks.common import peak_rss_mib; "
              "e = DuckDBEngine(sys.argv[1]); t = time.perf_counter(); "
              "assert e.units_unique('establishments', 'id'); print(time.perf_counter() - t, peak_rss_mib())")
BIG = 50_000_000  # from this size on, the reference query and the unit check run once, without warm-up


def summed_measures(sql: str, measures: dict[str, Any]) -> tuple[list[str], str]:
    """The measures a query sums or averages (the ones its unit splitting uses) and its WHERE."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    names: list[str] = []
    for agg in tree.find_all(exp.Sum, exp.Avg):
        for col in agg.find_all(exp.Column):
            if col.name.lower() in measures and col.name.lower() not in names:
                names.append(col.name.lower())
    where = tree.args.get("where")
    return names, (where.this.sql("duckdb") if where is not None else "")


def expansion_sql(sql: str, measures: dict[str, Any]) -> str:
    """Σ_r max(1, ceil(|m|/T(m)) over the query's summed measures) / N over the rows the query
    reads: split rows per row. A data-owner statistic: it reads private data, never shown to
    analysts."""
    names, where = summed_measures(sql, measures)
    parts = ["1", *(f'(ABS("{m}") + {int(measures[m]["threshold"]) - 1}) // {int(measures[m]["threshold"])}'
                    for m in names)]
    return (f'SELECT SUM(GREATEST({", ".join(parts)})) / COUNT(*) FROM establishments'
            + (f" WHERE {where}" if where else ""))


def bench_size(rows: int, data_dir: Path, repeat: int, ref_repeat: int, diagnose: bool) -> dict[str, Any]:
    """Benchmark one table size in this process. Call it in a fresh process (see :func:`run`)."""
    import dpsql
    from dpsql.backends.duckdb import LOCKDOWN
    from dpsql.session import Session

    db, demo_policy = ensure_data(rows, data_dir)
    tmp = tempfile.TemporaryDirectory(prefix="dpsql-bench-")
    policy = benchmark_policy(demo_policy, Path(tmp.name))  # a large budget, a throwaway ledger
    # An empty dpsql folder: no record of a passed unit check (dpsql/records/unit.py), so this
    # process's first query is the file's first and pays the check; a later process does not.
    os.environ["DPSQL_HOME"] = str(Path(tmp.name) / "home")
    measures = tomllib.loads(policy.read_text())["tables"]["establishments"]["measures"]
    # DuckDB allows one configuration per database file in a process: the raw connection uses
    # dpsql's (lockdown only; no performance setting), so both share one database instance and
    # one buffer pool, and each fresh dpsql connection starts with a warm cache.
    raw = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    n = raw.execute("SELECT COUNT(*) FROM establishments").fetchone()[0]
    out: dict[str, Any] = {"rows": n, "threads": raw.execute("SELECT current_setting('threads')").fetchone()[0],
                           "file_mib": db.stat().st_size / 2**20, "queries": []}
    big = n >= BIG
    ref_repeat = 1 if big else ref_repeat

    for q in QUERIES:
        raw.execute(q.sql).fetchall()
    out["rss"] = {"raw": peak_rss_mib()}
    # The one-time check of the privacy unit, run in a process of its own (dpsql runs it once per
    # data file: a pass is remembered with the file's identity) and as seen by the file's first query.
    checks = [subprocess.run([sys.executable, "-c", UNIT_CHECK, str(db)], check=True, capture_output=True,
                             text=True, cwd=REPO).stdout.split() for _ in range(ref_repeat)]
    out["unit_check"] = med([float(c[0]) for c in checks])
    out["unit_check_rss"] = max(float(c[1]) for c in checks)

    per_q: list[dict[str, list[float]]] = [{"raw": [], "dpsql": []} for _ in QUERIES]
    stages: list[dict[str, list[float]]] = [{} for _ in QUERIES]
    cells: list[int | None] = [None] * len(QUERIES)
    raw_groups: list[int] = [0] * len(QUERIES)
    pending: dict[int, str] = {}
    first_query: float | None = None
    first_plan: float | None = None
    for rep in range(repeat + 1):  # rep 0 is the warm-up, discarded
        con = dpsql.connect(db, policy, reuse=False)
        t0 = time.perf_counter()
        cur = con.cursor()
        cur.execute(QUERIES[HEADLINE].sql)
        cur.fetchall()
        if rep == 0:  # the file's first query: it runs the unit check (then remembered)
            first_query, first_plan = time.perf_counter() - t0, cur.result.timings["plan"]
        for qi, q in enumerate(QUERIES):
            # Alternate which side goes first, so neither always follows the other.
            if rep % 2:
                dp = None if qi in pending else _time_dpsql(con, q, pending, qi)
                t_raw, raw_groups[qi] = _time_raw(raw, q.sql)
            else:
                t_raw, raw_groups[qi] = _time_raw(raw, q.sql)
                dp = None if qi in pending else _time_dpsql(con, q, pending, qi)
            if dp is not None:
                cells[qi] = dp[2]
            if rep == 0:
                continue
            per_q[qi]["raw"].append(t_raw)
            if dp is not None:
                per_q[qi]["dpsql"].append(dp[0])
                for stage, v in dp[1].items():
                    stages[qi].setdefault(stage, []).append(v)
        con.close()
        log(f"  {rows_label(n)} rows: run {rep}/{repeat} done" + (" (warm-up)" if rep == 0 else ""))

    assert first_query is not None and first_plan is not None
    out["first_query"] = first_query
    out["first_query_extra"] = first_query - med(per_q[HEADLINE]["dpsql"])
    out["first_plan"] = first_plan
    out["rss"]["dpsql"] = peak_rss_mib()
    out["later_process"] = later_process_first_query(db, policy)

    session = Session(db, policy)  # explain() only: reference SQL; charges nothing
    for qi, q in enumerate(QUERIES):
        d = per_q[qi]
        entry: dict[str, Any] = {"label": q.label, "sql": q.sql, "raw": med(d["raw"]), "raw_groups": raw_groups[qi],
                                 "expansion": float(raw.execute(expansion_sql(q.sql, measures)).fetchone()[0])}
        if qi in pending:
            entry["pending"] = pending[qi]
        else:
            entry.update(dpsql=med(d["dpsql"]), ratio=med(d["dpsql"]) / med(d["raw"]), cells=cells[qi],
                         stages={s: med(v) for s, v in stages[qi].items()})
            try:
                explained = session.explain(q.sql)
            except dpsql.Error:
                explained = None
            if explained is not None:
                ref = explained.reference_sql
                if not big:
                    raw.execute(ref).fetchall()  # warm-up
                entry["reference"] = med([_time_raw(raw, ref)[0] for _ in range(ref_repeat)])
                entry["exact_sql"] = explained.exact_sql
        out["queries"].append(entry)
    session.close()
    out["rss"]["reference"] = peak_rss_mib()
    out["ref_repeat"] = ref_repeat
    if diagnose:
        out["diagnose"] = run_diagnose(raw, out, repeat)
    raw.close()
    tmp.cleanup()
    return out


def later_process_first_query(db: Path, policy: Path) -> dict[str, float]:
    """A new process's first query on the file, after the check passed in this one: its wall
    time and plan stage in seconds (the unit check is remembered per file, not per process)."""
    code = ("import json, sys, time, dpsql; con = dpsql.connect(sys.argv[1], sys.argv[2], reuse=False); cur = con.cursor(); "
            "t0 = time.perf_counter(); cur.execute(sys.argv[3]); cur.fetchall(); "
            "print(json.dumps({'wall': time.perf_counter() - t0, 'plan': cur.result.timings['plan']}))")
    done = subprocess.run([sys.executable, "-c", code, str(db), str(policy), QUERIES[HEADLINE].sql],
                          check=True, capture_output=True, text=True, env=dict(os.environ))
    return json.loads(done.stdout.strip().splitlines()[-1])


def _time_raw(raw: duckdb.DuckDBPyConnection, sql: str) -> tuple[float, int]:
    """Seconds of the exact query on the raw connection (execute + fetchall), and its rows."""
    t0 = time.perf_counter()
    got = raw.execute(sql).fetchall()
    return time.perf_counter() - t0, len(got)


def _time_dpsql(con: Any, q: Query, pending: dict[int, str], qi: int) -> tuple[float, dict[str, float], int] | None:
    """Seconds of dpsql (cursor.execute + fetchall), its stage timings and rows; None, and the
    query marked pending, if dpsql refuses it (e.g. DP205 while partition selection is not in)."""
    import dpsql

    c = con.cursor()
    try:
        t0 = time.perf_counter()
        c.execute(q.sql)
        got = c.fetchall()
        elapsed = time.perf_counter() - t0
    except dpsql.Error as e:
        pending[qi] = getattr(e, "code", type(e).__name__)
        log(f"  {q.label}: dpsql refuses it ({pending[qi]}): reported as pending")
        return None
    return elapsed, dict(c.result.timings), len(got)


def run_diagnose(raw: duckdb.DuckDBPyConnection, res: dict[str, Any], repeat: int) -> list[tuple[str, float]]:
    """Building blocks of dpsql's overhead, timed directly: its exact SQL against the raw SQL (A/B
    interleaved), the TRY() wrapper dpsql puts around WHERE conjuncts that could fail, the noise
    sampler and the finish stage's per-query cursor."""
    from fractions import Fraction

    import numpy as np

    from dpsql.backends.duckdb_local import DuckDBFinisher
    from dpsql.privacy.mechanisms import gaussian_sigma2
    from dpsql.privacy.randomness import default_random
    from dpsql.privacy.samplers import sample_discrete_gaussian

    rows: list[tuple[str, float]] = []

    def t(label: str, fn: Callable[[], Any], n: int = 15) -> None:
        fn()
        rows.append((label, med([clock(fn) for _ in range(n)])))

    def ab(pairs: list[tuple[str, str]], n: int = 2 * repeat) -> None:
        times: list[list[float]] = [[] for _ in pairs]
        for _, sql in pairs:
            raw.execute(sql).fetchall()
        for _ in range(n):
            for i, (_, sql) in enumerate(pairs):
                times[i].append(_time_raw(raw, sql)[0])
        rows.extend((label, med(ts)) for (label, _), ts in zip(pairs, times))

    for q in res["queries"]:
        if "exact_sql" in q:
            ab([(f"{q['label']}: raw SQL", q["sql"]), (f"{q['label']}: dpsql's exact SQL", q["exact_sql"])])
    base = 'SELECT "state", "naics2", SUM("payann") FROM "establishments" WHERE {} GROUP BY "state", "naics2"'
    ab([("WHERE employees > 10 (bare, as dpsql runs it)", base.format('"employees" > 10')),
        ("WHERE TRY(employees > 10) (how a conjunct that could fail runs)", base.format('TRY("employees" > 10)'))])
    data = {"k": np.array([f"{i:04d}" for i in range(1224)], dtype=object),
            "__p0": np.arange(1224, dtype=np.int64), "__s0": np.ones(1224)}
    finisher = DuckDBFinisher()
    t("finish: DuckDBFinisher.run over 1224 cells", lambda: finisher.run(data, 'SELECT "k", "__p0", "__s0" FROM __noisy'))
    finisher.close()
    t("duckdb.connect(':memory:') + close (what a DuckDBFinisher saves per query)",
      lambda: duckdb.connect(":memory:").close())
    rng, rho = default_random(), Fraction(1, 10)
    s2 = gaussian_sigma2(10000, rho)
    t("noise: 1224 discrete Gaussian samples, one sigma (T = 10000, rho = 0.1)",
      lambda: sample_discrete_gaussian(s2, rng, size=1224))
    return rows


# ------------------------------------------------------------------------------ orchestration

def run(rows: list[int], data_dir: Path = DATA_DIR, repeat: int = 7, ref_repeat: int = 3,
        diagnose: bool = False) -> dict[str, Any]:
    """Every size in its own child process (clean peak RSS, one DuckDB instance per size)."""
    t0 = time.perf_counter()
    results = []
    for n in sorted(rows):
        log(f"speed: {n:,} rows ...")
        ensure_data(n, data_dir)  # build first, so the child's peak RSS is the benchmark's alone
        with tempfile.TemporaryDirectory() as tmp:
            result = Path(tmp) / "result.json"
            code = ("import json, sys; from pathlib import Path; from benchmarks.speed import bench_size; "
                    "Path(sys.argv[6]).write_text(json.dumps(bench_size(int(sys.argv[1]), Path(sys.argv[2]), "
                    "int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == '1')))")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])))
            subprocess.run([sys.executable, "-c", code, str(n), str(data_dir), str(repeat), str(ref_repeat),
                            "1" if diagnose else "0", str(result)], check=True, env=env)
            results.append(json.loads(result.read_text()))
    return {"header": machine_info() + [
        (f"method: median of {repeat} runs per query and side after one warm-up, raw and dpsql interleaved "
        f"(alternating order); reference query and unit check: median of {ref_repeat} after a warm-up "
        f"(at {rows_label(BIG)} rows and more: one run, no warm-up)")],
        "sizes": results, "repeat": repeat, "seconds": time.perf_counter() - t0}


def stage_names(res: dict[str, Any]) -> list[str]:
    seen = {s for r in res["sizes"] for q in r["queries"] for s in q.get("stages", {})}
    return [s for s in STAGE_ORDER if s in seen] + sorted(seen - set(STAGE_ORDER))


def csv_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    stages = stage_names(res)
    for r in res["sizes"]:
        for q in r["queries"]:
            row: dict[str, Any] = {"rows": r["rows"], "query": q["label"], "sql": q["sql"],
                                   "raw_ms": round(q["raw"] * 1e3, 3)}
            if "pending" in q:
                row["status"] = f"pending ({q['pending']})"
            else:
                row.update(status="ok", cells=q["cells"], dpsql_ms=round(q["dpsql"] * 1e3, 3),
                           ratio=round(q["ratio"], 3), reference_ms=round(q["reference"] * 1e3, 1) if "reference" in q else "")
                row.update({f"{s}_ms": round(q["stages"].get(s, 0.0) * 1e3, 3) for s in stages})
            row["expansion"] = round(q["expansion"], 4)
            row["peak_rss_mib"] = round(r["rss"]["dpsql"])
            out.append(row)
    return out


def render(res: dict[str, Any]) -> str:
    stages = stage_names(res)
    table = []
    for r in res["sizes"]:
        for q in r["queries"]:
            if "pending" in q:
                table.append([rows_label(r["rows"]), q["label"], f"({q['raw_groups']})", ms(q["raw"]),
                              f"pending: dpsql refuses it ({q['pending']})", "–", *("–" for _ in stages),
                              "–", "–", f"{q['expansion']:.3f}"])
                continue
            bold = "**" if r["rows"] == 10_000_000 else ""
            table.append([rows_label(r["rows"]), q["label"], str(q["cells"]), ms(q["raw"]), ms(q["dpsql"]),
                          f"{bold}{q['ratio']:.2f}x{bold}", *(ms(q["stages"].get(s, 0.0)) for s in stages),
                          *((ms(q["reference"]), f"{q['reference'] / q['raw']:.1f}x") if "reference" in q else ("–", "–")),
                          f"{q['expansion']:.3f}"])
    cols = ["rows", "query", "cells", "raw ms", "dpsql ms", "dpsql/raw", *(f"{s} ms" for s in stages),
            "reference ms", "ref/raw", "expansion"]
    text = "\n".join(f"* {h}" for h in res["header"]) + "\n\n" + md_table(cols, table, "ll" + "r" * (len(cols) - 2))
    one_time = [[rows_label(r["rows"]), f"{r['file_mib']:.0f}", ms(r["unit_check"]), f"{r['unit_check_rss']:.0f}",
                 ms(r["first_query"]),
                 ms(r["first_query_extra"]), ms(r["first_plan"]),
                 *((ms(r["later_process"]["wall"]), ms(r["later_process"]["plan"])) if "later_process" in r
                   else ("–", "–")),
                 " / ".join(f"{r['rss'][k]:.0f}" for k in ("raw", "dpsql", "reference"))]
                for r in res["sizes"]]
    text += "\n" + md_table(["rows", "file MiB", "unit check, own process, ms", "… its peak RSS MiB",
                             "first query on the file, ms",
                             "… more than later ones, ms", "… its plan stage, ms",
                             "a later process's first query, ms", "… its plan stage, ms",
                             "peak RSS MiB: raw / + dpsql / + reference"], one_time)
    diag = [(r["rows"], label, secs) for r in res["sizes"] for label, secs in r.get("diagnose", [])]
    if diag:
        text += "\n" + md_table(["rows", "diagnostic", "ms"], [[rows_label(n), lab, ms(s)] for n, lab, s in diag], "llr")
    return text


def headline(res: dict[str, Any]) -> dict[str, Any]:
    """dpsql/raw per query at 10M rows (or the largest size run)."""
    sizes = {r["rows"]: r for r in res["sizes"]}
    r = sizes.get(10_000_000) or sizes[max(sizes)]
    return {"rows": r["rows"], **{q["label"]: (q["ratio"] if "ratio" in q else f"pending ({q['pending']})")
                                   for q in r["queries"]}}


def add_arguments(p: argparse.ArgumentParser, defaults: str = "1M 10M 100M; --quick: 200k") -> None:
    p.add_argument("--rows", type=int, nargs="+", help=f"table sizes (default {defaults})")
    p.add_argument("--repeat", type=int, help="timed runs per query and side, after one warm-up (default 7; --quick 3)")
    p.add_argument("--ref-repeat", type=int, help="timed runs of the reference query and unit check (default 3; --quick 1)")
    p.add_argument("--diagnose", action=argparse.BooleanOptionalAction, default=None,
                   help="also time dpsql's building blocks at each size (default: on for `python -m benchmarks speed`, "
                        "off for bench_engine.py)")


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/bench_engine.py``: print the speed table (Markdown) to stdout."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(p, "1000000 10000000")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the demo databases are built")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the tables as Markdown to FILE")
    args = p.parse_args(argv)
    res = run(args.rows or [1_000_000, 10_000_000], args.data_dir, args.repeat or 7, args.ref_repeat or 3, bool(args.diagnose))
    text = render(res)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)
    return 0
