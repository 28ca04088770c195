"""Shared fixtures: one demo database per test session, built from its fixed seed; and a real
``dpsql serve`` on loopback (``dpsql_server``, ``start_server``: tests/server_harness.py).

The whole suite (no test paths named) runs on :data:`WORKERS` pytest-xdist worker processes, a
test file at a time per worker; ``-n 0`` or ``-p no:xdist`` runs it in one process, and naming
files or node ids (``pytest tests/test_x.py``) runs just those, in one process, unless ``-n`` is
given. Each worker is its own session: its own demo database, ``DPSQL_HOME`` and temporary
folders; servers listen on ports the OS picks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import dpsql
from dpsql.testing import seeded_random
from server_harness import dpsql_server, start_server  # noqa: F401 - fixtures for every test

#: worker processes for the whole suite: CI's machine has 2 cores, and most of a test's time is
#: either one core's work or waiting on a subprocess (a server, psql, the JVM)
WORKERS = 2
#: the longest files (tests/test_spark.py holds one Spark JVM for its whole file), started first
#: so that no worker is left running one of them alone at the end
LONGEST_FIRST = ("test_spark.py", "test_hostile.py", "test_server_robust.py", "test_server_catalog.py",
                 "test_ledger.py", "test_grammar.py", "test_workload.py", "test_fuzz.py")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns -n into worker processes
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite on :data:`WORKERS` workers, one file at a time each (``--dist
    loadfile``: a file's module fixtures, servers and Spark session are made once, and its
    tests run in their written order, as in one process)."""
    if (not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput")
            or config.option.numprocesses is not None or config.option.dist != "no"
            or config.option.file_or_dir or config.getoption("usepdb") or config.getoption("trace")):
        return
    config.option.numprocesses = WORKERS
    config.option.dist = "loadfile"
    config.option.loadscopereorder = False  # keep the order of pytest_collection_modifyitems


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers, the files of :data:`LONGEST_FIRST` first (loadfile hands files out in
    collection order); one process keeps pytest's order."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: (LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
                                     else len(LONGEST_FIRST)))


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
