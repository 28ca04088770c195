"""`python -m benchmarks performance --quick` (benchmarks/performance.py, issue 34) runs and writes
its sections, each with its command and load, into the Markdown file it is given. A smoke run on
tiny data: four of its sections, no timing asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_run_writes_its_sections_with_their_load(demo_files, tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nProse that stays.\n\n<!-- BEGIN generated: perf-quantile-speed -->\nold figures\n"
                   "<!-- END generated: perf-quantile-speed -->\n\nProse after it.\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "benchmarks", "performance", "--quick", "--only", "open", "fixed-cost",
                           "quantile-memory", "quantile-speed", "many-groups", "--doc", str(doc), "--data-dir", str(tmp_path / "data")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    text = doc.read_text()
    assert text.startswith("# Performance\n\nProse that stays.\n")
    for name in ("open", "fixed-cost", "quantile-memory", "quantile-speed", "many-groups"):
        begin, end = f"<!-- BEGIN generated: perf-{name} -->", f"<!-- END generated: perf-{name} -->"
        assert text.count(begin) == 1 and text.count(end) == 1
        section = text.split(begin)[1].split(end)[0]
        assert "load average" in section and "python -m benchmarks." in section and "(failed)" not in section
    opened = text.split("<!-- BEGIN generated: perf-open -->")[1]
    assert "| dpsql: open + close |" in opened and "| raw DuckDB: open + close |" in opened
    assert "<!-- BEGIN generated: perf-server -->" not in text  # --only: the other sections are not run
    groups = text.split("<!-- BEGIN generated: perf-many-groups -->")[1].split("<!-- END generated")[0]
    assert "| 100k groups, public keyset |" in groups and "--rows 20000" in groups
    # quantile-speed rewritten in place (its markers were there): its table of both keys, the prose after it kept
    speed = text.split("<!-- BEGIN generated: perf-quantile-speed -->")[1].split("<!-- END generated")[0]
    assert "old figures" not in speed and "--rows 20000" in speed
    assert "| rows | key | DuckDB MEDIAN |" in speed
    assert [line.split("|")[2].strip() for line in speed.splitlines() if line.startswith("| 20k |")] == ["`state`", "`county`"]
    assert text.index("<!-- END generated: perf-quantile-speed -->") < text.index("Prose after it.")
