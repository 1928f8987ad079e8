#!/usr/bin/env bash
# Makes the secrets of the docker-compose demo stack in deploy/compose/secrets/
# (git-ignored, never committed): a bearer token for the daemons and one for
# the store, a throwaway CA with TLS certificates for seqd1, seqd2 and the
# store, and an Ed25519 key pair for signed sequencers. Run it once before
# `docker compose up`; it keeps what already exists.
#
# The containers run as uid 65532: run this as root (or with sudo) so that the
# files can be given to that uid with mode 0600; otherwise they are made
# group/other-unreadable for you only and the containers cannot read them.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=deploy/compose/secrets
mkdir -p "$dir"
umask 077

[ -f "$dir/api-token" ] || openssl rand -hex 32 > "$dir/api-token"
[ -f "$dir/store-token" ] || openssl rand -hex 32 > "$dir/store-token"

if [ ! -f "$dir/ca.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
    -subj "/CN=seqd demo CA" -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" 2>/dev/null
fi
for host in seqd1 seqd2 store zk1 zk2 zk3; do
  [ -f "$dir/$host.pem" ] && continue
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
    -keyout "$dir/$host-key.pem" -out "$dir/$host.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' "$host" > "$dir/$host.ext"
  openssl x509 -req -in "$dir/$host.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" -CAcreateserial \
    -days 365 -extfile "$dir/$host.ext" -out "$dir/$host.pem" 2>/dev/null
  rm -f "$dir/$host.csr" "$dir/$host.ext"
done

# ZooKeeper reads a PEM key store as one file: the key and its certificate.
for host in zk1 zk2 zk3; do
  [ -f "$dir/$host-keystore.pem" ] || cat "$dir/$host-key.pem" "$dir/$host.pem" > "$dir/$host-keystore.pem"
done
# ZooKeeper's identity for seqd (used with deploy/compose/zk-tls.yml).
[ -f "$dir/zk-auth" ] || echo "seqd:$(openssl rand -hex 16)" > "$dir/zk-auth"

if [ ! -f "$dir/signing.key" ]; then
  go run ./cmd/seqd keygen --dir "$dir" --kid demo >/dev/null
fi

chmod 0644 "$dir/ca.pem" "$dir/verify.keys" "$dir"/seqd1.pem "$dir"/seqd2.pem "$dir"/store.pem "$dir"/zk?.pem
if [ "$(id -u)" = 0 ]; then
  chown -R 65532:65532 "$dir"
else
  echo "note: not root: the files belong to you; the containers (uid 65532) need them: sudo chown -R 65532:65532 $dir" >&2
fi
echo "secrets in $dir (the API token: $dir/api-token)"
