"""Tries reads and writes on znodes as a plain kazoo client, for zklock's
ACL tests.

usage: kazoo_probe.py HOSTS OP PATH [OP PATH ...]

OP is read, delete, create (a persistent node at PATH) or set (set_data on
PATH). For each, prints one line: "OP ok" or "OP <exception class name>".
The client authenticates only if SEQD_TEST_ZK_AUTH (user:password) is set.
"""
import os
import sys

from kazoo.client import KazooClient


def main():
    hosts, args = sys.argv[1], sys.argv[2:]
    auth = os.environ.get("SEQD_TEST_ZK_AUTH")
    auth_data = [("digest", auth)] if auth else None
    client = KazooClient(hosts=hosts, timeout=10, auth_data=auth_data)
    client.start(timeout=30)
    try:
        for op, path in zip(args[0::2], args[1::2]):
            try:
                if op == "read":
                    client.get(path)
                elif op == "delete":
                    client.delete(path)
                elif op == "create":
                    client.create(path, b"planted")
                elif op == "set":
                    client.set(path, b"rewritten")
                else:
                    print(op + " unknown", flush=True)
                    continue
                print(op + " ok", flush=True)
            except Exception as e:  # the class name is the answer
                print(op + " " + type(e).__name__, flush=True)
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
