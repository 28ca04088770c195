"""``dpsql serve`` over TLS, with certificates made here by openssl (a CA of the test's own and a
server certificate for 127.0.0.1 and localhost) and the real clients verifying them: psycopg 3
(libpq) with ``sslmode=verify-full``, and psql. ``--require-tls`` turns plain connections away,
and a client that trusts another CA refuses the server."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

BY_STATE = "SELECT state, COUNT(*) FROM establishments GROUP BY state"


def _need_openssl() -> None:
    if shutil.which("openssl") is None:
        if os.environ.get("CI"):
            pytest.fail("openssl is missing: scripts/test-deps.sh installs it (the README's test command runs it)")
        pytest.skip("openssl is not installed (scripts/test-deps.sh installs it)")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str) -> Path:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=folder)
    return folder / f"{name}.pem"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    """A CA, a server certificate it signed for 127.0.0.1 and localhost, and a second CA."""
    _need_openssl()
    folder = tmp_path_factory.mktemp("tls")
    ca = _ca(folder, "ca")
    other = _ca(folder, "other-ca")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key",
             "-out", "server.csr", cwd=folder)
    (folder / "san.ext").write_text("subjectAltName = DNS:localhost, IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "san.ext", "-out", "server.pem", cwd=folder)
    return {"ca": ca, "other": other, "cert": folder / "server.pem", "key": folder / "server.key"}


@pytest.fixture()
def tls_server(start_server, certs):
    return start_server("--tls-cert", str(certs["cert"]), "--tls-key", str(certs["key"]), "--require-tls")


def test_a_verifying_client_gets_answers_over_tls(tls_server, certs):
    dsn = tls_server.dsn("alice", sslmode="verify-full", sslrootcert=str(certs["ca"]))
    with psycopg.connect(dsn, autocommit=True) as con:
        assert con.pgconn.ssl_in_use
        rows = con.execute(BY_STATE).fetchall()
    assert len(rows) == 51


def test_require_tls_turns_plain_connections_away(tls_server):
    with pytest.raises(psycopg.OperationalError, match="accepts only TLS"):
        psycopg.connect(tls_server.dsn("alice", sslmode="disable"))


def test_a_client_trusting_another_ca_refuses_the_server(tls_server, certs):
    with pytest.raises(psycopg.OperationalError, match="certificate verify failed"):
        psycopg.connect(tls_server.dsn("alice", sslmode="verify-full", sslrootcert=str(certs["other"])))


def test_psql_connects_with_verify_full(tls_server, certs):
    if shutil.which("psql") is None:
        if os.environ.get("CI"):
            pytest.fail("psql is missing: scripts/test-deps.sh installs it")
        pytest.skip("psql is not installed (scripts/test-deps.sh installs it)")
    env = {**os.environ, "PGPASSWORD": tls_server.passwords["alice"], "PGSSLMODE": "verify-full",
           "PGSSLROOTCERT": str(certs["ca"]), "PGCONNECT_TIMEOUT": "20"}
    p = subprocess.run(["psql", "-h", "localhost", "-p", str(tls_server.port), "-U", "alice", "-X",
                        "-c", "\\conninfo", "-c", BY_STATE], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "SSL connection (protocol: TLSv1." in p.stdout and "(51 rows)" in p.stdout


def test_without_require_tls_both_kinds_connect(start_server, certs):
    server = start_server("--tls-cert", str(certs["cert"]), "--tls-key", str(certs["key"]))
    with psycopg.connect(server.dsn("alice", sslmode="disable")) as plain:
        assert not plain.pgconn.ssl_in_use
    with psycopg.connect(server.dsn("alice", sslmode="require")) as secure:
        assert secure.pgconn.ssl_in_use
