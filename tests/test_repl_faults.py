"""The prompt survives what its own callbacks raise (the bottom toolbar, the completer): an
exception inside prompt_toolkit's application otherwise lands in its "Press ENTER to continue"
handler, which waits for a key — a hang with a pipe as input, and a stack trace on a person's
screen instead of the prompt."""

from __future__ import annotations

import threading

from prompt_toolkit.history import InMemoryHistory

from repl_harness import ENTER, TAB, drive


def _drive_within(con, keys: str, seconds: float = 60.0):
    box: dict = {}
    t = threading.Thread(target=lambda: box.setdefault("out", drive(con, keys, history=InMemoryHistory())), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the prompt hung (prompt_toolkit's exception handler waits for ENTER)"
    return box["out"]


def test_a_ledger_that_cannot_be_read_does_not_hang_the_prompt(con):
    ledger = con.session.ledger
    path = ledger.path
    ledger_bytes = path.read_bytes()
    try:
        path.write_bytes(b"not a ledger" * 512)  # what a broken disk or a stray copy leaves
        for name in [p for p in path.parent.iterdir() if p.name.startswith(path.name + "-")]:
            name.unlink()  # its WAL and shared memory: the next read sees the garbage
        printed, err, rc = _drive_within(con, "SELECT COUNT(*) FROM establishments;" + ENTER)
    finally:
        path.write_bytes(ledger_bytes)
    assert rc == 0 and "Press ENTER" not in printed + err
    assert "budget left unknown (DP404" in printed  # the banner says why, and the prompt came up
    assert "DP404" in err  # the query is refused, saying why


def test_a_completer_that_fails_offers_nothing_and_the_prompt_goes_on(con, monkeypatch):
    from dpsql.faces.repl import completion

    def broken(*_a, **_k):
        raise RuntimeError("catalog gone")

    monkeypatch.setattr(completion.SqlCompleter, "_sql", broken)
    printed, err, rc = _drive_within(con, "SELECT COUNT(*) FROM establ" + TAB + "ishments;" + ENTER)
    assert rc == 0 and "Press ENTER" not in printed + err
    assert "COUNT" in printed or "count" in printed.lower()
