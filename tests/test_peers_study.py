"""The aircraft-level peer study (benchmarks/peers_many_rows.py), kept out of the real run: its
arguments, its error measure on hand-made answers, its loss matching, and dpsql's side on a
tiny flights table (a few aircraft). The peers (their own venv) are not run here."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks package lives at the repo root

from benchmarks import peers_many_rows as study


def test_unknown_grouping_and_bad_trials_are_refused_before_any_work(tmp_path, capsys) -> None:
    for argv in (["--groupings", "carrier,airline"], ["--trials", "0"]):
        with pytest.raises(SystemExit) as e:
            study.main([*argv, "--dir", str(tmp_path / "never"), "--sdist", str(tmp_path / "absent.tar.gz")])
        assert e.value.code == 2
    assert "airline" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_median_relative_error_counts_a_missing_group_as_one_and_skips_zero_truths() -> None:
    truth = {"a": 10.0, "b": -20.0, "z": 0.0}
    runs = [{"a": 11, "b": -20, "z": 5}, {"a": 10, "b": float("nan")}]
    # errors: a 0.1, b 0, a 0, b missing 1 -> median of [0, 0, 0.1, 1] = 0.05
    assert study.median_relative_error(runs, truth) == pytest.approx(0.05)
    assert study.median_relative_error("refused (DP211)", truth) == "refused (DP211)"


def test_best_setting_picks_the_smallest_error_of_a_peer_and_keeps_reasons() -> None:
    truth = {"a": 100.0}
    peer = {"carrier": {"count@c=1": [{"a": 50}], "count@c=2": [{"a": 90}], "sum_distance@c=1": [{"a": 100}]}}
    assert study.best_setting(peer, "carrier", "count", truth) == (pytest.approx(0.1), "c=2")
    assert study.best_setting(peer, "carrier", "avg_arr_delay", truth) == ("not offered", "")
    assert study.best_setting(peer, "month", "count", truth) == ("not run", "")
    assert study.best_setting("failed: boom", "carrier", "count", truth) == ("failed: boom", "")


def test_a_unit_within_the_bounds_loses_rho_unit_and_peers_get_its_conversion() -> None:
    for g, v in study.GROUPINGS.items():
        selection = study.SELECTION[0] ** 2 / 2 if g == "dest" else 0
        loss = v["kappa"] * study.rho_query(g) + selection
        assert study.RHO_UNIT * (1 - Fraction(1, 10**8)) <= loss <= study.RHO_UNIT
        eps, delta = study.peer_budget(g)
        rho, d = float(study.RHO_UNIT), 1e-6
        # Bun & Steinke 2016 Prop. 1.3 (rho + 2 sqrt(rho ln 1/d)) bounds the tight conversion from above;
        # rho-zCDP is never better than (rho, d)-DP at this d.
        assert rho < eps <= rho + 2 * math.sqrt(rho * math.log(1 / d))
        assert delta == pytest.approx(1e-6 + (1e-6 if g == "dest" else 0))


def test_both_released_compares_the_same_groups() -> None:
    """Over the groups both released, per pair of runs: dpsql's and the peer's errors on the same
    items (written out here: pairs (r1, p1) share {a, b}, (r2, p1) share {a})."""
    truth = {"a": 10.0, "b": 20.0, "c": 40.0, "z": 0.0}
    ours = [{"a": 11.0, "b": 20.0, "c": 40.0, "z": 5.0}, {"a": 10.0, "c": float("nan")}]
    theirs = [{"a": 5.0, "b": 10.0, "z": 1.0}]
    # items: (r1,a) 0.1 / 0.5, (r1,b) 0.0 / 0.5, (r2,a) 0.0 / 0.5 -> medians 0.0 and 0.5; sizes 2, 1
    assert study.both_released(ours, theirs, truth) == "1.5 both: dpsql 0.000, peer 0.500"
    assert study.both_released(ours, [{"c": 1.0}], {"a": 1.0, "c": 0.0}) == "none both"
    assert study.both_released("refused (DP211)", theirs, truth) == "–"


def test_the_selection_share_sets_eps_s() -> None:
    """--selection-share s: ε_s²/2 = s·ρ_unit (ε_s rounded down at 10 digits); 1/4 is the default."""
    assert study.selection_at(Fraction(1, 4)) == study.SELECTION
    for share in (Fraction(1, 8), Fraction(1, 2)):
        eps, delta = study.selection_at(share)
        assert eps**2 / 2 <= share * study.RHO_UNIT < (eps + Fraction(1, 10**10)) ** 2 / 2
        assert delta == study.SELECTION[1]


def test_dpsql_side_on_a_tiny_flights_table(tmp_path) -> None:
    db = tmp_path / "flights.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE flights (tailnum VARCHAR, carrier VARCHAR NOT NULL, month INTEGER NOT NULL, origin VARCHAR, dest VARCHAR, "
                "arr_delay INTEGER, dep_delay INTEGER, distance INTEGER)")
    con.execute("INSERT INTO flights SELECT 'N' || (i % 7), CASE WHEN i % 7 < 4 THEN 'UA' ELSE 'DL' END, 1 + i % 12, "
                "'JFK', 'BOS', i % 30, i % 20, 200 FROM range(300) t(i)")
    con.close()
    out = study.run_dpsql(db, tmp_path, "carrier", trials=2)
    assert set(out) == set(study.AGGS)
    for a in study.AGGS[:3]:
        assert len(out[a]) == 2 and set(out[a][0]) <= set(study.CARRIERS)
        assert set(out[a][0]) == set(study.CARRIERS)  # a public keyset: every carrier answered
    median = out["median_dep_delay"]  # refused today (DP211); answered once MEDIAN on many rows is merged
    assert (isinstance(median, str) and median.startswith("refused (DP")) or len(median) == 2
    true = study.truth(db, "carrier")
    assert true["count"] == {"UA": 172.0, "DL": 128.0}  # i % 7 < 4 for 4 of every 7 of 0..299: 43·4, 42·3 + 2


def test_released_says_how_many_private_groups_and_their_own_error() -> None:
    truth = {"a": 10.0, "b": 10.0, "c": 1.0}
    # run 1 releases a (error 0.1); run 2 releases a (0) and b (0.5): 1.5 of 3 groups, median error 0.1
    assert study.released([{"a": 11}, {"a": 10, "b": 5, "x": 7}], truth) == "1.5/3 at 0.100"
    assert study.released("refused (DP211)", truth) == "–"


def _advised():
    from dpsql.policy.model import Measure, TablePolicy

    return TablePolicy("flights", "tailnum", {m: Measure(m, t) for m, t in (("arr_delay", 460), ("dep_delay", 460),
                                                                            ("distance", 15936))},
                       max_groups=41, row_threshold=14, quantile_rows=4,
                       max_groups_by={("carrier",): 1, ("origin",): 3, ("dest",): 36})


def test_with_advised_values_each_question_is_matched_at_its_own_kappa() -> None:
    """--advised: κ_q is the least cover of the question's columns (carrier 1, origin × carrier
    1·3, dest 36, month none: the table's 41), and a unit within κ_q loses ρ_unit."""
    advised = _advised()
    expected = {"carrier": (1, "carrier"), "month": (41, "max_groups"), "origin_carrier": (3, "carrier × origin"),
                "dest": (36, "dest")}
    for g, (kappa, of) in expected.items():
        s = study.settings(g, advised)
        assert (s["kappa"], s["of"], s["R"], s["r"], s["T"]["distance"]) == (kappa, of, 14, 4, 15936)
        selection = study.SELECTION[0] ** 2 / 2 if g == "dest" else 0
        loss = kappa * study.rho_query(g, advised) + selection
        assert study.RHO_UNIT * (1 - Fraction(1, 10**8)) <= loss <= study.RHO_UNIT
    text = study.policy_text("carrier", Path("/tmp"), advised)
    assert 'max_groups = 41' in text and '"carrier" = 1' in text and "quantile_rows = 4" in text


def test_median_absolute_error_is_over_released_groups_in_the_answers_unit() -> None:
    truth = {"a": -3.0, "b": 1.0, "c": 0.0}
    runs = [{"a": -1, "b": 1}, {"a": -3, "c": float("nan")}]
    assert study.median_absolute_error(runs, truth) == pytest.approx(0.0)  # errors 2, 0, 0 -> 0
    assert study.median_absolute_error([{"a": 0}], truth) == pytest.approx(3.0)
