#!/usr/bin/env bash
# The system packages the test suite drives for real (tests/test_server_clients.py and the
# catalog replay tests): psql (postgresql-client) and the PostgreSQL JDBC driver
# (libpostgresql-jdbc-java), from Debian; openssl makes the certificates of the TLS tests
# (tests/test_server_tls.py). Idempotent and quiet: installs only what is missing,
# needs no terminal. Java itself (javac) is on the machine already.
set -euo pipefail
missing=()
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
[ -f /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)  # pyspark (tests/test_spark.py)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else
  echo "scripts/test-deps.sh: need root to install ${missing[*]}; the tests that use them will say so" >&2; exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "scripts/test-deps.sh: installing ${missing[*]} from Debian" >&2
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  "${sudo[@]}" apt-get update -q >/dev/null 2>&1 && "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}
