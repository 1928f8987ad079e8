"""The tooz driver through tooz's own API (Debian's python3-tooz), against
the harness's real daemons: get_coordinator("seqd://…") finds the driver
by the adapter's entry point, its locks exclude each other across
coordinators and carry the fencing token."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
from typing import Any, List
from unittest import mock

import tooz  # type: ignore[import]
from tooz import coordination

import seqd
from seqd_tooz import SeqdDriver, SeqdLock
from tests.support import ADDR, SECURE, break_lease, needs_daemon, report, unique

from .support import ADAPTER_ROOT, register_entry_points

DIST = register_entry_points()
URL = "seqd://" + urllib.parse.urlsplit(ADDR).netloc if ADDR else ""
CLIENT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(seqd.__file__ or "")))


def coordinator(member: bytes, url: str = "", **options: Any) -> Any:
    c = coordination.get_coordinator(url or URL, member, **options)
    c.start()
    return c


def lock_name(what: str) -> bytes:
    return unique("tooz-" + what).encode()


@needs_daemon
class ToozLockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.a = coordinator(b"member-a")
        self.b = coordinator(b"member-b")
        self.addCleanup(self.a.stop)
        self.addCleanup(self.b.stop)

    def test_get_coordinator_finds_the_driver_by_its_entry_point(self) -> None:
        self.assertIsInstance(self.a, SeqdDriver)
        lock = self.a.get_lock(lock_name("type"))
        self.assertIsInstance(lock, SeqdLock)
        self.assertIsInstance(lock, tooz.locking.Lock)

    def test_acquire_and_release_with_a_rising_token(self) -> None:
        name = lock_name("rising")
        lock = self.a.get_lock(name)
        self.assertTrue(lock.acquire(blocking=False))
        first = lock.token
        self.assertIsInstance(first, int)
        self.assertTrue(lock.sequencer.endswith(f"@{first}"))
        self.assertTrue(lock.is_still_owner())
        self.assertTrue(lock.release())
        self.assertFalse(lock.is_still_owner())
        self.assertFalse(lock.release(), "a second release releases nothing")
        with self.b.get_lock(name) as again:
            self.assertGreater(again.token, first)

    def test_two_coordinators_exclude_each_other(self) -> None:
        name = lock_name("exclude")
        la, lb = self.a.get_lock(name), self.b.get_lock(name)
        self.assertTrue(la.acquire())
        self.assertFalse(lb.acquire(blocking=False), "b got a lock that a holds")
        start = time.monotonic()
        self.assertFalse(lb.acquire(blocking=0.5))
        took = time.monotonic() - start
        self.assertGreaterEqual(took, 0.45, f"acquire(blocking=0.5) gave up after {took:.2f}s")
        with self.assertRaises(coordination.LockAcquireFailed):
            with lb(blocking=False):
                self.fail("entered a lock that a holds")
        held = la.token
        la.release()
        self.assertTrue(lb.acquire(blocking=False))
        self.assertGreater(lb.token, held)
        lb.release()

    def test_threads_of_two_coordinators_hold_one_at_a_time(self) -> None:
        name = lock_name("threads")
        inside: List[int] = []
        most = [0]
        tokens: List[int] = []
        errors: List[BaseException] = []
        mu = threading.Lock()

        def worker(coord: Any) -> None:
            try:
                for _ in range(5):
                    with coord.get_lock(name) as lock:  # blocking: waits its turn
                        with mu:
                            inside.append(1)
                            most[0] = max(most[0], len(inside))
                            tokens.append(lock.token)
                        time.sleep(0.01)
                        with mu:
                            inside.pop()
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        start = time.monotonic()
        threads = [threading.Thread(target=worker, args=(c,)) for c in (self.a, self.b, self.a, self.b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        took = time.monotonic() - start
        self.assertEqual(errors, [])
        self.assertEqual(len(tokens), 20)
        self.assertEqual(most[0], 1, f"{most[0]} holders at once")
        self.assertEqual(tokens, sorted(tokens), "tokens in grant order")
        self.assertEqual(len(set(tokens)), 20)
        report(f"tooz on seqd: 20 holds through 4 threads of 2 coordinators in {took:.2f}s")

    def test_shared_holders_hold_together(self) -> None:
        name = lock_name("shared")
        la, lb = self.a.get_lock(name), self.b.get_lock(name)
        self.assertTrue(la.acquire(blocking=False, shared=True))
        self.assertTrue(lb.acquire(blocking=False, shared=True), "a second reader was refused")
        self.assertFalse(self.b.get_lock(name).acquire(blocking=False), "a writer got in beside readers")
        la.release()
        lb.release()

    def test_loss_is_seen_by_the_lock(self) -> None:
        name = lock_name("loss")
        lock = self.a.get_lock(name)
        lock.acquire()
        break_lease("lock", name.decode())
        self.assertTrue(lock.lost.wait(10), "the broken lock was never marked lost")
        self.assertFalse(lock.is_still_owner())
        self.assertFalse(lock.release())
        self.assertIsInstance(lock.lease.lost_error, seqd.LostError)

    def test_stop_releases_what_the_coordinator_holds(self) -> None:
        name = lock_name("stop")
        c = coordinator(b"member-c")
        lock = c.get_lock(name)
        lock.acquire()
        c.stop()
        self.assertTrue(self.a.get_lock(name).acquire(blocking=False), "the lock of a stopped coordinator was still held")

    def test_bad_input_is_refused_with_a_sentence(self) -> None:
        with self.assertRaisesRegex(ValueError, "unknown option 'tll'"):
            coordination.get_coordinator(URL, b"m", tll="5s")
        with self.assertRaisesRegex(tooz.ToozError, "name"):
            self.a.get_lock(b"bad name with spaces").acquire(blocking=False)
        bad = coordination.get_coordinator("seqd://127.0.0.1:1", b"m")
        with self.assertRaises(coordination.ToozConnectionError):
            bad.start()

    def test_durations_in_seconds_or_go_form(self) -> None:
        # tooz's drivers take timeouts as seconds: timeout=2 is 2 seconds.
        for query, timeout, ttl in [("timeout=2", 2.0, 15.0), ("timeout=0.5&ttl=3", 0.5, 3.0), ("timeout=2s&ttl=1m", 2.0, 60.0)]:
            with self.subTest(query=query):
                c = coordinator(b"member-t", URL + "?" + query)
                self.addCleanup(c.stop)
                self.assertEqual(c._client.timeout, timeout)
                with c.get_lock(lock_name("durations")) as lock:
                    self.assertEqual(lock.lease.ttl, ttl)
        for bad in ["2x", "-1", "soon"]:
            with self.subTest(bad=bad), self.assertRaisesRegex(ValueError, f"option timeout={bad!r} is neither seconds"):
                coordination.get_coordinator(URL + "?timeout=" + bad, b"m")

    def test_options_pass_the_owner_and_ttl(self) -> None:
        c = coordinator(b"member-d", URL + "?ttl=3s&prefix=toozed", owner="worker-7")
        self.addCleanup(c.stop)
        name = lock_name("opts")
        with c.get_lock(name) as lock:
            self.assertEqual(lock.seqd_name, "toozed/" + name.decode())
            self.assertEqual(lock.lease.ttl, 3.0)
            with seqd.Client(ADDR) as sc:
                st = sc.status("toozed/" + name.decode())
            self.assertTrue(st.held)
            self.assertEqual(st.owner, "worker-7")


@needs_daemon
class ToozSecureTest(unittest.TestCase):
    def test_https_with_the_clients_settings(self) -> None:
        with mock.patch.dict(os.environ, SECURE):
            c = coordinator(b"secure", "seqd+https://" + urllib.parse.urlsplit(SECURE["SEQD_ADDR"]).netloc)
        self.addCleanup(c.stop)
        with c.get_lock(lock_name("secure")) as lock:
            self.assertGreater(lock.token, 0)


class ToozRegistrationTest(unittest.TestCase):
    def test_without_the_entry_point_tooz_finds_no_driver(self) -> None:
        # Negative control: the same get_coordinator in a process whose
        # sys.path has the adapter but not its metadata fails to load it,
        # so the tests above found the driver through the entry point.
        code = "from tooz import coordination; coordination.get_coordinator('seqd://127.0.0.1:1', b'm')"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([CLIENT_ROOT, ADAPTER_ROOT]))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(out.returncode, 0, "tooz found the seqd driver with no entry point")
        self.assertIn("NoMatches", out.stderr)
        env["PYTHONPATH"] += os.pathsep + DIST
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_pip_installs_the_entry_point_with_the_adapter_only(self) -> None:
        entry_points = {}
        for name, root in [("seqd", CLIENT_ROOT), ("seqd_tooz", ADAPTER_ROOT)]:
            with tempfile.TemporaryDirectory() as target:
                r = subprocess.run(
                    [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", "--target", target, root],
                    capture_output=True, text=True, timeout=120,
                )
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                info = [d for d in os.listdir(target) if d.startswith(name + "-") and d.endswith(".dist-info")]
                self.assertEqual(len(info), 1, os.listdir(target))
                path = os.path.join(target, info[0], "entry_points.txt")
                entry_points[name] = ""
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as f:
                        entry_points[name] = f.read()
                self.assertTrue(os.path.isdir(os.path.join(target, name)), os.listdir(target))
        self.assertNotIn("tooz", entry_points["seqd"], "the client registers a tooz driver")
        self.assertIn("[tooz.backends]\nseqd = seqd_tooz:SeqdDriver\nseqd+https = seqd_tooz:SeqdDriver", entry_points["seqd_tooz"])


if __name__ == "__main__":
    unittest.main()

