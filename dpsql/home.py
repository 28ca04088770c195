"""dpsql's per-user directory: where the demo database is cached and the REPL keeps its history.

One definition for both, so that ``DPSQL_HOME`` moves them together.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """dpsql's per-user directory: $DPSQL_HOME, else ~/.cache/dpsql (where the demo lives too)."""
    return Path(os.environ.get("DPSQL_HOME") or Path.home() / ".cache" / "dpsql").expanduser()
