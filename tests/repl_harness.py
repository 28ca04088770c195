"""Driving the `dpsql` prompt in tests as a person would: keys through prompt_toolkit's pipe input.

* :func:`drive` types keys and returns what was printed (prompt_toolkit draws on a DummyOutput);
* :func:`drive_screen` also draws the prompt on a VT100 screen (prompt_toolkit's own output into
  pyte's terminal emulator) and waits, between groups of keys, for text to appear on it: what a
  person sees while typing (a search line, a menu), not only what is printed after Enter;
* :func:`terminal` is a real pseudo-terminal for the printed output, so that the REPL's "is this
  a terminal?" checks (the pager, ``\\x auto``) see one.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import struct
import termios
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyte
from prompt_toolkit.data_structures import Size
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.vt100 import Vt100_Output

from dpsql.faces.repl import Repl

CTRL_C, CTRL_D, CTRL_G, CTRL_R, TAB, ENTER = "\x03", "\x04", "\x07", "\x12", "\t", "\r"


def drive(con: Any, keys: str, *, out: Any = None, history: Any = None, **repl: Any) -> tuple[str, str, int]:
    """Type ``keys`` (then Ctrl-C, Ctrl-D) into a REPL on ``con``; returns (stdout, stderr, exit status)."""
    _, printed, err, rc = drive_repl(con, keys, out=out, history=history, **repl)
    return printed, err, rc


def drive_repl(con: Any, keys: str, *, out: Any = None, history: Any = None, **repl: Any) -> tuple[Repl, str, str, int]:
    """:func:`drive`, also returning the REPL (its last answer, its settings). With ``out`` given
    (a terminal), stdout is read there and "" is returned for it."""
    text_out = out if out is not None else io.StringIO()
    err = io.StringIO()
    r = Repl(con, out=text_out, err=err, progress=False, **repl)
    with create_pipe_input() as inp:
        inp.send_text(keys + CTRL_C + CTRL_D)  # Ctrl-C first: a statement left in the prompt would hold Ctrl-D
        rc = r.interactive(input=inp, output=DummyOutput(), history=history or InMemoryHistory())
    return r, (text_out.getvalue() if out is None else ""), err.getvalue(), rc


class Screen:
    """A terminal screen: what prompt_toolkit writes is fed to pyte; :meth:`text` is what shows."""

    def __init__(self, columns: int = 100, lines: int = 30) -> None:
        self.size = Size(rows=lines, columns=columns)
        self._screen = pyte.Screen(columns, lines)
        self._stream = pyte.Stream(self._screen)
        self._lock = threading.Lock()
        self.encoding = "utf-8"

    def write(self, data: str) -> None:
        with self._lock:
            self._stream.feed(data)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        with self._lock:
            return "\n".join(line.rstrip() for line in self._screen.display).strip("\n")

    def output(self) -> Vt100_Output:
        return Vt100_Output(self, lambda: self.size, term="xterm", enable_cpr=False)


def drive_screen(con: Any, steps: list[tuple[str, str]], *, history: Any = None,
                 timeout: float = 10.0) -> tuple[dict[str, str], str, str]:
    """Type each step's keys, then wait until the step's text shows on the screen.

    Returns ({step's text: the screen when it showed, or "" if it never did}, stdout, stderr).
    Ctrl-G (end a search), Ctrl-C and Ctrl-D are typed at the end, so the prompt always ends.
    """
    screen = Screen()
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(con, out=out, err=err, progress=False)
    seen: dict[str, str] = {}
    with create_pipe_input() as inp:
        def type_steps() -> None:
            try:
                for keys, expect in steps:
                    inp.send_text(keys)
                    deadline = time.monotonic() + timeout
                    while expect not in screen.text() and time.monotonic() < deadline:
                        time.sleep(0.02)
                    seen[expect] = screen.text() if expect in screen.text() else ""
            finally:
                inp.send_text(CTRL_G + CTRL_C + CTRL_D)

        typist = threading.Thread(target=type_steps, daemon=True)
        typist.start()
        repl.interactive(input=inp, output=screen.output(), history=history or InMemoryHistory())
        typist.join(timeout)
    return seen, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def terminal(columns: int = 80, lines: int = 24) -> Iterator[tuple[Any, Any]]:
    """A pseudo-terminal of the given size: (a text stream writing to it, a reader of all it got).

    The reader's ``text()`` returns everything written so far (a thread drains the other end, so
    writers never block on a full terminal).
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep "\n" as written (no "\r\n") so tests compare text
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    stream = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    got = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            got.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    class Received:
        @staticmethod
        def text() -> str:
            stream.flush()
            time.sleep(0.05)
            return got.decode("utf-8", "replace")

    try:
        yield stream, Received
    finally:
        stream.close()
        reader.join(2)
        os.close(master)
