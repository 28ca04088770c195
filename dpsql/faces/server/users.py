"""The server's analysts: user names with SCRAM-SHA-256 verifiers, in the server's state folder.

A password is never stored, only PostgreSQL's verifier text
``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (RFC 5802/7677), from which a
password cannot be recovered but a SCRAM exchange can be checked (``scramp`` computes it). The
file is written whole to a temporary file and renamed over the old one, readable by its owner
only, so a crash never leaves it half written; the server reads it at every login, so ``dpsql
user add`` and ``remove`` take effect for the next connection without a restart.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from pathlib import Path

from scramp import ScramMechanism

from dpsql.errors import DpsqlError, OperationalError

USERS_FILE = "users.json"
MECHANISM = "SCRAM-SHA-256"
ITERATIONS = 4096  # PostgreSQL's default scram_iterations
#: every salt is this long, the made-up ones of unknown users too (scramp's and dpsql's default: 32)
SALT_BYTES = 32
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.@-]{0,62}$")


class UserStoreError(DpsqlError, OperationalError):
    code = "DP410"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise UserStoreError(f"{name!r} is not a valid user name",
                             hint="use a letter or _ first, then letters, digits, _ . @ or -, at most 63 characters.")
    return name


def verifier(password: str) -> str:
    """PostgreSQL's SCRAM-SHA-256 verifier text for ``password`` (a fresh random salt)."""
    if not password:
        raise UserStoreError("the password is empty", hint="type a password of at least 8 characters.")
    salt, stored_key, server_key, iterations = ScramMechanism(MECHANISM).make_auth_info(
        password, iteration_count=ITERATIONS, salt=secrets.token_bytes(SALT_BYTES))
    b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
    return f"{MECHANISM}${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def parse_verifier(text: str) -> tuple[bytes, bytes, bytes, int]:
    """(salt, StoredKey, ServerKey, iterations) of a verifier, as scramp's auth_fn returns them."""
    try:
        mechanism, rest = text.split("$", 1)
        head, keys = rest.split("$", 1)
        iterations, salt = head.split(":", 1)
        stored, server = keys.split(":", 1)
        if mechanism != MECHANISM:
            raise ValueError(mechanism)
        return base64.b64decode(salt), base64.b64decode(stored), base64.b64decode(server), int(iterations)
    except ValueError:
        raise UserStoreError("a stored password verifier is malformed",
                             hint="remove the user and add it again (`dpsql user remove NAME`, `dpsql user add NAME`).") from None


class UserStore:
    """``users.json`` in a state folder."""

    def __init__(self, state: Path) -> None:
        self.state = Path(state)
        self.path = self.state / USERS_FILE

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise UserStoreError(f"cannot read the user file {self.path} ({type(exc).__name__})",
                                 hint="restore it from a backup, or remove it and add the users again.") from None
        users = data.get("users") if isinstance(data, dict) else None
        if not isinstance(users, dict):
            raise UserStoreError(f"the user file {self.path} is not a dpsql user file")
        return users

    def _write(self, users: dict[str, dict[str, str]]) -> None:
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".users.", dir=self.state)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": 1, "users": users}, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def names(self) -> list[str]:
        return sorted(self._read())

    def users(self) -> dict[str, dict[str, str]]:
        return {name: {k: v for k, v in info.items() if k != "verifier"} for name, info in sorted(self._read().items())}

    def add(self, name: str, password: str, *, replace: bool = False, options: str | None = None) -> bool:
        """Store ``name``'s verifier (and ``options``: the dpsql settings their connections start
        with, as libpq's ``-c dpsql.<name>=<value>``); returns whether the user existed (then
        ``replace`` must be set). ``options`` None keeps a replaced user's own."""
        check_name(name)
        users = self._read()
        existed = name in users
        if existed and not replace:
            raise UserStoreError(f"user {name!r} exists", hint="pass --replace to set a new password.")
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        kept = users.get(name, {}).get("options", "") if options is None else options
        users[name] = {"verifier": verifier(password), "created": users.get(name, {}).get("created", now), "changed": now,
                       **({"options": kept} if kept else {})}
        self._write(users)
        return existed

    def options(self, name: str) -> str:
        """The dpsql settings ``name``'s connections start with (``dpsql user add --set``)."""
        return self._read().get(name, {}).get("options", "")

    def remove(self, name: str) -> None:
        users = self._read()
        if name not in users:
            raise UserStoreError(f"no user {name!r}", hint="`dpsql user list` shows the users.")
        del users[name]
        self._write(users)

    def auth_info(self, name: str, secret: bytes) -> tuple[bytes, bytes, bytes, int]:
        """The SCRAM data to check ``name``'s login. An unknown name gets a made-up verifier
        (a salt as long as a real one, derived from the state folder's secret, so it stays the same
        across restarts as a real one does; keys that match no password), so a client cannot
        tell an unknown user from a wrong password (as PostgreSQL's mock authentication)."""
        info = self._read().get(name)
        if info is not None:
            return parse_verifier(info["verifier"])
        salt = hmac.new(secret, b"salt:" + name.encode(), hashlib.sha256).digest()[:SALT_BYTES]
        nokey = hmac.new(secret, b"key:" + name.encode(), hashlib.sha256).digest()
        return salt, nokey, nokey, ITERATIONS
