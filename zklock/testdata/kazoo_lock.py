"""A kazoo Lock on a path, for zklock's interop test.

usage: kazoo_lock.py try|hold HOSTS PATH

try:  one non-blocking attempt; prints True or False (and releases if True).
hold: waits for the lock, prints "held", waits for a line on stdin, releases
      and prints "released".

extra_lock_patterns=["-lock-"] makes kazoo count Curator-style contenders
(seqd's _c_<uuid>-lock-NNNNNNNNNN, go-zookeeper's zk.Lock) as its own.

With SEQD_TEST_ZK_AUTH=user:password the client authenticates with that
digest identity and creates its nodes with digest:user ALL + world:anyone
READ, as seqd does with the same credentials.
"""
import os
import sys

from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl


def main():
    mode, hosts, path = sys.argv[1:4]
    auth = os.environ.get("SEQD_TEST_ZK_AUTH")
    kw = {}
    if auth:
        user, password = auth.split(":", 1)
        kw["auth_data"] = [("digest", auth)]
        kw["default_acl"] = [make_digest_acl(user, password, all=True),
                             make_acl("world", "anyone", read=True)]
    client = KazooClient(hosts=hosts, timeout=10, **kw)
    client.start(timeout=30)
    try:
        lock = client.Lock(path, "kazoo-interop", extra_lock_patterns=["-lock-"])
        if mode == "try":
            got = lock.acquire(blocking=False)
            print(got, flush=True)
            if got:
                lock.release()
        elif mode == "hold":
            if not lock.acquire(timeout=60):
                print("timeout", flush=True)
                return 1
            print("held", flush=True)
            sys.stdin.readline()
            lock.release()
            print("released", flush=True)
        else:
            print("unknown mode " + mode, file=sys.stderr)
            return 2
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
