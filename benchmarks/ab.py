"""Speed of two revisions of dpsql in one run: each query's dpsql/raw DuckDB ratio, side by side.

For a refactor or a speed change, the question is whether the same queries cost more against
raw DuckDB after than before, on the same machine at the same time. This runs
``benchmarks/bench_engine.py`` of each revision (checked out in a temporary git worktree, on its
own code) in alternation, ``--rounds`` times, over the same demo database, and prints for each
query the median of its ratios per revision and their quotient (after / before).

    python -m benchmarks.ab 7bf6595 HEAD                  # 1M rows, 2 rounds, 7 runs each
    python -m benchmarks.ab main~3 WORKTREE --rows 10000000 --rounds 3

``WORKTREE`` stands for the files as they are now, committed or not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import DATA_DIR, REPO, log


def ratios(markdown: str) -> dict[str, float]:
    """query label -> dpsql/raw, read from bench_engine.py's first table."""
    out: dict[str, float] = {}
    header: list[str] | None = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            if header is not None and out:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            if "dpsql/raw" in cells and "query" in cells:
                header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        try:
            out[cells[header.index("query")]] = float(cells[header.index("dpsql/raw")].strip("* ").rstrip("×x"))
        except ValueError:
            continue  # a pending (refused) query
    return out


def checkout(rev: str, where: Path) -> Path:
    if rev == "WORKTREE":
        return REPO
    path = where / rev.replace("/", "_").replace("~", "-")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(path), rev], check=True,
                   capture_output=True)
    (path / "dpsql" / "demo_db").symlink_to("../demo_db")  # untracked in every checkout: dpsql.demo_db imports through it
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="a git revision (or WORKTREE)")
    p.add_argument("after", help="a git revision (or WORKTREE)")
    p.add_argument("--rows", type=int, default=1_000_000, help="table size (default 1M)")
    p.add_argument("--rounds", type=int, default=2, help="runs of each revision, alternated (default 2)")
    p.add_argument("--repeat", type=int, default=7, help="timed runs per query and side within a run (default 7)")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the demo database is built")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dpsql-ab-") as tmp:
        trees = {rev: checkout(rev, Path(tmp)) for rev in (args.before, args.after)}
        seen: dict[str, list[dict[str, float]]] = {rev: [] for rev in trees}
        try:
            for r in range(args.rounds):
                for rev, tree in trees.items():
                    log(f"round {r + 1}/{args.rounds}: {rev}")
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    run = subprocess.run([sys.executable, str(tree / "benchmarks" / "bench_engine.py"), "--rows",
                                          str(args.rows), "--repeat", str(args.repeat), "--ref-repeat", "1",
                                          "--data-dir", str(args.data_dir)],
                                         cwd=tree, env=env, capture_output=True, text=True, check=True)
                    seen[rev].append(ratios(run.stdout))
        finally:
            for rev, tree in trees.items():
                if tree != REPO:
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                                   capture_output=True)
    before, after = (seen[args.before], seen[args.after])
    labels = [q for q in before[0] if all(q in s for s in before + after)]
    print(f"dpsql/raw DuckDB at {args.rows:,} rows, median of {args.rounds} alternated runs of each revision "
          f"({args.repeat} timed runs per query and side in each)\n")
    print(f"| query | {args.before} | {args.after} | after / before |")
    print("|---|---:|---:|---:|")
    for q in labels:
        b = statistics.median(s[q] for s in before)
        a = statistics.median(s[q] for s in after)
        print(f"| {q} | {b:.2f}× | {a:.2f}× | {a / b:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
