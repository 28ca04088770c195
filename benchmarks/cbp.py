"""Paper 000 §6.4 on our synthetic CBP-like data: the county x NAICS workload (Table 6) answered
by unit splitting (PRzCDP, Table 8 schemes) and by top-coding (zCDP, Table 7 schemes).

This is a **simulation by the data owner on the confidential data**: exact group values come
straight from DuckDB and noise is added with dpsql's exact discrete Gaussian sampler, as dpsql
would add it (seeded here, for reproducibility; a release never uses a seed). Nothing of it goes
through the SQL front-end, which does not group by private keys (county, naics) yet.

Workload, per NAICS level k in (2, 3, 4): the groups (county, substr(naics, 1, k)) with at least
100 establishments (paper 000: "we limit our evaluations to only those queries with 100 or more
establishments") and four queries over them: COUNT(*), SUM(employees), SUM(payann),
SUM(payqtr1). A level's total budget rho is split equally over its four queries (rho/4 each);
the groups of one query are disjoint (parallel composition). Releasing the three levels costs 3 rho.

* Splitting: exact SUM + N_Z(T^2 / (2 rho/4)), T the scheme's threshold (Lemma 5.2: the sum of
  the splits is the exact sum). Multivariate splitting (§6.4): one split relation for the three
  SUMs, |A(r)| = max(1, ceil(emp/T_emp), ceil(payann/T_payann), ceil(payqtr1/T_payqtr1)), so
  P(r) = rho/4 + (3 rho/4) |A(r)|^2. This is what one dpsql query
  ``SELECT county, naics, COUNT(*), SUM(employees), SUM(payann), SUM(payqtr1) ... GROUP BY ...``
  with its budget split equally over its four primitives (dpsql's default) would charge.
* Top-coding: SUM of values clamped at C + N_Z(C^2 / (2 rho/4)); P(r) = rho for every record.
* COUNT: exact count + N_Z(1 / (2 rho/4)) under both (it is not split).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from dpsql.backends.duckdb import LOCKDOWN
from dpsql.testing import seeded_random

from .common import ensure_data, log
from .dpmath import (
    SPLIT_SCHEMES,
    TOPCODE_SCHEMES,
    Scheme,
    are,
    ecdf_from_counts,
    group_policy_loss,
    noisy_answers,
    sum_sensitivity,
    summarize_are,
    workload_policy_loss,
)

MEASURES = ("employees", "payann", "payqtr1")
QUERY_LABELS = {"count": "COUNT(*)", "employees": "SUM(employees)", "payann": "SUM(payann)", "payqtr1": "SUM(payqtr1)"}
LEVELS = (2, 3, 4)
RHOS = (Fraction(1, 10), Fraction(1), Fraction(10))
MIN_GROUP = 100
QUERIES_PER_LEVEL = 4  # COUNT + 3 SUMs: the level's rho is split equally over them
# The P(r)/rho levels the policy-loss summary reports (P(r) = rho exactly for an unsplit record).
LOSS_LEVELS = (("P = ρ", 1.0), ("P ≤ 10ρ", 10.0), ("P ≤ 100ρ", 100.0), ("P ≤ 10⁴ρ", 1e4))


def open_raw(db: Path) -> duckdb.DuckDBPyConnection:
    # dpsql's lockdown config: DuckDB allows one configuration per file per process.
    return duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))


def group_values(con: duckdb.DuckDBPyConnection, level: int) -> dict[str, np.ndarray]:
    """Exact per-group values of the level's workload (confidential), plus the top-coded sums."""
    tc = [f'SUM(LEAST(GREATEST("{m}", -{s.values[m]}), {s.values[m]})) AS "{m}@{s.name}"'
          for s in TOPCODE_SCHEMES for m in MEASURES]
    sql = (f"SELECT county, substr(naics, 1, {level}) AS naics_k, COUNT(*) AS count, "
           + ", ".join(f'SUM("{m}") AS "{m}"' for m in MEASURES) + ", " + ", ".join(tc)
           + f" FROM establishments GROUP BY ALL HAVING COUNT(*) >= {MIN_GROUP} ORDER BY county, naics_k")
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    cols = list(zip(*rows)) if rows else [[] for _ in names]
    return {n: np.array(c, dtype=object if i < 2 else np.int64) for i, (n, c) in enumerate(zip(names, cols))}


@dataclass
class UtilityResult:
    rows: int
    seed: int
    summary: list[dict[str, Any]] = field(default_factory=list)
    are: dict[tuple[int, str, str, str, Fraction], np.ndarray] = field(default_factory=dict)
    groups: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0


def run_utility(rows: int, data_dir: Path, seed: int, rhos: Sequence[Fraction] = RHOS) -> UtilityResult:
    t_start = time.perf_counter()
    db, _ = ensure_data(rows, data_dir)
    con = open_raw(db)
    rng = seeded_random(seed)
    res = UtilityResult(rows=rows, seed=seed)
    schemes: list[Scheme] = [*TOPCODE_SCHEMES, *SPLIT_SCHEMES]
    for level in LEVELS:
        g = group_values(con, level)
        n_groups = len(g["count"])
        res.groups[level] = n_groups
        log(f"  utility: county x NAICS-{level}: {n_groups:,} groups with >= {MIN_GROUP} establishments")
        for rho in rhos:
            rho_q = rho / QUERIES_PER_LEVEL
            # COUNT is not split: one draw serves both methods.
            a = are(noisy_answers(g["count"], 1, rho_q, rng), g["count"])
            _record(res, level, "both", "-", "count", rho, a, rho_q, 1, None)
            for s in schemes:
                for m in MEASURES:
                    delta = sum_sensitivity(s, m)
                    base = g[f"{m}@{s.name}"] if s.method == "topcode" else g[m]
                    a = are(noisy_answers(base, delta, rho_q, rng), g[m])
                    bias = are(base, g[m]) if s.method == "topcode" else None
                    _record(res, level, s.method, s.name, m, rho, a, rho_q, delta, bias)
    con.close()
    res.seconds = time.perf_counter() - t_start
    return res


def _record(res: UtilityResult, level: int, method: str, scheme: str, measure: str, rho: Fraction,
            a: np.ndarray, rho_q: Fraction, delta: int, bias: np.ndarray | None) -> None:
    res.are[(level, method, scheme, measure, rho)] = a
    s = summarize_are(a)
    sigma = float(delta) / float(2 * rho_q) ** 0.5
    row: dict[str, Any] = {"rows": res.rows, "naics_level": level, "method": method, "scheme": scheme,
                           "query": QUERY_LABELS[measure], "rho_level": float(rho), "rho_query": float(rho_q),
                           "sensitivity": delta, "sigma": round(sigma, 3), "queries": s["n"],
                           "are_median": s["median"], "are_p25": s["p25"], "are_p75": s["p75"], "are_p90": s["p90"],
                           "share_are_below_5pct": s["share_below_0.05"], "share_are_below_20pct": s["share_below_0.2"]}
    if bias is not None:
        row["bias_are_median"] = float(np.nanmedian(bias))  # the top-coding error without any noise
    res.summary.append(row)


# ------------------------------------------------------------------------------ policy loss

@dataclass
class PolicyLossResult:
    rows: int
    rho: Fraction
    # per scheme: (distinct |A(r)|, establishments with it) and firm-level (n, sum |A(r)|, firms)
    establishments: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    firms: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    summary: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _splits_sql(s: Scheme) -> str:
    # Exact integer ceil(|x| / T) for the three measures, at least 1 (paper 000 Algorithm 1).
    parts = ", ".join(f'(ABS("{m}") + {t - 1}) // {t}' for m, t in s.values.items())
    return f"GREATEST(1, {parts})"


def run_policy_loss(rows: int, data_dir: Path, rho: Fraction = Fraction(1)) -> PolicyLossResult:
    """The distribution of P(r) over the establishments (and firms) for one NAICS level's workload
    at total rho. INTERNAL, DATA-OWNER ONLY: P(r) is a function of the confidential values."""
    t_start = time.perf_counter()
    db, _ = ensure_data(rows, data_dir)
    con = open_raw(db)
    res = PolicyLossResult(rows=rows, rho=rho)
    rho_c = rho / QUERIES_PER_LEVEL
    rho_s = rho * (QUERIES_PER_LEVEL - 1) / QUERIES_PER_LEVEL
    for s in SPLIT_SCHEMES:
        a, n = (np.array(c, dtype=np.int64) for c in zip(*con.execute(
            f"SELECT {_splits_sql(s)} AS a, COUNT(*) FROM establishments GROUP BY a ORDER BY a").fetchall()))
        res.establishments[s.name] = (a, n)
        k, tot, f = (np.array(c, dtype=np.int64) for c in zip(*con.execute(
            f"SELECT k, s, COUNT(*) FROM (SELECT firm_id, COUNT(*) AS k, SUM({_splits_sql(s)}) AS s "
            "FROM establishments GROUP BY firm_id) GROUP BY k, s ORDER BY k, s").fetchall()))
        res.firms[s.name] = (k, tot, f)
        p = workload_policy_loss(a, rho_c, rho_s) / float(rho)
        pf = group_policy_loss(k, tot, rho_c, rho_s) / float(rho)
        row: dict[str, Any] = {"rows": rows, "scheme": s.name, "thresholds": _thresholds(s), "rho_level": float(rho)}
        for label, x in LOSS_LEVELS:
            row[f"establishments {label}"] = float(n[p <= x + 1e-12].sum() / n.sum())
        for label, x in LOSS_LEVELS:
            row[f"firms {label}"] = float(f[pf <= x + 1e-12].sum() / f.sum())
        v, c = ecdf_from_counts(p, n)
        for q in (0.5, 0.9, 0.99, 0.999):
            row[f"establishments P/ρ p{q * 100:g}"] = float(v[np.searchsorted(c, q - 1e-12)])
        row["establishments P/ρ max"] = float(v[-1])
        row["establishments split (P > ρ)"] = float(n[a > 1].sum() / n.sum())
        res.summary.append(row)
    con.close()
    res.seconds = time.perf_counter() - t_start
    return res


def policy_loss_ecdf_rows(res: PolicyLossResult, points: int = 300) -> list[dict[str, Any]]:
    """The empirical CDFs as CSV rows, P in units of the level's rho (it scales linearly); each
    curve is read at its distinct values, or at ``points`` log-spaced values if it has more."""
    out: list[dict[str, Any]] = []
    rho_c = res.rho / QUERIES_PER_LEVEL
    rho_s = res.rho - rho_c
    curves = [("establishment", name, workload_policy_loss(a, rho_c, rho_s), n)
              for name, (a, n) in res.establishments.items()]
    curves += [("firm", name, group_policy_loss(k, tot, rho_c, rho_s), f) for name, (k, tot, f) in res.firms.items()]
    for unit, name, p, weight in curves:
        v, c = ecdf_from_counts(p / float(res.rho), weight)
        last = np.r_[np.diff(v) > 0, True]  # the CDF at each distinct value
        v, c = v[last], c[last]
        if v.size > points:
            grid = np.unique(np.r_[np.geomspace(v[0], v[-1], points), v[-1]])
            idx = np.searchsorted(v, grid, side="right") - 1  # P(X <= x) at each grid value
            v, c = grid, c[idx]
        out += [{"unit": unit, "scheme": name, "P_over_rho": float(x), "share_at_most": float(y)} for x, y in zip(v, c)]
    return out


def _thresholds(s: Scheme) -> str:
    short = {"employees": "emp", "payann": "payann", "payqtr1": "payqtr1"}
    return ", ".join(f"{short[m]} {t:,}" for m, t in s.values.items())
