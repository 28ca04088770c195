"""A standalone Spark cluster on loopback for the Spark tests (issue 34): one master and one
worker, each a JVM started from pyspark's own jars (``bin/spark-class``), on ports the OS picks.

``--spark-master spark://…`` once ran on ``local[*]`` and no test noticed, because every test ran
``local[2]``: the Spark tests now run on this cluster, and check that the driver's master is it
and that the application registered with the master and ran an executor on the worker.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if re.search(pattern, log.read_text(errors="replace")):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: the JVM exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"{log.name}: no {pattern!r} within {seconds} s:\n{log.read_text()[-2000:]}")


def _die_with_parent() -> None:
    """In the child before it runs spark-class: SIGTERM when the process that started it ends,
    however it ends (prctl PR_SET_PDEATHSIG, Linux). spark-class ends by exec'ing the JVM, which
    keeps the setting: pytest-timeout ends a hung test with os._exit, which skips the ``finally``
    below, and the master and worker were left running."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


@contextmanager
def standalone_cluster(folder: Path, cores: int = 2, memory: str = "2g") -> Iterator[tuple[str, Path]]:
    """(master URL, master log) of a master and a worker on 127.0.0.1; both stop on exit."""
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(folder), "SPARK_WORKER_DIR": str(folder / "work")}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    logs = {name: folder / f"{name}.log" for name in ("master", "worker")}
    try:
        with logs["master"].open("w") as out:
            procs.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())], stdout=out, stderr=subprocess.STDOUT, env=env,
                preexec_fn=_die_with_parent))
        _wait_for(logs["master"], r"New state: ALIVE", procs[0], 180)
        with logs["worker"].open("w") as out:
            procs.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--webui-port", str(_free_port()), "--cores", str(cores), "--memory", memory, url],
                stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent))
        _wait_for(logs["worker"], r"Successfully registered with master", procs[1], 180)
        yield url, logs["master"]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
