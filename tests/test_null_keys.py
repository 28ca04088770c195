"""NULL as a key value (issue 32, dpsql/sql/null_keys.py): a key column the schema lets hold NULL
has a NULL group, released like any other group and present whatever the rows hold; a NOT NULL
column has none; ``null = false`` in the policy drops rows whose key is NULL.

The data is the penguins shape (346 birds, some of unknown sex) generated here; every expected
count is computed by the test from the rows it wrote (Python, not dpsql). At ρ = 1000 a count's
σ is 1/√2000 ≈ 0.022, so a noisy count equals the exact one (|noise| ≥ 1 has probability
≈ 10⁻¹⁵⁰⁰ per cell)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import duckdb
import pytest

import dpsql
from dpsql.errors import PolicyFileError
from dpsql.testing import seeded_random
import table_rows

SPECIES = ["Adelie", "Gentoo", "Chinstrap"]
ISLANDS = ["Biscoe", "Dream", "Torgersen"]


def birds(n: int = 346, null_every: int = 31) -> list[tuple]:
    """(id, species, sex, island, mass, day): every ``null_every``-th bird of unknown sex (and
    island), every 50th with no day; some days outside 2020 (the policy's range)."""
    out = []
    for i in range(n):
        sex = None if null_every and i % null_every == 0 else ("male" if i % 2 else "female")
        island = None if null_every and i % null_every == 0 else ISLANDS[i % 3]
        day = None if i % 50 == 0 else f"{2019 + (i % 7 == 0) * 2}-{1 + i % 12:02d}-15"  # 2021 is outside
        out.append((i, SPECIES[i % 3], sex, island, 3000 + 7 * i, day))
    return out


POLICY = """
[budget]
default_rho = 1000.0
total_rho = 1000000.0
total_delta = 1e-3
[tables.penguins]
privacy_unit = "id"
[tables.penguins.measures]
mass = {{ threshold = 6000 }}
[tables.penguins.keys]
species = {{ keyset = ["Adelie", "Gentoo", "Chinstrap"] }}
sex = {{ keyset = ["male", "female"]{sex_extra} }}
island = {{{island}}}
day = {{ range = ["2019-01-01", "2020-12-31"] }}
[public_tables.islands]
key = "name"
"""


def make(tmp_path: Path, rows: list[tuple], *, sex_not_null: bool = False, sex_extra: str = "", island: str = "",
         name: str = "p") -> tuple[Path, Path]:
    db, policy = tmp_path / f"{name}.duckdb", tmp_path / f"{name}.policy.toml"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE penguins (id BIGINT NOT NULL, species VARCHAR NOT NULL, "
                f"sex VARCHAR{' NOT NULL' if sex_not_null else ''}, island VARCHAR, mass BIGINT, day DATE)")
    table_rows.insert(con, "penguins", rows)
    con.execute("CREATE TABLE islands (name VARCHAR NOT NULL, ocean VARCHAR)")
    table_rows.insert(con, "islands", [("Biscoe", "Southern"), ("Dream", None), ("Torgersen", "Southern")])
    con.close()
    policy.write_text(POLICY.format(sex_extra=sex_extra, island=island))
    return db, policy


def run(db: Path, policy: Path, sql: str, seed: int = 1) -> list[tuple]:
    with dpsql.connect(str(db), str(policy), _random_source=seeded_random(seed)) as con:
        cur = con.cursor()
        cur.execute(sql)
        return cur.fetchall()


def test_penguins_by_sex_has_a_null_group(tmp_path):
    rows = birds()
    db, policy = make(tmp_path, rows)
    got = dict(run(db, policy, "SELECT sex, COUNT(*) FROM penguins GROUP BY sex"))
    want = Counter(r[2] for r in rows)
    assert None in want and got == dict(want)
    assert sum(got.values()) == 346  # no bird vanishes (168 + 167 of 346 before issue 32)


def test_null_group_is_released_when_no_row_is_null(tmp_path):
    """Its presence is the schema's, not the data's: noise on zero, like an empty public group."""
    db, policy = make(tmp_path, birds(null_every=0))
    got = run(db, policy, "SELECT sex, COUNT(*) AS n, SUM(mass) AS m FROM penguins GROUP BY sex")
    assert [r[0] for r in got].count(None) == 1
    null_row = next(r for r in got if r[0] is None)
    assert null_row[1] == 0 and abs(null_row[2]) < 6000 * 0.1  # σ of the sum ≈ 6000 · 0.022


def test_not_null_column_has_no_null_group(tmp_path):
    db, policy = make(tmp_path, birds(null_every=0), sex_not_null=True)
    got = run(db, policy, "SELECT sex, COUNT(*) FROM penguins GROUP BY sex")
    assert {r[0] for r in got} == {"male", "female"}


def test_policy_null_false_drops_null_rows(tmp_path):
    rows = birds()
    db, policy = make(tmp_path, rows, sex_extra=", null = false", island=" null = false ")
    got = dict(run(db, policy, "SELECT sex, COUNT(*) FROM penguins GROUP BY sex"))
    assert got == {s: n for s, n in Counter(r[2] for r in rows).items() if s is not None}
    # a private key marked null = false: no NULL group through partition selection either
    got = dict(run(db, policy, "SELECT island, COUNT(*) FROM penguins GROUP BY island"))
    assert None not in got and set(got) <= set(ISLANDS)


def test_policy_null_must_be_a_boolean(tmp_path):
    db, policy = make(tmp_path, birds(), sex_extra=', null = "no"')
    with pytest.raises(PolicyFileError, match=r"tables\.penguins\.keys\.sex\.null"):
        run(db, policy, "SELECT COUNT(*) FROM penguins")


def test_two_keys_and_an_expression_of_a_nullable_key(tmp_path):
    rows = birds()
    db, policy = make(tmp_path, rows)
    got = {(a, b): n for a, b, n in run(db, policy, "SELECT species, sex, COUNT(*) FROM penguins GROUP BY species, sex")}
    assert got == {(s, x): sum(r[1] == s and r[2] == x for r in rows) for s in SPECIES for x in ("male", "female", None)}
    # the image of the keyset with NULL: COALESCE maps NULL to '?', which is then a public group
    got = dict(run(db, policy, "SELECT COALESCE(sex, '?') AS s, COUNT(*) FROM penguins GROUP BY s"))
    assert got == dict(Counter(r[2] or "?" for r in rows))


def test_private_key_null_is_a_group_for_selection(tmp_path):
    """Partition selection treats NULL as a value: 70 birds of unknown island are a group like the
    others of about 90 (the default selection, ε = 0.5 and δ = 1e-6, keeps a group of 70 units
    with probability 1 - 1e-6 or more: docs/policy.md, about 26 units at ε = 0.5)."""
    rows = birds(null_every=5)
    db, policy = make(tmp_path, rows)
    got = dict(run(db, policy, "SELECT island, COUNT(*) FROM penguins GROUP BY island"))
    assert got == dict(Counter(r[3] for r in rows))


def test_date_range_null_group_holds_null_days_only(tmp_path):
    """Days outside the range fall in no group; NULL days form the NULL group of every bucket."""
    rows = birds()
    db, policy = make(tmp_path, rows)
    got = dict(run(db, policy, "SELECT EXTRACT(year FROM day) AS y, COUNT(*) FROM penguins GROUP BY 1"))
    days = [r[5] for r in rows]
    want = {2019: sum(d is not None and d.startswith("2019") for d in days),
            2020: sum(d is not None and d.startswith("2020") for d in days), None: days.count(None)}
    assert got == want and any(d is not None and d.startswith("2021") for d in days)


def test_public_table_null_and_left_join_groups(tmp_path):
    rows = birds()
    db, policy = make(tmp_path, rows)
    ocean = {"Biscoe": "Southern", "Dream": None, "Torgersen": "Southern"}
    # a public table's NULL is a public value: Dream's birds are the NULL group of ocean
    got = dict(run(db, policy, "SELECT i.ocean, COUNT(*) FROM penguins p JOIN islands i ON p.island = i.name GROUP BY 1"))
    assert got == dict(Counter(ocean[r[3]] for r in rows if r[3] is not None))
    # a LEFT JOIN's unmatched rows (birds of unknown island) are the NULL group of name
    got = dict(run(db, policy, "SELECT i.name, COUNT(*) FROM penguins p LEFT JOIN islands i ON p.island = i.name GROUP BY 1"))
    assert got == dict(Counter(r[3] for r in rows))


def _shape(result: list[tuple]) -> list[object]:
    return [r[0] for r in result]


@pytest.mark.parametrize("sql", [
    "SELECT sex, COUNT(*) FROM penguins GROUP BY sex",
    "SELECT species, sex, AVG(mass) FROM penguins GROUP BY species, sex ORDER BY species, sex",
    "SELECT EXTRACT(year FROM day) AS y, SUM(mass) FROM penguins GROUP BY 1 ORDER BY 1",
    "SELECT sex, COUNT(*) FROM penguins WHERE sex IS NULL GROUP BY sex",
])
def test_neighbours_with_and_without_a_null_row_release_the_same_groups(tmp_path, sql):
    """Adding one bird of unknown sex and day changes no outcome kind: the same groups, in the
    same order, with or without it (and with no NULL row at all)."""
    base = birds(null_every=0)
    extra = (9999, "Gentoo", None, None, 4000, None)
    shapes = []
    for name, rows in (("a", base), ("b", base + [extra])):
        db, policy = make(tmp_path, rows, name=name)
        shapes.append(_shape(run(db, policy, sql)))
    assert shapes[0] == shapes[1] and shapes[0]
    if "GROUP BY sex" in sql:
        assert None in shapes[0]


def test_many_rows_table_keeps_null_records(tmp_path):
    """A table with many rows per unit bounds a unit's groups among those that can be released
    (sql/units.py ``_releasable``): the NULL group's records are among them."""
    db = tmp_path / "m.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE visits (uid BIGINT NOT NULL, kind VARCHAR)")
    rows = [(u, None if u % 5 == 0 else ("a" if u % 2 else "b")) for u in range(200)]
    table_rows.insert(con, "visits", rows)
    con.close()
    policy = tmp_path / "m.policy.toml"
    policy.write_text(textwrap.dedent("""
        [budget]
        default_rho = 1000.0
        total_rho = 100000.0
        [tables.visits]
        privacy_unit = "uid"
        max_groups = 1
        row_threshold = 1
        [tables.visits.keys]
        kind = { keyset = ["a", "b"] }
        """))
    got = dict(run(db, policy, "SELECT kind, COUNT(*) FROM visits GROUP BY kind"))
    assert got == dict(Counter(k for _, k in rows))


def test_cli_shows_null_and_json_null(tmp_path):
    db, policy = make(tmp_path, birds())
    env = {**os.environ, "DPSQL_HOME": str(tmp_path / "home")}
    sql = "SELECT sex, COUNT(*) AS n FROM penguins GROUP BY sex"
    text = subprocess.run([sys.executable, "-m", "dpsql", "query", sql, str(db), "--policy", str(policy)],
                          capture_output=True, text=True, env=env, check=True).stdout
    assert any(line.split()[:1] == ["NULL"] for line in text.splitlines()), text
    out = json.loads(subprocess.run([sys.executable, "-m", "dpsql", "query", sql, str(db), "--policy", str(policy), "--json"],
                                    capture_output=True, text=True, env=env, check=True).stdout)
    assert None in [row[0] if isinstance(row, list) else row.get("sex") for row in out["rows"]], out


def test_init_declares_not_null_what_the_csv_never_leaves_empty(tmp_path):
    """A CSV has no constraints: dpsql init declares NOT NULL each --public column with no empty
    value, so that key has no NULL group; a public column with empty values keeps its NULL group,
    and a column not declared public stays nullable (its NULLs are no schema fact)."""
    csv = tmp_path / "birds.csv"
    rows = birds()
    csv.write_text("id,species,sex,mass\n" + "".join(f"{i},{s},{x or ''},{m}\n" for i, s, x, _, m, _ in rows))
    env = {**os.environ, "DPSQL_HOME": str(tmp_path / "home")}
    subprocess.run([sys.executable, "-m", "dpsql", "init", str(csv), "--unit", "id", "--public", "species,sex", "--yes"],
                   check=True, capture_output=True, env=env)
    db = tmp_path / "birds.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        nullable = dict(con.execute("SELECT column_name, is_nullable FROM information_schema.columns "
                                    "WHERE table_name = 'birds'").fetchall())
    assert nullable == {"id": "YES", "species": "NO", "sex": "YES", "mass": "YES"}
    with dpsql.connect(str(db), _random_source=seeded_random(4)) as con:
        got = [r[0] for r in con.execute("SELECT species, COUNT(*) FROM birds GROUP BY species").fetchall()]
        assert None not in got
        assert None in [r[0] for r in con.execute("SELECT sex, COUNT(*) FROM birds GROUP BY sex").fetchall()]
