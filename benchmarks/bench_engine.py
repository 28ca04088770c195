"""End-to-end cost of dpsql against raw DuckDB: the old entry point of ``benchmarks/speed.py``.

    python benchmarks/bench_engine.py                       # 1M and 10M rows, 7 runs
    python benchmarks/bench_engine.py --rows 1000000 --repeat 9 --markdown results.md
    python benchmarks/bench_engine.py --diagnose            # also time dpsql's building blocks

``python -m benchmarks speed`` runs the same code and writes its tables into
``docs/evaluation.md`` and ``docs/evaluation/speed.csv``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.speed import QUERIES, bench_size, expansion_sql, main, run

__all__ = ["QUERIES", "bench_size", "expansion_sql", "main", "run"]

if __name__ == "__main__":
    sys.exit(main())
