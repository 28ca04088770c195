"""A real ``dpsql serve`` subprocess for the client tests: its own DPSQL_HOME and state folder,
users added with the real ``dpsql user add``, a free port read from the server's own
"listening on" line, and a clean stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def env(home: Path) -> dict[str, str]:
    out = {**os.environ, "DPSQL_HOME": str(home), "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out.pop("PGPASSWORD", None)
    return out


def add_user(home: Path, name: str, password: str, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "dpsql", "user", "add", name, *extra], input=password + "\n", text=True,
                   env=env(home), check=True, capture_output=True, timeout=60)


@dataclass
class Served:
    process: subprocess.Popen[str]
    host: str
    port: int
    home: Path

    def dsn(self, user: str, password: str, **extra: str) -> str:
        parts = {"host": self.host, "port": str(self.port), "user": user, "password": password, "dbname": "demo",
                 "sslmode": "disable", **extra}
        return " ".join(f"{k}={v}" for k, v in parts.items())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(home: Path, *args: str, timeout: float = 120.0) -> Served:
    """``dpsql serve --port 0 ARGS`` with DPSQL_HOME=home; returns once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "dpsql", "serve", "--port", "0", *args], env=env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    seen = []
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"listening on ([\d.]+):(\d+)", line)
        if m:
            # Keep reading stderr so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
            return Served(proc, m.group(1), int(m.group(2)), home)
    proc.kill()
    raise RuntimeError("dpsql serve did not start:\n" + "".join(seen))
