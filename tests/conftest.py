"""Shared fixtures: one demo database per test session, built from its fixed seed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dpsql
from dpsql.testing import seeded_random


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, policy) of the default-size demo database, built once per test run."""
    from dpsql.demo_db import ensure_demo

    home = tmp_path_factory.mktemp("dpsql_home")
    os.environ["DPSQL_HOME"] = str(home)  # connect() with no database finds the same file
    return ensure_demo(home=home)


@pytest.fixture()
def con(demo: tuple[Path, Path]):
    """A connection on the demo database with a seeded (test-only) random source."""
    c = dpsql.connect(*demo, _random_source=seeded_random(1234))
    yield c
    c.close()


@pytest.fixture()
def session(con):
    return con.session
