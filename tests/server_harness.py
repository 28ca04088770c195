"""A real ``dpsql serve`` on loopback, for every test of the wire server.

Each server is a subprocess, ``python -m dpsql serve DATABASE --policy P --state DIR --port 0``,
running this checkout's code (``PYTHONPATH`` is set to the repository root) with its own
``DPSQL_HOME`` and state folder (users, ledger) in the test's temporary directory. The port is
read from the ``listening on HOST:PORT`` line the server writes to stderr, which goes to a file
(``server.stderr``, :attr:`DpsqlServer.stderr`) so that a chatty server can never block on a
full pipe. Every server a fixture starts is stopped at teardown (SIGTERM, then SIGKILL).

Fixtures (made visible to every test by ``tests/conftest.py``)::

    def test_something(dpsql_server):            # one server per test module, on the demo data
        srv = dpsql_server                       # users alice and bob (password "pw-<name>")
        srv.add_user("carol", cli=False)         # more users at any time (the server reads the
        with srv.connect("carol") as conn:       #   user file at every login); psycopg 3, autocommit
            conn.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state").fetchall()
        srv.spent("carol")                       # Fraction: rho charged to carol in the ledger

    def test_options(start_server, demo_files, tmp_path):   # servers of your own, stopped at teardown
        small = policy_with_budget(demo_files[1], tmp_path / "p.toml", total_rho="0.5")
        srv = start_server("--max-connections", "2", users=("dave",), policy=small)

Use a user name of your own per test on a shared server: budgets are per analyst, so tests
on one server do not see each other's spending. ``add_user`` goes through ``dpsql user add``
(about a second, a fresh interpreter) unless ``cli=False``. Other clients::

    subprocess.run(["psql", srv.dsn("alice"), "-c", "SELECT 1"])     # libpq conninfo (psql, psycopg)
    sqlalchemy.create_engine(srv.url("alice"))                       # postgresql+psycopg://...
    await asyncpg.connect(host=srv.host, port=srv.port, user="alice", password="pw-alice")
    srv.jdbc_url("alice")                                            # jdbc:postgresql://...

The ledger is read-only from the test: :meth:`DpsqlServer.charges`, :meth:`~DpsqlServer.spent`,
:meth:`~DpsqlServer.check_ledger` (SQLite's integrity check, totals = sums). :meth:`~DpsqlServer.kill`
(``kill -9``), :meth:`~DpsqlServer.stop` (SIGTERM) and :meth:`~DpsqlServer.launch` (restart on the
same state folder, a new port). :class:`RawClient` (:meth:`DpsqlServer.raw`, or logged in with
:meth:`DpsqlServer.login`) speaks the protocol byte by byte — startup, the SCRAM exchange
through ``scramp``, typed messages — for tests of malformed traffic; :func:`frame`, :func:`cstr`
and :func:`startup_packet` build messages; :func:`error_fields` and :func:`errors_in` read
ErrorResponses; :func:`eventually` retries an assertion. Import them in a test module with
``from server_harness import ...`` (pytest puts ``tests/`` on the path). Outside pytest::

    with DpsqlServer.start(workdir, database, policy, "--threads", "1", users=("alice",)) as srv:
        ...
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
LISTENING = re.compile(r"listening on (\S+):(\d+)")
PROTOCOL_3 = 196608


def _conninfo_quote(value: str) -> str:
    """A value for a single-quoted libpq conninfo field: backslash and quote escaped."""
    return value.replace("\\", "\\\\").replace("'", "\\'")


def password_of(user: str) -> str:
    """The password the harness gives ``user`` unless told otherwise."""
    return f"pw-{user}"


def server_env(home: Path) -> dict[str, str]:
    """The environment of a server or ``dpsql user`` subprocess: this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["DPSQL_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def policy_with_budget(source: Path, dest: Path, **budget: str) -> Path:
    """Copy a policy file to ``dest`` with keys of its ``[budget]`` table replaced or added
    (``total_rho="0.5"``, ``default_rho="0.05"``, ...); values are TOML text."""
    text = Path(source).read_text(encoding="utf-8")
    head, sep, rest = text.partition("[budget]\n")
    assert sep, f"{source} has no [budget] table"
    body, nxt, tail = rest.partition("\n[")
    lines = body.split("\n")
    for key, value in budget.items():
        pattern = re.compile(rf"^{key}\s*=")
        hit = [i for i, line in enumerate(lines) if pattern.match(line)]
        if hit:
            lines[hit[0]] = f"{key} = {value}"
        else:
            lines.insert(0, f"{key} = {value}")
    dest.write_text(head + sep + "\n".join(lines) + nxt + tail, encoding="utf-8")
    return dest


class DpsqlServer:
    """One ``dpsql serve`` subprocess (see the module docstring)."""

    def __init__(self, workdir: Path, database: Path, policy: Path, args: Sequence[str] = (),
                 state: Path | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.database, self.policy, self.args = Path(database), Path(policy), list(args)
        self.home = self.workdir / "home"
        self.home.mkdir(exist_ok=True)
        self.state = Path(state) if state is not None else self.workdir / "state"
        self.ledger_path = self.state / "ledger.sqlite"
        self.stderr_path = self.workdir / "server.stderr"
        self.process: subprocess.Popen[bytes] | None = None
        self.host, self.port = "127.0.0.1", 0
        self.passwords: dict[str, str] = {}

    # ------------------------------------------------------------------ life
    @classmethod
    def start(cls, workdir: Path, database: Path, policy: Path, *args: str, users: Sequence[str] = (),
              state: Path | None = None, timeout: float = 60) -> DpsqlServer:
        """Add ``users`` (password :func:`password_of`), start the server, wait until it listens."""
        srv = cls(workdir, database, policy, args, state)
        for user in users:
            srv.add_user(user)
        srv.launch(timeout)
        return srv

    def launch(self, timeout: float = 60) -> None:
        """Start (or restart, after :meth:`stop` or :meth:`kill`) the server on a fresh port."""
        assert self.process is None or self.process.poll() is not None, "the server is running"
        start = self.stderr_path.stat().st_size if self.stderr_path.exists() else 0
        with open(self.stderr_path, "ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "dpsql", "serve", str(self.database), "--policy", str(self.policy),
                 "--state", str(self.state), "--host", "127.0.0.1", "--port", "0", *self.args],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=server_env(self.home),
                cwd=self.workdir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = LISTENING.search(self.stderr_path.read_bytes()[start:].decode("utf-8", "replace"))
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"dpsql serve exited with {self.process.returncode}:\n{self.stderr}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"dpsql serve did not listen within {timeout} s:\n{self.stderr}")

    def stop(self, timeout: float = 15) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; returns the exit code."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL (``kill -9``), and wait for the process to be gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace") if self.stderr_path.exists() else ""

    def __enter__(self) -> DpsqlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ users
    def add_user(self, name: str, password: str | None = None, *, replace: bool = False, cli: bool = True) -> str:
        """Add an analyst; returns its password (:func:`password_of` unless given). With ``cli``
        (the default) through ``dpsql user add NAME DATABASE --state DIR``, the password on stdin, as
        a data owner does (about a second: a fresh interpreter); without, through the same
        :class:`~dpsql.faces.server.users.UserStore` in this process (milliseconds). A running
        server reads the user file at every login, so either takes effect at once."""
        password = password_of(name) if password is None else password
        if cli:
            cmd = [sys.executable, "-m", "dpsql", "user", "add", name, str(self.database), "--state", str(self.state)]
            run = subprocess.run(cmd + (["--replace"] if replace else []), input=password + "\n", text=True,
                                 capture_output=True, env=server_env(self.home), timeout=60)
            assert run.returncode == 0, run.stderr
        else:
            from dpsql.faces.server.users import UserStore

            UserStore(self.state).add(name, password, replace=replace)
        self.passwords[name] = password
        return password

    # ------------------------------------------------------------------ clients
    def dsn(self, user: str, password: str | None = None, **params: Any) -> str:
        """A libpq connection string (psql, psycopg): ``host=... port=... user=... password=...``."""
        password = self.passwords.get(user, password_of(user)) if password is None else password
        fields = {"host": self.host, "port": self.port, "user": user, "password": password,
                  "connect_timeout": 10, **params}
        return " ".join(f"{k}='{_conninfo_quote(str(v))}'" for k, v in fields.items())

    def url(self, user: str, password: str | None = None, driver: str = "postgresql+psycopg",
            database: str = "dpsql") -> str:
        """A SQLAlchemy URL (``postgresql+psycopg://user:pw@127.0.0.1:PORT/dpsql``)."""
        from urllib.parse import quote

        password = self.passwords.get(user, password_of(user)) if password is None else password
        return f"{driver}://{quote(user)}:{quote(password)}@{self.host}:{self.port}/{database}"

    def jdbc_url(self, user: str, password: str | None = None, database: str = "dpsql") -> str:
        """A PostgreSQL JDBC URL with the user and password as parameters."""
        from urllib.parse import quote

        password = self.passwords.get(user, password_of(user)) if password is None else password
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}?user={quote(user)}&password={quote(password)}"

    def connect(self, user: str, password: str | None = None, **params: Any) -> Any:
        """A psycopg 3 connection in autocommit mode (extra libpq ``params`` allowed)."""
        import psycopg

        return psycopg.connect(self.dsn(user, password, **params), autocommit=True)

    def raw(self, timeout: float = 10) -> RawClient:
        """A socket to the server, speaking nothing yet."""
        return RawClient(self.host, self.port, timeout)

    def login(self, user: str, password: str | None = None, timeout: float = 10, **params: str) -> RawClient:
        """A :class:`RawClient` logged in as ``user`` and ready for a query."""
        raw = self.raw(timeout)
        raw.login(user, self.passwords.get(user, password_of(user)) if password is None else password, **params)
        return raw

    # ------------------------------------------------------------------ the ledger, read-only
    @contextlib.contextmanager
    def _ledger(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(f"file:{self.ledger_path}?mode=ro", uri=True, timeout=30)
        try:
            db.execute("SELECT COUNT(*) FROM charges").fetchone()
        except sqlite3.OperationalError:  # a WAL left by a killed server needs a writer to recover it
            db.close()
            db = sqlite3.connect(self.ledger_path, timeout=30)
        try:
            yield db
        finally:
            db.close()

    def charges(self, analyst: str | None = None) -> list[tuple[str, Fraction]]:
        """(analyst, rho) of each charge in the server's ledger, oldest first."""
        if not self.ledger_path.exists():
            return []
        sql, args = "SELECT analyst, rho FROM charges", ()
        if analyst is not None:
            sql, args = sql + " WHERE analyst = ?", (analyst,)
        with self._ledger() as db:
            return [(a, Fraction(r)) for a, r in db.execute(sql + " ORDER BY id", args)]

    def spent(self, analyst: str) -> Fraction:
        """The rho charged to ``analyst`` (the sum of its charges)."""
        return sum((rho for _, rho in self.charges(analyst)), Fraction(0))

    def check_ledger(self) -> None:
        """Assert the ledger file is sound: SQLite's integrity check passes and each analyst's
        running total (and the all-analysts total) equals the sum of its charges."""
        with self._ledger() as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            sums: dict[str, tuple[Fraction, Fraction]] = {}
            for analyst, rho, delta in db.execute("SELECT analyst, rho, delta FROM charges"):
                for who in (analyst, ""):
                    r, d = sums.get(who, (Fraction(0), Fraction(0)))
                    sums[who] = (r + Fraction(rho), d + Fraction(delta))
            totals = {a: (Fraction(r), Fraction(d)) for a, r, d in db.execute("SELECT analyst, rho, delta FROM totals")}
        assert totals == sums, (totals, sums)


# ---------------------------------------------------------------------------- the raw protocol
def cstr(text: str | bytes) -> bytes:
    return (text.encode("utf-8") if isinstance(text, str) else text) + b"\0"


def frame(kind: bytes, body: bytes = b"") -> bytes:
    """A typed frontend message: type byte, int32 length (itself included), body."""
    return kind + struct.pack("!i", len(body) + 4) + body


def startup_packet(params: dict[str, str], version: int = PROTOCOL_3) -> bytes:
    body = struct.pack("!i", version) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def error_fields(body: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse or NoticeResponse body, by their one-letter codes."""
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[part[:1].decode()] = part[1:].decode("utf-8", "replace")
    return out


class RawClient:
    """A socket speaking the PostgreSQL protocol by hand (see the module docstring)."""

    def __init__(self, host: str, port: int, timeout: float = 10) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def read(self) -> tuple[bytes, bytes]:
        """One backend message: (type byte, body). EOFError when the server closed."""
        head = self._read_exactly(5)
        return head[:1], self._read_exactly(struct.unpack("!i", head[1:])[0] - 4)

    def read_until(self, kinds: bytes = b"Z") -> list[tuple[bytes, bytes]]:
        """Messages up to and including the first whose type is in ``kinds``."""
        out = []
        while True:
            kind, body = self.read()
            out.append((kind, body))
            if kind in kinds:
                return out

    def closed_by_server(self, timeout: float = 10) -> bool:
        """Whether the server closes the connection within ``timeout`` (messages before are dropped)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def startup(self, user: str, **params: str) -> tuple[bytes, bytes]:
        """Send a StartupMessage; returns the server's first answer (AuthenticationSASL, or an
        ErrorResponse such as 53300 too many clients)."""
        self.send(startup_packet({"user": user, **params}))
        return self.read()

    def authenticate(self, user: str, password: str) -> list[tuple[bytes, bytes]]:
        """The SCRAM-SHA-256 exchange after AuthenticationSASL (scramp's client); returns the
        messages from AuthenticationOk up to ReadyForQuery, or up to an ErrorResponse."""
        from scramp import ScramClient

        client = ScramClient(["SCRAM-SHA-256"], user, password)
        first = client.get_client_first().encode()
        self.send(frame(b"p", cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first))
        kind, body = self.read()
        if kind == b"E":
            return [(kind, body)]
        assert kind == b"R" and struct.unpack("!i", body[:4])[0] == 11, body
        client.set_server_first(body[4:].decode())
        self.send(frame(b"p", client.get_client_final().encode()))
        return self.read_until(b"ZE")

    def login(self, user: str, password: str, **params: str) -> list[tuple[bytes, bytes]]:
        """:meth:`startup` and :meth:`authenticate`; AssertionError when the login is refused."""
        kind, body = self.startup(user, **params)
        assert kind == b"R" and struct.unpack("!i", body[:4])[0] == 10, error_fields(body) if kind == b"E" else kind
        out = self.authenticate(user, password)
        assert out[-1][0] == b"Z", error_fields(out[-1][1])
        return out

    def query(self, sql: str | bytes) -> list[tuple[bytes, bytes]]:
        """A simple Query, and the messages up to ReadyForQuery."""
        self.send(frame(b"Q", cstr(sql)))
        return self.read_until(b"Z")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def eventually(fn: Any, timeout: float = 10, interval: float = 0.05) -> Any:
    """``fn()``'s first result that is truthy and raised nothing, retried until ``timeout``
    seconds have passed (then its last exception, or AssertionError, is raised)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = fn()
            if result:
                return result
            error: BaseException = AssertionError(f"{fn} stayed {result!r} for {timeout} s")
        except Exception as exc:  # noqa: BLE001 - retried; the last one is raised
            error = exc
        if time.monotonic() >= deadline:
            raise error
        time.sleep(interval)


def errors_in(messages: list[tuple[bytes, bytes]]) -> list[dict[str, str]]:
    """The ErrorResponses among ``messages``, as fields."""
    return [error_fields(body) for kind, body in messages if kind == b"E"]


# ---------------------------------------------------------------------------- pytest fixtures
DEFAULT_USERS = ("alice", "bob")


@pytest.fixture(scope="module")
def dpsql_server(demo_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[DpsqlServer]:
    """One server per test module on the demo database (built once per run), with users alice and
    bob (passwords ``pw-alice``, ``pw-bob``), its own state folder and a copy of the demo policy."""
    work = tmp_path_factory.mktemp("dpsql_server")
    policy = shutil.copyfile(demo_files[1], work / "demo.policy.toml")
    srv = DpsqlServer.start(work, demo_files[0], policy, users=DEFAULT_USERS)
    yield srv
    srv.stop()


@pytest.fixture()
def start_server(demo_files: tuple[Path, Path], tmp_path: Path) -> Iterator[Any]:
    """A factory: ``start_server(*serve_args, users=(...), policy=None, database=None, state=None)``
    starts a server of this test's own (the demo data and a copy of its policy unless given);
    every one is stopped at teardown."""
    started: list[DpsqlServer] = []

    def start(*args: str, users: Sequence[str] = DEFAULT_USERS, policy: Path | None = None,
              database: Path | None = None, state: Path | None = None) -> DpsqlServer:
        work = tmp_path / f"server{len(started)}"
        work.mkdir()
        if policy is None:
            policy = Path(shutil.copyfile(demo_files[1], work / "demo.policy.toml"))
        srv = DpsqlServer(work, database or demo_files[0], policy, args, state)
        started.append(srv)
        for user in users:
            srv.add_user(user)
        srv.launch()
        return srv

    yield start
    for srv in started:
        srv.stop()
