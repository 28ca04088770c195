"""The two release paths — numpy arrays and a small answer's Python lists (dpsql/pipeline/release.py,
finish.py) — against closed forms written here (issue 35).

* Per-group thresholds (paper 000 Example 5.7): each cell's noise is drawn at σ² = T_g² / (2ρ) for
  its own group's T_g. A wrapper around ``Allocation.sample`` (arrays) and ``scalar_draws``
  (lists) records the scale each cell is *drawn* at; the receipt's per-cell σ is checked too.
* AVG = noisy SUM / noisy COUNT, NULL exactly when the noisy count is below 1 (a count of 1 is a
  valid denominator), the same on both paths and as DuckDB computes ``CASE WHEN c >= 1 ...``.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

import dpsql
from dpsql.pipeline import release as release_mod
from dpsql.pipeline.finish import column_errors, finish
from dpsql.privacy import allocate
from dpsql.sql.plan import ROW_COLUMN
from dpsql.testing import seeded_random

OVERRIDES = {"11": 2500, "21": 40000, "23": 20000, "31": 5000, "72": 5000}
DEFAULT_T = 10000


@pytest.fixture()
def per_group(demo, tmp_path):
    db, policy = demo
    table = ", ".join(f'"{k}" = {v}' for k, v in OVERRIDES.items())
    text = policy.read_text().replace(
        "payann = { threshold = 10000,",
        f'payann = {{ threshold = 10000, overrides = {{ key = "naics2", thresholds = {{ {table} }} }},', 1)
    assert text != policy.read_text()
    policy.write_text(text)
    return db, policy


@pytest.fixture()
def drawn(monkeypatch):
    """Each noise draw's scale (σ² of the discrete Gaussian), per cell, on either path."""
    seen: list[Fraction] = []
    real_sample, real_scalar = allocate.Allocation.sample, release_mod.scalar_draws

    def sample(self, scales, group, rng):
        seen.extend(scales[int(g)] for g in group)
        return real_sample(self, scales, group, rng)

    def scalar(gaussian, values, cells, rng):
        seen.extend(values[g] for g in cells)
        return real_scalar(gaussian, values, cells, rng)

    monkeypatch.setattr(allocate.Allocation, "sample", sample)
    monkeypatch.setattr(release_mod, "scalar_draws", scalar)
    return seen


def _want(keys: list[str], rho: Fraction) -> Counter:
    return Counter(Fraction(OVERRIDES.get(k, DEFAULT_T) ** 2) / (2 * rho) for k in keys)


def test_array_path_draws_each_cell_at_its_own_groups_threshold(per_group, drawn):
    """51 states × 24 sectors (1,224 cells: arrays): the multiset of drawn σ² is 51 of each
    sector's T²/(2ρ); every row's receipt σ is its own sector's √(T²/(2ρ))."""
    db, policy = per_group
    rho = Fraction(1, 10)
    with dpsql.connect(db, policy, rho="0.1", _random_source=seeded_random(6)) as con:
        cur = con.execute("SELECT state, naics2, SUM(payann) AS p FROM establishments GROUP BY state, naics2")
        rows, sigma = cur.fetchall(), cur.receipt.columns["p"].sigma
        sectors = con.session.policy.tables["establishments"].keys["naics2"].keyset
    assert len(rows) == 51 * 24
    assert Counter(drawn) == _want(list(sectors) * 51, rho)
    for row, s in zip(rows, sigma):
        assert s == pytest.approx(math.sqrt(OVERRIDES.get(row[1], DEFAULT_T) ** 2 / (2 * 0.1))), row


def test_list_path_draws_each_cell_at_its_own_groups_threshold(per_group, drawn):
    """WHERE-free SUM over 24 sectors: 24 draws, a small answer (lists)."""
    db, policy = per_group
    with dpsql.connect(db, policy, rho="0.1", _random_source=seeded_random(6)) as con:
        cur = con.execute("SELECT naics2, SUM(payann) AS p FROM establishments GROUP BY naics2")
        rows, sigma = cur.fetchall(), cur.receipt.columns["p"].sigma
    assert len(rows) == 24
    assert Counter(drawn) == _want([r[0] for r in rows], Fraction(1, 10))
    for row, s in zip(rows, sigma):
        assert s == pytest.approx(math.sqrt(OVERRIDES.get(row[0], DEFAULT_T) ** 2 / (2 * 0.1))), row


# ------------------------------------------------------------------------------ AVG at small counts
COUNTS = [-3, 0, 1, 2, 1, 7, 60, 400]
SUMS = [10, 10, 10, 10, -4, 21, 120, -800]
WANT = [None, None, 10.0, 5.0, -4.0, 3.0, 2.0, -2.0]  # s / c when c >= 1, else NULL


def _avg_columns(session):
    sql = "SELECT industry, AVG(employees) AS a FROM paper_table1 GROUP BY industry"
    d = session.decide(sql)
    columns, _, _ = session._compute_and_release(d)
    (kind, s_col, c_col), = [p for p in d.plan.projection if p[0] == "avg"]
    return d.plan, columns, s_col, c_col


@pytest.mark.parametrize("as_arrays", [False, True], ids=["lists", "arrays"])
def test_avg_is_null_exactly_below_a_noisy_count_of_one(con, as_arrays):
    plan, columns, s_col, c_col = _avg_columns(con.session)
    n = len(COUNTS)
    cols = {}
    for k, v in columns.items():  # the released cells, repeated to n rows, as lists or arrays
        values = (list(v.tolist() if hasattr(v, "tolist") else v) * n)[:n]
        cols[k] = np.array(values) if as_arrays and hasattr(v, "dtype") else values
    if as_arrays:
        cols[s_col], cols[c_col] = np.array(SUMS, dtype=np.int64), np.array(COUNTS, dtype=np.int64)
    else:
        cols[s_col], cols[c_col] = list(SUMS), list(COUNTS)
    cols[ROW_COLUMN] = list(range(n)) if not as_arrays else np.arange(n, dtype=np.int64)
    names, _, rows, errors = finish(plan, cols, con.session.finisher)
    avg = [r[names.index("a")] for r in rows]
    assert avg == WANT
    # DuckDB's own finish query on the same cells agrees
    _, _, duck = con.session.finisher.run(cols, plan.finish_sql)
    assert [r[1] for r in duck] == WANT
    # the delta-method σ exists exactly where the AVG does and the noisy count is beyond its own
    # 95% margin of 0 (docs/privacy.md, "Derived columns"): its MOE, as the count's column states it
    count_moe = list(cols[c_col.replace("__p", "__m")])
    err = column_errors(plan, cols, None)[names.index("a")]
    assert [s is None for s in err.sigma] == [w is None or c <= m for w, c, m in zip(WANT, COUNTS, count_moe)]
    assert [s is None for s in err.moe95] == [s is None for s in err.sigma]
    assert err.sigma[-1] is not None and err.sigma[2] is None  # both cases occur here
    assert err.flagged == sum(1 for w, c, m in zip(WANT, COUNTS, count_moe) if w is not None and c <= m)
    # where it exists, the delta method's closed form: √(σ_S² + (S/C)² σ_C²) / C, at the noisy values
    s_sd, c_sd = cols[s_col.replace("__p", "__s")][-1], cols[c_col.replace("__p", "__s")][-1]
    assert err.sigma[-1] == pytest.approx(math.sqrt(s_sd ** 2 + (SUMS[-1] / COUNTS[-1]) ** 2 * c_sd ** 2) / COUNTS[-1])
