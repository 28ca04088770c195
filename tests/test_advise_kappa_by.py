"""`dpsql advise` on a many-row table: κ per key column (``max_groups_by``) and ``quantile_rows``
(dpsql/faces/advise_units.py, advise_cmd.write_thresholds; docs/own_data.md, "Many rows per
unit"). The per-unit statistic is checked against a count written here over the same rows; the
writing against the policy file loaded back; the never-write-a-flagged-value rule on a κ_C alone.
The whole chain on a generated flights table: tests/test_own_many_rows.py."""

from __future__ import annotations

import argparse
import math
import random

import duckdb
import pytest

from dpsql.backends.duckdb_files import per_unit_table
from dpsql.errors import QueryRefused
from dpsql.faces.advise_cmd import _finish, write_thresholds
from dpsql.policy.loader import load_policy
import table_rows

POLICY = """[budget]
default_rho = 0.1
total_rho = 1

[tables.flights]
privacy_unit = "tail"
max_groups = 1   # PLACEHOLDER, review: set it with dpsql advise --write (docs/own_data.md)
{extra}row_threshold = 10   # PLACEHOLDER: set it with dpsql advise --write, or like a threshold T (docs/own_data.md)

[tables.flights.measures]
delay = {{ threshold = 1 }}

[tables.flights.keys]
carrier = {{}}
origin = {{}}
"""


def test_distinct_values_per_unit_count_null_as_one_value(tmp_path):
    rng = random.Random(5)
    rows = [(f"u{rng.randrange(40)}", rng.choice(["AA", "B6", None]), rng.choice(["EWR", "JFK", "LGA", None]), 1)
            for _ in range(600)]
    src, out = tmp_path / "f.duckdb", tmp_path / "u.duckdb"
    con = duckdb.connect(str(src))
    con.execute("CREATE TABLE flights(tail VARCHAR, carrier VARCHAR, origin VARCHAR, delay INTEGER)")
    table_rows.insert(con, "flights", rows)
    con.close()
    per_unit_table(src, "flights", "tail", ["carrier", "origin"], {"delay": 1.0}, out, per_key=["carrier", "origin"])
    con = duckdb.connect(str(out), read_only=True)
    got = {u: (math.floor(c), math.floor(o), math.floor(g)) for u, c, o, g in
           con.execute("SELECT unit, groups_carrier, groups_origin, groups FROM flights").fetchall()}
    con.close()
    want = {u: (len({r[1] for r in rows if r[0] == u}), len({r[2] for r in rows if r[0] == u}),
                len({(r[1], r[2]) for r in rows if r[0] == u})) for u in {r[0] for r in rows}}
    assert got == want
    con = duckdb.connect(str(out), read_only=True)
    got = {u: (math.floor(c), math.floor(o)) for u, c, o in con.execute("SELECT unit, rows_carrier, rows_origin FROM flights").fetchall()}
    con.close()
    from collections import Counter  # r per key column: the unit's most rows in one group of that column alone

    def most(i: int, u: str) -> int:
        return max(Counter(r[i] for r in rows if r[0] == u).values())
    assert got == {u: (most(1, u), most(2, u)) for u in {r[0] for r in rows}}


@pytest.mark.parametrize("extra", ["", "max_groups_by = { carrier = 9 }\n", "quantile_rows = 10   # review\n",
                                   "quantile_rows_by = { origin = 2 }\n"])
def test_write_sets_kappa_per_key_and_quantile_rows(tmp_path, extra):
    path = tmp_path / "p.toml"
    path.write_text(POLICY.format(extra=extra))
    write_thresholds(path, "flights", {"delay": 40}, {"max_groups": 4, "row_threshold": 12, "max_groups_by.carrier": 1,
                                                     "max_groups_by.origin": 3, "quantile_rows": 5,
                                                     "quantile_rows_by.carrier": 30, "quantile_rows_by.origin": 11})
    t = load_policy(path).tables["flights"]
    assert (t.max_groups, t.row_threshold, t.quantile_rows, t.measures["delay"].threshold) == (4, 12, 5, 40)
    assert t.max_groups_by == {("carrier",): 1, ("origin",): 3}
    assert t.quantile_rows_by == {("carrier",): 30, ("origin",): 11}
    text = path.read_text()
    assert text.count("max_groups_by") == 1 and text.count("quantile_rows =") == 1 and "PLACEHOLDER" not in text
    assert text.count("quantile_rows_by") == 1


@pytest.mark.parametrize("field", ["max_groups_by.carrier", "quantile_rows_by.carrier"])
def test_a_flagged_kappa_of_one_column_writes_nothing(tmp_path, capsys, field):
    path = tmp_path / "p.toml"
    path.write_text(POLICY.format(extra=""))
    before = path.read_bytes()
    report = {"table": "flights", "measures": {"max_groups": {"recommended": 4}, "row_threshold": {"recommended": 12},
                                               field: {"recommended": None}, "delay": {"recommended": 40}}}
    args = argparse.Namespace(write=True, json=True)
    with pytest.raises(QueryRefused) as e:
        _finish(args, report, path, "flights", ("max_groups", "row_threshold", field))
    assert e.value.code == "DP406" and field in e.value.message
    assert path.read_bytes() == before
