"""Collects the SQL that SmartNoise SQL's own tests and sample notebooks run against its PUMS data
(issue 32), from a snapshot of ``opendp/smartnoise-sdk`` (MIT licence; the queries are short test
strings, quoted with their source file):

    python3 -m benchmarks.smartnoise_collect SNAPSHOT_DIR [COMMIT]

SNAPSHOT_DIR holds the repository's ``sql/tests`` and ``sql/samples`` (``git archive HEAD sql/tests
sql/samples | tar -x``). Every string constant of the Python tests and notebook cells (an f-string's
``{...}`` read as ``PUMS``, as ``test_db_count.py`` fills it), every statement of the ``.sql``
query files, that is a SELECT reading a PUMS table, whitespace collapsed; the setup scripts
(``sql/tests/setup``: DDL for the test databases) are not queries of the suite. Writes
``benchmarks/data/smartnoise_pums_queries.json``: the distinct queries, each with the files it
appears in and the table it reads.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).parent / "data" / "smartnoise_pums_queries.json"
_SELECT = re.compile(r"^\s*\(?\s*select\b.*\bfrom\b", re.I | re.S)
_TABLE = re.compile(r"\bfrom\s+(?:pums\.)*(pums\w*)\b", re.I)


def _strings(tree: ast.AST) -> list[str]:
    out = []
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}  # read whole, below
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in parts:
            out.append(n.value)
        elif isinstance(n, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "PUMS" for v in n.values))
    return out


def _candidates(root: Path) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if "/setup/" in f"/{rel}" or not p.is_file():
            continue
        texts: list[str] = []
        if p.suffix == ".py":
            try:
                texts = _strings(ast.parse(p.read_text()))
            except SyntaxError:
                continue
        elif p.suffix == ".sql":
            texts = ["\n".join(line for line in s.splitlines() if not line.strip().startswith("--"))
                     for s in p.read_text().split(";")]
        elif p.suffix == ".ipynb":
            for cell in json.loads(p.read_text())["cells"]:
                if cell["cell_type"] == "code":
                    code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                                     if not line.lstrip().startswith(("%", "!")))
                    try:
                        texts += _strings(ast.parse(code))
                    except SyntaxError:
                        pass
        found += [(" ".join(t.split()).rstrip(";").strip(), rel) for t in texts]
    return found


def collect(root: Path) -> list[dict[str, object]]:
    queries: dict[str, dict[str, object]] = {}
    for text, source in _candidates(root):
        m = _TABLE.search(text)
        if not _SELECT.match(text) or m is None:
            continue
        entry = queries.setdefault(text, {"sql": text, "table": m.group(1).upper(), "sources": []})
        if source not in entry["sources"]:  # type: ignore[operator]
            entry["sources"].append(source)  # type: ignore[union-attr]
    return list(queries.values())


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    queries = collect(root)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({
        "source": "https://github.com/opendp/smartnoise-sdk" + (f" at {argv[1]}" if len(argv) > 1 else ""),
        "licence": "MIT (Copyright (c) 2020-2021 President and Fellows of Harvard College); the queries are "
                   "quoted from the test and notebook files named with each",
        "collected_by": "python3 -m benchmarks.smartnoise_collect SNAPSHOT_DIR COMMIT",
        "queries": queries}, indent=1) + "\n")
    print(f"{len(queries)} distinct queries -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
