"""The answers kept for reuse are bounded (issue 31; dpsql/ledger/answers.py, docs/privacy.md "Where
it lives"): at most ``budget.answers_kept`` answers and ``budget.answers_mib`` of them, the least
recently used pruned first; a pruned answer's statement is charged afresh when asked again, a kept
one is still reused.

Oracles: the ledger's SQLite file read here with ``sqlite3`` (which charges exist, which answers are
stored and SQLite's own ``length`` of each), never the receipt or the store's ``size`` column.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import dpsql
from dpsql.errors import PolicyFileError
from dpsql.policy.loader import load_policy
from dpsql.testing import seeded_random
from server_harness import policy_with_budget
from tests.test_ledger import ledger_file

Q = [f"SELECT naics2, SUM(payann) AS payroll FROM establishments WHERE employees > {i} GROUP BY naics2"
     for i in range(4)]


def _file(policy: Path) -> tuple[list[int], list[tuple[int, int]]]:
    """(the ids of every charge, (charge id, bytes) of every stored answer by charge id), read with sqlite3."""
    db = sqlite3.connect(ledger_file(policy))
    try:
        charges = [r[0] for r in db.execute("SELECT id FROM charges ORDER BY id")]
        stored = db.execute("SELECT charge_id, length(answer) FROM answers ORDER BY charge_id").fetchall() \
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'answers'").fetchone() else []
    finally:
        db.close()
    return charges, stored


def _run(c, sql: str) -> int:
    """The id of the charge a statement added to the ledger file, or 0 when it added none (reused)."""
    before = _file(c.session.policy.path)[0]
    c.execute(sql).fetchall()
    after = _file(c.session.policy.path)[0]
    assert len(after) - len(before) in (0, 1)
    return after[-1] if len(after) > len(before) else 0


def test_the_count_bound_holds_and_the_least_recently_used_goes_first(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="2")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(1)) as c:
        a, b = _run(c, Q[0]), _run(c, Q[1])
        assert a and b and [i for i, _ in _file(policy)[1]] == [a, b]
        assert _run(c, Q[0]) == 0  # A reused: now used after B
        cc = _run(c, Q[2])
        assert cc and [i for i, _ in _file(policy)[1]] == [a, cc]  # B pruned (least recently used), not A
        again = _run(c, Q[1])
        assert again > cc  # B asked again: a fresh release, charged
        assert [i for i, _ in _file(policy)[1]] == [cc, again]  # A, used before C, pruned
        assert _run(c, Q[2]) == 0 and _run(c, Q[1]) == 0  # the kept ones are still reused
        assert _run(c, Q[0]) > again  # A was pruned by B's new release: charged again
        assert len(_file(policy)[1]) == 2


def _kept_by(policy: Path) -> dict[str, list[int]]:
    """Each analyst's stored answers (the charge ids), read with sqlite3 through the charges table."""
    db = sqlite3.connect(ledger_file(policy))
    try:
        out: dict[str, list[int]] = {}
        for analyst, charge in db.execute("SELECT c.analyst, a.charge_id FROM answers a JOIN charges c "
                                          "ON c.id = a.charge_id ORDER BY a.charge_id"):
            out.setdefault(analyst, []).append(charge)
    finally:
        db.close()
    return out


def test_one_analysts_statements_never_push_out_anothers_answers(demo, tmp_path):
    """The bound is per analyst: bob's many statements leave alice's answers kept, and alice's repeat
    is shown again free, charged nothing (a bound over all analysts would let bob make alice pay again
    from her own budget, and tell bob how many statements alice had run)."""
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="2")
    with dpsql.connect(demo[0], policy, analyst="alice", _random_source=seeded_random(1)) as alice, \
            dpsql.connect(demo[0], policy, analyst="bob", _random_source=seeded_random(2)) as bob:
        a0, a1 = _run(alice, Q[0]), _run(alice, Q[1])
        bobs = [_run(bob, q) for q in Q]  # four statements: two over bob's bound
        assert a0 and a1 and all(bobs)
        kept = _kept_by(policy)
        assert kept["alice"] == [a0, a1]  # untouched by bob's statements
        assert kept["bob"] == bobs[2:]  # bob's own bound: his two most recent
        assert _run(alice, Q[0]) == 0 and _run(alice, Q[1]) == 0  # alice's repeats: free
        assert _run(bob, Q[0]) > bobs[-1]  # bob's pruned answer: charged again


def test_reloads_of_a_recent_answer_write_nothing(demo, tmp_path):
    """A dashboard's reloads: an answer shown again is marked used only when an eighth of what the
    store holds was kept or shown since (ledger/answers.py, _slack): with the default bounds,
    alternating two answers ten times leaves the store's rows as they were (read with sqlite3)."""
    def rows() -> list[tuple]:
        db = sqlite3.connect(ledger_file(demo[1]))
        try:
            return db.execute("SELECT * FROM answers ORDER BY key").fetchall()
        finally:
            db.close()

    with dpsql.connect(*demo, _random_source=seeded_random(9)) as c:
        assert _run(c, Q[0]) and _run(c, Q[1])
        before = rows()
        assert all(_run(c, Q[i % 2]) == 0 for i in range(10))
        assert rows() == before


def test_a_pruned_answer_is_never_shown_free(demo, tmp_path):
    """answers_kept = 0: nothing is kept, so every repeat is a new release with its own charge."""
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="0")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(2)) as c:
        ids = [_run(c, Q[0]) for _ in range(3)]
        assert all(ids) and len(set(ids)) == 3
        assert _file(policy)[1] == []


def test_the_size_bound_holds(demo, tmp_path):
    # the bytes of one such answer, from a ledger of its own (SQLite's length of what it stored)
    probe = policy_with_budget(demo[1], tmp_path / "probe.toml")
    with dpsql.connect(demo[0], probe, _random_source=seeded_random(3)) as c:
        _run(c, Q[0])
    (_, one), = _file(probe)[1]
    bound = int(one * 2.5)  # room for two such answers, not three
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_mib=repr(bound / 2**20))
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(4)) as c:
        ids = [_run(c, q) for q in Q]
        assert all(ids)
        stored = _file(policy)[1]
        assert sum(n for _, n in stored) <= bound
        assert [i for i, _ in stored] == ids[-len(stored):] and len(stored) >= 1  # the newest kept
        assert _run(c, Q[-1]) == 0 and _run(c, Q[0]) > ids[-1]  # the newest reused, the oldest charged again


def test_an_answer_larger_than_the_bound_is_not_kept(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_mib="0")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(5)) as c:
        assert _run(c, Q[0]) and _run(c, Q[0])
        assert _file(policy)[1] == []


def test_a_store_written_before_the_bound_is_still_reused_and_counted(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(6)) as c:
        first = _run(c, Q[0])
    db = sqlite3.connect(ledger_file(policy))  # the table as this store wrote it before issue 31
    db.executescript("CREATE TABLE old (key TEXT PRIMARY KEY, charge_id INTEGER NOT NULL, answer TEXT NOT NULL);"
                     "INSERT INTO old SELECT key, charge_id, answer FROM answers;"
                     "DROP TABLE answers; ALTER TABLE old RENAME TO answers;")
    db.close()
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(7)) as c:
        assert _run(c, Q[0]) == 0  # reused from the old store
        (charge, n), = _file(policy)[1]
        assert charge == first
        out = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "--policy", str(policy), "--json"],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    kept = json.loads(out.stdout)["answers"]
    assert (kept["kept"], kept["bytes"]) == (1, n)
    assert (kept["most"], kept["most_bytes"]) == (10_000, 256 * 2**20)


def test_dpsql_ledger_says_how_many_answers_are_kept(demo, tmp_path):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", answers_kept="3", answers_mib="1.5")
    with dpsql.connect(demo[0], policy, _random_source=seeded_random(8)) as c:
        for q in Q:
            _run(c, q)
    stored = _file(policy)[1]
    out = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "--policy", str(policy)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line, = [x for x in out.stdout.splitlines() if x.startswith("answers kept for reuse")]
    assert f": {len(stored)} ({sum(n for _, n in stored):,} bytes" in line, line
    assert "at most 3 and 1.5 MiB per analyst" in line, line


@pytest.mark.parametrize("field, value", [("answers_kept", "-1"), ("answers_kept", "1.5"), ("answers_kept", "true"),
                                          ("answers_mib", "-0.5"), ("answers_mib", '"big"'), ("answers_mib", "inf")])
def test_a_bad_bound_is_refused_at_load(demo, tmp_path, field, value):
    policy = policy_with_budget(demo[1], tmp_path / "p.toml", **{field: value})
    with pytest.raises(PolicyFileError, match=f"budget.{field}"):
        load_policy(policy)
