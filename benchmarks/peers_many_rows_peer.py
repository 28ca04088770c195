"""One peer of the aircraft-level study (benchmarks/peers_many_rows.py), run by the PEERS' Python
(a venv with smartnoise-sql, pipeline-dp, tmlt.analytics), never the product's:

    /work/peers-venv/bin/python benchmarks/peers_many_rows_peer.py PEER flights.csv spec.json out.json

PEER is smartnoise, pipelinedp or tumult. spec.json (written by the study) gives per grouping its
GROUP BY columns, κ, R, the (ε, δ) to spend and the public keys (None: a private key). Each peer
answers each grouping's COUNT(*), AVG(arr_delay), SUM(distance) as one question at (ε, δ) under
its own accounting, and MEDIAN(dep_delay) as a second question at (ε, δ), for ``trials`` runs at
each of its truncation settings (a small grid around R: the best is reported, which favours
the peer: a data owner without the private data could not pick it). Output:
{grouping: {aggregate@setting: [ {group: value}, ... ]}}; a question the peer does not offer is
left out. Imports nothing from dpsql.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any

import pandas as pd


GRID = {"full": lambda R: sorted({max(1, R // 2), R, 2 * R}), "R": lambda R: [R]}
_SPEC: dict[str, Any] = {}


def grid(R: int) -> list[int]:
    """Per-unit row bounds tried: around dpsql's R (R/2, R, 2R; only R with ``--peer-grid R``), as
    the peers' docs suggest choosing a bound near the typical contribution."""
    return GRID[_SPEC.get("grid", "full")](R)


def _save(spec: dict[str, Any], out: dict[str, Any]) -> None:
    """Write the groupings answered so far: a run stopped midway keeps them."""
    with open(spec["_out"], "w") as f:
        json.dump(out, f)


def key_of(row: Any, by: list[str]) -> str:
    return "|".join(str(row[c]) for c in by)


def smartnoise(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    import snsql
    from snsql import Privacy

    bounds, out = spec["bounds"], {}
    df = df.rename(columns={"month": "mon"})  # MONTH is a keyword of SmartNoise's SQL grammar
    for name, g in spec["groupings"].items():
        eps, delta = g["budget"]
        cols = ["mon" if c == "month" else c for c in g["by"]]
        by = ", ".join(cols)
        res: dict[str, list[Any]] = {}
        # max_ids bounds a unit's rows in the whole table (reservoir sampling), not per group:
        # the grid is around the rows a unit has in its κ groups at R each.
        for m in grid(g["R"] * g["kappa"]):
            table = {"max_ids": m, "row_privacy": False, "censor_dims": g["public"] is None,
                     "tailnum": {"type": "string", "private_id": True}, "carrier": {"type": "string"},
                     "mon": {"type": "int"}, "origin": {"type": "string"}, "dest": {"type": "string"},
                     "arr_delay": {"type": "int", "lower": bounds["arr_delay"][0], "upper": bounds["arr_delay"][1]},
                     "distance": {"type": "int", "lower": bounds["distance"][0], "upper": bounds["distance"][1]}}
            meta = {"flights": {"flights": {"flights": table}}}
            sql = f"SELECT {by}, COUNT(*) AS n, AVG(arr_delay) AS d, SUM(distance) AS s FROM flights.flights GROUP BY {by}"
            probe = snsql.from_df(df, privacy=Privacy(epsilon=1.0, delta=delta), metadata=meta)
            cost_eps, cost_delta = probe.get_privacy_cost(sql)  # its own accounting of this query at ε = 1
            d_in = delta * min(1.0, delta / max(cost_delta, 1e-300))
            for _ in range(20):  # its δ cost is not linear in the δ given (τ-thresholding): shrink until within
                reader = snsql.from_df(df, privacy=Privacy(epsilon=eps / cost_eps, delta=d_in), metadata=meta)
                spent = reader.get_privacy_cost(sql)
                if spent[1] <= delta:
                    break
                d_in *= delta / spent[1] * (1 - 1e-6)
            assert spent[0] <= eps * (1 + 1e-9) and spent[1] <= delta * (1 + 1e-9), (spent, eps, delta)
            for a in ("count", "avg_arr_delay", "sum_distance"):
                res.setdefault(f"{a}@max_ids={m}", [])
            for _ in range(spec["trials"]):
                rows = reader.execute(sql)
                head, body = rows[0], rows[1:]
                idx = {c: head.index(c) for c in (*cols, "n", "d", "s")}
                for a, col in (("count", "n"), ("avg_arr_delay", "d"), ("sum_distance", "s")):
                    res[f"{a}@max_ids={m}"].append({"|".join(str(r[idx[c]]) for c in cols): r[idx[col]] for r in body})
        out[name] = res
        _save(spec, out)
    return out


def pipelinedp(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    import pipeline_dp

    bounds, out = spec["bounds"], {}
    records = df.to_dict("records")
    for name, g in spec["groupings"].items():
        eps, delta = g["budget"]
        by = g["by"]
        public = None
        if g["public"] is not None:
            lists = [g["public"][c] for c in by]
            public = ["|".join(str(v) for v in combo) for combo in _product(lists)]
        res: dict[str, list[Any]] = {}
        for c in grid(g["R"]):
            tag = f"max_partitions={g['kappa']},max_per_partition={c}"
            for _ in range(spec["trials"]):
                # one question: COUNT, MEAN(arr_delay), SUM(distance) under one accountant at (ε, δ)
                acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
                engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
                ex = lambda col: pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r["tailnum"],  # noqa: E731
                                                          partition_extractor=lambda r: key_of(r, by),
                                                          value_extractor=lambda r: r[col] if col else 0)
                common = dict(max_partitions_contributed=g["kappa"], max_contributions_per_partition=c)
                calls = [("count", records, pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.COUNT],
                                                                           noise_kind=pipeline_dp.NoiseKind.GAUSSIAN, **common), None),
                         ("avg_arr_delay", [r for r in records if not _nan(r["arr_delay"])],
                          pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.MEAN], noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
                                                      min_value=bounds["arr_delay"][0], max_value=bounds["arr_delay"][1], **common), "arr_delay"),
                         ("sum_distance", records, pipeline_dp.AggregateParams(
                             metrics=[pipeline_dp.Metrics.SUM], noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
                             min_value=bounds["distance"][0], max_value=bounds["distance"][1], **common), "distance")]
                lazy = [(a, engine.aggregate(rows, params, ex(col), public_partitions=public)) for a, rows, params, col in calls]
                acc.compute_budgets()
                for a, result in lazy:
                    res.setdefault(f"{a}@{tag}", []).append({k: _metric(v) for k, v in result})
            for _ in range(spec["trials"]):  # MEDIAN(dep_delay): its own question at (ε, δ)
                acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
                engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
                params = pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.PERCENTILE(50)], min_value=bounds["dep_delay"][0],
                                                     max_value=bounds["dep_delay"][1], max_partitions_contributed=g["kappa"],
                                                     max_contributions_per_partition=c)
                result = engine.aggregate([r for r in records if not _nan(r["dep_delay"])], params, ex("dep_delay"),
                                          public_partitions=public)
                acc.compute_budgets()
                res.setdefault(f"median_dep_delay@{tag}", []).append({k: _metric(v) for k, v in result})
        out[name] = res
        _save(spec, out)
    return out


def _product(lists: list[list[Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [()]
    for values in lists:
        out = [(*p, v) for p in out for v in values]
    return out


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _metric(v: Any) -> float:
    """The one metric of a PipelineDP result tuple (count, sum, mean or percentile)."""
    return float(next(iter(v._asdict().values())) if hasattr(v, "_asdict") else v)


def tumult(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """Tumult Analytics with AddRowsWithID("tailnum"), truncated as its docs recommend for zCDP:
    MaxGroupsPerID(κ) and MaxRowsPerGroupPerID(c) on the grouping column. Public keys: a
    RhoZCDPBudget of dpsql's per-unit ρ itself (its own accounting, Gaussian noise), a third per
    aggregate. A private key (dest): ApproxDPBudget(ε, δ), a quarter of ε to get_groups (with
    MaxRowsPerID(κ), which it requires), the rest in thirds. Each trial is a new Session."""
    import logging
    import os

    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # workers need tmlt too
    from pyspark.sql import SparkSession
    from tmlt.analytics import (AddRowsWithID, ApproxDPBudget, KeySet, MaxGroupsPerID, MaxRowsPerGroupPerID,
                                MaxRowsPerID, QueryBuilder, RhoZCDPBudget, Session)

    import tempfile

    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="peers_spark_"))  # not in the caller's folder
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.ERROR)
    bounds, out = spec["bounds"], {}
    for name, g in spec["groupings"].items():
        gcol = "g_" + name
        pdf = df[["tailnum", "arr_delay", "dep_delay", "distance"]].copy()
        pdf[gcol] = ["|".join(str(v) for v in t) for t in zip(*(df[c] for c in g["by"]))]
        for c in ("arr_delay", "dep_delay", "distance"):
            pdf[c] = pd.to_numeric(pdf[c]).astype("float64")
        sdf = spark.createDataFrame(pdf).cache()
        sdf.count()
        eps, delta = g["budget"]
        res: dict[str, list[Any]] = {}
        for c in grid(g["R"]):
            tag = f"MaxGroupsPerID={g['kappa']},MaxRowsPerGroupPerID={c}"
            for _ in range(spec["trials"]):
                for question in ("main", "median"):
                    if g["public"] is not None:
                        total = RhoZCDPBudget(spec["rho_unit"])
                        sess = Session.from_dataframe(total, "f", sdf, AddRowsWithID("tailnum"))
                        keys = KeySet.from_dict({gcol: ["|".join(str(v) for v in t) for t in _product([g["public"][x] for x in g["by"]])]})
                        share = RhoZCDPBudget(spec["rho_unit"] / 3)
                    else:
                        sess = Session.from_dataframe(ApproxDPBudget(eps, delta), "f", sdf, AddRowsWithID("tailnum"))
                        # get_groups needs a bound on rows per ID: κ rows, so an aircraft is in at most κ groups, as in dpsql
                        found = sess.evaluate(QueryBuilder("f").enforce(MaxRowsPerID(g["kappa"])).get_groups([gcol]),
                                              ApproxDPBudget(eps / 4, delta))
                        keys = KeySet.from_dataframe(found)
                        share = ApproxDPBudget(eps / 4, 0) if question == "main" else ApproxDPBudget(3 * eps / 4, 0)
                    base = lambda: (QueryBuilder("f").enforce(MaxGroupsPerID(gcol, g["kappa"]))  # noqa: E731
                                    .enforce(MaxRowsPerGroupPerID(gcol, c)).groupby(keys))
                    if question == "main":
                        asks = [("count", base().count(name="v")),
                                ("avg_arr_delay", base().average("arr_delay", *bounds["arr_delay"], name="v")),
                                ("sum_distance", base().sum("distance", *bounds["distance"], name="v"))]
                    else:
                        full = RhoZCDPBudget(spec["rho_unit"]) if g["public"] is not None else share
                        asks = [("median_dep_delay", base().median("dep_delay", *bounds["dep_delay"], name="v"))]
                    for a, q in asks:
                        answer = sess.evaluate(q, share if question == "main" else full).toPandas()
                        res.setdefault(f"{a}@{tag}", []).append({str(k): float(v) for k, v in zip(answer[gcol], answer["v"])})
        sdf.unpersist()
        out[name] = res
        _save(spec, out)
    spark.stop()
    return out


PEERS = {"smartnoise": smartnoise, "pipelinedp": pipelinedp, "tumult": tumult}


def main() -> int:
    peer, csv_path, spec_path, out_path = sys.argv[1:5]
    spec = json.loads(open(spec_path).read())
    spec["_out"] = out_path
    _SPEC.update(spec)
    df = pd.read_csv(csv_path)
    for c in ("arr_delay", "dep_delay"):
        df[c] = df[c].astype("Int64").astype(object).where(df[c].notna(), None)
    t0 = time.perf_counter()
    out = PEERS[peer](df, spec)
    out["_seconds"] = time.perf_counter() - t0
    with open(out_path, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
