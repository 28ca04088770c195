"""Seeded answers of every accepted corpus query, to show a refactor changes no answer bit for bit.

    python -m benchmarks.seeded_answers ROOT OUT.json       # ROOT: a checkout (its dpsql is used)
    python -m benchmarks.seeded_answers --compare A.json B.json [C.json ...]

Each accepted case of grammar_tests/ runs on the demo database (its own copy of the policy, so a
fresh ledger) with the test-only ``seeded_random(7)``; the rows (or the error code) are written
as JSON. ``--compare`` names the cases whose answers differ between the first file and the
others. Since 2026-11-26 a seeded source hands partition selection's draws to the groups in
their sorted order (``pipeline/columnar.py`` seeded_order), so two runs of the same tree agree on
every case (before, the private-key cases followed DuckDB's thread-dependent group order: run a
tree older than that twice and leave out what differs). Not a timing; no noise is released
anywhere but on the local demo data.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path


def answers(root: Path) -> dict[str, str]:
    sys.path[:0] = [str(root), str(root / "grammar_tests")]
    import dpsql
    from corpus import load_cases
    from dpsql.demo_db import ensure_demo
    from dpsql.testing import seeded_random

    home = Path(tempfile.mkdtemp(prefix="dpsql-seeded-"))
    os.environ["DPSQL_HOME"] = str(home)
    db, policy = ensure_demo(home=home)
    out: dict[str, str] = {}
    for i, case in enumerate(load_cases()):
        if case.expected is None or case.meta.get("policy"):
            continue
        copy = home / f"p{i}.policy.toml"
        shutil.copyfile(policy, copy)
        con = dpsql.connect(db, copy, _random_source=seeded_random(7))
        try:
            out[case.id] = repr(con.execute(case.sql).fetchall())
        except Exception as exc:  # noqa: BLE001 - a refusal is an answer too: its code
            out[case.id] = f"{type(exc).__name__}:{getattr(exc, 'code', '')}"
        finally:
            con.close()
    shutil.rmtree(home, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"]:
        first, *others = [json.loads(Path(f).read_text()) for f in argv[1:]]
        differ = sorted({k for o in others for k in first if o.get(k) != first[k]})
        print(f"{len(first)} cases, {len(differ)} differ" + "".join(f"\n  {k}" for k in differ))
        return 0
    root, target = Path(argv[0]).resolve(), Path(argv[1])
    got = answers(root)
    target.write_text(json.dumps(got, sort_keys=True))
    print(f"{len(got)} answers written to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
