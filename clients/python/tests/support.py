"""What the suites share: the harness's daemons, its control server, unique
names, a TCP proxy that can stop answering, and polling."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import unittest
import urllib.request
import uuid
from typing import Callable, List

ADDR = os.environ.get("SEQD_ADDR", "")
CONTROL = os.environ.get("SEQD_TEST_CONTROL", "")
SECURE = {
    "SEQD_ADDR": os.environ.get("SEQD_TEST_SECURE_ADDR", ""),
    "SEQD_API_TOKEN_FILE": os.environ.get("SEQD_TEST_SECURE_API_TOKEN_FILE", ""),
    "SEQD_CACERT": os.environ.get("SEQD_TEST_SECURE_CACERT", ""),
    "SEQD_CERT": os.environ.get("SEQD_TEST_SECURE_CERT", ""),
    "SEQD_KEY": os.environ.get("SEQD_TEST_SECURE_KEY", ""),
}

needs_daemon = unittest.skipUnless(ADDR and CONTROL, "needs the daemons of clients/harness_test.go (go test ./clients/ -run TestPythonClient)")


def unique(what: str) -> str:
    """A lock name no other test (or client suite) uses."""
    return f"py/{what}.{uuid.uuid4().hex[:12]}"


def control(path: str) -> dict:
    """POST to the harness's control server (break, restart)."""
    req = urllib.request.Request(CONTROL + path, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=90) as resp:
        return json.loads(resp.read())


def break_lease(kind: str, name: str) -> int:
    """Delete every contender of NAME in ZooKeeper, as an operator could."""
    return control(f"/break?kind={kind}&name={name}")["deleted"]


def eventually(cond: Callable[[], bool], timeout: float, what: str, every: float = 0.02) -> None:
    """Poll cond until it holds; fail the test after timeout seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(every)


def report(line: str) -> None:
    """A measured figure, printed into the harness's log."""
    sys.stderr.write(f"\nMEASURED {line}\n")
    sys.stderr.flush()


class Proxy:
    """A TCP proxy to the plain daemon that can stop answering (``hang``):
    its connections stay open and new ones are accepted, but no byte goes
    through any more, as with a daemon that is stopped (SIGSTOP) or cut off
    by a partition."""

    def __init__(self, target: str, port: int = 0) -> None:
        host, tport = target.split("//", 1)[1].split(":")
        self._target = (host, int(tport))
        self._ln = socket.create_server(("127.0.0.1", port))
        self.addr = "http://127.0.0.1:%d" % self._ln.getsockname()[1]
        self._hung = threading.Event()
        self._closed = False
        self.accepted = 0
        self._socks: List[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self._hung.set()

    def close(self) -> None:
        self._closed = True
        self._ln.close()
        with self._lock:
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                c, _ = self._ln.accept()
            except OSError:
                return
            with self._lock:
                self._socks.append(c)
                self.accepted += 1
            if self._hung.is_set():
                continue  # accepted, never answered
            try:
                u = socket.create_connection(self._target)
            except OSError:
                c.close()
                continue
            with self._lock:
                self._socks.append(u)
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self._hung.is_set():
                    self._hung.wait()
                    return  # swallow: the peer never hears back
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not self._hung.is_set():
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass


def free_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

