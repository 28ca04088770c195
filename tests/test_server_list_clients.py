"""Clients as they are (issue 33): list parameters from psycopg 3 and psycopg2, the Superset
URI's driver (``postgresql+psycopg2``, SQLAlchemy's inspector over it), and pgcli driven in a
real pseudo-terminal as a person uses it — ``\\dt``, tab completion, a query with its receipt —
against a real ``dpsql serve`` on loopback. Each charge is read from the server's ledger."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import pyte
import pytest

import server_clients_harness as harness
from test_server_clients import PASSWORD, _need, charges, server  # noqa: F401 - server: the module's own served demo


def _counts(rows) -> dict[str, int]:
    return {state: n for state, n in rows}


def test_psycopg_list_parameters(server):
    """psycopg 3 binds a list as an array parameter, ``= ANY(%s)`` (refused before: DP110/DP118):
    it answers as IN of the list, once charged; ``<> ALL(%s)`` as NOT IN; an empty list is FALSE;
    and the catalog's ``relkind = ANY(%s)`` (pgcli's, a text[] the server must type) answers."""
    import psycopg

    before = charges(server, "alice")
    with psycopg.connect(server.dsn("alice", PASSWORD), autocommit=True) as con:
        rows = con.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE state = ANY(%s) GROUP BY state",
                           (["CA", "NY"],)).fetchall()
        n = _counts(rows)  # the keyset narrowed by the WHERE on its key (sql/narrow.py): the states of the list
        assert set(n) == {"CA", "NY"} and n["CA"] > 1000 and n["NY"] > 1000
        rows = con.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE state <> ALL(%s) GROUP BY state",
                           (["CA"],)).fetchall()
        n = _counts(rows)
        assert "CA" not in n and len(n) == 50 and n["TX"] > 1000
        rows = con.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE employees = ANY(%s) GROUP BY state",
                           ([1, 2],)).fetchall()
        assert len(rows) == 51
        cur = con.execute("SET dpsql.rho = 0.1")  # PostgreSQL's tag and no rows; the value as a NOTICE
        assert cur.statusmessage == "SET" and cur.description is None
        assert con.execute("RESET dpsql.rho").statusmessage == "RESET"
        with pytest.raises(psycopg.errors.UndefinedTable, match='relation "establishm" does not exist'):
            con.execute("SELECT * FROM establishm")
        kinds = con.execute("SELECT relname FROM pg_catalog.pg_class WHERE relkind = ANY(%s) ORDER BY relname",
                            (["r", "p"],)).fetchall()
        assert ("establishments",) in kinds and ("states",) in kinds
    assert charges(server, "alice") == before + 3  # three answered private statements; the catalog free


def test_list_parameters_embedded(demo):
    """The DB-API's own list parameters: ``= ANY(?)`` is ``IN`` of the list and gives the rows
    the IN query gives (the same seed, the same noise); an empty list matches nothing; a list
    anywhere else, or a list of lists, is refused before anything runs (nothing charged)."""
    import dpsql
    from dpsql.testing import seeded_random

    database, policy = demo
    answers = []
    for sql, params in [("SELECT state, COUNT(*) FROM establishments WHERE state = ANY(?) GROUP BY state", [["CA", "NY"]]),
                        ("SELECT state, COUNT(*) FROM establishments WHERE state IN ('CA', 'NY') GROUP BY state", None),
                        ("SELECT state, COUNT(*) FROM establishments WHERE NOT state <> ALL(ARRAY['CA', 'NY']) "
                         "GROUP BY state", None)]:
        with dpsql.connect(database, policy=policy, _random_source=seeded_random(7)) as con:
            cur = con.cursor()
            cur.execute(sql, params)
            answers.append(cur.fetchall())
    assert answers[0] == answers[1] == answers[2]
    with dpsql.connect(database, policy=policy) as con:
        cur = con.cursor()
        cur.execute("SELECT COUNT(*) FROM establishments WHERE state = ANY(?)", [[]])
        assert abs(cur.fetchall()[0][0]) < 50  # FALSE for every row: a noisy 0
        spent = con.budget["spent"]
        for sql, params, code in [("SELECT COUNT(*) FROM establishments WHERE state = ?", [["CA"]], "DP110"),
                                  ("SELECT COUNT(*) FROM establishments WHERE state = ANY(?)", [[["CA"]]], "DP118"),
                                  ("SELECT COUNT(*) FROM establishments WHERE state = ANY(ARRAY[state])", None, "DP110")]:
            with pytest.raises(dpsql.ProgrammingError) as refused:
                cur.execute(sql, params)
            assert refused.value.code == code
        assert con.budget["spent"] == spent


def test_psycopg2_and_the_superset_uri(server):
    """psycopg2 (Superset 6's driver: SQLAlchemy 1.4's ``postgresql+psycopg2``) interpolates
    parameters into the text: a list becomes ``ARRAY['CA','NY']``, a tuple ``IN ('CA','NY')``.
    SQLAlchemy's inspector over it lists the tables and columns."""
    psycopg2 = pytest.importorskip("psycopg2")
    import sqlalchemy as sa

    before = charges(server, "alice")
    con = psycopg2.connect(server.dsn("alice", PASSWORD))
    con.autocommit = True
    try:
        cur = con.cursor()
        cur.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE state = ANY(%s) GROUP BY state", (["CA", "WA"],))
        n = _counts(cur.fetchall())
        assert set(n) == {"CA", "WA"} and n["CA"] > 1000 and n["WA"] > 100
        assert any("charged rho=" in notice for notice in con.notices)  # the receipt
        cur.execute("SELECT state, COUNT(*) AS n FROM establishments WHERE state IN %s GROUP BY state", (("OR", "NY"),))
        assert _counts(cur.fetchall())["NY"] > 1000
        cur.execute("SELECT code FROM states WHERE code = ANY(%s) ORDER BY code", (["NY", "CA"],))
        assert cur.fetchall() == [("CA",), ("NY",)]  # a public table: exact, free
    finally:
        con.close()
    assert charges(server, "alice") == before + 2
    # docs/bi.md's Superset set-up: dpsql's settings in the connection's options
    engine = sa.create_engine(f"postgresql+psycopg2://alice:{PASSWORD}@{server.host}:{server.port}/demo?sslmode=disable",
                              connect_args={"options": "-c dpsql.error_columns=on"})
    try:
        inspector = sa.inspect(engine)
        assert {"establishments", "states"} <= set(inspector.get_table_names())
        assert "payann" in {c["name"] for c in inspector.get_columns("establishments")}
        with engine.connect() as conn:
            answer = conn.execute(sa.text("SELECT state, COUNT(*) AS n FROM establishments GROUP BY state"))
            assert list(answer.keys()) == ["state", "n", "n_moe95"] and len(answer.all()) == 51
    finally:
        engine.dispose()
    assert charges(server, "alice") == before + 3


class _Terminal:
    """A program in a real pseudo-terminal, its output drawn on pyte's VT100 screen."""

    def __init__(self, argv: list[str], env: dict[str, str], columns: int = 120, lines: int = 40) -> None:
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        self.log = b""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the program, with the pty as its terminal
            os.environ.clear()
            os.environ.update(env)
            os.execvp(argv[0], argv)
        import fcntl
        import struct
        import termios
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            self.log += data
            self.stream.feed(data)
            if b"\x1b[6n" in data:  # a cursor position request: answer as a terminal does
                y, x = self.screen.cursor.y + 1, self.screen.cursor.x + 1
                os.write(self.fd, f"\x1b[{y};{x}R".encode())

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, needle: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            if needle in self.text() or needle.encode() in self.log:
                return self.text()
        raise AssertionError(f"{needle!r} did not appear; the screen:\n{self.text()}\n--- output:\n{self.log[-3000:]!r}")

    def wait_for_line(self, start: str, test, timeout: float = 60) -> str:
        """Wait until the last screen line starting with ``start`` passes ``test``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            lines = [line.rstrip() for line in self.screen.display if line.startswith(start)]
            if lines and test(lines[-1]):
                return lines[-1]
        raise AssertionError(f"no line starting {start!r} passed; the screen:\n{self.text()}")

    def wait_for_menu(self, word: str, kind: str, timeout: float = 60) -> None:
        """Wait until a completion menu shows ``word`` with its ``kind`` (table, column). pgcli
        loads its completions in a background thread after connecting: a menu asked for before
        they arrive stays empty, so the last key is typed again (backspace, the key) every few
        seconds, as a person would."""
        deadline = time.monotonic() + timeout
        retype = time.monotonic() + 3
        while time.monotonic() < deadline:
            self._read(0.1)
            if any(line.split()[:2] == [word, kind] for line in self.screen.display):
                return
            if time.monotonic() > retype:
                prompt = [line.rstrip() for line in self.screen.display if line.startswith("pg> ")]
                if prompt and prompt[-1]:
                    self.type("\x7f" + prompt[-1][-1])
                retype = time.monotonic() + 3
        raise AssertionError(f"no menu entry {word} {kind}; the screen:\n{self.text()}")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_pgcli_as_a_person_uses_it(server, tmp_path):
    """pgcli (issue 33: its completion and \\dt failed on ``relkind = ANY(...)``) in a real
    terminal: \\dt lists the tables, Tab completes a table name and a column from the catalog,
    a query answers with its receipt, and only that query is charged."""
    _need("pgcli", shutil.which("pgcli") is not None)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "xterm", "LANG": "C.UTF-8",
           "PGPASSWORD": PASSWORD, "PGSSLMODE": "disable", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    before = charges(server, "alice")
    term = _Terminal(["pgcli", "-h", server.host, "-p", str(server.port), "-U", "alice", "-d", "demo",
                      "--less-chatty", "--prompt", "pg> "], env)
    try:
        term.wait_for("pg> ")
        term.type("\\dt\r")
        screen = term.wait_for("paper_table1")
        assert "establishments" in screen and "states" in screen
        term.wait_for_line("pg> ", lambda line: "Refreshing completions" not in term.text())
        term.type("SELECT state, COUNT(*) AS n FROM establishm")
        term.wait_for_line("pg> SELECT", lambda line: line.endswith("establishm"))
        term.wait_for_menu("establishments", "table")
        term.type("\t")  # completes the table's name from the catalog
        term.wait_for_line("pg> SELECT", lambda line: line.endswith("FROM establishments"))
        term.type(" WHERE employees > 7 GROUP BY stat")  # a statement no other test released to alice (else reused, free)
        term.wait_for_line("pg> SELECT", lambda line: line.endswith("GROUP BY stat"))
        term.wait_for_menu("state", "column")
        term.type("\t")  # a column of that table
        term.wait_for_line("pg> SELECT", lambda line: line.endswith("GROUP BY state"))
        term.type(" ORDER BY state LIMIT 3\r")
        term.wait_for("charged rho=")
        term.wait_for("SELECT 3")
    finally:
        term.close()
    assert charges(server, "alice") == before + 1


def test_per_user_defaults_set_by_the_data_owner(tmp_path):
    """``dpsql user add alice --error-columns on --set rho=0.25`` (issue 33): a BI tool logged in as
    alice gets ± columns and is charged 0.25 without sending any SQL or option; the connection's
    own options override a default; another user keeps the server's defaults; a malformed --set
    is refused by the command and nothing is stored."""
    import psycopg
    from fractions import Fraction

    home = tmp_path / "home"
    harness.add_user(home, "alice", PASSWORD, "--error-columns", "on", "--set", "rho=0.25")
    harness.add_user(home, "bob", PASSWORD)
    bad = subprocess.run([sys.executable, "-m", "dpsql", "user", "add", "carol", "--set", "rho"], input=PASSWORD + "\n",
                         text=True, env=harness.env(home), capture_output=True, timeout=60)
    assert bad.returncode == 2 and "NAME=VALUE" in bad.stderr
    listed = subprocess.run([sys.executable, "-m", "dpsql", "user", "list"], text=True, env=harness.env(home),
                            capture_output=True, timeout=60)
    assert "carol" not in listed.stdout and "dpsql.error_columns=on" in listed.stdout
    served = harness.start(home)
    try:
        sql = "SELECT state, COUNT(*) AS n FROM establishments GROUP BY state"
        with psycopg.connect(served.dsn("alice", PASSWORD), autocommit=True) as con:
            cur = con.execute(sql)
            assert [d.name for d in cur.description] == ["state", "n", "n_moe95"]
            spent = dict(con.execute("SHOW dpsql.budget").fetchall())["dpsql.budget.spent"]
            assert Fraction(spent) == Fraction(1, 4)
        with psycopg.connect(served.dsn("alice", PASSWORD), options="-c dpsql.error_columns=off", autocommit=True) as con:
            assert [d.name for d in con.execute(sql + " ORDER BY state").description] == ["state", "n"]
        with psycopg.connect(served.dsn("bob", PASSWORD), autocommit=True) as con:
            assert [d.name for d in con.execute(sql).description] == ["state", "n"]
            assert con.execute("SHOW dpsql.rho").fetchall() == [("dpsql.rho", "0.1")]
    finally:
        served.stop()
