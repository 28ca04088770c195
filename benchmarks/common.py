"""Shared plumbing of the benchmarks: paths, the demo data, the machine, timing, and output.

Output is data first: every table is a list of dicts, written as CSV (``docs/evaluation/``)
and rendered as Markdown into a marked section of ``docs/evaluation.md``, so a subcommand
regenerates exactly its own numbers and leaves the hand-written prose alone.
"""

from __future__ import annotations

import csv
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "data"  # gitignored: demo databases, temporary policies and ledgers
DOC = REPO / "docs" / "evaluation.md"
OUT_DIR = REPO / "docs" / "evaluation"
QUICK_DIR = DATA_DIR / "quick"  # --quick writes here, never over the committed numbers


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def clock(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def ms(seconds: float) -> str:
    v = seconds * 1e3
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (a high-water mark: it never goes down):
    Linux's VmHWM, the process's own. ``ru_maxrss`` is the fallback elsewhere; Linux carries it
    over exec from the parent, so a child started by a big process would report the parent's."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rows_label(rows: int) -> str:
    return f"{rows / 1e6:g}M" if rows >= 1_000_000 else f"{rows / 1e3:g}k"


# ------------------------------------------------------------------------------ demo data

def ensure_data(rows: int, data_dir: Path) -> tuple[Path, Path]:
    """The demo database of ``rows`` establishments and its policy, built in a child process
    (so the builder's memory is not in the benchmark's peak RSS) if missing or stale."""
    data_dir.mkdir(parents=True, exist_ok=True)
    build = ("import sys; from dpsql.demo_db import ensure_demo; "
             "ensure_demo(rows=int(sys.argv[1]), home=sys.argv[2], "
             "progress=lambda m: print('  [build]', m, file=sys.stderr, flush=True))")
    subprocess.run([sys.executable, "-c", build, str(rows), str(data_dir)], check=True)
    from dpsql.demo_db import ensure_demo

    return ensure_demo(rows=rows, home=data_dir)  # current now: returns the paths


def benchmark_policy(policy: Path, directory: Path, total_rho: int = 10**9) -> Path:
    """A copy of ``policy`` in ``directory`` with a per-analyst budget of ``total_rho``.

    Charges are durable in a SQLite ledger beside the policy file, and the demo policy's
    budget is ~100 queries: benchmarking against the copy never spends the real ledger.
    """
    text = policy.read_text()
    text, n = re.subn(r"(?m)^(\s*total_rho\s*=\s*)[^#\n]*", rf"\g<1>{total_rho}", text)
    if n != 1:
        raise RuntimeError(f"{policy}: expected exactly one budget.total_rho line")
    text = re.sub(r"(?m)^\s*(ledger|dataset_rho)\s*=.*$", "", text)  # ledger beside the copy, no data-set cap
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / policy.name
    out.write_text(text)
    return out


# ------------------------------------------------------------------------------ machine

def machine_info() -> list[str]:
    import duckdb
    import numpy as np

    import dpsql

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
    return [(f"machine: {nproc} CPUs available (nproc), {cpu or 'unknown CPU'}, {mem:.0f} GiB RAM, "
             f"{platform.system()} {platform.release()}"),
            (f"software: python {platform.python_version()}, duckdb {duckdb.__version__}, "
             f"numpy {np.__version__}, dpsql {dpsql.__version__}")]


# ------------------------------------------------------------------------------ output

def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for r in rows:
        fields.extend(k for k in r if k not in fields)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A Markdown table; ``align`` is one letter per column, ``l`` or ``r`` (default: first left)."""
    header = list(header)
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def pct(x: float, digits: int = 1) -> str:
    if math.isnan(x):
        return "–"
    v = 100 * x
    if v != 0 and abs(v) < 10 ** -digits:
        return f"{v:.1g}%"
    return f"{v:.{digits}f}%"


def are_str(x: float) -> str:
    """An ARE as a percentage with two significant digits (they span 0.001% to 10,000%)."""
    if math.isnan(x):
        return "–"
    v = 100 * x
    if v >= 100:
        return f"{v:,.0f}%"
    return f"{v:.2g}%" if v >= 0.01 else f"{v:.1g}%"


def update_section(doc: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- BEGIN generated: name -->`` and its END marker in
    ``doc`` (appending a new marked section if the file or the markers do not exist yet)."""
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + ("\n\n" if text else "") + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def prepare_quick_doc(doc: Path) -> None:
    """--quick renders into a copy of docs/evaluation.md, so the prose reads around the numbers."""
    if not doc.exists() and DOC.exists():
        doc.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DOC, doc)


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
