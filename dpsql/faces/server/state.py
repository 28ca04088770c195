"""What the server's state folder knows besides its users: its secret, and which ledger is its own.

:func:`state_folder` is where a server keeps them unless told (``--state``); ``dpsql ledger``
finds a server's charges there too, so it is here, away from the server's heavier imports.

``secret`` (32 random bytes, mode 0600, made once) derives the made-up SCRAM salts of unknown
user names, so that they are as stable across restarts as a real user's salt (docs/server.md,
"Users").

``ledger.id`` records the ledger the server adopted: its path, its device and inode, and a
64-bit token written into the ledger itself (SQLite's ``application_id`` and ``user_version``
header fields, read with one ``pread`` of the file's first page, checkpointed there on adoption).
:meth:`LedgerGuard.verify` refuses a ledger that is missing, was replaced (another inode: a
restored copy, another file renamed over it), or is foreign (another token, or another path than
the policy names now). Without it a deleted ``ledger.sqlite`` would be recreated empty by the next
connection, and its charges forgotten. Only an operator adopts another ledger
(``dpsql serve --adopt-ledger``); a state folder with neither a ledger nor ``ledger.id`` (a new
server) adopts its first ledger by itself.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from dpsql.errors import LedgerError
from dpsql.faces.server.users import UserStoreError
from dpsql.home import home

SECRET_FILE = "secret"
LEDGER_ID_FILE = "ledger.id"
#: where SQLite keeps ``user_version`` and ``application_id`` in the file's header (4 bytes each)
_USER_VERSION, _APPLICATION_ID = 60, 68
_SQLITE_MAGIC = b"SQLite format 3\x00"


def state_folder(database: str | Path | None) -> Path:
    """The server's own folder (users, ledger): DPSQL_HOME/server for the demo, else
    ``<database>.dpsql-server/`` beside the database file."""
    if database is None:
        return home() / "server"
    path = Path(database)
    return path.with_name(path.stem + ".dpsql-server")


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into ``path`` whole (a temporary file renamed over it), mode 0600."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def server_secret(state: Path) -> bytes:
    """The state folder's secret, made on first use (and never changed after)."""
    path = Path(state) / SECRET_FILE
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    try:  # O_EXCL: two processes making it at once keep the first one's
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_secret(path)
    value = secrets.token_bytes(32)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(value.hex() + "\n")
        f.flush()
        os.fsync(f.fileno())
    return value


def _read_secret(path: Path) -> bytes:
    try:
        value = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (UnicodeDecodeError, ValueError):
        value = b""
    if len(value) != 32:
        raise UserStoreError(f"the server's secret {path} is damaged",
                             hint="remove it: the server makes a new one (unknown user names then get other made-up salts, once).")
    return value


class LedgerGuard:
    """The ledger a state folder adopted (see the module docstring)."""

    def __init__(self, state: Path, ledger: Path) -> None:
        self.state, self.ledger = Path(state), Path(ledger).resolve()
        self.path = self.state / LEDGER_ID_FILE
        self._fd: int | None = None  # the adopted ledger, read through this one descriptor
        self._fd_lock = threading.Lock()

    def known(self) -> dict[str, object] | None:
        """The adopted ledger's record, or None when none was adopted. Read afresh for every
        statement, through the os module (a third of Path.read_text's time)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                data = os.read(fd, 1 << 16)
            finally:
                os.close(fd)
            record = json.loads(data.decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            raise self._refused(f"its record {self.path} cannot be read") from None
        if not isinstance(record, dict) or not {"path", "device", "inode", "token"} <= record.keys():
            raise self._refused(f"its record {self.path} is not a dpsql ledger record")
        return record

    def fresh(self) -> bool:
        """A new state folder: no ledger adopted and none at the policy's path."""
        return self.known() is None and not os.path.lexists(self.ledger)

    def adopt(self, create: Callable[[Path], None]) -> str:
        """Make the ledger at the policy's path this server's (``create`` makes a dpsql ledger
        there when there is none). Keeps a token the ledger already carries (a ledger shared
        with another server stays both servers'); returns what was done, for the log."""
        existed = self.ledger.exists()
        if not existed:
            create(self.ledger)
        token = _header_token(self.ledger)
        if token == 0:
            token = secrets.randbits(63) | 1
            _write_token(self.ledger, token)
        st = os.stat(self.ledger)
        record = {"path": str(self.ledger), "device": st.st_dev, "inode": st.st_ino, "token": f"{token:016x}",
                  "adopted": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        _write_private(self.path, (json.dumps(record, indent=1) + "\n").encode("utf-8"))
        return f"{'adopted the existing' if existed else 'created and adopted a new, empty'} ledger {self.ledger}"

    def verify(self) -> None:
        """Raise :class:`~dpsql.errors.LedgerError` (with the operator's words: paths, the fix)
        unless the file at the policy's ledger path is the very ledger this state folder adopted."""
        record = self.known()
        if record is None:
            raise self._refused("this state folder has not adopted it (no ledger.id)")
        if record["path"] != str(self.ledger):
            raise self._refused(f"the adopted ledger is {record['path']}, not this one (did the policy's "
                                "budget.ledger change?)")
        try:
            st = os.stat(self.ledger)
        except FileNotFoundError:
            raise self._refused("it is missing (deleted or moved)") from None
        except OSError as exc:
            raise self._refused(f"it cannot be read ({exc.strerror or exc})") from None
        if (st.st_dev, st.st_ino) != (record["device"], record["inode"]):
            raise self._refused("it was replaced by another file (a copy, or a file renamed over it)")
        try:
            fd = self._held(st)
            if os.fstat(fd).st_nlink == 0:  # deleted, and another file took its inode number
                raise self._refused("it is missing (deleted)")
            head = os.pread(fd, 100, 0)
        except OSError as exc:
            raise self._refused(f"it cannot be read ({exc.strerror or exc})") from None
        if f"{_token_of(head):016x}" != record["token"]:
            raise self._refused("it is another ledger (its identity token differs)")

    def _held(self, st: os.stat_result) -> int:
        """One descriptor of the ledger, opened at the first check and never closed while the
        process runs: closing any descriptor of a file drops every POSIX lock the process holds
        on it, SQLite's included, and another process sharing the ledger could then take it for
        unused and reset its write-ahead log (dpsql/ledger/fds.py says the same)."""
        with self._fd_lock:
            if self._fd is None:
                fd = os.open(self.ledger, os.O_RDONLY)
                opened = os.fstat(fd)
                if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                    raise self._refused("it was replaced while it was being checked")  # fd stays open: see above
                self._fd = fd
            return self._fd

    def _refused(self, why: str) -> LedgerError:
        return LedgerError(
            f"the budget ledger {self.ledger} is not the one this server adopted: {why}; nothing is charged "
            "or released until an operator acts",
            hint=f"put the adopted ledger back, or, to take this file as the ledger from now on (its charges are "
                 f"what the budget will count), restart with `dpsql serve ... --state {self.state} --adopt-ledger`.")


def _header_token(path: Path) -> int:
    """The 64-bit token in a SQLite file's header (0 when none was written, or not a SQLite file).
    Opens and closes the file: only while this process holds no SQLite connection to it (at
    adoption, before the server serves)."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise LedgerError(f"the budget ledger {path} cannot be read ({exc.strerror or exc})") from None
    return _token_of(head)


def _token_of(head: bytes) -> int:
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return 0
    return (int.from_bytes(head[_APPLICATION_ID:_APPLICATION_ID + 4], "big") << 32
            | int.from_bytes(head[_USER_VERSION:_USER_VERSION + 4], "big"))


def _write_token(path: Path, token: int) -> None:
    """Write ``token`` into the ledger's header and checkpoint it into the main file, so that a
    plain read of the header sees it whatever SQLite's write-ahead log holds later."""
    high, low = token >> 32, token & 0xFFFFFFFF
    signed = lambda v: v - (1 << 32) if v >= 1 << 31 else v  # noqa: E731 - SQLite stores them as signed
    try:
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id = {signed(high)}")
            db.execute(f"PRAGMA user_version = {signed(low)}")
            db.execute("PRAGMA wal_checkpoint(FULL)")
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot write the identity of the budget ledger {path} ({exc})") from None
    if _header_token(path) != token:
        raise LedgerError(f"the identity of the budget ledger {path} did not reach its file",
                          hint="is another process holding the ledger? Stop it and try again.")
