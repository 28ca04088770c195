"""The loopback Spark cluster of the tests (tests/spark_cluster.py) ends with the process that
started it, however that process ends. pytest-timeout's thread method ends a hung test with
``os._exit``, which skips the cluster's ``finally``: a master and a worker JVM were left running
after such a run (2026-11-26). The child here starts the cluster and ends with ``os._exit``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

CHILD = """
import os, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from spark_cluster import standalone_cluster
with standalone_cluster(Path({folder!r})) as (url, log):
    kids = [int(k) for t in Path("/proc/self/task").iterdir() for k in (t / "children").read_text().split()]
    print(" ".join(str(k) for k in kids if "java" in Path(f"/proc/{{k}}/cmdline").read_bytes().decode(errors="replace")), flush=True)
    os._exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running; the test's reaper is init, which reaps it soon
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_the_cluster_ends_with_a_process_that_ends_by_os_exit(tmp_path):
    code = CHILD.format(tests=str(Path(__file__).parent), folder=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=400)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, (out.stdout, out.stderr[-2000:])  # a master and a worker
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.5)
    left = [p for p in pids if _alive(p)]
    for p in left:  # do not leave them to the next test either way
        os.kill(p, 9)
    assert not left, f"JVMs {left} outlived the process that started them"
