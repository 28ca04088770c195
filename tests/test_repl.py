"""The interactive REPL, driven through prompt_toolkit's pipe input as a person types."""

from __future__ import annotations

import _thread
import io
import os
import subprocess
import sys
import threading
import time

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory

from dpsql.pipeline import format as fmt_mod
from dpsql.faces.cli import _names_command
from dpsql.errors import QueryRefused
from dpsql.faces.repl import Repl
from dpsql.faces.repl import statements
from dpsql.faces.repl.completion import SqlCompleter
from dpsql.faces.repl.progress import run_interruptible
from repl_harness import CTRL_C, CTRL_R, ENTER, TAB, drive, drive_screen

# --------------------------------------------------------------------------- typing, end to end


def test_multiline_query_with_tab_completion(con):
    out, err, rc = drive(con, f"SELECT naics2, COUNT(*) AS n, SUM(payan{TAB}) AS pay{ENTER}"
                              f"FROM est{TAB} GROUP BY naic{TAB}{ENTER}ORDER BY n DESC LIMIT 3;{ENTER}")
    assert rc == 0 and err == ""
    assert "(3 rows) charged rho=0.1" in out and " ± " in out
    assert out.splitlines()[5].split() == ["naics2", "|", "n", "|", "pay"]
    [charge] = con.session.ledger.charges
    assert " ".join(charge.query.split()) == ("SELECT naics2, COUNT(*) AS n, SUM(payann) AS pay FROM establishments "
                                              "GROUP BY naics2 ORDER BY n DESC LIMIT 3")


def test_refusal_points_at_the_sql_and_charges_nothing(con):
    out, err, rc = drive(con, f"SELECT naics2,{ENTER}  SUM(payroll) FROM establishments GROUP BY naics2;{ENTER}")
    assert rc == 0 and "Traceback" not in err and "rows)" not in out
    lines = err.splitlines()
    assert lines[0].startswith("DP203: ") and "payroll" in lines[0]  # one clear message with its code
    assert lines[1] == "LINE 2:   SUM(payroll) FROM establishments GROUP BY naics2"
    assert lines[2].index("^") == lines[1].index("payroll")
    assert lines[3].startswith("Hint: ")
    assert con.session.ledger.spent == 0


def test_ctrl_c_drops_the_line_and_keeps_the_session(con):
    out, err, rc = drive(con, f"SELECT id FROM establishments{CTRL_C}"
                              f"SELECT COUNT(*) FROM establishments{ENTER}WHERE{CTRL_C}"
                              f"SELECT COUNT(*) AS n FROM establishments;{ENTER}")
    assert rc == 0 and err == ""  # neither cancelled line ran
    assert "(1 row) charged rho=0.1" in out and len(con.session.ledger.charges) == 1


@pytest.mark.parametrize("typed, search", [
    ("", "(reverse-i-search)`COU': SELECT COUNT(*) AS n FROM establishments;"),
    ("SELECT naics2,", "I-search backward: COU"),  # half typed: the search line is under the input
])
def test_ctrl_r_shows_the_search_and_its_match(con, typed, search):
    """Regression (issue 19): on an empty line, Ctrl-R's search line and its match vanished at the
    first letter typed (the multi-line condition read the search buffer instead of the input)."""
    history = InMemoryHistory()
    for past in ("SELECT COUNT(*) AS n FROM establishments;", "\\tables"):
        history.append_string(past)
    seen, out, err = drive_screen(con, [(typed, ("dpsql> " + typed).rstrip()), (CTRL_R, "search"), ("COU", search),
                                        (ENTER, "dpsql> SELECT COUNT(*) AS n FROM establishments;"), (ENTER, "")],
                                  history=history)
    assert seen[search], "the search line and its match did not show"
    assert "SELECT COUNT(*) AS n FROM establishments;" in seen[search]  # the match, on the screen
    assert "(1 row) charged" in out and err == ""  # Enter took the match, Enter again ran it


def test_meta_commands(con):
    out, err, rc = drive(con, f"\\describe est{TAB}{ENTER}\\set display sigma{ENTER}\\set rho 0.25{ENTER}"
                              f"SELECT SUM(employees) AS e FROM establishments;{ENTER}"
                              f"\\policy employees=150 payann=10000{ENTER}\\budget{ENTER}\\q{ENTER}"
                              f"SELECT 'never reached';{ENTER}")
    assert rc == 0 and err == ""
    assert "payann    | BIGINT  | measure: SUM/AVG, split threshold T = 10000" in out
    assert "state     | VARCHAR | public key: GROUP BY, keyset of 51 values" in out
    assert "county    | VARCHAR | private key" in out
    assert "(σ " in out and "(σ …) is the standard deviation" in out and "charged rho=0.25" in out
    assert "P(r) = 0.25·|A1(r)|²\n" in out and "|A1(r)| = max(1, ⌈|employees|/100⌉)" in out
    assert "⌈150/100⌉=2) = 2; 0.25·2² = 1\n    P(r) = 1\n" in out  # employees=150, T=100: two parts
    assert "spent rho=0.25 of 10, 9.75 left" in out


def test_explain_in_the_prompt_for_private_and_public_queries(con):
    out, err, rc = drive(con, f"\\explain SELECT region, COUNT(*) FROM states GROUP BY region{ENTER}"
                              f"EXPLAIN SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2;{ENTER}")
    assert rc == 0 and err == "", err
    assert "public tables only: answered exactly" in out
    assert "QUERY PLAN" in out and "rho for this query: 0.1" in out
    assert con.session.ledger.spent == 0


def test_public_tables_in_the_prompt(con):
    """\\tables lists the public tables, \\describe shows one, Tab completes one after JOIN, and
    a joined query runs and is charged like the same query without the join."""
    out, err, rc = drive(con, f"\\tables{ENTER}\\describe states{ENTER}"
                              f"SELECT s.region, COUNT(*) FROM establishments e JOIN sta{TAB} s ON e.state = s.code "
                              f"GROUP BY s.region;{ENTER}")
    assert rc == 0 and err == ""
    assert "Public tables (join them on their key" in out and "naics_sectors | naics2" in out
    assert "Public table states: reference data, joined on its key 'code'" in out
    assert "region   | VARCHAR | public: WHERE, COUNT and GROUP BY" in out
    assert "Northeast" in out and "(4 rows) charged rho=0.1" in out


def test_unknown_meta_command_and_bad_setting(con):
    out, err, rc = drive(con, f"\\frobnicate{ENTER}\\set rho -1{ENTER}\\policy employees=1 x{ENTER}"
                              f"\\policy employes=150{ENTER}")
    assert rc == 0 and "each query now costs" not in out
    assert "unknown command \\frobnicate" in err and "DP302" in err and "measure=value" in err
    assert "no column 'employes'" in err


def test_ctrl_c_cancels_a_running_query(con, monkeypatch):
    """The engine contract: interrupt() makes the running query raise KeyboardInterrupt."""
    engine = con.session.engine
    started, stop = threading.Event(), threading.Event()
    real_run = engine.run

    def slow_run(sql):
        if stop.is_set():
            return real_run(sql)
        started.set()
        assert stop.wait(10), "never interrupted"
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "run", slow_run)
    monkeypatch.setattr(engine, "interrupt", stop.set)
    threading.Thread(target=lambda: started.wait(10) and _thread.interrupt_main(), daemon=True).start()
    out, err, rc = drive(con, f"SELECT COUNT(*) FROM establishments;{ENTER}SELECT COUNT(*) AS n FROM establishments;{ENTER}")
    assert rc == 0 and "query cancelled" in err
    # A query stopped after private rows were read is charged (DESIGN.md, "Phases of a query").
    charged = "was charged" in err
    assert len(con.session.ledger.charges) == 1 + charged and "(1 row)" in out  # the session went on


#: Hours of DuckDB work: it only ends early when it is interrupted.
ENDLESS = "SELECT SUM(i) FROM range(10000000000000) t(i)"


def run_bounded(engine, sql: str, limit: float = 10.0) -> tuple[BaseException | None, float]:
    """``engine.run(sql)`` in a worker thread: (what it raised, seconds it took). A run still going
    after ``limit`` seconds fails the test — after DuckDB is stopped directly, so that no query
    outlives the test (it hung CI for 90 minutes once)."""
    box: dict[str, BaseException] = {}
    done = threading.Event()

    def work():
        try:
            engine.run(sql)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc
        finally:
            done.set()

    t0 = time.monotonic()
    threading.Thread(target=work, name="test-query", daemon=True).start()
    if not done.wait(limit):
        for _ in range(200):  # 10 s at most
            engine._con.interrupt()
            if done.wait(0.05):
                break
        pytest.fail(f"the query was still running after {limit} s")
    return box.get("error"), time.monotonic() - t0


def wait_until_running(engine, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not engine.running:
        assert time.monotonic() < deadline, "the query never started"
        time.sleep(0.001)


def test_engine_interrupt_before_the_query_starts_is_not_lost(con):
    """A Ctrl-C that comes before the worker has started the query (once it was lost, and the
    query ran on): the next run raises at once without starting, and only that one."""
    engine = con.session.engine
    engine.interrupt()
    error, seconds = run_bounded(engine, ENDLESS)
    assert isinstance(error, KeyboardInterrupt) and seconds < 1
    assert engine.run("SELECT 42") == [(42,)]  # one interrupt cancels one query
    assert not engine.clear_interrupt()


def test_engine_interrupt_stops_a_running_query(con):
    engine = con.session.engine
    stopper = threading.Thread(target=lambda: (wait_until_running(engine), time.sleep(0.3), engine.interrupt()),
                               daemon=True)
    stopper.start()
    error, seconds = run_bounded(engine, ENDLESS)
    stopper.join(10)
    assert isinstance(error, KeyboardInterrupt) and seconds < 5
    assert engine.run("SELECT 42") == [(42,)] and not engine.clear_interrupt()


def test_engine_interrupt_as_the_query_starts(con, monkeypatch):
    """The race: the interrupt comes after the engine's pending check but before DuckDB has
    started the query, when DuckDB forgets it; the engine repeats it until the run is over."""
    engine = con.session.engine
    in_window, requested = threading.Event(), threading.Event()

    class StartsLate:
        """The engine's DuckDB connection, held at the start of a query until the interrupt came."""

        def __init__(self, real):
            self.real = real

        def execute(self, sql, *args):
            in_window.set()
            assert requested.wait(10), "no interrupt came"
            return self.real.execute(sql, *args)

        def interrupt(self):
            self.real.interrupt()

    monkeypatch.setattr(engine, "_con", StartsLate(engine._con))
    stopper = threading.Thread(target=lambda: (in_window.wait(10), engine.interrupt(), requested.set()), daemon=True)
    stopper.start()
    error, seconds = run_bounded(engine, ENDLESS)
    stopper.join(10)
    assert isinstance(error, KeyboardInterrupt) and seconds < 5
    assert not engine.clear_interrupt()  # consumed by the run it stopped


def test_ctrl_c_before_the_engine_starts_cancels_the_query(con, monkeypatch):
    """Ctrl-C while the statement is still being planned: the REPL asks the engine to stop, and
    the engine's first query of the statement raises instead of running."""
    session = con.session
    planning, asked = threading.Event(), threading.Event()
    real_plan, real_interrupt = session.plan, session.engine.interrupt

    def slow_plan(*args, **kwargs):
        if not planning.is_set():
            planning.set()
            assert asked.wait(10), "Ctrl-C never reached the engine"
        return real_plan(*args, **kwargs)

    def interrupt():
        real_interrupt()
        asked.set()

    monkeypatch.setattr(session, "plan", slow_plan)
    monkeypatch.setattr(session.engine, "interrupt", interrupt)
    threading.Thread(target=lambda: planning.wait(10) and _thread.interrupt_main(), daemon=True).start()
    out, err, rc = drive(con, f"SELECT COUNT(*) AS first FROM establishments;{ENTER}"
                              f"SELECT COUNT(*) AS second FROM establishments;{ENTER}")
    assert rc == 0 and "query cancelled" in err
    assert "first" not in out and "second" in out and "(1 row)" in out  # the next statement ran


def test_a_late_ctrl_c_does_not_cancel_the_next_statement(con, monkeypatch):
    """A Ctrl-C after the engine's last query of a statement (during noise, charge, finish)
    stops nothing, and its sticky request must not cancel the statement after."""
    session = con.session
    real_execute = session.execute

    def execute_then_ctrl_c(sql, *args, **kwargs):
        result = real_execute(sql, *args, **kwargs)
        if "first" in sql:
            session.engine.interrupt()
        return result

    monkeypatch.setattr(session, "execute", execute_then_ctrl_c)
    out, err, rc = drive(con, f"SELECT COUNT(*) AS first FROM establishments;{ENTER}"
                              f"SELECT COUNT(*) AS second FROM establishments;{ENTER}")
    assert rc == 0 and err == ""
    assert "first" in out and "second" in out and out.count("(1 row)") == 2


def test_ctrl_c_while_the_worker_starts_runs_nothing(monkeypatch):
    """Thread.start() waits for the new thread, which may run a while first: a Ctrl-C there
    used to escape while the query went on in the background. Now the work never begins."""
    ran, started = threading.Event(), []
    real_start = threading.Thread.start

    def start_then_ctrl_c(self):
        real_start(self)
        started.append(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", start_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(ran.set, lambda: pytest.fail("nothing to interrupt"))
    monkeypatch.undo()
    [worker] = started
    worker.join(10)
    assert not worker.is_alive() and not ran.is_set()


def test_progress_line_after_delay():
    stream = io.StringIO()
    assert run_interruptible(lambda: threading.Event().wait(0.3) or 7, lambda: None, stream=stream, delay=0.1) == 7
    assert "running… Ctrl-C cancels" in stream.getvalue() and stream.getvalue().endswith("\r\x1b[K")


# --------------------------------------------------------------------------- completion


def complete(con, text: str, tab: bool = True) -> list[str]:
    """Completions at ``|`` in ``text`` (default: at the end)."""
    cursor = text.find("|") if "|" in text else len(text)
    doc = Document(text.replace("|", ""), cursor)
    return [c.text for c in SqlCompleter(con.session).get_completions(doc, CompleteEvent(completion_requested=tab))]


@pytest.mark.parametrize("text, expected", [
    ("SELECT COUNT(*) FROM ", ["establishments", "paper_table1", "paper_table2", "devices", "persons"]),
    ("SELECT COUNT(*) FROM pa", ["paper_table1", "paper_table2"]),
    ("SELECT SUM(| FROM establishments", ["employees", "payann", "payqtr1"]),  # the FROM after the cursor counts
    ("SELECT AVG(pay", ["payann", "payqtr1", "payroll"]),  # no FROM yet: measures of every table
    ("SELECT COUNT(*) FROM establishments GROUP BY ", ["state", "naics2", "opened"]),  # public keys only
    ("\\de", ["\\describe"]),
    ("\\describe ", ["establishments", "paper_table1", "paper_table2", "devices", "persons", "states", "naics_sectors"]),
    ("\\set display ", ["moe", "sigma"]),
    ("sel", ["select"]),  # keywords in the case being typed
    ("SEL", ["SELECT"]),
])
def test_completions(con, text, expected):
    assert complete(con, text) == expected


def test_columns_of_the_from_table_with_roles(con):
    doc = Document("SELECT  FROM devices", len("SELECT "))
    found = {c.text: c.display_meta_text for c in SqlCompleter(con.session).get_completions(doc, CompleteEvent(completion_requested=True))}
    assert found["user_id"] == "privacy unit" and found["latency_ms"] == "measure, T=500"
    assert "device_model" in found and "payann" not in found


def test_no_completion_while_typing_before_a_word(con):
    assert complete(con, "SELECT COUNT(*) FROM ", tab=False) == []


# --------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize("text, done, rest", [
    ("SELECT 1; SELECT 2;", ["SELECT 1", "SELECT 2"], ""),
    ("SELECT 'a;b', \"c;\" FROM t; SELECT", ["SELECT 'a;b', \"c;\" FROM t"], " SELECT"),
    ("SELECT 1 -- not ; here\n; x", ["SELECT 1 -- not ; here"], " x"),
    ("SELECT /* ; */ 1", [], "SELECT /* ; */ 1"),
    ("SELECT 'it''s;'; ", ["SELECT 'it''s;'"], " "),
])
def test_split(text, done, rest):
    assert statements.split(text) == (done, rest)


@pytest.mark.parametrize("text, complete", [
    ("SELECT 1", False), ("SELECT 1;", True), ("SELECT 1;  -- done", True), ("SELECT ';'", False),
    ("\\tables", True), ("  \\d establishments", True), ("", True), ("quit", True), ("SELECT 1; SELECT", False),
])
def test_is_complete(text, complete):
    assert statements.is_complete(text) is complete


def test_error_caret_under_the_column():
    exc = QueryRefused("no such column", code="DP203", line=2, column=5, hint="try another")
    assert fmt_mod.error(exc, "SELECT\n\tSUM(x) FROM t").splitlines() == [
        "DP203: no such column", "LINE 2:  SUM(x) FROM t", "            ^", "Hint: try another"]
    assert fmt_mod.error(QueryRefused("budget", code="DP301"), "SELECT 1") == "DP301: budget"


@pytest.mark.parametrize("argv, command", [
    ([], False), (["demo"], True), (["query", "SELECT 1"], True), (["my.duckdb"], False),
    (["--policy", "demo", "x.duckdb"], False), (["--rho", "0.5"], False), (["--help"], True), (["./demo"], False),
])
def test_cli_tells_a_database_from_a_command(argv, command):
    assert _names_command(argv) is command


# --------------------------------------------------------------------------- not a terminal


def test_script_stops_at_the_first_error(con):
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(con, out=out, err=err, progress=False)
    script = ("-- a comment\nSELECT COUNT(*) AS n\n  FROM establishments;\n\\budget\n"
              "SELECT MAX(payann) FROM establishments;\nSELECT COUNT(*) FROM establishments;\n")
    assert repl.script(io.StringIO(script)) == 1
    assert "(1 row)" in out.getvalue() and "spent rho=0.1" in out.getvalue()
    assert err.getvalue().startswith("DP109") and len(con.session.ledger.charges) == 1
    assert Repl(con, out=io.StringIO(), err=err, progress=False).script(["SELECT COUNT(*) FROM establishments"]) == 0


def test_piped_into_the_dpsql_command(demo):
    env = dict(os.environ, DPSQL_HOME=str(demo[0].parent))
    cmd = [sys.executable, "-m", "dpsql", str(demo[0]), "--policy", str(demo[1])]
    p = subprocess.run(cmd, input="SELECT state, COUNT(*) AS n FROM establishments GROUP BY state LIMIT 2;\n\\q\n",
                       capture_output=True, text=True, env=env, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert "(2 rows) charged rho=0.1" in p.stdout and p.stderr == ""
    p = subprocess.run(cmd, input="SELECT id FROM establishments", capture_output=True, text=True, env=env, timeout=60, check=False)
    assert p.returncode == 1 and p.stderr.startswith("DP201") and "Traceback" not in p.stderr


def test_internal_errors_hide_their_message(con, monkeypatch):
    def boom(sql, *a, **k):
        raise RuntimeError("secret value 12345")

    monkeypatch.setattr(con.session, "execute", boom)
    out, err, rc = drive(con, f"SELECT COUNT(*) FROM establishments;{ENTER}")
    assert rc == 0 and "DP900: internal error (RuntimeError)" in err and "12345" not in err + out


def test_banner_and_toolbar_say_the_budget(con):
    repl = Repl(con, out=io.StringIO(), err=io.StringIO())
    assert "budget left 10 of 10" in repl.banner() and "rho/query 0.1" in repl.toolbar()
