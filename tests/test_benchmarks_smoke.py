"""The utility study's maths on hand-made examples (benchmarks/dpmath.py): ARE, split counts,
top-coding and its sensitivity, the policy loss of a workload and of a group. No timing."""

from __future__ import annotations

import os

import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks package lives at the repo root

from benchmarks import dpmath
from benchmarks.dpmath import SPLIT_SCHEMES, TOPCODE_SCHEMES
from dpsql.privacy.mechanisms import gaussian_sigma2
from dpsql.testing import seeded_random

# Paper 000 Table 2(a), payroll in dollars; thresholds employees 50, payroll 5,000,000.
TABLE2 = {"employees": np.array([150, 50, 100, 50, 20]),
          "payroll": np.array([10_000_000, 15_000_000, 10_000_000, 10_000_000, 1_000_000])}
TABLE2_T = {"employees": 50, "payroll": 5_000_000}


def test_are_is_paper_eq_13() -> None:
    got = dpmath.are(np.array([110, 90, -50, 7]), np.array([100, 100, -100, 0]))
    assert got[:3] == pytest.approx([0.1, 0.1, 0.5])
    assert np.isnan(got[3])  # undefined on an exact zero, dropped from the summaries


def test_split_counts_reproduce_table_2() -> None:
    # Table 2(b): records 1 and 2 become 3 rows, 3 and 4 become 2, record 5 stays one.
    assert dpmath.split_counts(TABLE2, TABLE2_T).tolist() == [3, 3, 2, 2, 1]
    # Query-scoped: only the measures given decide; zero and negative values count by magnitude.
    assert dpmath.split_counts({"employees": np.array([0, 49, 51, -101])}, {"employees": 50}).tolist() == [1, 1, 2, 3]


def test_topcoding_clamps_at_the_code_and_its_sensitivity_is_the_code() -> None:
    values = np.array([5, 300, 301, 10_000, -400])
    assert dpmath.topcode(values, 300).tolist() == [5, 300, 300, 300, -300]
    moderate = TOPCODE_SCHEMES[1]
    assert [dpmath.sum_sensitivity(moderate, m) for m in ("employees", "payann", "payqtr1")] == [300, 10_000, 2_500]
    # Splitting's sensitivity is the threshold: paper 000 Table 8, Median scheme.
    assert dpmath.sum_sensitivity(SPLIT_SCHEMES[2], "payann") == 104


def test_noisy_answers_use_sigma2_delta2_over_2rho() -> None:
    exact = np.full(20_000, 1_000_000, dtype=np.int64)
    rho = Fraction(1, 4)
    noisy = dpmath.noisy_answers(exact, 100, rho, seeded_random(7))
    sigma = float(gaussian_sigma2(100, rho)) ** 0.5  # 100 / sqrt(0.5) = 141.4
    assert sigma == pytest.approx(141.42, abs=0.01)
    assert np.std(noisy - exact) == pytest.approx(sigma, rel=0.03)
    assert abs(np.mean(noisy - exact)) < 4 * sigma / np.sqrt(exact.size)  # unbiased: splitting keeps the exact sum


def test_policy_loss_of_a_workload_reproduces_example_5_4() -> None:
    # Example 5.4 / §5.3: a SUM workload at total rho on one split relation: 9 rho, 9 rho, 4 rho, 4 rho, rho.
    a = dpmath.split_counts(TABLE2, TABLE2_T)
    assert dpmath.workload_policy_loss(a, 0, 1).tolist() == [9, 9, 4, 4, 1]
    # The CBP workload: COUNT at rho/4 (not split) + three SUMs at rho/4 each on the split relation.
    rho = Fraction(1)
    p = dpmath.workload_policy_loss(np.array([1, 2, 10]), rho / 4, 3 * rho / 4)
    assert p.tolist() == pytest.approx([1.0, 0.25 + 0.75 * 4, 0.25 + 75])


def test_group_policy_loss_of_a_firm() -> None:
    # Two establishments with 1 and 3 splits: 2 counted rows, 4 split rows.
    assert dpmath.group_policy_loss(np.array([2]), np.array([4]), 0.25, 0.75).tolist() == [0.25 * 4 + 0.75 * 16]
    # A single unsplit establishment is a firm of one: P = rho.
    assert dpmath.group_policy_loss(np.array([1]), np.array([1]), 0.25, 0.75).tolist() == [1.0]


def test_summaries_and_ecdf() -> None:
    s = dpmath.summarize_are(np.array([0.01, 0.04, 0.1, 0.3, np.nan]))
    assert s["n"] == 4 and s["median"] == pytest.approx(0.07)
    assert s["share_below_0.05"] == 0.5 and s["share_below_0.2"] == 0.75
    v, c = dpmath.ecdf_from_counts(np.array([9.0, 1.0, 4.0]), np.array([1, 6, 3]))
    assert v.tolist() == [1.0, 4.0, 9.0] and c.tolist() == pytest.approx([0.6, 0.9, 1.0])


def test_schemes_are_paper_tables_7_and_8() -> None:
    assert [s.name for s in TOPCODE_SCHEMES] == ["Conservative", "Moderate", "Aggressive"]
    assert [s.name for s in SPLIT_SCHEMES] == ["Conservative", "Moderate", "Median"]
    assert TOPCODE_SCHEMES[0].values == {"employees": 1000, "payann": 100_000, "payqtr1": 25_000}
    assert SPLIT_SCHEMES[1].values == {"employees": 5, "payann": 500, "payqtr1": 125}


def test_ab_reads_the_ratios_bench_engine_prints() -> None:
    """benchmarks/ab.py compares two revisions by the dpsql/raw column of bench_engine's table:
    read it back from a table rendered by speed.render itself, pending rows and bold included."""
    from benchmarks import ab, speed

    def query(label: str, ratio: float | None) -> dict:
        q = {"label": label, "raw": 0.01, "raw_groups": 3, "expansion": 1.0}
        if ratio is None:
            return {**q, "pending": "DP205"}
        return {**q, "cells": 3, "dpsql": 0.01 * ratio, "ratio": ratio, "stages": {"plan": 0.001}}

    res = {"header": ["machine"], "sizes": [
        {"rows": 10_000_000, "queries": [query("national", 1.234), query("county", None)], "file_mib": 1.0,
         "unit_check": 0.1, "unit_check_rss": 1.0, "first_query": 0.2, "first_query_extra": 0.1, "first_plan": 0.01,
         "rss": {"raw": 1.0, "dpsql": 1.0, "reference": 1.0}},
    ]}
    text = speed.render(res)
    assert ab.ratios(text) == {"national": 1.23}


def test_the_server_benchmark_runs_with_tiny_sizes(demo_files, capsys) -> None:
    """benchmarks/server.py end to end on the test's demo data: a few queries each way and two
    short load runs (no timing is checked, only that every path answered and was charged)."""
    pytest.importorskip("psycopg")
    from benchmarks import server

    assert server.main(["--database", str(demo_files[0]), "--policy", str(demo_files[1]), "--queries", "3",
                        "--seconds", "0.3", "--clients", "1", "2"]) == 0
    out = capsys.readouterr().out
    for path in ("raw DuckDB", "embedded dpsql", "wire, psycopg extended protocol", "wire, psycopg simple protocol"):
        assert f"| {path}" in out
    assert "| 1 |" in out and "| 2 |" in out and "answers charged" in out


def test_the_many_rows_benchmark_runs_every_shape_with_tiny_sizes(tmp_path, capsys) -> None:
    """benchmarks/many_rows.py end to end on 3,000 rows of 300 units: every query shape is
    answered by dpsql, by the raw two-level floor and by the plain query, with the load beside
    the table (no timing is checked). Each unit has ~10 rows over the ten regions, so κ = 3 binds."""
    from benchmarks import many_rows

    home = os.environ.get("DPSQL_HOME")
    many_rows.main(["--rows", "3000", "--units", "300", "--runs", "1", "--dir", str(tmp_path)])
    assert os.environ.get("DPSQL_HOME") == home  # its throwaway home is the benchmark's own, restored
    out = capsys.readouterr().out
    assert "3,000 rows, 300 units" in out and out.count("load average (1/5/15 min)") == 2
    rows = [line for line in out.splitlines() if line.startswith("| ") and " s | " in line]
    assert [r.split(" | ")[0][2:] for r in rows] == [label for label, _, _ in many_rows.SHAPES]
    assert all(len(r.strip("|").split("|")) == 8 for r in rows)


def test_the_many_groups_benchmark_runs_every_query_with_tiny_sizes(tmp_path, capsys) -> None:
    """benchmarks/many_groups.py (issue 34) end to end on 20,000 rows: each query answered by
    dpsql and by raw DuckDB, every declared key returned, the load beside the table (no timing
    is checked)."""
    from benchmarks import many_groups

    many_groups.main(["--rows", "20000", "--repeat", "1", "--data-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "20k rows, 1 interleaved runs, load" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "×" in line]
    assert [r.split(" | ")[0][2:] for r in rows] == [label for label, _ in many_groups.QUERIES]
    assert "/ 100,000 |" in rows[0]  # the public keyset: every declared value, empty ones as noise on 0


def test_smartnoise_geometric_matching_stays_within_each_query_cost(tmp_path, monkeypatch) -> None:
    """benchmarks/smartnoise_suite.py --match geometric on a generated table: a query on public keys
    spends its whole ε_q on noise (receipt ε = ε_q, no δ); one on a private key gives its selection
    ε_q/(m + 1) rounded down to 6 digits and δ_q rounded down likewise (m = its noisy aggregates),
    the noise the rest, so noise ε + selection ε = ε_q exactly (the oracle here: Decimal arithmetic
    on the printed values, independent of the script's split)."""
    import duckdb

    import dpsql
    from benchmarks import smartnoise_suite as sn

    monkeypatch.setenv("DPSQL_HOME", str(tmp_path / "home"))
    db = tmp_path / "p.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE pums AS SELECT i AS pid, i % 2 AS sex, 20 + i % 50 AS age, "
                "CAST((i % 3) * 10000 AS DOUBLE) AS income FROM range(3000) r(i)")
    con.close()
    policy = tmp_path / "p.policy.toml"
    policy.write_text('[budget]\ntotal_rho = 1e6\ntotal_delta = 0.5\n[noise]\nmechanism = "geometric"\n'
                      '[tables.pums]\nprivacy_unit = "pid"\n[tables.pums.measures]\nage = { threshold = 100 }\n'
                      '[tables.pums.keys]\nsex = { keyset = [0, 1] }\nincome = {}\n')
    queries = ["SELECT sex, COUNT(*), SUM(age) FROM pums GROUP BY sex",
               "SELECT income, COUNT(*), SUM(age) FROM pums GROUP BY income"]
    costs = [(2.0, 1.4999949999983109e-05), (2.0, 1.4999949999983109e-05)]
    out = sn.run_dpsql_geometric(db, policy, queries, costs, 1)
    assert [o["answered"] for o in out] == [True, True], out
    assert out[0]["selection_epsilon"] == 0 and out[1]["selection_epsilon"] == float(Decimal("0.666666"))
    with dpsql.connect(db, policy, reuse=False) as plain:  # the public-key query as the script runs it
        cur = plain.cursor()
        cur.execute("SET dpsql.epsilon = 2")
        cur.execute(queries[0])
        cur.fetchall()
        assert cur.receipt.epsilon == 2 and cur.receipt.delta == 0 and cur.receipt.selection is None
    own = tmp_path / "p_q1.policy.toml"  # the private-key query's own policy, as the script wrote it
    with dpsql.connect(db, own, reuse=False) as con2:
        cur = con2.cursor()
        cur.execute("SET dpsql.epsilon = 1.333334")
        cur.execute(queries[1])
        cur.fetchall()
        rc = cur.receipt
    # the 6-digit rounding down of 2/3 and of δ_q; the noise the rest: the sum is ε_q exactly
    assert Decimal(rc.selection["epsilon"]) == Decimal("0.666666") and Decimal(rc.selection["delta"]) == Decimal("0.0000149999")
    assert Fraction(rc.epsilon) + Fraction("0.666666") == 2
    with pytest.raises(AssertionError):  # and the receipt check refuses a query that spent more than it was given
        sn.spent_matched(rc, 1.9, 1.4999949999983109e-05)


def test_smartnoise_errors_only_over_cells_whose_group_is_known() -> None:
    """The suite's error: a query whose selected columns do not identify its groups is not
    compared; otherwise only the cells in ``within`` count (hand-made rows)."""
    from benchmarks.smartnoise_suite import mean_error, released_cells

    truth = (["educ", "n"], [(1, 10), (2, 20)])
    assert mean_error("SELECT n FROM pums GROUP BY educ", [[[11], [25]]], (["n"], [(10,), (20,)])) is None
    runs = [[[1, 12], [2, 25]], [[2, 21]]]
    assert mean_error("SELECT educ, COUNT(*) FROM pums GROUP BY educ", runs, truth) == pytest.approx((2 + 5 + 1) / 3)
    assert released_cells("SELECT educ, COUNT(*) FROM pums GROUP BY educ", [[[1, 12]]]) == {("1",)}
    assert mean_error("SELECT educ, COUNT(*) FROM pums GROUP BY educ", runs, truth, {("2",)}) == pytest.approx(3)
