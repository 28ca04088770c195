"""Many groups (issue 34): thousands of groups released in arrays — a public keyset, partition
selection, both together — checked against oracles computed here: DuckDB's exact GROUP BY on
the same file, the discrete Gaussian's pmf written out below, and Theorem 1's π(n) (paper 002,
the closed form of ``pi_opt``, not the exact table ``select`` draws from).

Every cell's noise is N_Z(σ² = 1): COUNT(*) has sensitivity 1 and gets the whole ρ = 1/2 of the
query (σ² = Δ²/(2ρ)); selection is charged apart. So noisy − exact over thousands of cells is a
sample of N_Z(1), fitted by chi-square (significance 1e-4, as tests/test_noise_distribution.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.testing import seeded_random

pytestmark = pytest.mark.statistical

KEYSET = list(range(0, 8000, 2))  # 4,000 public values: odd keys fall outside, 7,000 on are empty
SIZES = (3, 6, 9, 12, 15, 40)  # units per private group: π(n) from ~1e-4 to 1 at ε = 1, δ = 1e-5
PER_SIZE = 700
POLICY = """
[budget]
default_rho = 0.5
total_rho = 1e15
total_delta = 0.5
[selection]
epsilon = 1
delta = 1e-5
[tables.t]
privacy_unit = "id"
[tables.t.measures]
v = {{ threshold = 1 }}
[tables.t.keys]
kpub = {{ keyset = {keyset} }}
region = {{ keyset = ["a", "b"] }}
kpriv = {{}}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, dict[tuple, int]]]:
    d = tmp_path_factory.mktemp("many_groups")
    db, policy = d / "g.duckdb", d / "g.policy.toml"
    con = duckdb.connect(str(db))
    # private group j of size n holds units with ids n*100000 + j*n + (0..n-1): one row per unit
    con.execute(f"""CREATE TABLE t AS
        SELECT s.n * 1000000 + g.j * s.n + u.i AS id, s.n * 10000 + g.j AS kpriv,
               CAST(HASH(s.n, g.j, u.i) % 7000 AS BIGINT) AS kpub,
               CASE WHEN HASH(s.n, g.j, u.i, 1) % 3 = 0 THEN 'a' ELSE 'b' END AS region, 1 AS v
        FROM (SELECT UNNEST({list(SIZES)}) AS n) s, range({PER_SIZE}) g(j), range(40) u(i)
        WHERE u.i < s.n""")
    for c in ("kpriv", "kpub", "region"):  # the data holds no NULL key: no NULL group (tests/test_null_keys.py)
        con.execute(f"ALTER TABLE t ALTER COLUMN {c} SET NOT NULL")
    # the exact answers, by DuckDB, before dpsql opens the file
    truth = {keys: {tuple(r[:-1]): r[-1] for r in con.execute(f"SELECT {keys}, COUNT(*) FROM t GROUP BY {keys}").fetchall()}
             for keys in ("kpub", "kpriv", "region, kpriv")}
    con.close()
    policy.write_text(POLICY.format(keyset=KEYSET))
    return db, policy, truth


def answer(files: tuple[Path, Path, dict], sql: str, seed: int) -> tuple[list[tuple], dpsql.Cursor]:
    con = dpsql.connect(str(files[0]), str(files[1]), reuse=False, _random_source=seeded_random(seed))
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall(), cur


def chi2_normal_residuals(res: np.ndarray, sigma2: float = 1.0) -> None:
    """Residuals against N_Z(σ²): P(y) = exp(-y²/(2σ²)) / Σ_z exp(-z²/(2σ²)), written here."""
    w = int(12 * math.sqrt(sigma2)) + 2
    support = np.arange(-w, w + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * sigma2))
    pmf /= pmf.sum()
    assert res.min() >= -w and res.max() <= w
    n = res.size
    keep = np.flatnonzero(n * pmf >= 5)
    lo, hi = keep[0], keep[-1]
    expected = n * pmf[lo:hi + 1]
    expected[0] += n * pmf[:lo].sum()
    expected[-1] += n * pmf[hi + 1:].sum()
    observed = np.bincount(np.clip(res, support[lo], support[hi]) - support[lo], minlength=expected.size)
    stat = float(((observed - expected) ** 2 / expected).sum())
    dof = expected.size - 1
    h = 2 / (9 * dof)
    assert stat < dof * (1 - h + 3.719 * math.sqrt(h)) ** 3, (stat, dof)  # Wilson-Hilferty, 1e-4


def pi_theorem1(n: int, eps: float = 1.0, delta: float = 1e-5) -> float:
    """π_opt(n), paper 002 Theorem 1, in floats (the test's tolerance is far above their error)."""
    from dpsql.privacy.pi_opt import release_probability

    return float(release_probability(n, eps, delta))


def test_a_batch_of_many_cells_draws_each_at_its_own_sigma():
    """One vectorised call, four σ² interleaved cell by cell, the largest first: each cell's
    draws fit N_Z of its own σ² (the trial's rate and its acceptance both per cell)."""
    from fractions import Fraction

    from dpsql.privacy.samplers import sample_discrete_gaussian

    values = [Fraction(10**4), Fraction(1, 2), Fraction(25), Fraction(5, 2)]
    x = sample_discrete_gaussian(values * 50_000, seeded_random(4100))
    for i, s2 in enumerate(values):
        chi2_normal_residuals(x[i::len(values)], float(s2))


def test_a_public_keyset_of_4000_values(files):
    rows, cur = answer(files, "SELECT kpub, COUNT(*) AS n FROM t GROUP BY kpub", 31)
    truth = files[2]["kpub"]
    assert [r[0] for r in rows] == KEYSET  # every declared value, in order; none other
    assert any((k,) not in truth for k in KEYSET)  # some declared values are empty: noise on 0
    res = np.array([n - truth.get((k,), 0) for k, n in rows])
    chi2_normal_residuals(res)
    assert set(cur.receipt.columns["n"].sigma) == {1.0}


def test_4200_candidate_groups_through_partition_selection(files):
    rows, cur = answer(files, "SELECT kpriv, COUNT(*) AS n FROM t GROUP BY kpriv", 32)
    truth = files[2]["kpriv"]
    keys = [r[0] for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys) and len(keys) > 1000
    assert all((k,) in truth for k in keys)  # only groups of the data
    chi2_normal_residuals(np.array([n - truth[(k,)] for k, n in rows]))
    kept = set(keys)
    for size in SIZES:  # each group kept independently with probability π(n)
        hits = sum(size * 10000 + j in kept for j in range(PER_SIZE))
        p = pi_theorem1(size)
        se = math.sqrt(max(p * (1 - p), 1e-12) / PER_SIZE)
        assert abs(hits / PER_SIZE - p) <= 5 * se + 1e-9, (size, hits, p)
    assert cur.receipt.selection["released_groups"] == len(rows)


def test_public_and_private_keys_together_keep_each_groups_own_rows(files):
    """The selection counts units per private group summed over the public key, and the kept
    groups' cells carry their own exact counts (their rows picked by the selection's mask)."""
    rows, _ = answer(files, "SELECT region, kpriv, COUNT(*) AS n FROM t GROUP BY region, kpriv", 33)
    truth = files[2]["region, kpriv"]
    released = {k for _, k, _ in rows}
    assert len(rows) == 2 * len(released)  # both regions of every released group
    sizes = {k: k // 10000 for k in released}
    assert any(s < 40 for s in sizes.values()) and any(s == 40 for s in sizes.values())
    chi2_normal_residuals(np.array([n - truth.get((r, k), 0) for r, k, n in rows]))
    for size in SIZES:
        hits = sum(size * 10000 + j in released for j in range(PER_SIZE))
        p = pi_theorem1(size)
        assert abs(hits / PER_SIZE - p) <= 5 * math.sqrt(max(p * (1 - p), 1e-12) / PER_SIZE) + 1e-9, (size, hits, p)
