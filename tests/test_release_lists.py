"""A small answer is released in Python lists, without numpy (dpsql/pipeline/release.py): the same answer,
to the value and the type, as the arrays give from the same noise. Every accepted query of the
SQL corpus is answered both ways with the same (scripted) noise; with the real samplers and a
seeded source the two ways draw the very same noise up to guided.SMALL_BATCH draws; and the
noisy values keep the arrays' int/float boundaries at any size."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpsql.pipeline import release
from dpsql.privacy.allocate import Allocation
from dpsql.privacy.guided import SMALL_BATCH
from dpsql.testing import seeded_random
from tests.test_plan_record import ACCEPTED, _answer, big_budget  # noqa: F401 - big_budget: the corpus session


def _scripted(gaussian: bool, values: list[Fraction], cells: list[int]) -> list[int]:
    """Noise that depends on the cell's position and parameter only (not a sampler: a script)."""
    return [(-1) ** j * ((7 * j) % 11) * (g + 1) * (3 if gaussian else 2) for j, g in enumerate(cells)]


@pytest.fixture()
def scripted_noise(monkeypatch):
    """Both ways draw :func:`_scripted`; returns how many answers went through the lists."""
    taken: list[int] = []
    monkeypatch.setattr(release, "scalar_draws", lambda gaussian, values, cells, rng: _scripted(gaussian, values, cells))
    monkeypatch.setattr(Allocation, "sample", lambda self, scales, group, rng: np.array(
        _scripted(self.mechanism == "discrete_gaussian", scales, group.tolist()), dtype=np.int64))
    real = release.sample_noise_lists

    def spy(*args):
        out = real(*args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(release, "sample_noise_lists", spy)
    return taken


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_lists_and_arrays_give_the_same_answer(big_budget, scripted_noise, monkeypatch, case):  # noqa: F811
    lists = _answer(big_budget, case.sql)
    monkeypatch.setattr(release, "LIST_DRAWS", -1)  # every answer in arrays
    arrays = _answer(big_budget, case.sql)
    assert lists == arrays
    assert not any(scripted_noise[1:])  # the second answer did not take the lists


def test_the_corpus_takes_the_lists_often(big_budget, scripted_noise):  # noqa: F811
    """The test above compares something: most small answers of the corpus take the lists."""
    for case in ACCEPTED:
        _answer(big_budget, case.sql)
    assert sum(scripted_noise) >= 120, sum(scripted_noise)  # 157 of 259 when written


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*), SUM(payann) FROM establishments",
    "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2",  # 24 draws
    "SELECT COUNT(*), SUM(employees), AVG(payann) FROM establishments WHERE state IN ('CA', 'NY')",
])
def test_up_to_a_small_batch_the_lists_draw_the_arrays_noise(big_budget, monkeypatch, sql):  # noqa: F811
    """The real samplers, one seeded source: the same words make the same draws both ways."""
    seen: list = []
    real = release.sample_noise_lists
    monkeypatch.setattr(release, "sample_noise_lists", lambda *a: seen.append(real(*a)) or seen[-1])
    lists = _answer(big_budget, sql)
    assert seen[-1] is not None and sum(map(len, seen[-1].values())) <= SMALL_BATCH
    monkeypatch.setattr(release, "LIST_DRAWS", -1)
    assert _answer(big_budget, sql) == lists


BIG = 2**62


@pytest.mark.parametrize("exact,noise,g", [
    ([1, None, -5], [3, -2, 0], Fraction(1)),
    ([BIG - 1, 0], [1, -1], Fraction(1)),  # below 2^62 each: int64, but the sum 2^62: floats
    ([BIG, 0], [-1, 0], Fraction(1)),  # an exact value at 2^62: Python ints, the sum below: ints
    ([BIG, 5], [1, 0], Fraction(1)),  # and at or above 2^62: floats
    ([2**63 - 2, 0], [2, 0], Fraction(1)),  # past int64
    ([2**70, -(2**70)], [3, -3], Fraction(1)),
    ([7, None, -12], [1, 2, 3], Fraction(1, 100)),  # cents: g × the integers, rounded once
    ([2**70, 1], [1, 1], Fraction(3, 10)),
])
def test_noisy_values_keep_the_arrays_values_and_types(exact, noise, g):
    e, n = release.exact_and_noise(list(exact), np.array(noise, dtype=np.int64))
    arrays = release.as_array(e + n, g).tolist()
    lists = release.noisy_list(list(exact), list(noise), g)
    assert lists == arrays and list(map(type, lists)) == list(map(type, arrays))


@pytest.mark.parametrize("way", ["lists", "arrays"])
def test_the_type_shown_depends_on_the_noisy_values_alone(way):
    """Two exact sums either side of 2^62 with the same noisy value show the same value and type:
    the type of the column is post-processing (it once told, near 2^62, on which side the exact
    sum was)."""
    shown = []
    for exact, noise in ((BIG + 5, -2), (BIG - 5, 8)):  # both noisy 2^62 + 3
        if way == "lists":
            shown.append(release.noisy_list([exact, 1], [noise, 0], Fraction(1)))
        else:
            e, n = release.exact_and_noise([exact, 1], np.array([noise, 0], dtype=np.int64))
            shown.append(release.as_array(e + n, Fraction(1)).tolist())
    assert shown[0] == shown[1] and list(map(type, shown[0])) == list(map(type, shown[1]))


def test_a_source_without_words_takes_the_arrays(big_budget):  # noqa: F811
    class Bits:  # a source of the vectorised methods only
        def __init__(self) -> None:
            self.inner = seeded_random(3)

        def bits63(self, n):
            return self.inner.bits63(n)

        def uniform_below(self, bounds):
            return self.inner.uniform_below(bounds)

    big_budget.rng = Bits()
    r = big_budget.execute("SELECT COUNT(*) FROM establishments")
    assert len(r.rows) == 1
