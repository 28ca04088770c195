"""MEDIAN(dep_delay) by a grouping of the study's flights at aircraft level: where the error comes
from, computed offline from the public dataset (issue 31, task M; docs/evaluation.md §5e).

Not a run of dpsql: a model of its quantile path written here (numpy), to separate the three
sources of a cell's miss and to try levers before building one:

* **bias** of bounding a unit to r values per group: the mechanism's noiseless target (the
  candidates of least score) against the truth (DuckDB's MEDIAN over every flight);
* **sampling**: dpsql reads a keyed sample of at most r of an aircraft's flights in a cell,
  the first r by HASH(unit, group, value, salt), then value (sql/units.py): equal values hash
  alike, so a unit's flights at one delay are taken or left as one block (form ``keyed``: the
  distinct values in random order, each with all its flights, cut at r; ``--salts`` orders).
  Form ``sample`` is a uniformly random subset of r flights instead (what a tie-breaker among
  equal values would give), and form ``weight`` reads every flight at weight min(1, r/n) (n: the
  aircraft's flights in the cell) — a unit's total weight is at most r, the sample's
  sensitivity, with no sampling noise;
* **noise**: the exponential mechanism over the one-a-minute grid [-120, 1440] at ε/r, ε = √(8ρ)
  (privacy/quantile.py: P(c) ∝ exp(−ε·s(c)/2r), s(c) = |#{x < c} − #{x > c}|).

For each (form, r, ρ) it prints the study's metric computed exactly from the output
distributions (the median over cells and runs of |answer − truth| / |truth|, truth ≠ 0, as the
median of the mixture of the cells' distributions), the mean probability of the exact answer,
and the share of cell-runs within 0.218 (half of Tumult's 0.436 by origin × carrier), which must
exceed one half for the goal to be met. ``--cells`` prints each cell.

    python -m benchmarks.median_cells --db /tmp/m_study/flights.duckdb --by origin,carrier \
        --rho 0.0166667 --r 1,5,10,20,40 --forms keyed,sample,weight
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

import duckdb
import numpy as np

LO, HI = -120, 1440  # the study's DELAY_RANGE (benchmarks/peers_many_rows.py)
GRID = np.arange(LO, HI + 1)


def load(db: str, by: str) -> tuple[dict[tuple, dict[str, np.ndarray]], dict[tuple, float]]:
    """Per cell: each aircraft's non-NULL delays; and the truth over every flight with a tailnum."""
    con = duckdb.connect(db, read_only=True)
    k = len(by.split(","))
    cells: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for row in con.execute(f"SELECT {by}, tailnum, dep_delay FROM flights "
                           "WHERE tailnum IS NOT NULL AND dep_delay IS NOT NULL").fetchall():
        cells[row[:k]][row[k]].append(row[k + 1])
    truth = {tuple(r[:k]): float(r[k]) for r in con.execute(
        f"SELECT {by}, MEDIAN(dep_delay) FROM flights WHERE tailnum IS NOT NULL GROUP BY ALL").fetchall()}
    con.close()
    return {c: {u: np.asarray(v) for u, v in units.items()} for c, units in cells.items()}, truth


def scores(values: np.ndarray, weights: Any = None) -> np.ndarray:
    """|W{x < c} − W{x > c}| for every candidate c (values outside the range count at its ends)."""
    h = np.bincount(np.clip(values, LO, HI) - LO, weights=weights, minlength=HI - LO + 1)
    below = np.concatenate([[0], np.cumsum(h)[:-1]])
    return np.abs(below - (h.sum() - np.cumsum(h)))


def em(s: np.ndarray, eps_over_r: float) -> np.ndarray:
    p = np.exp(-eps_over_r * (s - s.min()) / 2)
    return p / p.sum()


def distribution(units: dict[str, np.ndarray], r: int, eps: float, form: str, salts: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the output distribution over GRID, the noiseless target's distribution) of one cell."""
    if form == "weight":
        vals = np.concatenate(list(units.values()))
        w = np.concatenate([np.full(len(v), min(1.0, r / len(v))) for v in units.values()])
        s = scores(vals, w)
        return em(s, eps / r), (s == s.min()) / (s == s.min()).sum()
    out, target = np.zeros(len(GRID)), np.zeros(len(GRID))
    for _ in range(salts):
        if form == "keyed":  # dpsql's order: HASH(unit, group, value, salt), then value: equal values as one block
            picked = []
            for v in units.values():
                distinct, counts = np.unique(v, return_counts=True)
                order = rng.permutation(len(distinct))
                picked.append(np.repeat(distinct[order], counts[order])[:r])
            s = scores(np.concatenate(picked))
        else:
            s = scores(np.concatenate([v[rng.permutation(len(v))[:r]] for v in units.values()]))
        out += em(s, eps / r)
        target += (s == s.min()) / (s == s.min()).sum()
    return out / salts, target / salts


def study(cells: dict, truth: dict, r: int, rho: float, form: str, salts: int, seed: int,
          show: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    eps = float(np.sqrt(8 * rho))
    rel, exact, target_exact = [], [], []
    for key in sorted(cells, key=lambda c: -sum(map(len, cells[c].values()))):
        t = truth[key]
        p, target = distribution(cells[key], r, eps, form, salts, rng)
        if show:
            n = sum(map(len, cells[key].values()))
            print(f"  {'/'.join(map(str, key)):8} flights {n:6} aircraft {len(cells[key]):4} truth {t:5}: "
                  f"P(exact) {p[GRID == t].sum():.2f}, P(|err| <= 1) {p[np.abs(GRID - t) <= 1].sum():.2f}, "
                  f"noiseless target exact {target[GRID == t].sum():.2f}")
        if t != 0:
            rel.append((np.abs(GRID - t) / abs(t), p))
            exact.append(p[GRID == t].sum())
            target_exact.append(target[GRID == t].sum())
    x = np.concatenate([a for a, _ in rel])
    w = np.concatenate([b for _, b in rel])
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    return {"median_rel": float(x[order][np.searchsorted(cum, 0.5)]), "p_exact": float(np.mean(exact)),
            "within_0.218": float(w[x <= 0.218].sum() / w.sum()), "target_exact": float(np.mean(target_exact))}


def main(argv: list[str] | None = None) -> int:
    global LO, HI, GRID
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="/tmp/m_study/flights.duckdb")
    ap.add_argument("--by", default="origin,carrier")
    ap.add_argument("--rho", default="0.0166667", help="ρ of the MEDIAN (comma-separated for several)")
    ap.add_argument("--r", default="10,40")
    ap.add_argument("--forms", default="keyed,sample,weight")
    ap.add_argument("--salts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cells", action="store_true")
    ap.add_argument("--range", default=f"{LO},{HI}", help="the grid's public ends, one candidate a minute")
    args = ap.parse_args(argv)
    LO, HI = map(int, args.range.split(","))
    GRID = np.arange(LO, HI + 1)
    cells, truth = load(args.db, args.by)
    print(f"{args.by}: {len(cells)} cells, grid {LO}..{HI}")
    print("| form | r | ρ | median relative error | mean P(exact) | P(rel ≤ 0.218) | noiseless target exact |")
    print("|---|---|---|---|---|---|---|")
    for rho in map(float, args.rho.split(",")):
        for form in args.forms.split(","):
            for r in map(int, args.r.split(",")):
                m = study(cells, truth, r, rho, form, args.salts, args.seed, args.cells)
                print(f"| {form} | {r} | {rho:g} | {m['median_rel']:.3f} | {m['p_exact']:.3f} | {m['within_0.218']:.3f} "
                      f"| {m['target_exact']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
