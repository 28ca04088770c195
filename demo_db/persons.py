"""The demo's ``persons`` table: synthetic people for SafeTab-style tabulation (docs/workloads.md).

One row per person (the privacy unit ``person_id``): state, sex, age and its bins at SafeTab's
three levels of detail (4, 9 and 23 bins), and one to eight distinct detailed race codes in
``race1`` .. ``race8`` (NULL beyond a person's count). Seeded; the code list is fixed.
"""

from __future__ import annotations

import duckdb
import numpy as np

N_PERSONS = 60_000
RACE_CODES = [f"R{i:02d}" for i in range(1, 13)]  # 12 detailed race codes
MAX_RACES = 8
#: P(a person has k race codes), k = 1..8
_K_PROBS = np.array([0.80, 0.12, 0.04, 0.02, 0.01, 0.005, 0.003, 0.002])
AGE4 = [0, 18, 45, 65]  # lower bounds of the bins
AGE9 = [0, 5, 18, 25, 35, 45, 55, 65, 75]
AGE23 = [0, 5, 10, 15, 18, 20, 21, 22, 25, 30, 35, 40, 45, 50, 55, 60, 62, 65, 67, 70, 75, 80, 85]


def bin_labels(bounds: list[int]) -> list[str]:
    return [f"{lo:02d}-{hi - 1:02d}" for lo, hi in zip(bounds, bounds[1:])] + [f"{bounds[-1]:02d}+"]  # sort as numbers


def _bins(age: np.ndarray, bounds: list[int]) -> np.ndarray:
    labels = np.array(bin_labels(bounds), dtype=object)
    return labels[np.searchsorted(np.array(bounds), age, side="right") - 1]


SCHEMA = ("CREATE TABLE persons (person_id BIGINT NOT NULL, state VARCHAR NOT NULL, sex VARCHAR NOT NULL, "
          "age INTEGER NOT NULL, age4 VARCHAR NOT NULL, age9 VARCHAR NOT NULL, age23 VARCHAR NOT NULL, "
          + ", ".join(f"race{i} VARCHAR" for i in range(1, MAX_RACES + 1)) + ")")


def write_persons(con: duckdb.DuckDBPyConnection, seed: int, states: list[str], weights: np.ndarray) -> None:
    """Create and fill ``persons`` from its own stream ([seed, 3])."""
    rng = np.random.default_rng([seed, 3])
    n = N_PERSONS
    state = np.array(states, dtype=object)[rng.choice(len(states), n, p=weights / weights.sum())]
    sex = np.where(rng.random(n) < 0.5, "F", "M").astype(object)
    age = np.minimum(rng.gamma(2.0, 19.0, n).astype(np.int64), 100)
    popularity = 1.0 / np.arange(1, len(RACE_CODES) + 1) ** 1.2
    popularity /= popularity.sum()
    k = rng.choice(np.arange(1, MAX_RACES + 1), n, p=_K_PROBS / _K_PROBS.sum())
    # k distinct codes drawn without replacement in proportion to popularity, all at once: the
    # k largest of log(popularity) + Gumbel noise (the Gumbel-top-k trick).
    order = np.argsort(-(np.log(popularity) + rng.gumbel(size=(n, len(RACE_CODES)))), axis=1)[:, :MAX_RACES]
    races = np.array(RACE_CODES, dtype=object)[order]
    races[np.arange(MAX_RACES)[None, :] >= k[:, None]] = None
    cols = {"person_id": np.arange(1, n + 1, dtype=np.int64), "state": state, "sex": sex, "age": age.astype(np.int32),
            "age4": _bins(age, AGE4), "age9": _bins(age, AGE9), "age23": _bins(age, AGE23)}
    cols.update({f"race{j + 1}": races[:, j] for j in range(MAX_RACES)})
    con.execute(SCHEMA)
    con.register("persons_df", cols)
    con.execute("INSERT INTO persons SELECT * FROM persons_df ORDER BY person_id")
    con.unregister("persons_df")
