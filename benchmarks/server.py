"""What the wire costs: ``dpsql serve`` against embedded dpsql and raw DuckDB, in one run.

    python -m benchmarks.server                          # the demo (200k rows): latency, then 1, 8, 32 clients
    python -m benchmarks.server --rows 1000000 --queries 50 --seconds 3 --clients 1 8
    python -m benchmarks.server --database DB --policy P --query "SELECT ..."

The same query (by default the headline of ``benchmarks/speed.py``: GROUP BY naics2, a public
keyset, COUNT + SUM + AVG) runs three ways, interleaved so all see the same machine: embedded
dpsql through the DB-API (``dpsql.connect``), and over the wire to a ``dpsql serve``
subprocess on loopback with psycopg 3, once with its default extended protocol
(Parse/Bind/Describe/Execute/Sync per query) and once with the simple protocol (a
``ClientCursor``: one Query message). The medians give the latency the wire adds to a private
answer. The exact query on a raw read-only DuckDB connection is timed apart, for reference
(interleaved, it slowed the dpsql query after it by several ms on two cores). Then 1, 8 and 50 clients (threads, each with its own
psycopg connection, all as one analyst) send the query back to back for ``--seconds`` each:
queries per second, and each query's median and 95th-percentile latency under that load.
Connection setup (TCP, SCRAM, the server opening a session) is timed apart. The server's CPU
time per answer (from /proc) is set beside raw DuckDB's for the same query: the CPU time of this
process (``time.process_time``, DuckDB's threads included) per ``execute`` + ``fetchall`` on a
raw read-only connection, measured with nothing else running in it, and beside raw DuckDB's at
the same concurrency (the same number of threads of this process, each with its own cursor on
the raw connection, back to back for ``--seconds``: :func:`raw_load`). The 1-minute load average
is printed beside each table.

Every private answer is charged durably before it is returned (a SQLite commit with
``synchronous=FULL``), so the benchmark runs on a copy of the policy with a huge budget, in a
temporary folder: the real ledger is never spent. The server is started by
``tests/server_harness.py`` (psycopg and the harness come with ``pip install -e ".[test]"``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import DATA_DIR, REPO, benchmark_policy, ensure_data, log, machine_info, ms
from .speed import HEADLINE, QUERIES

CLIENTS = (1, 8, 32)


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def latencies(ways: dict[str, Callable[[], Any]], n: int, warmup: int = 3) -> dict[str, list[float]]:
    """``n`` timed calls of each way after ``warmup`` untimed ones, interleaved and rotated so
    that no way always goes first."""
    names = list(ways)
    for _ in range(warmup):
        for name in names:
            ways[name]()
    out: dict[str, list[float]] = {name: [] for name in names}
    for i in range(n):
        for name in names[i % len(names):] + names[:i % len(names)]:
            out[name].append(_timed(ways[name]))
    return out


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux: /proc/PID/stat), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def load(connect: Callable[[], Any], sql: str, clients: int, seconds: float, server_pid: int) -> dict[str, Any]:
    """``clients`` threads, each with its own connection, sending ``sql`` back to back for
    ``seconds``: queries per second, the latency of each query under that load, and the
    server's CPU time per query."""
    conns = [connect() for _ in range(clients)]
    go = threading.Barrier(clients + 1)
    stop = threading.Event()
    times: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []

    def client(i: int) -> None:
        cur = conns[i].cursor()
        go.wait()
        while not stop.is_set():
            try:
                times[i].append(_timed(lambda: cur.execute(sql).fetchall()))
            except Exception as exc:  # noqa: BLE001 - counted and shown: the run is then not valid
                errors.append(f"{type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    t0, cpu0 = time.perf_counter(), cpu_seconds(server_pid)
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed, cpu1 = time.perf_counter() - t0, cpu_seconds(server_pid)
    for c in conns:
        c.close()
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed, e.g. {errors[0]}")
    every = sorted(x for ts in times for x in ts)
    return {"clients": clients, "queries": len(every), "qps": len(every) / elapsed,
            "median": statistics.median(every), "p95": every[int(0.95 * (len(every) - 1))],
            "server_cpu": (cpu1 - cpu0) / len(every) if cpu0 is not None and cpu1 is not None and every else None}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb
    import psycopg

    import dpsql
    from dpsql.backends.duckdb import LOCKDOWN

    sys.path.insert(0, str(REPO / "tests"))
    from server_harness import DpsqlServer

    if args.database:
        database, policy = Path(args.database), Path(args.policy)
    else:
        database, policy = ensure_data(args.rows, args.data_dir)
    sql = args.query or QUERIES[HEADLINE].sql
    with tempfile.TemporaryDirectory(prefix="dpsql-bench-server-") as tmp:
        bpolicy = benchmark_policy(policy, Path(tmp) / "policy")
        serve_args = ["--max-connections", str(max(args.clients) + 10)]
        if args.server_threads:
            serve_args += ["--threads", str(args.server_threads)]
        log(f"starting dpsql serve on {database} ...")
        with DpsqlServer.start(Path(tmp) / "server", database, bpolicy, *serve_args) as srv:
            srv.add_user("bench", cli=False)
            # one configuration per database file in a process: the raw connection takes dpsql's
            raw = duckdb.connect(str(database), read_only=True, config=dict(LOCKDOWN))
            embedded = dpsql.connect(database, bpolicy, reuse=False).cursor()
            wire = srv.connect("bench", options="-c dpsql.reuse=off")
            simple = psycopg.ClientCursor(srv.connect("bench", options="-c dpsql.reuse=off"))
            ways = {
                "embedded dpsql (DB-API)": lambda: (embedded.execute(sql), embedded.fetchall()),
                "wire, psycopg extended protocol": lambda: wire.execute(sql).fetchall(),
                "wire, psycopg simple protocol": lambda: simple.execute(sql).fetchall(),
            }
            log(f"latency: {args.queries} queries each way, interleaved ...")
            lat = latencies(ways, args.queries)
            # Raw DuckDB apart: interleaved, it slowed the next dpsql query by ~7 ms on 2 cores,
            # embedded or over the wire alike (its worker threads linger on both cores).
            lat = {"raw DuckDB (exact query)": latencies({"raw": lambda: raw.execute(sql).fetchall()},
                                                         args.queries)["raw"], **lat}
            load_latency = os.getloadavg()[0]
            raw_cpu = raw_cpu_per_query(lambda: raw.execute(sql).fetchall(), args.queries)
            log("connection setup ...")
            setup = [_timed(lambda: srv.connect("bench", options="-c dpsql.reuse=off").close()) for _ in range(max(5, args.queries // 10))]
            loads = []
            for n in args.clients:
                log(f"{n} client(s) for {args.seconds} s ...")
                loads.append(load(lambda: srv.connect("bench", options="-c dpsql.reuse=off"), sql, n, args.seconds, srv.process.pid))
                loads[-1]["load"] = os.getloadavg()[0]
                loads[-1]["raw_cpu_n"] = raw_load(raw, sql, n, args.seconds)  # raw DuckDB at the same concurrency
            raw.close()
            wire.close()
            simple.connection.close()
            charged = len(srv.charges("bench"))
    return {"sql": sql, "rows": None if args.database else args.rows, "database": str(database),
            "latency": {k: statistics.median(v) for k, v in lat.items()}, "n": args.queries,
            "setup": statistics.median(setup), "loads": loads, "charged": charged, "machine": machine_info(),
            "raw_cpu": raw_cpu, "load_latency": load_latency}


def raw_load(raw: Any, sql: str, clients: int, seconds: float) -> float:
    """Raw DuckDB's CPU per query at the same concurrency as a load step: ``clients`` threads of
    this process, each with its own cursor on the raw read-only connection, sending ``sql`` back
    to back for ``seconds``; this process's CPU time (every thread's, DuckDB's included) per query.
    With many clients DuckDB's own CPU per query grows (its threads and the clients' contend for
    two cores), so the server's figure at N clients is set beside raw DuckDB's at N clients too."""
    go, stop, done = threading.Barrier(clients + 1), threading.Event(), [0] * clients

    def client(i: int) -> None:
        cur = raw.cursor()
        go.wait()
        while not stop.is_set():
            cur.execute(sql).fetchall()
            done[i] += 1
        cur.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    c0 = time.process_time()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return (time.process_time() - c0) / max(1, sum(done))


def raw_cpu_per_query(run_query: Callable[[], Any], n: int) -> float:
    """CPU seconds of this process per raw query (all its threads), the median of five batches."""
    batches = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(max(1, n // 5)):
            run_query()
        batches.append((time.process_time() - c0) / max(1, n // 5))
    return statistics.median(batches)


def render(res: dict[str, Any]) -> str:
    lat = res["latency"]
    base = lat["embedded dpsql (DB-API)"]
    out = [f"Query: `{res['sql']}`" + (f" on {res['rows']:,} rows" if res["rows"] else f" on {res['database']}") + ".",
           "", f"Median of {res['n']} runs each (the dpsql paths interleaved, raw DuckDB apart; "
               f"load average {res.get('load_latency', 0):.1f}):", "",
           "| path | median ms | added to embedded |", "|---|---:|---:|"]
    for name, t in lat.items():
        d = t - base
        added = "" if name.startswith(("raw", "embedded")) else f"{'+' if d >= 0 else '−'}{ms(abs(d))} ms"
        out.append(f"| {name} | {ms(t)} | {added} |")
    out += ["", f"Connection setup (TCP, SCRAM-SHA-256, the server opening a session): {ms(res['setup'])} ms median.", "",
            f"Raw DuckDB's CPU per query (this process, the exact query): {ms(res['raw_cpu'])} ms.", "",
            "| clients | queries/s | median ms | p95 ms | server CPU ms per query | ÷ raw DuckDB's CPU | "
            "raw DuckDB's CPU ms per query, same clients | ÷ it | load |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for ld in res["loads"]:
        cpu = ms(ld["server_cpu"]) if ld["server_cpu"] is not None else "?"
        ratio = f"{ld['server_cpu'] / res['raw_cpu']:.2f}×" if ld["server_cpu"] is not None and res["raw_cpu"] else "?"
        rn = ld.get("raw_cpu_n")
        ratio_n = f"{ld['server_cpu'] / rn:.2f}×" if ld["server_cpu"] is not None and rn else "?"
        out.append(f"| {ld['clients']} | {ld['qps']:.0f} | {ms(ld['median'])} | {ms(ld['p95'])} | {cpu} | {ratio} "
                   f"| {ms(rn) if rn else '?'} | {ratio_n} | {ld.get('load', 0):.1f} |")
    out += ["", f"{res['charged']:,} answers charged to the server's ledger, each committed before it was sent.",
            "", *(f"* {line}" for line in res["machine"])]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=200_000, help="demo table size (default 200k, the demo's)")
    p.add_argument("--queries", type=int, default=300, help="timed queries per path for the latency (default 300)")
    p.add_argument("--seconds", type=float, default=10.0, help="duration of each load run (default 10)")
    p.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS), help="client counts (default 1 8 32)")
    p.add_argument("--server-threads", type=int, help="the server's DuckDB threads per query (default: all cores)")
    p.add_argument("--query", help="the SQL (default: GROUP BY naics2, the speed benchmark's headline)")
    p.add_argument("--database", help="a DuckDB file instead of the demo data (with --policy)")
    p.add_argument("--policy", help="its policy file")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="where the demo database is built")
    args = p.parse_args(argv)
    if bool(args.database) != bool(args.policy):
        p.error("give --database and --policy together")
    print(render(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
