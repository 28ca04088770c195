"""``dpsql serve`` that also writes each statement it receives to a JSON-lines file: a capture tool
for the scripted Superset run (scripts/superset/run.py), never for serving anyone.

    python scripts/superset/serve_recording.py LOG.jsonl [dpsql serve arguments ...]

Each line: the statement's text, the values bound to its ``$n`` parameters, the way the server
answers it (``session``, ``catalog``, ``private``), and its outcome (the command tag and the
receipt notice, or the error's SQLSTATE and message). It runs the real ``dpsql serve`` command in
this process (the same code, the same state folder and ledger); only the server's statement
function is wrapped. The log holds what the analyst's client sent and what the analyst was
shown: nothing the analyst would not see.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dpsql.faces import cli  # noqa: E402
from dpsql.faces.server import connection  # noqa: E402
from dpsql.faces.server.statements import route  # noqa: E402


def recording(log: Path) -> Any:
    inner = connection.answer
    lock = threading.Lock()

    def answer(sql: str, values: list[Any], session: Any, catalog: Any, pg: Any, private: set[str],
               **kw: Any) -> Any:
        entry: dict[str, Any] = {"sql": sql, "params": [v if isinstance(v, (str, int, float, type(None))) else str(v)
                                                         for v in values], "way": route(sql, private)}
        try:
            out = inner(sql, values, session, catalog, pg, private, **kw)
        except Exception as exc:
            fields = getattr(exc, "fields", {})
            entry.update(error=getattr(exc, "code", None) or fields.get("C", type(exc).__name__),
                         message=fields.get("M", str(exc)))
            raise
        else:
            entry.update(tag=out.tag, rows=len(out.rows), notice=out.notice)
            return out
        finally:
            with lock, log.open("a") as f:
                f.write(json.dumps(entry) + "\n")

    return answer


def main(argv: list[str]) -> int:
    log = Path(argv[0])
    connection.answer = recording(log)  # type: ignore[assignment]
    return cli.main(["serve", *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
