"""Every figure of ``docs/performance.md`` in one command (issue 34):

    python -m benchmarks performance            # full sizes: about an hour on 2 cores
    python -m benchmarks performance --quick    # a smoke run on tiny data, into benchmarks/data/quick/performance.md
    python -m benchmarks performance --only open server   # some sections

Each section below is one benchmark of this folder, run with the arguments shown in its heading,
its printed tables written between the ``<!-- BEGIN generated: perf-NAME -->`` markers of
``docs/performance.md`` (``--quick``: of a copy under ``benchmarks/data/quick/``, never over the
committed numbers), with the 1-minute load average before and after it beside its ratios. The
dated tables above the generated sections in docs/performance.md are measurements kept as
history (before/after comparisons of two revisions: ``python -m benchmarks.ab A B``); the
generated ones are the current figures. A section whose requirement is missing (OpenDP, pyspark,
psycopg) says so in place of its table, and the others still run.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .common import DATA_DIR, QUICK_DIR, REPO, log, update_section

DOC = REPO / "docs" / "performance.md"


@dataclass(frozen=True)
class Section:
    name: str  # the marker: perf-NAME
    title: str
    module: str  # benchmarks.<module>, run as main(argv) with its output captured
    full: tuple[str, ...]
    quick: tuple[str, ...]
    needs: str = ""  # a module that must import, else the section says it was not measured


SECTIONS: tuple[Section, ...] = (
    Section("speed", "dpsql against raw DuckDB, per query and stage", "speed",
            ("--rows", "100000", "1000000", "10000000", "--no-diagnose"), ("--rows", "20000", "--repeat", "2", "--ref-repeat", "1", "--no-diagnose")),
    Section("fixed-cost", "The fixed cost per query (an open connection)", "bench_fixed_cost",
            ("--repeat", "41"), ("--repeat", "3")),
    Section("fixed-cost-fresh", "The fixed cost per query (a new connection per query)", "bench_fixed_cost",
            ("--repeat", "41", "--fresh"), ("--repeat", "3", "--fresh")),
    Section("open", "Opening a connection against opening DuckDB", "bench_open",
            ("--repeat", "101"), ("--repeat", "3")),
    Section("server", "The wire server: latency, 1, 8 and 32 clients, CPU per answer", "server",
            ("--queries", "300", "--seconds", "10", "--clients", "1", "8", "32"),
            ("--queries", "3", "--seconds", "0.5", "--clients", "1", "2"), needs="psycopg"),
    Section("samplers", "The exact samplers against OpenDP's", "bench_samplers",
            (), ("--sizes", "1", "100", "--budget", "0.05"), needs="opendp"),
    Section("fresh", "A fresh process: `dpsql query` against a one-shot DuckDB script", "bench_fresh",
            ("--repeat", "9"), ("--repeat", "1")),
    Section("many-rows", "Many rows per unit: dpsql, its floor and the plain query", "many_rows",
            ("--rows", "10000000", "--units", "1000000", "--runs", "5"), ("--rows", "20000", "--runs", "1")),
    Section("many-groups", "Many groups: 100k and 1M groups against raw DuckDB's GROUP BY", "many_groups",
            ("--rows", "10000000", "--repeat", "7"), ("--rows", "20000", "--repeat", "1")),
    Section("quantile-speed", "Quantiles against DuckDB's own MEDIAN, by a public and a private key", "quantile_speed",
            ("--repeat", "5"), ("--rows", "20000", "--repeat", "1")),
    Section("quantile-memory", "A median by a private key of many groups: peak memory", "quantile_memory",
            ("--groups", "20000", "--per-group", "50"), ("--groups", "100", "--per-group", "5")),
    Section("spark", "On Spark (`local[2]`) against raw Spark SQL", "spark",
            ("--rows", "10000000"), (), needs="pyspark"),
)


def _missing(module: str) -> str | None:
    if not module:
        return None
    import importlib.util

    return None if importlib.util.find_spec(module) is not None else module


def run_section(s: Section, quick: bool, data_dir: Path) -> str:
    """The section's Markdown: its command, its load before and after, and what it printed."""
    argv = list(s.quick if quick else s.full)
    if s.module in ("speed", "server", "quantile_speed", "quantile_memory", "many_groups") and data_dir != DATA_DIR:
        argv += ["--data-dir", str(data_dir)]
    command = f"python -m benchmarks.{s.module} {' '.join(argv)}".rstrip()
    head = f"### {s.title}\n\n`{command}`"
    if quick and not s.quick:
        return f"{head}\n\n(not run in --quick)\n"
    missing = _missing(s.needs)
    if missing:
        return f"{head}\n\n(not measured: `{missing}` is not installed)\n"
    import importlib

    load0, t0 = os.getloadavg(), time.perf_counter()
    out = io.StringIO()
    try:
        main: Callable[[list[str]], object] = importlib.import_module(f"benchmarks.{s.module}").main
        with contextlib.redirect_stdout(out):
            main(argv)
        body = out.getvalue().strip()
    except Exception:  # noqa: BLE001 - one broken benchmark must not lose the others' figures
        body = out.getvalue().strip() + "\n\n```\n(failed)\n" + traceback.format_exc(limit=3) + "```"
    load1 = os.getloadavg()
    stamp = (f"_{datetime.date.today().isoformat()}, {time.perf_counter() - t0:.0f} s; load average "
             f"{load0[0]:.1f} before, {load1[0]:.1f} after ({os.cpu_count()} cores): the ratios hold under "
             f"that load, the absolute times less._")
    if not any(line.startswith("|") for line in body.splitlines()):
        body = f"```\n{body}\n```"  # plain printed lines (JSON, key = value) read as they were printed
    return f"{head}\n\n{stamp}\n\n{body}\n"


def run(quick: bool = False, only: list[str] | None = None, doc: Path | None = None,
        data_dir: Path = DATA_DIR) -> Path:
    """Run the sections (all, or ``only``) and write them into ``doc``; returns the file written."""
    doc = doc or (QUICK_DIR / "performance.md" if quick else DOC)
    if quick and not doc.exists() and DOC.exists():
        doc.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DOC, doc)  # the prose around the numbers
    unknown = set(only or ()) - {s.name for s in SECTIONS}
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; known: {', '.join(s.name for s in SECTIONS)}")
    for s in SECTIONS:
        if only and s.name not in only:
            continue
        log(f"== performance: {s.name}")
        t = time.perf_counter()
        update_section(doc, f"perf-{s.name}", run_section(s, quick, data_dir))
        log(f"== performance: {s.name} {time.perf_counter() - t:.0f} s")
    return doc


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.performance", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", nargs="+", metavar="SECTION", help=", ".join(s.name for s in SECTIONS))
    p.add_argument("--doc", type=Path)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = p.parse_args(argv)
    print(run(args.quick, args.only, args.doc, args.data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
