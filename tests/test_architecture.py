"""The house rules of ``dpsql/`` (docs/architecture.md), read from the source with ``ast``:

* no import circle between dpsql's modules, counting every import statement (module level,
  inside functions, and under ``if TYPE_CHECKING:``);
* each folder imports only what its docstring says it may (:data:`MAY_IMPORT`);
* ``duckdb`` is imported by the DuckDB backend alone (its two modules; and the demo builder);
* no module is longer than :data:`MAX_LINES` lines;
* every module and folder starts with a docstring saying what it owns.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dpsql"
MAX_LINES = 400

#: a module's prefix -> the dpsql modules (prefixes) it may import; the first matching key wins.
#: "dpsql" alone is the package itself (the PEP 249 module the SQLAlchemy dialect hands over).
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "dpsql.errors": (),
    "dpsql.version": (),
    "dpsql.home": (),
    "dpsql.backends": ("dpsql.errors", "dpsql.backends"),
    "dpsql.privacy": ("dpsql.errors", "dpsql.privacy", "dpsql.policy.model", "dpsql.sql.plan"),
    "dpsql.sql": ("dpsql.errors", "dpsql.policy.model", "dpsql.sql"),
    "dpsql.policy.model": ("dpsql.errors", "dpsql.policy.model", "dpsql.privacy.budget"),
    # The unit check runs through the engine seam and its passes are remembered (records.unit).
    "dpsql.policy": ("dpsql.errors", "dpsql.policy", "dpsql.privacy.budget", "dpsql.backends", "dpsql.records.unit"),
    "dpsql.records": ("dpsql.errors", "dpsql.records", "dpsql.home", "dpsql.version", "dpsql.policy.model",
                      "dpsql.sql.plan", "dpsql.backends"),
    "dpsql.ledger": ("dpsql.errors", "dpsql.ledger", "dpsql.policy.model", "dpsql.privacy"),
    # result and format are what every face shows: values and text only.
    "dpsql.pipeline.result": ("dpsql.errors", "dpsql.pipeline.result", "dpsql.privacy.budget"),
    "dpsql.pipeline.format": ("dpsql.errors", "dpsql.pipeline.result", "dpsql.pipeline.format", "dpsql.privacy"),
    "dpsql.pipeline": ("dpsql.errors", "dpsql.pipeline", "dpsql.policy.model", "dpsql.sql", "dpsql.privacy",
                       "dpsql.backends", "dpsql.records"),
    # dpsql's own statements, answered from public information before the pipeline.
    "dpsql.intercept": ("dpsql.errors", "dpsql.version", "dpsql.intercept", "dpsql.session", "dpsql.pipeline.result",
                        "dpsql.pipeline.format", "dpsql.pipeline.output", "dpsql.sql.parse", "dpsql.sql.query", "dpsql.privacy.budget",
                        "dpsql.privacy.allocate", "dpsql.backends",
                        # SQL over released answers: whether its subquery would be shown again, free
                        "dpsql.pipeline.reuse", "dpsql.ledger.answers"),
    # Workloads plan through the session (one query's plan path) and charge through its ledger.
    # Parquet outputs are written by DuckDB's writer (backends/duckdb_files.py).
    "dpsql.workload": ("dpsql.errors", "dpsql.privacy", "dpsql.workload", "dpsql.ledger.book", "dpsql.pipeline.result", "dpsql.backends.duckdb_files"),
    # The wire server reads the public catalog twin's error type from the engine seam.
    "dpsql.faces.server": ("dpsql", "dpsql.faces", "dpsql.session", "dpsql.intercept", "dpsql.pipeline.result", "dpsql.pipeline.format",
                           "dpsql.errors", "dpsql.version", "dpsql.home", "dpsql.backends"),
    "dpsql.faces": ("dpsql", "dpsql.faces", "dpsql.session", "dpsql.intercept", "dpsql.pipeline.result", "dpsql.pipeline.format",
                    "dpsql.errors", "dpsql.version", "dpsql.privacy.budget", "dpsql.privacy.accounting",
                    "dpsql.privacy.policy_function", "dpsql.ledger.book", "dpsql.ledger.answers", "dpsql.policy.model", "dpsql.policy.loader",
                    "dpsql.demo_db", "dpsql.home",
                    # dpsql init: the data owner's importer (backends/duckdb_files.py)
                    "dpsql.backends.duckdb_files", "dpsql.backends.files",
                    "dpsql.workload"),
}
#: the package root holds its entry points, the orchestrator and the basics everything imports
ROOT_MODULES = {"dpsql", "dpsql.__main__", "dpsql.session", "dpsql.errors", "dpsql.version", "dpsql.home",
                "dpsql.testing"}
MAX_ROOT_MODULES = 8


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every dpsql module (or package) ``path`` imports, wherever the statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import (dpsql imports absolutely)")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dpsql":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "dpsql"}
    return found


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_root_holds_the_orchestrator_and_the_basics_only():
    """A newcomer opening dpsql/ sees rooms, not a pile of files: at most eight modules in the root."""
    root = {name for name, path in MODULES.items() if path.parent == PACKAGE}
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules in dpsql/: give the new ones a room"
    assert root <= ROOT_MODULES, f"{sorted(root - ROOT_MODULES)} in dpsql/: put them in the folder of their stage"


def test_every_module_falls_under_a_rule_or_is_a_root_module():
    """A new folder gets its row in MAY_IMPORT (and its docstring says the same)."""
    ruleless = sorted(m for m in MODULES if _rule(m) is None and m not in ROOT_MODULES
                      )
    assert not ruleless, f"{ruleless}: add their folder to MAY_IMPORT"


def test_the_cycle_finder_finds_a_cycle():
    """The check below is only as good as this: a planted circle must be found."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert _cycles(GRAPH) == []


def _rule(module: str) -> tuple[str, ...] | None:
    for prefix, allowed in MAY_IMPORT.items():
        if module == prefix or module.startswith(prefix + "."):
            return allowed
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _rule(m) is not None))
def test_each_folder_imports_only_what_it_may(module):
    allowed = _rule(module)
    assert allowed is not None
    wrong = sorted(t for t in GRAPH[module]
                   if not any(t == a or (a != "dpsql" and t.startswith(a + ".")) for a in allowed))
    assert not wrong, f"{module} imports {wrong}; it may import {allowed} (docs/architecture.md)"


def test_nothing_below_the_faces_imports_a_face():
    below = [m for m in MODULES if not m.startswith("dpsql.faces") and m not in ("dpsql", "dpsql.__main__")]
    wrong = {m: sorted(t for t in GRAPH[m] if t.startswith("dpsql.faces")) for m in below}
    assert not {m: t for m, t in wrong.items() if t}


def test_duckdb_is_imported_by_its_backend_alone():
    importers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "duckdb" or n.startswith("duckdb.") for n in names):
                importers.add(name)
    assert importers == {"dpsql.backends.duckdb", "dpsql.backends.duckdb_local", "dpsql.backends.duckdb_files",
                         "dpsql.backends.duckdb_units"}


def test_pyspark_is_imported_by_the_spark_backend_alone():
    """pyspark is an optional extra (dpsql[spark]): one module imports it, on use only."""
    importers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "pyspark" or n.startswith("pyspark.") for n in names):
                importers.add(name)
    assert importers == {"dpsql.backends.spark"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_too_long(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module]} has {lines} lines (at most {MAX_LINES}: split it by concern)"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_says_what_it_owns(module):
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text()))
    assert doc and len(doc.split()) >= 5, f"{MODULES[module]}: start with a docstring saying what it owns"


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run's command (with the Spark extra) is the one the README tells people to run."""
    root = PACKAGE.parent
    command = (root / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert '".[test,spark]"' in command
    assert f"```sh\n{command}\n```" in (root / "README.md").read_text()
