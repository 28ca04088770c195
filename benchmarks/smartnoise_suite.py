"""SmartNoise SQL's own query suite on its PUMS sample, through dpsql (issue 32; docs/evaluation.md,
"SmartNoise's query suite on PUMS"). Not CI: it needs the peers' venv for the SmartNoise column.

    python3 -m benchmarks.smartnoise_suite [--reps 5] [--epsilon 1] [--delta 1e-5] [--no-peer]
        [--match tight|analytic|zcdp|geometric] [--peer-cache FILE] [--only REGEX]

The queries are benchmarks/data/smartnoise_pums_queries.json (benchmarks/smartnoise_collect.py,
from SmartNoise's tests and notebooks). The data is SmartNoise's 1,000-person sample
(../shared/data/pums/PUMS_pid.csv) as one table ``pums``; every PUMS table name of a query
(``PUMS.PUMS``, ``pums``, ``PUMS_large``, ...) is read as it — the only change made to a query.
Two dpsql columns: the hand-written policy benchmarks/data/smartnoise_pums.policy.toml (key
columns declared NOT NULL, as the data has none), and the draft ``dpsql init PUMS.csv --unit pid``
writes, as it is but for its budget walls (widened so 153 queries fit; each query's ρ is the
script's). SmartNoise runs each query with its own PUMS metadata (PUMS_pid.yaml).

Matched privacy: SmartNoise gets Privacy(epsilon=ε, delta=δ) per query and spends ε per aggregate
it computes (a query of SUM and COUNT costs 2ε; its ``get_privacy_cost`` says what a query spends
in all, (ε_q, δ_q)); dpsql gets, for its noise, the ρ of ``--match`` (:func:`matched_rho`) at
(ε_q, δ_q): by default the largest ρ whose tight conversion is (ε_q, δ_q)-DP, so each query costs
the same (ε_q, δ_q) in both (a query SmartNoise refuses gets (ε, δ)); ``--match zcdp`` gives ρ = ε²/2, the zCDP of
SmartNoise's Laplace noise. A GROUP BY on a private key (init's draft) adds its partition selection's ε²/2 and δ,
so the draft's answers with private keys cost more than ε — its column is counted, not compared.
``--match geometric`` runs both policies with ``[noise] mechanism = "geometric"`` (pure ε-DP
discrete Laplace) and each query at ``SET dpsql.epsilon = ε_q``: no conversion, each query is
ε_q-DP. A query on a private key gives its partition selection part of the budget instead
(:func:`geometric_split`): (ε_q − ε_s) to the noise, (ε_s, δ_q) to the selection, so by basic
composition it is (ε_q, δ_q)-DP, as SmartNoise's; the script checks every receipt against it.
``--peer-cache FILE`` keeps SmartNoise's answers (they do not depend on ``--match``) and reuses
them when the queries, ε, δ and reps are the same.
Error: per query, the mean over reps and over matched cells (a group key both sides released,
each aggregate column; a query whose selected columns do not identify its groups is not compared) of
|answer − exact|, the exact answer run by DuckDB on the CSV; the ratio is dpsql's over
SmartNoise's (hand policy), and the table gives its median over the queries both answer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from decimal import ROUND_DOWN, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "data" / "smartnoise_pums_queries.json"
HAND_POLICY = HERE / "data" / "smartnoise_pums.policy.toml"
PUMS = HERE.parents[1] / "shared" / "data" / "pums"
PEER_PY = Path("/work/peers-venv/bin/python")
_TABLE = re.compile(r"\b(?:pums\.)*pums(?:_(?:large|null|censored|joined|dup|pid))?\b", re.I)


def as_dpsql(sql: str) -> str:
    return _TABLE.sub("pums", sql)


def as_smartnoise(sql: str) -> str:
    return _TABLE.sub("PUMS.PUMS", sql)


def matched_rho(eps: float, delta: float, how: str = "tight") -> float:
    """dpsql's ρ for a query SmartNoise answers at (ε, δ): ``tight``, the largest ρ whose tight
    (ε, δ) conversion (paper 004, Lemmas 4-5: dpsql.privacy.accounting.epsilon_tight) is at most ε
    — both are then (ε, δ)-DP; ``analytic``, ρ + 2√(ρ ln(1/δ)) = ε (Bun & Steinke's bound, looser);
    ``zcdp``, ρ = ε²/2 — the zCDP that SmartNoise's ε-DP Laplace noise satisfies (its δ, spent on
    thresholding groups, left aside)."""
    if how == "zcdp":
        return eps * eps / 2
    lg = math.log(1 / delta)
    low = (math.sqrt(lg + eps) - math.sqrt(lg)) ** 2  # the analytic ρ: the tight one is never smaller
    if how == "analytic":
        return low
    from dpsql.privacy.accounting import epsilon_tight

    high = eps * eps / 2 + eps  # ε_tight(ρ) ≥ ρ, so past ε
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if epsilon_tight(mid, delta) <= eps else (low, mid)
    return low


def build(folder: Path, geometric: bool = False) -> tuple[Path, Path]:
    """(hand database, init's database) and their policies beside them; ``geometric``: both with
    ``[noise] mechanism = "geometric"`` (pure ε-DP)."""
    csv = PUMS / "PUMS_pid.csv"
    hand = folder / "hand.duckdb"
    con = duckdb.connect(str(hand))
    con.execute("CREATE TABLE pums (age BIGINT NOT NULL, sex BIGINT NOT NULL, educ BIGINT NOT NULL, race BIGINT NOT NULL, "
                "income DOUBLE NOT NULL, married BIGINT NOT NULL, pid BIGINT NOT NULL)")
    con.execute(f"INSERT INTO pums SELECT age, sex, educ, race, income, married, pid FROM read_csv_auto('{csv}')")
    con.close()
    (folder / "hand.policy.toml").write_text(HAND_POLICY.read_text() + ('\n[noise]\nmechanism = "geometric"\n'
                                                                         if geometric else ""))
    init_csv = folder / "pums.csv"
    init_csv.write_bytes(csv.read_bytes())
    subprocess.run([sys.executable, "-m", "dpsql", "init", str(init_csv), "--unit", "pid", "--yes"], check=True,
                   capture_output=True, env=os.environ)
    draft = folder / "pums.policy.toml"
    text = draft.read_text()
    text = re.sub(r"(?m)^total_rho = \S+", "total_rho = 1000000.0", text)
    text = re.sub(r"(?m)^total_delta = \S+", "total_delta = 0.5", text)
    if geometric:
        text, n = re.subn(r'(?m)^mechanism = "discrete_gaussian"', 'mechanism = "geometric"', text)
        assert n == 1, "init's draft no longer names its noise mechanism: update benchmarks/smartnoise_suite.py"
    draft.write_text(text)
    return hand, folder / "pums.duckdb"


def exact(sql: str) -> tuple[list[str], list[tuple]] | None:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE pums AS SELECT * FROM read_csv_auto('{PUMS / 'PUMS_pid.csv'}')")
    for text in (sql, *(sqlglot.transpile(sql, read="tsql", write="duckdb") if "TOP" in sql.upper() else [])):
        try:
            cur = con.execute(text)
            return [d[0] for d in cur.description], cur.fetchall()
        except duckdb.Error:
            continue
    return None


def aggregate_columns(sql: str) -> list[bool] | None:
    """Per SELECT item, whether it holds an aggregate (None when the query does not parse)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        try:
            tree = sqlglot.parse_one(sql, read="tsql")
        except sqlglot.errors.ParseError:
            return None
    if not isinstance(tree, exp.Select) or any(isinstance(e, exp.Star) for e in tree.expressions):
        return None
    return [any(isinstance(n, exp.AggFunc) for n in e.walk()) for e in tree.expressions]


def _key(v: Any) -> str:
    if isinstance(v, bool):
        return str(int(v))
    try:
        f = float(v)
        return str(int(f)) if f == int(f) else repr(f)
    except (TypeError, ValueError, OverflowError):
        return str(v)


def _cell(row: list[Any], aggs: list[bool]) -> tuple[str, ...]:
    return tuple(_key(v) for v, a in zip(row, aggs) if not a)


def released_cells(sql: str, runs: list[list[list[Any]]]) -> set[tuple[str, ...]]:
    """The group keys (the non-aggregate columns) a side released in any of its runs."""
    aggs = aggregate_columns(sql) or []
    return {_cell(row, aggs) for rows in runs for row in rows if len(row) == len(aggs)}


def mean_error(sql: str, runs: list[list[list[Any]]], truth: tuple[list[str], list[tuple]],
               within: set[tuple[str, ...]] | None = None) -> float | None:
    """Mean |answer − exact| over the runs' cells whose group key is in ``within`` (the cells both
    sides released: SmartNoise drops small groups a public keyset keeps, and the error of an AVG
    is largest there); None when the selected columns do not tell the exact groups apart (``SELECT
    SUM(age) … GROUP BY educ``: no cell can be matched to its group)."""
    aggs = aggregate_columns(sql)
    if aggs is None or not any(aggs) or len(aggs) != len(truth[0]):
        return None
    keyed = {_cell(row, aggs): row for row in truth[1]}
    if len(keyed) < len(truth[1]):
        return None
    errors = []
    for rows in runs:
        for row in rows:
            if len(row) != len(aggs):
                return None
            key = _cell(row, aggs)
            want = keyed.get(key)
            if want is None or (within is not None and key not in within):
                continue
            errors += [abs(float(g) - float(w)) for g, w, a in zip(row, want, aggs)
                       if a and g is not None and w is not None]
    return statistics.fmean(errors) if errors else None


def run_dpsql(db: Path, queries: list[str], rhos: list[float], reps: int) -> list[dict[str, Any]]:
    import dpsql
    from dpsql.errors import DpsqlError

    out = []
    with dpsql.connect(str(db), reuse=False) as con:
        for sql, rho in zip(queries, rhos):
            cur = con.cursor()
            cur.execute(f"SET dpsql.rho = {rho!r}")
            start = time.perf_counter()
            try:
                runs = []
                for _ in range(reps):
                    cur.execute(sql)
                    runs.append([list(r) for r in cur.fetchall()])
                out.append({"answered": True, "runs": runs, "seconds": (time.perf_counter() - start) / reps})
            except DpsqlError as exc:
                out.append({"answered": False, "code": getattr(exc, "code", None) or type(exc).__name__})
            except Exception as exc:  # noqa: BLE001 - a crash is reported as one
                out.append({"answered": False, "code": f"crash {type(exc).__name__}"})
    return out


def geometric_split(eps: float, noisy: int) -> tuple[Decimal, Decimal]:
    """(ε of the noise, ε of the partition selection) of a query on a private key at SmartNoise's
    ε_q, whose sum is ε_q exactly: the selection gets one equal share beside the query's ``noisy``
    primitives, ε_q / (noisy + 1) rounded down to 6 digits (from the plan alone: public)."""
    total = Decimal(repr(eps))
    return total - (sel := _six_down(total / (noisy + 1))), sel


def _six_down(x: Decimal) -> Decimal:
    """``x`` rounded down to 6 significant digits: a receipt shows a selection's ε and δ rounded up
    to 6 (dpsql.privacy.budget.fmt_up), so such a value is shown as it is and can be checked."""
    return x.quantize(Decimal(10) ** (x.adjusted() - 5), rounding=ROUND_DOWN)


def run_dpsql_geometric(db: Path, policy: Path, queries: list[str], costs: list[tuple[float, float]],
                        reps: int) -> list[dict[str, Any]]:
    """Each query at ``SET dpsql.epsilon = ε_q`` under the geometric ``policy``; a query on a private
    key on a copy of the policy whose ``[selection]`` is (ε_s, δ_q) (:func:`geometric_split`), the
    noise at ε_q − ε_s. Every receipt is checked: noise ε + selection ε ≤ ε_q, selection δ ≤ δ_q."""
    import dpsql
    from dpsql.errors import DpsqlError

    base = policy.read_text()
    out = []
    with dpsql.connect(str(db), policy=str(policy), reuse=False) as con:
        for i, (sql, (eps, delta)) in enumerate(zip(queries, costs)):
            try:
                plan = con.explain(sql)
            except DpsqlError as exc:
                out.append({"answered": False, "code": getattr(exc, "code", None) or type(exc).__name__})
                continue
            except Exception as exc:  # noqa: BLE001 - a crash is reported as one
                out.append({"answered": False, "code": f"crash {type(exc).__name__}"})
                continue
            conn, noise_eps, sel_eps = con, Decimal(repr(eps)), Decimal(0)
            if plan.selection:
                noise_eps, sel_eps = geometric_split(eps, len(plan.noise))
                own = policy.with_name(f"{policy.stem.split('.')[0]}_q{i}.policy.toml")
                own.write_text(re.sub(r"(?ms)^\[selection\]\n(?:[^\[\n][^\n]*\n|\n)*", "", base)
                               + f"\n[selection]\nepsilon = {sel_eps}\ndelta = {_six_down(Decimal(repr(delta)))}\n")
                conn = dpsql.connect(str(db), policy=str(own), reuse=False)
            try:
                cur = conn.cursor()
                if noise_eps > 0:  # else no noisy aggregate (GROUP BY alone): the selection takes all of ε_q
                    cur.execute(f"SET dpsql.epsilon = {noise_eps}")
                start = time.perf_counter()
                runs = []
                for _ in range(reps):
                    cur.execute(sql)
                    runs.append([list(r) for r in cur.fetchall()])
                    spent_matched(cur.receipt, eps, delta)
                out.append({"answered": True, "runs": runs, "seconds": (time.perf_counter() - start) / reps,
                            "selection_epsilon": float(sel_eps)})
            except DpsqlError as exc:
                out.append({"answered": False, "code": getattr(exc, "code", None) or type(exc).__name__})
            except Exception as exc:  # noqa: BLE001 - a crash is reported as one
                out.append({"answered": False, "code": f"crash {type(exc).__name__}"})
            finally:
                if conn is not con:
                    conn.close()
    return out


def spent_matched(receipt: Any, eps: float, delta: float) -> None:
    """Fail unless one release cost at most SmartNoise's (ε_q, δ_q) by basic composition: the pure-DP
    noise's ε (each noisy primitive's, summed) plus the selection's ε, and the selection's δ."""
    noise = sum((n.epsilon if n.epsilon is not None else Fraction(-1) for n in receipt.noise), Fraction(0))
    if any(n.epsilon is None for n in receipt.noise if n.mechanism != "truncated_geometric"):
        raise AssertionError(f"a noisy primitive without a pure-DP epsilon: {receipt.noise}")
    sel = receipt.selection or {}
    total = noise + Fraction(sel.get("epsilon", "0"))
    if total > Fraction(repr(eps)) * (1 + Fraction(1, 10**9)) or Fraction(sel.get("delta", "0")) > Fraction(repr(delta)):
        raise AssertionError(f"spent ({float(total)}, {sel.get('delta', 0)}) past SmartNoise's ({eps}, {delta})")


def run_peer(queries: list[str], eps: float, delta: float, reps: int, folder: Path,
             cache: Path | None = None) -> list[dict[str, Any]]:
    """SmartNoise's answers; with ``cache``, read from it when it holds the same spec, else run and
    written to it."""
    spec = {"csv": str(PUMS / "PUMS_pid.csv"), "metadata": str(PUMS / "PUMS_pid.yaml"), "epsilon": eps,
            "delta": delta, "reps": reps, "queries": queries}
    if cache is not None and cache.exists():
        kept = json.loads(cache.read_text())
        if kept.get("spec") == spec:  # its times are not this run's: no speed ratio is shown (report)
            return [{**a, "cached": True} for a in kept["answers"]]
    (folder / "spec.json").write_text(json.dumps(spec))
    subprocess.run([str(PEER_PY), str(HERE / "smartnoise_suite_peer.py"), str(folder / "spec.json"),
                    str(folder / "peer.json")], check=True, capture_output=True)
    answers = json.loads((folder / "peer.json").read_text())
    if cache is not None:
        cache.write_text(json.dumps({"spec": spec, "answers": answers}))
    return answers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--match", choices=("tight", "analytic", "zcdp", "geometric"), default="tight",
                    help="how dpsql's ρ matches SmartNoise's (ε, δ) (matched_rho); geometric: pure ε-DP noise at ε_q")
    ap.add_argument("--peer-cache", type=Path, default=None, help="keep / reuse SmartNoise's answers in this JSON file")
    ap.add_argument("--only", default=None, help="run only the queries this regular expression finds (more --reps "
                                                  "for a few: the 5 runs of the whole suite are noisy per query)")
    ap.add_argument("--out", type=Path, default=None, help="write every query's outcome as JSON")
    args = ap.parse_args(argv)
    doc = json.loads(QUERIES.read_text())
    suite = [q["sql"] for q in doc["queries"] if args.only is None or re.search(args.only, q["sql"])]
    geometric = args.match == "geometric"
    rho = args.epsilon ** 2 / 2 if geometric else matched_rho(args.epsilon, args.delta, args.match)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["DPSQL_HOME"] = str(folder / "home")
        hand_db, init_db = build(folder, geometric)
        mine = [as_dpsql(q) for q in suite]
        peer = None if args.no_peer else run_peer([as_smartnoise(q) for q in suite], args.epsilon, args.delta,
                                                  args.reps, folder, args.peer_cache)
        # matched per query: what SmartNoise spends on it in all (its get_privacy_cost), else (ε, δ)
        costs = [tuple(p["cost"]) if p.get("cost") else (args.epsilon, args.delta) for p in (peer or [{}] * len(suite))]
        if geometric:
            hand = run_dpsql_geometric(hand_db, folder / "hand.policy.toml", mine, costs, args.reps)
            # matched per query with its selection inside ε_q, the draft is compared too: its reps as the hand's
            draft = run_dpsql_geometric(init_db, folder / "pums.policy.toml", mine, costs, args.reps)
        else:
            rhos = [matched_rho(*c, args.match) for c in costs]
            hand = run_dpsql(hand_db, mine, rhos, args.reps)
            draft = run_dpsql(init_db, mine, rhos, 1)
    rows = []
    for i, q in enumerate(suite):
        truth = exact(mine[i])
        row = {"sql": q, "hand": hand[i].get("code", "answered"), "init": draft[i].get("code", "answered")}
        if peer is not None:
            row["smartnoise"] = "answered" if peer[i]["answered"] else peer[i]["error"].split(":")[0]
            if truth is not None and hand[i]["answered"] and peer[i]["answered"]:
                both = released_cells(mine[i], hand[i]["runs"]) & released_cells(mine[i], peer[i]["runs"])
                a, b = (mean_error(mine[i], hand[i]["runs"], truth, both),
                        mean_error(mine[i], peer[i]["runs"], truth, both))
                if a is not None and b is not None and b > 0:
                    row["error_ratio"] = a / b
                if not peer[i].get("cached"):  # a ratio of times measured in the same run only
                    row["speedup"] = peer[i]["seconds"] / hand[i]["seconds"]
            if geometric and truth is not None and draft[i]["answered"] and peer[i]["answered"]:
                both = released_cells(mine[i], draft[i]["runs"]) & released_cells(mine[i], peer[i]["runs"])
                a, b = (mean_error(mine[i], draft[i]["runs"], truth, both),
                        mean_error(mine[i], peer[i]["runs"], truth, both))
                if a is not None and b is not None and b > 0:
                    row["init_error_ratio"] = a / b
            row["cost"] = costs[i]
            if hand[i].get("selection_epsilon"):
                row["selection_epsilon"] = hand[i]["selection_epsilon"]
        rows.append(row)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    report(rows, len(suite), args, rho)
    return 0


def report(rows: list[dict[str, Any]], n: int, args: argparse.Namespace, rho: float) -> None:
    def answered(col: str) -> int:
        return sum(r.get(col) == "answered" for r in rows)

    if args.match == "geometric":
        print(f"{n} distinct queries; SmartNoise at ε = {args.epsilon}, δ = {args.delta} per aggregate, dpsql's geometric "
              f"(pure ε-DP) noise at each query's whole ε_q, a private key's selection within it; {args.reps} reps\n")
    else:
        print(f"{n} distinct queries; SmartNoise at ε = {args.epsilon}, δ = {args.delta} per aggregate, dpsql at the ρ "
              f"matched ({args.match}) to each query's whole cost (ρ = {rho:.5f} at (ε, δ)); {args.reps} reps\n")
    print("| | answered | refused |\n|---|---|---|")
    for col, name in (("smartnoise", "SmartNoise SQL 1.0"), ("init", "dpsql, `dpsql init`'s draft"),
                      ("hand", "dpsql, hand-written policy")):
        if rows and col in rows[0]:
            print(f"| {name} | {answered(col)} | {n - answered(col)} |")
    best = sum(r["hand"] == "answered" or r["init"] == "answered" for r in rows)
    print(f"| dpsql, the better of the two | {best} | {n - best} |")
    if rows and "smartnoise" in rows[0]:
        sn = [r for r in rows if r["smartnoise"] == "answered"]
        print(f"\nOf the {len(sn)} SmartNoise answers, dpsql answers {sum(r['hand'] == 'answered' for r in sn)} "
              f"(hand policy), {sum(r['init'] == 'answered' for r in sn)} (init's draft).")
        ratios = [r["error_ratio"] for r in rows if "error_ratio" in r]
        speed = [r["speedup"] for r in rows if "speedup" in r]
        if ratios:
            print(f"Error ratio dpsql / SmartNoise (hand policy, {len(ratios)} queries both answer with comparable "
                  f"cells): median {statistics.median(ratios):.2f}, dpsql more accurate on "
                  f"{sum(x < 1 for x in ratios)}; SmartNoise's time / dpsql's: "
                  + (f"median {statistics.median(speed):.0f}x" if speed else "not measured (SmartNoise's answers cached)"))
        drafts = [r["init_error_ratio"] for r in rows if "init_error_ratio" in r]
        if drafts:
            print(f"Error ratio dpsql / SmartNoise (init's draft, private keys matched within ε_q; its placeholder "
                  f"thresholds, e.g. income's T = 1000, match privacy only for units within them: a unit split k times pays "
                  f"kε_q; {len(drafts)} queries): median {statistics.median(drafts):.2f}, dpsql more accurate on "
                  f"{sum(x < 1 for x in drafts)}")
        worst = sorted((r for r in rows if "error_ratio" in r), key=lambda r: -r["error_ratio"])[:12]
        if worst:
            print("\nLargest error ratios (hand policy):\n\n| ratio | SmartNoise's (ε_q, δ_q) | query |\n|---:|---|---|")
            for r in worst:
                print(f"| {r['error_ratio']:.2f} | {tuple(r['cost'])} | `{r['sql'][:110]}` |")
    for col in ("hand", "init"):
        refused = Counter(r[col] for r in rows if r[col] != "answered")
        print(f"\nRefusals, {col}: " + ", ".join(f"{code} {k}" for code, k in refused.most_common()))
    print("\n| query | SmartNoise | init's draft | hand policy |\n|---|---|---|---|")
    for r in rows:
        print(f"| `{r['sql'][:90]}` | {r.get('smartnoise', '')} | {r['init']} | {r['hand']} |")


if __name__ == "__main__":
    sys.exit(main())
