"""The mutation list of ``tests/mutations.py`` stays true as the code moves: every patch's old
text still occurs exactly once in its file, and every killing test still exists. (Running the
mutations takes minutes: ``python tests/mutations.py``; this check takes milliseconds.)"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("dpsql_mutations", Path(__file__).with_name("mutations.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


mutations = _load()


def test_every_patch_applies_exactly_once():
    assert mutations.patch_problems(ROOT) == []


@pytest.mark.parametrize("mutation", mutations.MUTATIONS, ids=lambda m: m.name)
def test_mutation_is_well_formed(mutation):
    assert re.fullmatch(r"[a-z0-9_]+", mutation.name)
    assert mutation.patches and mutation.killers and mutation.why
    for p in mutation.patches:
        assert p.old != p.new
        assert "\n" not in p.old.rstrip("\n"), "keep each old text to one line"
    for node in mutation.killers:
        file, _, func = node.partition("::")
        path = ROOT / file
        assert path.is_file(), node
        assert re.search(rf"^def {re.escape(func.split('[')[0])}\(", path.read_text(), flags=re.M), \
            f"{node}: no such test"


def test_names_are_unique():
    names = [m.name for m in mutations.MUTATIONS]
    assert len(names) == len(set(names))


def test_the_script_lists_without_running(capsys):
    assert mutations.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(m.name in out for m in mutations.MUTATIONS)


def test_the_runner_names_the_killing_tests():
    out = ("FAILED tests/a.py::t[SELECT x - y] - AssertionError: x - y\n"
           "FAILED tests/b.py::u\n1 failed, 2 passed\nFAILED tests/c.py::v[a] - x\n")
    assert mutations.failed_tests(out) == ["tests/a.py::t[SELECT x - y]", "tests/b.py::u", "tests/c.py::v[a]"]


def _gone(pid: int) -> bool:
    """No process ``pid``, or only its zombie (its parent, pytest, was ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timed_out_run_ends_what_its_tests_started(tmp_path):
    """A run that times out ends pytest and every process its tests started (as a Spark master
    and worker, whose ``finally`` never runs when pytest is killed): here a ``sleep`` a hanging
    test started, whose pid it wrote down on collection."""
    import os
    import signal

    (tmp_path / "test_hangs.py").write_text(
        "import pathlib, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "pathlib.Path('child.pid').write_text(str(child.pid))\n"
        "def test_hangs():\n    time.sleep(600)\n")
    code, _ = mutations.run_tests(tmp_path, ("test_hangs.py::test_hangs",), timeout=10)  # pytest starts in ~1 s
    assert code is None  # timed out
    if not (tmp_path / "child.pid").is_file():
        pytest.fail("the inner pytest did not start its test within 10 s (a very loaded machine?)")
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert _gone(pid), "the process the timed-out tests started is still running"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)  # the test's own child, by its id
