"""Phase 1 bounds the memory of every query shape from public information (issue 29, finding 10).

A quantile grouped by a private key used to keep a counter per grid bound per group in DuckDB
(~80 KB a group) and score all groups at once in numpy: memory grew with the number of groups
the data happens to have. Now the exact query's histograms are sparse, the scores are drawn in
chunks, and what is left — the released cells — is bounded in phase 1 against a public budget
(``limits.query_memory_mib``): refused (DP210) when the public cells cannot fit, the private
groups shown capped when they could not all fit. Both are decided before any row is read, so
neighbouring databases get the same refusal and nothing is charged.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import DpsqlError
from dpsql.policy.model import QuantileGrid
from dpsql.privacy import quantile
from dpsql.testing import seeded_random

GROUPS = 3000  # values of the private key k, each with UNITS units: selection keeps them all
UNITS = 40
KEYSET = [f"p{i:04d}" for i in range(1000)]  # the public key p's keyset


def _policy(path: Path, memory_mib: int | None) -> Path:
    limits = f"\n[limits]\nquery_memory_mib = {memory_mib}\n" if memory_mib is not None else ""
    path.write_text(f"""
[budget]
default_rho = 0.1
total_rho = 100
total_delta = 1e-3
{limits}
[tables.t]
privacy_unit = "id"

[tables.t.measures]
v = {{ threshold = 1000, range = [0, 1000000], grid = "log" }}

[tables.t.keys]
k = {{}}
p = {{ keyset = {KEYSET!r} }}
""".replace("'", '"'))
    return path


def _database(path: Path, without_unit: int | None = None) -> Path:
    """GROUPS × UNITS units; unit 0 alone holds the private key value 'solo' (its neighbour,
    ``without_unit=0``, lacks it and so has one group fewer)."""
    con = duckdb.connect(str(path))
    con.execute(f"""CREATE TABLE t AS
        SELECT i AS id, CASE WHEN i = 0 THEN 'solo' ELSE 'k' || (i % {GROUPS}) END AS k,
               'p' || lpad(CAST(i % 1000 AS VARCHAR), 4, '0') AS p, CAST(hash(i) % 1000000 AS BIGINT) AS v
        FROM range({GROUPS * UNITS}) r(i)""")
    if without_unit is not None:
        con.execute(f"DELETE FROM t WHERE id = {without_unit}")
    con.close()
    return path


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("memory")
    return _database(folder / "d.duckdb"), _database(folder / "d_minus_one.duckdb", without_unit=0)


REFUSED = [
    # a quantile: its scores are drawn in chunks of quantile.DRAW_BYTES (96 MiB) > 50 MiB
    (50, "SELECT k, MEDIAN(v) FROM t GROUP BY k"),
    (50, "SELECT p, QUANTILE_CONT(v, 0.9) FROM t GROUP BY p"),
    # 1,000 public cells of a few hundred bytes each and more than 1 MiB
    (1, "SELECT p, COUNT(*), SUM(v) FROM t GROUP BY p"),
    # with a private key: the 1,000 public cells times one private group each already do not fit
    (1, "SELECT p, k, COUNT(*) FROM t GROUP BY p, k"),
]


@pytest.mark.parametrize("memory_mib,sql", REFUSED)
def test_a_shape_that_cannot_fit_is_refused_in_phase_1_on_neighbours_alike(neighbours, tmp_path, memory_mib, sql):
    outcomes = []
    for i, db in enumerate(neighbours):
        policy = _policy(tmp_path / f"policy{i}.toml", memory_mib)
        with dpsql.connect(db, policy=policy, _random_source=seeded_random(1)) as con:
            with pytest.raises(DpsqlError) as phase1:
                con.session.decide(sql)  # phase 1 alone refuses: no row has been read
            with pytest.raises(DpsqlError) as err:
                con.cursor().execute(sql)
            with pytest.raises(DpsqlError) as explained:
                con.session.explain(sql)
            assert explained.value.code == "DP210"
            assert con.session.ledger.spent == 0 and con.session.ledger.history() == []
            outcomes.append((phase1.value.code, str(phase1.value), err.value.code, str(err.value)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == outcomes[0][2] == "DP210"
    assert "memory" in outcomes[0][1] and "coarser key" in (outcomes[0][1] + str(getattr(err.value, "hint", "")))


def test_the_private_groups_shown_are_capped_to_fit_the_budget(neighbours, tmp_path):
    """Every one of the GROUPS private groups passes selection (UNITS units each), so without a
    cap all are shown; 2 MiB hold fewer than GROUPS cells, so fewer are shown, with the note."""
    sql = "SELECT k, COUNT(*) FROM t GROUP BY k"
    with dpsql.connect(neighbours[0], policy=_policy(tmp_path / "free.toml", None), _random_source=seeded_random(2)) as con:
        cur = con.cursor()
        cur.execute(sql)
        shown = len(cur.fetchall())  # the cap does not bite at the machine's default
        assert shown > GROUPS * 0.95 and "note" not in cur.receipt.selection
    with dpsql.connect(neighbours[0], policy=_policy(tmp_path / "small.toml", 2), _random_source=seeded_random(2)) as con:
        cap = con.session.decide(sql).max_released
        assert 0 < cap < shown / 1.5
        cur = con.cursor()
        cur.execute(sql)
        assert len(cur.fetchall()) == cap
        assert "memory" in cur.receipt.selection["note"]
        assert any(f"at most {cap} groups of k are shown" in n for n in con.session.explain(sql).notes)


CLASSIC = [
    "SELECT COUNT(*) FROM establishments",
    "SELECT state, COUNT(*), SUM(payann) FROM establishments GROUP BY state",
    "SELECT naics2, AVG(payann) FROM establishments GROUP BY naics2",
    "SELECT state, naics2, SUM(employees) FROM establishments GROUP BY state, naics2",
    "SELECT county, COUNT(*) FROM establishments GROUP BY county",
    "SELECT state, MEDIAN(payann) FROM establishments GROUP BY state",
    "SELECT county, MEDIAN(payann), QUANTILE_CONT(employees, 0.9) FROM establishments GROUP BY county",
    "SELECT device_model, AVG(latency_ms), MEDIAN(latency_ms) FROM devices GROUP BY device_model",
]


@pytest.mark.parametrize("sql", CLASSIC)
def test_classic_demo_queries_are_accepted_and_not_cut(con, sql):
    """Accepted at the default budget (half this machine's memory), and no group is cut: the
    private groups the demo has (about 3,000 counties) are far below what the budget holds."""
    con.session.decide(sql)  # phase 1 alone: no DP210
    cur = con.cursor()
    cur.execute(sql)
    assert cur.fetchall()
    assert cur.receipt.selection is None or "note" not in cur.receipt.selection  # no group cut


def test_scores_drawn_in_chunks_keep_each_group_its_own(monkeypatch):
    """Chunks of one group each (SCORE_ENTRIES below one group's bins): each group still gets the
    candidate its own histogram makes certain. Every group has all its values at one grid value
    and ε is large, so the mechanism returns that value with probability ~1."""
    grid = QuantileGrid(0, 1000, "linear", 11)  # candidates 0, 100, ..., 1000
    targets = [random.Random(5).randrange(11) for _ in range(40)]
    hists = [[[100 * t], [5000]] for t in targets]  # the exact query's [bins, counts]
    for entries in (1, 10**6):
        monkeypatch.setattr(quantile, "SCORE_ENTRIES", entries)
        picked = quantile.draw(hists, grid, Fraction(1, 2), Fraction(50), seeded_random(3))
        assert picked == targets


@pytest.mark.parametrize("value", ["1GB", 0, -5, 1.5, True])
def test_a_bad_memory_limit_is_refused_at_load(tmp_path, value):
    from dpsql.policy.loader import load_policy

    path = _policy(tmp_path / "p.toml", None)
    path.write_text(path.read_text() + f"\n[limits]\nquery_memory_mib = {value!r}\n".replace("'", '"').replace("True", "true"))
    with pytest.raises(DpsqlError) as err:
        load_policy(path)
    assert err.value.code == "DP401" and "limits.query_memory_mib" in str(err.value)
