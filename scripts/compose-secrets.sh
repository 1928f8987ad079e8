#!/usr/bin/env bash
# Makes the secrets of the docker-compose demo stack in deploy/compose/secrets/
# (git-ignored, never committed) with `seqd init`: a CA, one server certificate
# for every service (seqd1, seqd2, store, zk1..zk3), a client certificate, the
# API and admin tokens, the sequencer signing key pair and ZooKeeper's digest
# identity, and client.env for the host's clients. Run it once, before
# `docker compose up`, as root: run by another user from a terminal, it runs
# itself again through sudo (so that the same line works on a host that is
# root and has no sudo). It keeps a directory that is already there.
#
# Owners and modes, so that each container's user reads what it needs and
# nothing else:
#   uid 65532 (the seqd image's USER)      api-token, signing.key, verify.keys,
#                                          server*.pem, client*.pem, zk-auth
#   uid 1000 (the zookeeper image's user)  zk-keystore.pem (key + certificate)
#   anyone (0644)                          ca.pem (Prometheus, uid 65534, too)
#   you (the user who ran sudo)            the directory, ca-key.pem,
#                                          admin-token, client.env
# The seqd files are in your group, the two a client needs (api-token,
# client-key.pem) readable by it (0640), so that `. client.env` works from
# your shell while the containers own them.
#
# SEQD_COMPOSE_SECRETS and SEQD_BIN name another directory and binary (tests).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SEQD_COMPOSE_SECRETS:-deploy/compose/secrets}

if [ -e "$dir/client.env" ]; then
  echo "$dir already holds seqd init's files: kept (move the directory away for new ones)"
  exit 0
fi
seqd=${SEQD_BIN:-bin/seqd}
if [ ! -x "$seqd" ]; then
  echo "no $seqd: run make build first (as yourself), then this script" >&2
  exit 69
fi
if [ "$(id -u)" != 0 ] && [ -t 0 ] && command -v sudo >/dev/null; then
  echo "not root: running again through sudo, so that the containers' users own their files" >&2
  exec sudo SEQD_COMPOSE_SECRETS="$dir" SEQD_BIN="$seqd" bash "$PWD/scripts/compose-secrets.sh"
fi
"$seqd" init --dir "$dir" --host seqd1 --host seqd2 --host store --host zk1 --host zk2 --host zk3 \
  --listen 127.0.0.1:7070 --zk zk1:2181,zk2:2181,zk3:2181 >/dev/null

# ZooKeeper reads a PEM key store as one file: the key, then its certificate.
(umask 077 && cat "$dir/server-key.pem" "$dir/server.pem" >"$dir/zk-keystore.pem")

if [ "$(id -u)" != 0 ]; then
  echo "note: not root: every file belongs to you, and the containers (uid 65532, and 1000 for ZooKeeper) cannot read the secrets; run this script as root, from a terminal, or with sudo (after removing $dir)" >&2
  exit 0
fi
me=${SUDO_UID:-0}
group=${SUDO_GID:-0}
chown "$me:$group" "$dir" "$dir/ca-key.pem" "$dir/admin-token" "$dir/client.env"
chown "65532:$group" "$dir/api-token" "$dir/signing.key" "$dir/verify.keys" "$dir/server.pem" \
  "$dir/server-key.pem" "$dir/client.pem" "$dir/client-key.pem" "$dir/zk-auth" "$dir/ca.pem"
chmod 0640 "$dir/api-token" "$dir/client-key.pem"
chown 1000:1000 "$dir/zk-keystore.pem"
echo "secrets in $dir; then: docker compose up -d --build; . $dir/client.env; bin/seqd acquire demo"
