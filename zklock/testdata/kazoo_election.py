"""A kazoo Election candidate on a path, for zklock's election interop test.

usage: kazoo_election.py HOSTS PATH ID

Runs for the election with identifier ID, prints "leader" once elected,
resigns when a line arrives on stdin and prints "resigned".

kazoo's Election runs on a kazoo Lock, which counts only kazoo's own
contenders; the Lock made with extra_lock_patterns=["-lock-"] counts
Curator-style candidates (seqd's _c_<uuid>-lock-NNNNNNNNNN) too.
"""
import sys

from kazoo.client import KazooClient


def main():
    hosts, path, ident = sys.argv[1:4]
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=30)
    try:
        def lead():
            print("leader", flush=True)
            sys.stdin.readline()

        election = client.Election(path, ident)
        election.lock = client.Lock(path, ident, extra_lock_patterns=["-lock-"])
        election.run(lead)
        print("resigned", flush=True)
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
