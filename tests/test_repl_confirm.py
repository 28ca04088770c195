"""The prompt asks before an expensive query (issue 33: "the REPL asks before a query above a
share of what is left"), driven as a person types: a statement that would spend more than
``\\set confirm`` (a quarter, by default) of the budget left is run only on y; its cost, from
EXPLAIN, is public and charges nothing. Scripts never ask. The charges are read from the ledger."""

from __future__ import annotations

import io
from fractions import Fraction

from dpsql.faces.repl import Repl
from repl_harness import ENTER, drive_repl

BIG = "SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2;"


def _spent(con) -> Fraction:
    return Fraction(con.budget["spent"])


def test_a_query_past_the_share_is_asked_and_n_runs_nothing(con):
    total = Fraction(con.budget["total"])
    rho = total / 2  # half of what is left: past the default quarter
    repl, out, err, _ = drive_repl(con, f"\\set rho {rho}{ENTER}{BIG}{ENTER}n{ENTER}")
    assert "not run; nothing was charged." in err
    assert _spent(con) == 0 and len(con.session.ledger.charges) == 0
    assert repl.last_result is None


def test_y_runs_it_and_a_cheap_query_is_not_asked(con):
    total = Fraction(con.budget["total"])
    cheap = "SELECT state, COUNT(*) FROM establishments GROUP BY state;"
    _, out, err, _ = drive_repl(con, f"{cheap}{ENTER}\\set rho {total / 2}{ENTER}{BIG}{ENTER}y{ENTER}")
    assert "not run" not in err
    assert _spent(con) == Fraction(1, 10) + total / 2  # the cheap one was not held for an answer
    assert len(con.session.ledger.charges) == 2


def test_confirm_zero_never_asks_and_scripts_never_ask(con):
    total = Fraction(con.budget["total"])
    _, out, err, _ = drive_repl(con, f"\\set confirm 0{ENTER}\\set rho {total / 4 + 1}{ENTER}{BIG}{ENTER}")
    assert "not run" not in err and _spent(con) == total / 4 + 1
    err2 = io.StringIO()
    repl = Repl(con, out=io.StringIO(), err=err2, progress=False)
    assert repl.confirm_share == Fraction(1, 4)
    before = _spent(con)
    assert repl.script([f"\\set rho {total / 2}\n", "SELECT state, COUNT(*) FROM establishments WHERE employees > 3 "
                                                    "GROUP BY state;\n"]) == 0
    assert "not run" not in err2.getvalue() and _spent(con) == before + total / 2


def test_a_bad_confirm_share_is_a_usage_error(con):
    _, out, err, _ = drive_repl(con, f"\\set confirm 2{ENTER}")
    assert "confirm is a share of the budget left" in err
