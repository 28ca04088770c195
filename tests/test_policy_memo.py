"""A policy file is validated once per content in a process (dpsql/policy/memo.py, issue 34): a
second session of the same unchanged file shares the validated policy, and any edit of the file is
seen by the next session — even one that keeps the file's size and modification time."""

from __future__ import annotations

import os
from fractions import Fraction

import pytest

import dpsql
from dpsql.errors import PolicyFileError
from dpsql.policy import memo
from dpsql.policy.loader import load_policy as load_from_file


def test_an_unchanged_file_is_validated_once(demo):
    first = memo.load_policy(demo[1])
    assert memo.load_policy(demo[1]) is first
    with dpsql.connect(*demo) as a, dpsql.connect(*demo) as b:
        assert a.session.policy is b.session.policy


def _edit_keeping_size_and_mtime(path, old: str, new: str) -> None:
    assert len(old) == len(new)
    st = os.stat(path)
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_an_edit_is_seen_by_the_next_session_whatever_the_mtime(demo):
    text = demo[1].read_text()
    old = next(line for line in text.splitlines() if line.startswith("total_rho"))
    with dpsql.connect(*demo) as con:
        before = con.session.policy.budget.total_rho
    new = "total_rho = 0.5" + " " * (len(old) - len("total_rho = 0.5"))  # a different budget, same size
    _edit_keeping_size_and_mtime(demo[1], old, new)
    with dpsql.connect(*demo) as con:
        assert con.session.policy.budget.total_rho == Fraction(1, 2) != before
        assert con.session.policy == load_from_file(demo[1])  # what a fresh process validates


def test_an_edit_that_breaks_the_file_is_refused_after_a_good_load(demo):
    memo.load_policy(demo[1])
    demo[1].write_text(demo[1].read_text() + "\n[budget.nonsense]\n")
    with pytest.raises(PolicyFileError):
        memo.load_policy(demo[1])
    with pytest.raises(PolicyFileError):
        dpsql.connect(*demo)


def test_a_removed_file_is_refused(demo, tmp_path):
    copy = tmp_path / "gone.policy.toml"
    copy.write_bytes(demo[1].read_bytes())
    memo.load_policy(copy)
    copy.unlink()
    with pytest.raises(PolicyFileError):
        memo.load_policy(copy)


def test_a_policy_naming_parquet_files_is_validated_each_time(demo):
    """Loading it checks that its Parquet files exist: an input outside the policy's bytes."""
    from dpsql.demo_db.parquet import ensure_demo_parquet

    _, policy = ensure_demo_parquet(home=demo[0].parent)
    first = memo.load_policy(policy)
    assert first.parquet and memo.load_policy(policy) is not first
