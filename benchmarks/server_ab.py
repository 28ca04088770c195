"""The server's CPU per answer of two revisions, loaded in alternating slices of one run.

    python -m benchmarks.server_ab 74ff72a WORKTREE                 # 5 rounds of 2 s slices, 1 8 32 clients
    python -m benchmarks.server_ab main~3 HEAD --rounds 8 --seconds 3 --clients 8

On a shared machine one run of ``benchmarks/server.py`` per revision varies more than a change
of a few per cent (1.76-2.42× raw for one revision at load 13). Here both revisions' ``dpsql
serve`` run at once (each from its own tree, checked out as ``benchmarks/ab.py`` does), on the
same demo database, and each round loads one then the other with the same number of clients
for ``--seconds`` (the order alternating), so both see the same machine; raw DuckDB's CPU per
query is measured in this process between the slices. Printed: each revision's server CPU per
answer (from /proc, as ``benchmarks/server.py``), its ratio to raw DuckDB's, and after ÷ before.
Both servers charge a copy of the policy with a huge budget in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .ab import checkout
from .common import DATA_DIR, REPO, benchmark_policy, ensure_data, log
from .server import load, raw_cpu_per_query
from .speed import HEADLINE, QUERIES


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="a git revision (or WORKTREE)")
    p.add_argument("after", help="a git revision (or WORKTREE)")
    p.add_argument("--rounds", type=int, default=5, help="slices per revision and client count (default 5)")
    p.add_argument("--seconds", type=float, default=2.0, help="length of one slice (default 2)")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32], help="client counts (default 1 8 32)")
    p.add_argument("--rows", type=int, default=200_000, help="demo table size (default 200k, the demo's)")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the demo database is built")
    args = p.parse_args(argv)

    import duckdb

    sys.path.insert(0, str(REPO / "tests"))
    import server_harness

    from dpsql.backends.duckdb import LOCKDOWN

    database, policy = ensure_data(args.rows, args.data_dir)
    sql = QUERIES[HEADLINE].sql
    sides = (args.before, args.after)
    cpu = {(s, n): [0.0, 0] for s in sides for n in args.clients}
    raws: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dpsql-server-ab-") as tmp:
        trees = {rev: checkout(rev, Path(tmp)) for rev in sides}
        servers = {}
        try:
            bpolicy = benchmark_policy(policy, Path(tmp) / "policy")
            for i, rev in enumerate(sides):
                server_harness.REPO = trees[rev]  # the subprocess's PYTHONPATH: that revision's code
                servers[rev] = server_harness.DpsqlServer.start(Path(tmp) / f"server{i}", database, bpolicy,
                                                                "--max-connections", str(max(args.clients) + 10))
                servers[rev].add_user("bench", cli=False)
            raw = duckdb.connect(str(database), read_only=True, config=dict(LOCKDOWN))

            def slice_of(rev: str, n: int, seconds: float) -> dict[str, Any]:
                srv = servers[rev]
                return load(lambda: srv.connect("bench", options="-c dpsql.reuse=off"), sql, n, seconds, srv.process.pid)

            for rev in sides:
                slice_of(rev, 4, 1.0)  # warm: plans, records, the unit check
            for r in range(args.rounds):
                for n in args.clients:
                    for rev in (sides if (r + n) % 2 == 0 else sides[::-1]):
                        res = slice_of(rev, n, args.seconds)
                        cpu[(rev, n)][0] += res["server_cpu"] * res["queries"]
                        cpu[(rev, n)][1] += res["queries"]
                    raws.append(raw_cpu_per_query(lambda: raw.execute(sql).fetchall(), 10))
                log(f"round {r + 1}/{args.rounds}, load {os.getloadavg()[0]:.1f}")
            raw.close()
        finally:
            for srv in servers.values():
                srv.stop()
            for tree in trees.values():
                if tree != REPO:
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                                   capture_output=True)
    raw_cpu = statistics.median(raws)
    print(f"Server CPU per answer, `{sql}`; {args.rounds} alternating slices of {args.seconds:g} s per revision "
          f"and client count; raw DuckDB's CPU per query {raw_cpu * 1000:.2f} ms (median of {len(raws)} batches); "
          f"load average {os.getloadavg()[0]:.1f}.\n")
    print(f"| clients | {args.before}: ms (÷ raw) | {args.after}: ms (÷ raw) | after ÷ before | answers |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.clients:
        b, a = (cpu[(rev, n)][0] / cpu[(rev, n)][1] for rev in sides)
        print(f"| {n} | {b * 1000:.2f} ({b / raw_cpu:.2f}×) | {a * 1000:.2f} ({a / raw_cpu:.2f}×) | {a / b:.3f} "
              f"| {cpu[(sides[0], n)][1]} / {cpu[(sides[1], n)][1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
