"""The analyst's desk (issue 19): psql habits at the prompt, answers paged, expanded, written to
files with their error bars and drawn as charts — typed through the pipe-input harness."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from dpsql.faces.repl import Repl, commands, statements
from dpsql.faces.repl.chart import ChartError, chart
from dpsql.faces.repl.export import Copy, CopyError, parse_copy
from dpsql.faces.repl.output import View, render
from dpsql.pipeline.result import ColumnError, Receipt, Result
from repl_harness import CTRL_C, ENTER, drive, drive_repl, terminal

COUNT_BY_STATE = "SELECT state, COUNT(*) AS n, AVG(payann) AS pay FROM establishments GROUP BY state ORDER BY state"


def answer(out: str) -> str:
    """What was printed after the banner."""
    return out.split("Ctrl-D quits.\n", 1)[1]


def last_charge(con) -> str:
    return " ".join(con.session.ledger.charges[-1].query.split())


# --------------------------------------------------------------------------- meta-commands under a half-typed statement


def test_a_meta_command_under_a_half_typed_statement_runs_and_the_statement_waits(con):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS n FROM establishments{ENTER}\\help{ENTER}"
                              f"WHERE state = 'CA';{ENTER}")
    assert rc == 0 and err == ""
    assert "Meta-commands" in out and "(1 row) charged" in out  # help printed, then the statement ran whole
    assert last_charge(con) == "SELECT COUNT(*) AS n FROM establishments WHERE state = 'CA'"


@pytest.mark.parametrize("leave", ["\\q", "quit", "exit", "\\quit", ".quit"])
def test_leaving_works_after_a_forgotten_semicolon(con, leave):
    out, err, rc = drive(con, f"SELECT COUNT(*) FROM establishments{ENTER}{leave}{ENTER}SELECT 'never reached';{ENTER}")
    assert rc == 0 and err == "" and "rows)" not in out and "row)" not in out
    assert con.session.ledger.charges == []  # neither the half-typed statement nor the next one ran


def test_dot_commands_of_the_duckdb_shell(con):
    """`.tables` used to hold the input open, and every later `\\q` went into the SQL."""
    out, err, rc = drive(con, f".tables{ENTER}.schema devices{ENTER}\\q{ENTER}")
    assert rc == 0 and err == ""
    assert "establishments | id" in out and "Table devices: one row per privacy unit 'user_id'" in out


def test_a_backslash_inside_a_string_stays_sql(con):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS n FROM establishments WHERE county = 'a{ENTER}\\q{ENTER}';{ENTER}"
                              f"\\conninfo{ENTER}")
    assert rc == 0 and err == ""
    assert "(1 row) charged" in out and "You are connected to the DuckDB file" in out  # \q did not quit
    assert "county = 'a \\q '" in last_charge(con)  # the \q is in the string


def test_reset_and_go_on_the_half_typed_statement(con):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS dropped FROM establishments{ENTER}\\r{ENTER}"
                              f"SELECT COUNT(*) AS kept FROM establishments{ENTER}\\g{ENTER}\\g{ENTER}")
    assert rc == 0
    assert "Query buffer reset" in out and "dropped" not in out and "kept" in out
    assert len(con.session.ledger.charges) == 1 and "nothing to run" in err  # the second \g had nothing left


def test_ctrl_c_drops_a_kept_statement(con):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS dropped FROM establishments{ENTER}\\conninfo{ENTER}{CTRL_C}"
                              f"SELECT COUNT(*) AS n FROM establishments;{ENTER}")
    assert rc == 0 and err == "" and last_charge(con) == "SELECT COUNT(*) AS n FROM establishments"


@pytest.mark.parametrize("text, tail", [
    ("SELECT 1\n\\q", ("SELECT 1\n", "\\q")),
    ("SELECT 1\n  quit  ", ("SELECT 1\n", "quit")),
    ("SELECT 1 FROM t\n.tables", ("SELECT 1 FROM t\n", ".tables")),
    ("SELECT 'a\n\\q", None),  # inside a string
    ("SELECT /* a\n\\q", None),  # inside a comment
    ("SELECT a\n.naics2 FROM t", None),  # not a dot-command
    ("SELECT 1 \\q", None),  # only on a line of its own
])
def test_meta_tail(text, tail):
    assert statements.meta_tail(text) == tail


@pytest.mark.parametrize("text, complete", [
    (".tables", True), ("help", True), ("quit;", True), ("SELECT 1\n\\help", True), ("SELECT 'x\n\\q", False),
])
def test_is_complete_with_meta_lines(text, complete):
    assert statements.is_complete(text) is complete


def test_a_meta_command_under_a_statement_is_coloured_as_one():
    from prompt_toolkit.document import Document

    from dpsql.faces.repl.lexer import DpsqlLexer

    line = DpsqlLexer().lex_document(Document("SELECT 1\n\\help"))
    assert line(1) == [("class:meta-command", "\\help")] and line(0)[0] == ("class:pygments.keyword", "SELECT")


@pytest.mark.parametrize("text, expected", [
    ("\\x ", ["on", "off", "auto"]), ("\\pset ", ["pager", "expanded", "format"]), ("\\pset pager a", ["always"]),
    ("\\pset format ", ["aligned", "csv"]), ("\\ch", ["\\chart"]), ("\\co", ["\\conninfo", "\\copy"]),
])
def test_completion_of_the_new_commands(con, text, expected):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from dpsql.faces.repl.completion import SqlCompleter

    found = SqlCompleter(con.session).get_completions(Document(text), CompleteEvent(completion_requested=True))
    assert [c.text for c in found] == expected


def test_file_names_complete_after_i(con, tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from dpsql.faces.repl.completion import SqlCompleter

    (tmp_path / "weekly.sql").write_text("")
    text = f"\\i {tmp_path}/wee"
    found = SqlCompleter(con.session).get_completions(Document(text), CompleteEvent(completion_requested=True))
    assert [c.text for c in found] == ["kly.sql"]


def test_every_dot_command_is_registered():
    assert all(d in commands.COMMANDS for d in statements.DOT_COMMANDS)


# --------------------------------------------------------------------------- psql's names


def test_psql_aliases_and_conninfo(con):
    out, err, rc = drive(con, f"\\dt{ENTER}\\d establishments{ENTER}\\?{ENTER}\\conninfo{ENTER}")
    assert rc == 0 and err == ""
    assert "establishments | id" in out and "payann    | BIGINT  | measure" in out and "Meta-commands" in out
    assert f'You are connected to the DuckDB file "{con.session.database}"' in out
    assert f'as analyst "{con.session.ledger.analyst}"' in out and "each query costs rho=0.1" in out


# --------------------------------------------------------------------------- \x, \pset, the pager


def test_expanded_display(con):
    out, err, rc = drive(con, f"\\x{ENTER}{COUNT_BY_STATE} LIMIT 2;{ENTER}\\x off{ENTER}{COUNT_BY_STATE} LIMIT 2;{ENTER}")
    assert rc == 0 and err == ""
    expanded, aligned = answer(out).split("Expanded display is off.")
    assert "Expanded display is on." in expanded
    lines = expanded.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("-[ RECORD 1 ]-"))
    assert lines[first + 1] == "state | AK" and re.fullmatch(r"n     \| \d+ ± \d+", lines[first + 2])
    assert re.fullmatch(r"pay   \| [\d.]+ ± [\d.]+", lines[first + 3]) and lines[first + 4].startswith("-[ RECORD 2 ]")
    assert "(2 rows) charged" in expanded and "RECORD" not in aligned and "state | " in aligned


def test_expanded_auto_follows_the_terminal_width(con):
    with terminal(columns=30, lines=200) as (tty, screen):
        drive(con, f"\\pset pager off{ENTER}\\x auto{ENTER}{COUNT_BY_STATE} LIMIT 2;{ENTER}", out=tty)
        narrow = screen.text()
    with terminal(columns=200, lines=200) as (tty, screen):
        drive(con, f"\\pset pager off{ENTER}\\x auto{ENTER}{COUNT_BY_STATE} LIMIT 2;{ENTER}", out=tty)
        wide = screen.text()
    assert "Expanded display is used automatically." in narrow
    assert "-[ RECORD 1 ]" in narrow and "-[ RECORD 1 ]" not in wide and "state | " in wide


@pytest.fixture()
def pager(tmp_path, monkeypatch):
    """$PAGER set to a program that keeps what it is given in a file: (the file)."""
    kept = tmp_path / "paged.txt"
    program = tmp_path / "pager.py"
    program.write_text("import sys\nopen(sys.argv[1], 'a').write('<<PAGE\\n' + sys.stdin.read() + 'PAGE>>\\n')\n")
    monkeypatch.setenv("PAGER", f"{sys.executable} {program} {kept}")
    monkeypatch.delenv("DPSQL_PAGER", raising=False)
    return kept


def test_a_tall_answer_goes_through_the_pager(con, pager):
    with terminal(columns=120, lines=20) as (tty, screen):
        drive(con, f"{COUNT_BY_STATE};{ENTER}SELECT COUNT(*) AS n FROM establishments;{ENTER}", out=tty)
        shown = screen.text()
    paged = pager.read_text()
    assert paged.count("<<PAGE") == 1  # the 51 states; not the one-row answer, nor the banner
    assert "state | " in paged and "\nWY " in paged and "charged" not in paged
    assert "(51 rows) charged" in shown and "WY " not in shown  # the charge shows on the screen after the pager
    assert "(1 row) charged" in shown


def test_a_wide_answer_goes_through_the_pager(con, pager):
    with terminal(columns=20, lines=100) as (tty, screen):
        drive(con, f"{COUNT_BY_STATE} LIMIT 3;{ENTER}", out=tty)
    assert "<<PAGE" in pager.read_text()


def test_pager_off_and_always(con, pager):
    with terminal(columns=120, lines=20) as (tty, screen):
        drive(con, f"\\pset pager off{ENTER}{COUNT_BY_STATE};{ENTER}\\pset pager always{ENTER}"
                   f"SELECT COUNT(*) AS n FROM establishments;{ENTER}", out=tty)
        shown = screen.text()
    assert "Pager usage is off." in shown and "\nWY " in shown  # the 51 rows on the screen
    paged = pager.read_text()
    assert paged.count("<<PAGE") == 1 and "n\n---" in paged.replace(" ", "")  # only the one-row answer


def test_never_a_pager_when_the_output_is_not_a_terminal(con, pager):
    out, err, rc = drive(con, f"\\pset pager always{ENTER}{COUNT_BY_STATE};{ENTER}")
    assert "\nWY " in out and not pager.exists()


def test_a_pager_that_cannot_start_prints_the_text(con, monkeypatch):
    monkeypatch.setenv("PAGER", "/nonexistent/pager")
    with terminal(columns=120, lines=10) as (tty, screen):
        drive(con, f"{COUNT_BY_STATE};{ENTER}", out=tty)
        assert "\nWY " in screen.text()


# --------------------------------------------------------------------------- \o


def test_output_to_a_file_and_back(con, tmp_path):
    target = tmp_path / "answers.txt"
    out, err, rc = drive(con, f"\\o {target}{ENTER}{COUNT_BY_STATE} LIMIT 2;{ENTER}\\o{ENTER}"
                              f"SELECT COUNT(*) AS back FROM establishments;{ENTER}")
    assert rc == 0 and err == ""
    written = target.read_text()
    assert "state | " in written and "(2 rows) charged" in written and "back" not in written
    screen = answer(out)
    assert f"Answers now go to {target}" in screen and "state | " not in screen
    assert "(2 rows) charged" in screen  # the charge still shows on the screen
    assert "back" in screen and f"Answers go to the screen again (they went to {target})." in screen


def test_output_to_a_file_that_cannot_be_opened(con, tmp_path):
    out, err, rc = drive(con, f"\\o {tmp_path}/no/such/dir/x.txt{ENTER}\\o |cat{ENTER}")
    assert "could not open" in err and "No such file or directory" in err and "not supported" in err


# --------------------------------------------------------------------------- \copy, \export, \pset format csv


def reload_csv(path: Path, result: Result) -> list[list]:
    """The CSV's rows with each column converted back by the answer's type (the MOE columns are floats)."""
    types = dict(zip(result.columns, result.types))
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    convert = [_reader(types.get(h, "DOUBLE")) for h in header]
    return [[None if v == "" else conv(v) for conv, v in zip(convert, row)] for row in body]


def _reader(sql_type: str):
    return {"VARCHAR": str, "BIGINT": int, "INTEGER": int, "HUGEINT": int}.get(sql_type, float)


def expected_rows(result: Result) -> tuple[list[str], list[list]]:
    """The answer's rows with each noisy column followed by its MOE, from the receipt."""
    headers, rows = [], [[] for _ in result.rows]
    for c, name in enumerate(result.columns):
        err = result.receipt.columns.get(name)
        headers += [name] + ([name + "_moe95"] if err else [])
        for r, row in enumerate(result.rows):
            rows[r] += [row[c]] + ([err.moe95[r]] if err else [])
    return headers, rows


def test_copy_writes_a_csv_that_reloads_with_the_same_rows(con, tmp_path):
    target = tmp_path / "by state.csv"
    repl, out, err, rc = drive_repl(con, f"\\copy ({COUNT_BY_STATE}) TO '{target}' CSV HEADER{ENTER}")
    assert rc == 0 and err == ""
    assert "COPY 51" in out and "(51 rows) charged rho=0.1" in out and last_charge(con) == COUNT_BY_STATE
    with open(target, newline="") as f:
        assert next(csv.reader(f)) == ["state", "n", "n_moe95", "pay", "pay_moe95"]
    # The rows reload exactly: the answer's values (kept for \chart and \export), each MOE after its value.
    headers, rows = expected_rows(repl.last_result)
    assert reload_csv(target, repl.last_result) == rows and len(rows) == 51
    # pandas reads the same rows (keys as text, as the answer has them).
    frame = pd.read_csv(target, dtype={"state": str})
    assert list(frame.columns) == headers and frame.values.tolist() == rows


def test_copy_to_stdout_and_psql_options(con, tmp_path):
    out, err, rc = drive(con, f"\\copy (SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2) "
                              f"TO STDOUT WITH (FORMAT csv, HEADER, DELIMITER ';'){ENTER}")
    assert rc == 0 and err == ""
    lines = answer(out).strip().splitlines()
    assert lines[0] == "naics2;n;n_moe95" and re.fullmatch(r"11;-?\d+;[\d.]+", lines[1]) and "COPY 24" in out


def test_copy_text_format_is_psqls_default(con, tmp_path):
    target = tmp_path / "t.tsv"
    out, err, rc = drive(con, f"\\copy (SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2) TO {target}{ENTER}")
    assert rc == 0 and err == ""
    first = target.read_text().splitlines()[0].split("\t")
    assert first[0] == "11" and len(first) == 3  # no header, tab-separated, the MOE column too


def test_a_refused_copy_writes_nothing_and_costs_nothing(con, tmp_path):
    target = tmp_path / "rows.csv"
    out, err, rc = drive(con, f"\\copy (SELECT id, payann FROM establishments) TO '{target}' CSV HEADER{ENTER}"
                              f"\\copy establishments FROM '{target}'{ENTER}"
                              f"\\copy (SELECT COUNT(*) FROM establishments) TO '{target}' FORMAT binary{ENTER}"
                              f"\\copy (SELECT COUNT(*) FROM establishments) TO '{tmp_path}/no/dir/x.csv' CSV{ENTER}")
    assert err.startswith("DP201") and "LINE 1: SELECT id, payann FROM establishments" in err
    assert "\\copy … FROM (loading rows) is not supported" in err and "FORMAT binary is not supported" in err
    assert "could not write" in err and "no such directory" in err
    assert not target.exists() and con.session.ledger.charges == []


@pytest.mark.parametrize("arg, copy", [
    ("(SELECT 1) TO 'a.csv' CSV HEADER", Copy("SELECT 1", "a.csv", "csv", True)),
    ("(SELECT ')' AS p) TO 'it''s.csv' WITH (FORMAT csv, HEADER true)", Copy("SELECT ')' AS p", "it's.csv", "csv", True)),
    ("(SELECT 1;) to stdout csv header false", Copy("SELECT 1", "STDOUT", "csv", False)),
    ("states TO x.txt WITH DELIMITER AS '|' NULL 'null'", Copy("SELECT * FROM states", "x.txt", delimiter="|", null="null")),
])
def test_parse_copy(arg, copy):
    assert parse_copy(arg) == copy


@pytest.mark.parametrize("arg, message", [
    ("(SELECT 1 TO 'a'", "no closing parenthesis"), ("(SELECT 1)", "usage"), ("(SELECT 1) TO", "usage"),
    ("(SELECT 1) TO PROGRAM 'gzip'", "not supported"), ("(SELECT 1) TO 'a' DELIMITER ';;'", "one character"),
])
def test_parse_copy_refuses(arg, message):
    with pytest.raises(CopyError, match=message):
        parse_copy(arg)


def test_export_the_last_answer_as_csv_and_json(con, tmp_path):
    repl, out, err, rc = drive_repl(con, f"\\export {tmp_path}/none.csv{ENTER}{COUNT_BY_STATE};{ENTER}"
                                         f"\\export {tmp_path}/a.csv{ENTER}\\export '{tmp_path}/a.json'{ENTER}")
    assert "no answer yet" in err and "51 rows written to" in out and not (tmp_path / "none.csv").exists()
    headers, rows = expected_rows(repl.last_result)
    assert reload_csv(tmp_path / "a.csv", repl.last_result) == rows
    assert json.loads((tmp_path / "a.json").read_text()) == [dict(zip(headers, row)) for row in rows]
    assert pd.read_json(tmp_path / "a.json", dtype={"state": str}, precise_float=True).values.tolist() == rows


def test_csv_output_format(con):
    out, err, rc = drive(con, f"\\pset format csv{ENTER}SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2;{ENTER}")
    body = answer(out).split("Output format is csv.\n\n", 1)[1]
    assert body.splitlines()[0] == "naics2,n,n_moe95" and len(body.strip().splitlines()) == 25
    assert "(24 rows) charged" in err and "charged" not in out  # stdout stays CSV


def test_copy_with_error_columns_on_and_of_a_public_table(con):
    out, err, rc = drive(con, f"SET dpsql.error_columns = all;{ENTER}"
                              f"\\copy (SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2) TO STDOUT CSV HEADER{ENTER}"
                              f"\\copy states TO STDOUT CSV HEADER{ENTER}")
    assert rc == 0 and err == ""
    assert "\nnaics2,n,n_moe95,n_sigma\n" in out  # not doubled
    assert "\ncode,name,fips,region,division\n" in out and "COPY 51" in out  # public: exact, no error columns


def test_error_columns_already_in_the_answer_are_not_doubled():
    result = fake_result(["k", "n", "n_moe95"], [("a", 5, 7.0)], {"n": [7.0]})
    assert render(result, View(format="csv")) == "k,n,n_moe95\na,5,7.0"


# --------------------------------------------------------------------------- \i and \e


def test_include_runs_a_file_and_stops_at_its_first_error(con, tmp_path):
    inner = tmp_path / "inner.sql"
    inner.write_text("SELECT COUNT(*) AS inner_n FROM establishments;\n")
    script = tmp_path / "weekly.sql"
    script.write_text(f"-- weekly\n\\i {inner}\nSELECT COUNT(*) AS n\n  FROM establishments;\n\\x\n"
                      "SELECT MAX(payann) FROM establishments;\nSELECT COUNT(*) AS never FROM establishments;\n")
    out, err, rc = drive(con, f"\\i {script}{ENTER}\\i {tmp_path}/missing.sql{ENTER}")
    assert rc == 0
    assert "inner_n" in out and "Expanded display is on." in out and "never" not in out
    assert err.startswith("DP109") and f"{script}: stopped at the error above" in err and "could not read" in err
    assert len(con.session.ledger.charges) == 2


def test_include_of_a_file_that_includes_itself_stops(con, tmp_path):
    loop = tmp_path / "loop.sql"
    loop.write_text(f"\\i {loop}\n")
    out, err, rc = drive(con, f"\\i {loop}{ENTER}\\conninfo{ENTER}")
    assert "nested more than 16 deep" in err and "You are connected" in out


def test_quit_in_an_included_file_leaves(con, tmp_path):
    script = tmp_path / "bye.sql"
    script.write_text(".quit\n")
    out, err, rc = drive(con, f".read {script}{ENTER}SELECT COUNT(*) FROM establishments;{ENTER}")
    assert rc == 0 and con.session.ledger.charges == []


@pytest.fixture()
def editor(tmp_path, monkeypatch):
    """$EDITOR set to a program that keeps what it was given and appends a line: (the kept file)."""
    kept = tmp_path / "edited.txt"
    program = tmp_path / "editor.py"
    program.write_text("import sys\ntext = open(sys.argv[-1]).read()\nopen(sys.argv[1], 'w').write(text)\n"
                       "open(sys.argv[-1], 'w').write(text.rstrip() + '\\nWHERE state = \\'CA\\';\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {program} {kept}")
    monkeypatch.delenv("DPSQL_EDITOR", raising=False)
    return kept


def test_edit_the_statement_being_typed(con, editor):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS n FROM establishments{ENTER}\\e{ENTER}{ENTER}")
    assert rc == 0 and err == ""
    assert editor.read_text() == "SELECT COUNT(*) AS n FROM establishments\n"
    assert last_charge(con) == "SELECT COUNT(*) AS n FROM establishments WHERE state = 'CA'"  # Enter ran it


def test_edit_the_last_query_and_it_waits_for_enter(con, editor):
    out, err, rc = drive(con, f"SELECT COUNT(*) AS n FROM establishments;{ENTER}\\e{ENTER}{CTRL_C}")
    assert rc == 0 and err == ""
    assert editor.read_text() == "SELECT COUNT(*) AS n FROM establishments\n"
    assert len(con.session.ledger.charges) == 1  # the edited text came back to the prompt; Ctrl-C dropped it


def test_edit_refuses_without_a_prompt_and_reports_a_failing_editor(con, monkeypatch):
    repl = Repl(con, out=io.StringIO(), err=(err := io.StringIO()), progress=False)
    assert repl.script(["\\e\n"]) == 1 and "needs the interactive prompt" in err.getvalue()
    monkeypatch.setenv("EDITOR", "/nonexistent/editor")
    out, err2, rc = drive(con, f"\\e{ENTER}")
    assert "could not start the editor" in err2


def test_shell_command(con, tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    out, err, rc = drive(con, f"\\! cat {tmp_path}/a.csv{ENTER}")
    assert rc == 0 and "x\n1\n" in answer(out)


# --------------------------------------------------------------------------- \chart


def fake_result(columns, rows, moe: dict[str, list[float | None]]) -> Result:
    """A hand-made answer, to test drawing on chosen values (negative, NULL, many rows)."""
    errs = {c: ColumnError(c, tuple(m), tuple(m)) for c, m in moe.items()}
    receipt = Receipt(Fraction(1, 10), Fraction(0), "discrete_gaussian", "t", (), errs, (), Fraction(0),
                      Fraction(1), Fraction(1))
    return Result(tuple(columns), ("VARCHAR",) * len(columns), list(rows), receipt)


def test_chart_of_the_last_answer(con):
    out, err, rc = drive(con, f"\\chart{ENTER}{COUNT_BY_STATE} LIMIT 5;{ENTER}\\chart{ENTER}\\chart pay 3{ENTER}"
                              f"\\chart state{ENTER}\\chart nope{ENTER}")
    assert "no answer yet" in err and "'state' is not numeric" in err and "no column 'nope'" in err
    charts = [block for block in answer(out).split("\n\n") if "bars are the noisy values" in block]
    n_chart, pay_chart = charts
    lines = n_chart.splitlines()
    assert lines[0].startswith("n: bars are the noisy values; ▒ and ├─┤ span their 95% margin of error")
    assert [line.split(" │")[0] for line in lines[1:6]] == ["AK", "AL", "AR", "AZ", "CA"]
    assert all(re.search(r"│[█▉▊▋▌▍▎▏▒]+.* \d+ ± \d+$", line) for line in lines[1:6])
    assert lines[6].lstrip().startswith("└0")
    assert len(pay_chart.splitlines()) == 1 + 3 + 1 + 1 and "(the first 3 of 5 rows" in pay_chart


def test_chart_bars_are_proportional_and_whiskers_span_the_moe():
    result = fake_result(["k", "v"], [("a", 100, ), ("b", 50), ("c", 0)], {"v": [20.0, 0.1, 20.0]})
    lines = chart(result, width=60).splitlines()
    a, b, c = (line.split("│", 1)[1] for line in lines[1:4])

    def cells(bar, chars):
        return sum(ch in chars for ch in bar)

    bar = "█▒▏▎▍▌▋▊▉"
    assert abs(cells(a, bar) - 2 * cells(b, bar)) <= 2  # 100 is twice 50
    assert "├" not in b and "▒" not in b  # ± 0.1 is narrower than a character: not drawn
    # 100 ± 20: the bar is shaded over its last 20, the whisker goes on for 20 more.
    assert abs(cells(a, "▒") - cells(a, "─┤")) <= 2 and cells(a, "▒") >= 5
    # 0 ± 20: no bar, a whisker across the zero line.
    assert cells(c, bar) == 0 and c.lstrip().startswith("├") and "┼" in c and "┤" in c


def test_chart_negative_values_grow_left_of_zero():
    result = fake_result(["k", "v"], [("pos", 40), ("neg", -40), ("nul", None)], {"v": [0.0, 0.0, None]})
    lines = chart(result, width=50).splitlines()
    pos, neg, nul = (line.split("│", 1)[1] for line in lines[1:4])
    zero = neg.index("│")  # the zero line
    assert set(pos[:zero]) == {" "} and pos[zero:].startswith("█")
    assert neg[:zero].rstrip(" █▐") == "" and neg[zero - 1] == "█" and neg[zero + 1:].strip(" ").startswith("-40")
    assert nul.strip().endswith("NULL") and "█" not in nul
    assert lines[-1].split("└")[1].startswith("-40")


def test_chart_many_rows_and_no_numbers():
    many = fake_result(["k", "v"], [(f"k{i}", i) for i in range(200)], {"v": [1.0] * 200})
    text = chart(many, width=80)
    assert len(text.splitlines()) == 1 + 50 + 1 + 1 and "(the first 50 of 200 rows" in text
    with pytest.raises(ChartError, match="no numeric column"):
        chart(fake_result(["k"], [("a",)], {}), width=80)
    assert "█" in chart(fake_result(["v"], [(Decimal("2.5"),)], {}), width=40)  # a total: no key, no MOE


def test_chart_labels_leave_out_error_columns():
    result = fake_result(["k", "n", "n_moe95", "n_sigma"], [("a", 5, 7.0, 3.2)], {"n": [7.0]})
    assert chart(result, width=60).splitlines()[1].startswith("a │")


def test_chart_labels_are_cut_and_nonfinite_values_skipped():
    result = fake_result(["k", "v"], [("x" * 60, 1.0), ("inf", math.inf)], {})
    lines = chart(result, width=80).splitlines()
    assert lines[1].startswith("x" * 23 + "…") and "█" not in lines[2]


# --------------------------------------------------------------------------- the habit table in docs/repl.md


def test_every_dpsql_command_in_the_habit_table_exists():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "repl.md").read_text()
    section = doc.split("## psql / pgcli / duckdb shell habit → dpsql", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| habit")]
    assert len(rows) >= 20
    for row in rows:
        dpsql_cell = row.split(" | ")[1]
        for name in re.findall(r"`([\\.][a-z?!]+)", dpsql_cell):
            assert name in commands.COMMANDS, f"{name} in the habit table is no command: {row}"


HABITS = [  # (typed, what shows): every habit the table says works, and the ones it says are not offered
    ("\\?", "Meta-commands"), ("help", "Meta-commands"), (".help", "Meta-commands"),
    ("\\dt", "establishments | id"), ("\\d", "establishments | id"), (".tables", "establishments | id"),
    ("SHOW TABLES;", "\nestablishments\n"), ("\\d establishments", "payann    | BIGINT"),
    (".schema establishments", "payann    | BIGINT"), ("DESCRIBE establishments;", "payann      | BIGINT"),
    ("\\conninfo", "You are connected"), ("\\x auto", "Expanded display is used automatically."),
    (".output", "Answers go to the screen."), ("\\timing", "Timing is on."), (".timer on", "Timing is on."),
    ("\\! echo shell-1", "shell-1"), (".shell echo shell-2", "shell-2"), (".system echo shell-3", "shell-3"),
    ("\\include /nonexistent/1", "could not read /nonexistent/1"), (".read /nonexistent/2", "could not read /nonexistent/2"),
    ("\\reset", "Query buffer reset"), ("\\pset format csv", "Output format is csv."),
    ("EXPLAIN SELECT COUNT(*) FROM establishments;", "rho for this query: 0.1"), ("COPY (SELECT 1) TO 'x.csv';", "DP102"),
    (".mode line", "unknown command .mode"), ("\\watch", "unknown command \\watch"), ("\\l", "unknown command \\l"),
    ("\\dn", "unknown command \\dn"), ("\\c other", "unknown command \\c"),
]


def test_every_habit_in_the_table_does_what_it_says(con):
    out, err, rc = drive(con, "".join(typed + ENTER for typed, _ in HABITS))
    shown = answer(out) + err
    for typed, shows in HABITS:
        assert shows in shown, typed
    assert err.count("unknown command") == 5 and con.session.ledger.charges == []


def test_no_pager_for_a_script_on_standard_input(con, pager):
    """`dpsql < q.sql` with the output on a terminal: no pager, as psql (standard input is no terminal)."""
    with terminal(columns=120, lines=10) as (tty, screen):
        repl = Repl(con, out=tty, err=io.StringIO(), progress=False)
        assert repl.script([f"{COUNT_BY_STATE};\n"]) == 0
        assert "\nWY " in screen.text() and not pager.exists()
