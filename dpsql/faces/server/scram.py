"""The server side of one SCRAM-SHA-256 exchange (RFC 5802 section 3, RFC 7677), without
channel binding, as PostgreSQL does it.

The verifiers themselves come from ``scramp`` (:mod:`dpsql.faces.server.users`). The exchange
is these few lines of our own because scramp's server refuses the client-first message that
libpq (psql) and other PostgreSQL clients send: PostgreSQL takes the user name from the
startup packet, so they send an empty one (``n=,r=...``), which RFC 5802's grammar does not
allow and scramp therefore rejects.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


class ScramError(Exception):
    """The exchange failed: a malformed message or a wrong password."""


def _attributes(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError("malformed SCRAM attribute")
        out[part[0]] = part[2:]
    return out


class ScramServer:
    """One exchange: :meth:`first` answers the client-first message, :meth:`final` checks the
    client's proof and returns the server-final message."""

    def __init__(self, salt: bytes, stored_key: bytes, server_key: bytes, iterations: int) -> None:
        self.salt, self.stored_key, self.server_key, self.iterations = salt, stored_key, server_key, iterations
        self._bare = self._server_first = self._nonce = ""

    def first(self, client_first: str) -> str:
        gs2, sep, rest = client_first.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y") or authzid:
            raise ScramError("channel binding and authorization identities are not supported")
        attrs = _attributes(bare)
        if not attrs.get("r") or "m" in attrs:
            raise ScramError("the client-first message has no nonce")
        self._gs2 = f"{gs2},,"
        self._bare = bare
        self._nonce = attrs["r"] + base64.b64encode(secrets.token_bytes(18)).decode("ascii")
        self._server_first = f"r={self._nonce},s={base64.b64encode(self.salt).decode('ascii')},i={self.iterations}"
        return self._server_first

    def final(self, client_final: str) -> str:
        without_proof, sep, proof_part = client_final.rpartition(",p=")
        if not sep:
            raise ScramError("the client-final message has no proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce or attrs.get("c") != base64.b64encode(self._gs2.encode()).decode("ascii"):
            raise ScramError("the client-final message does not match the exchange")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("the proof is not base64") from None
        auth_message = f"{self._bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(self.stored_key, auth_message, hashlib.sha256).digest()
        if len(proof) != len(signature):
            raise ScramError("wrong proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), self.stored_key):
            raise ScramError("wrong password")
        server_signature = hmac.new(self.server_key, auth_message, hashlib.sha256).digest()
        return "v=" + base64.b64encode(server_signature).decode("ascii")
