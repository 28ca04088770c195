"""No stage between the start of the exact query and the end of the release is timed apart
(docs/privacy.md, "Timing"): the selection stage's time told whether a target row existed
(issue 29, finding 3), so ``Result.timings`` holds the public stages only and the REPL's
``\\timing`` prints the total and those."""

from __future__ import annotations

import re

from repl_harness import ENTER, drive

#: written out here, not read from dpsql: the stages whose time depends on public information
#: (plan), the ledger (charge) and noisy values (finish) only
PUBLIC = {"plan", "charge", "finish"}
QUERIES = [
    "SELECT naics2, COUNT(*), SUM(payann) FROM establishments GROUP BY naics2",  # public keys
    "SELECT county, COUNT(*) FROM establishments WHERE state = 'CA' GROUP BY county",  # partition selection
    "SELECT COUNT(*) FROM establishments WHERE payann > 1000",
]


def test_result_timings_hold_public_stages_only(con):
    for sql in QUERIES:
        result = con.cursor().execute(sql).result
        assert set(result.timings) == PUBLIC, sql
        assert "timing" not in repr(result.receipt.to_dict()).lower()


def test_repl_timing_prints_the_total_and_public_stages_only(con):
    out, err, rc = drive(con, f"\\timing on{ENTER}{QUERIES[1]};{ENTER}")
    assert rc == 0 and err == ""
    lines = [line for line in out.splitlines() if line.startswith("Time:")]
    assert len(lines) == 1
    assert re.fullmatch(r"Time: [0-9.]+ ms \(plan [0-9.]+, charge [0-9.]+, finish [0-9.]+\)", lines[0]), lines[0]
    for private in ("execute", "select", "noise"):
        assert private not in lines[0]
