#!/usr/bin/env bash
# Installs what seqd's tests and `make run` need and are missing: ZooKeeper
# (Debian package, runs on the machine's Java 17), promtool, kazoo, Curator
# and docker-compose (for interop and config checks), a JDK and JUnit 5
# (to build and test the Java client), Chromium (the status page's
# headless browser test), PostgreSQL 15, MariaDB 10.11 and Redis 7 (the
# database fences' tests start real servers), etcd (the peer that
# contrib/etcdbench measures) and staticcheck.
# Usage: scripts/deps.sh [all|zookeeper|db|etcd]
set -euo pipefail
want=(zookeeper)
if [ "${1:-all}" = all ] || [ "${1:-all}" = db ]; then
  want+=(postgresql-15 mariadb-server redis-server)
fi
if [ "${1:-all}" = all ] || [ "${1:-all}" = etcd ]; then
  want+=(etcd-server) # contrib/etcdbench: etcd's Mutex beside seqd bench
fi
if [ "${1:-all}" = all ]; then
  want+=(prometheus python3-kazoo libcurator-recipes-java docker-compose openjdk-17-jdk-headless junit5 chromium
    python3-psycopg python3-pymysql python3-redis python3-cryptography libpostgresql-jdbc-java libmariadb-java)
  want+=(python3-pyflakes python3-mypy) # the Python client's checks (TestPythonChecks)
  want+=(curl openssl) # the docs' shell examples, run by TestDocExamples and the quickstart's test
  want+=(faketime) # chaos: clock faults on ZooKeeper's JVMs (libfaketime)
  want+=(python3-tooz python3-celery) # the Python integrations' tests (TestPythonIntegrations)
fi
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "${1:-all}" = all ] && ! [ -x "$(go env GOPATH)/bin/staticcheck" ]; then
  echo "installing: staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
if [ "${1:-all}" = all ] && ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; then
  echo "note: the JavaScript client's tests (TestJSClient) need Node.js 20 or later, which Debian 12 does not ship (it has 18): they fail without it" >&2
fi
