"""A kazoo ReadLock or WriteLock on a path, for zklock's interop test.

usage: kazoo_rwlock.py read|write try|hold HOSTS PATH

try:  one non-blocking attempt; prints True or False (and releases if True).
hold: waits for the lock, prints "held", waits for a line on stdin, releases
      and prints "released".

extra_lock_patterns make kazoo count seqd's and Curator's contenders: a
reader is blocked by writers (-lock-, __WRIT__), a writer by everyone.
"""
import sys

from kazoo.client import KazooClient


def main():
    kind, mode, hosts, path = sys.argv[1:5]
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=30)
    try:
        if kind == "read":
            lock = client.ReadLock(path, "kazoo-reader", extra_lock_patterns=["-lock-", "__WRIT__"])
        else:
            lock = client.WriteLock(path, "kazoo-writer", extra_lock_patterns=["-lock-", "__READ__", "__WRIT__"])
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
