"""Shared fixtures: one demo database per test session, built from its fixed seed; and a real
``dpsql serve`` on loopback (``dpsql_server``, ``start_server``: tests/server_harness.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import dpsql
from dpsql.testing import seeded_random
from server_harness import dpsql_server, start_server  # noqa: F401 - fixtures for every test


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, policy) of the default-size demo database, built once per test run."""
    from dpsql.demo_db import ensure_demo

    home = tmp_path_factory.mktemp("dpsql_home")
    os.environ["DPSQL_HOME"] = str(home)  # connect() with no database finds the same file
    return ensure_demo(home=home)


@pytest.fixture()
def demo(demo_files: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(database, policy): the demo database with a copy of its policy in this test's own
    directory, so the test gets a fresh budget ledger (the ledger lives beside the policy)."""
    policy = tmp_path / "demo.policy.toml"
    shutil.copyfile(demo_files[1], policy)
    return demo_files[0], policy


@pytest.fixture()
def con(demo: tuple[Path, Path]):
    """A connection on the demo database with a seeded (test-only) random source."""
    c = dpsql.connect(*demo, _random_source=seeded_random(1234))
    yield c
    c.close()


@pytest.fixture()
def session(con):
    return con.session
