"""Locks against the harness's plain daemon: holding, renewing, releasing,
refusals and stale tokens."""

from __future__ import annotations

import signal
import threading
import time
import unittest
from typing import Any, List

import seqd

from .support import ADDR, Proxy, eventually, free_port, needs_daemon, unique


def _enter(lease: seqd.Lease) -> Any:
    try:
        return lease.acquire()
    except BaseException as e:
        return e


@needs_daemon
class LockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR, owner="py-test")
        self.addCleanup(self.client.close)

    def test_hold_past_three_ttls_renews_then_release_hands_over(self) -> None:
        name = unique("hold")
        with self.client.lock(name, ttl="2s", wait="5s") as lease:
            self.assertIsInstance(lease.token, int)
            self.assertGreater(lease.token, 0)
            self.assertEqual(lease.owner, "py-test")
            self.assertAlmostEqual(lease.renew_interval, 2 / 3)
            end = time.monotonic() + 6.5  # past 3 TTLs
            while time.monotonic() < end:
                self.assertFalse(lease.lost.wait(0.1), f"lost while held: {lease.lost_error}")
            self.assertTrue(self.client.check(lease.sequencer).valid, "the daemon no longer names us the holder after 3 TTLs")
            self.assertGreaterEqual(lease.renewals, 3)
            self.assertTrue(0 < lease.safe_for() <= 2, lease.safe_for())
            self.assertTrue(0 < lease.safe_for(ask=False) <= 2)
            st = self.client.status(name)
            self.assertTrue(st.held)
            self.assertEqual(st.token, lease.token)
            token = lease.token
        self.assertTrue(lease.released)
        self.assertFalse(lease.lost.is_set(), "a clean release is not a loss")
        self.assertEqual([t.name for t in threading.enumerate() if t.name.endswith(" " + name)], [], "threads left behind")
        self.assertFalse(lease.held)
        self.assertFalse(self.client.status(name).held)
        # The next holder gets the lock at once, with a higher token.
        with self.client.lock(name, ttl="2s", wait=0) as nxt:
            self.assertGreater(nxt.token, token)

    def test_short_leases_keep_one_connection(self) -> None:
        # Each cycle's acquire and release go over the kept-alive
        # connection; a lease released before its watcher's first blocking
        # read never opens (and never cuts) a second one.
        proxy = Proxy(ADDR)
        self.addCleanup(proxy.close)
        client = seqd.Client(proxy.addr, owner="py-keepalive")
        self.addCleanup(client.close)
        name = unique("keepalive")
        for _ in range(20):
            with client.lock(name, ttl="15s", wait="5s"):
                pass
        self.assertLessEqual(proxy.accepted, 2, f"20 lock cycles opened {proxy.accepted} connections")

    def test_without_renewal_the_lease_expires(self) -> None:
        # The negative control of the test above: the same hold with the
        # renewals switched off loses the lease, at the daemon too.
        name = unique("norenew")
        with self.client.lock(name, ttl="2s", wait="5s", renew=False) as lease:
            self.assertTrue(lease.lost.wait(6.5), "a lease that is never renewed was not reported lost within 3 TTLs")
            self.assertEqual(lease.lost_error.code, "expired")
            self.assertEqual(lease.renewals, 0)
            self.assertEqual(lease.safe_for(), 0.0)
            with self.assertRaises(seqd.LostError):
                lease.raise_if_lost()
            self.assertEqual([t.name for t in threading.enumerate() if t.name == f"seqd-watch lock {name}"], [], "a watcher without renewals")
            deadline = time.monotonic() + 5
            while self.client.check(lease.sequencer).valid:
                self.assertLess(time.monotonic(), deadline, "the daemon still names the unrenewed lease the holder")
                time.sleep(0.05)
        self.assertFalse(lease.released, "a lost lease was released")

    def test_held_lock_refuses_within_a_short_wait(self) -> None:
        name = unique("held")
        first = self.client.acquire(name, ttl="5s")
        self.addCleanup(self.client.release, name, first.lease_id, first.token)
        with self.assertRaises(seqd.HeldError) as cm:
            with self.client.lock(name, wait="300ms", ttl="2s"):
                self.fail("granted a held lock")
        self.assertEqual(cm.exception.code, "held")
        self.assertEqual(cm.exception.status, 409)
        with self.assertRaises(seqd.HeldError):
            self.client.acquire(name)  # wait 0: tries once
        # The owner string alone does not get the lease back.
        with self.assertRaises(seqd.HeldError):
            self.client.acquire(name, owner=first.owner)
        # Its lease id does (an idempotent retry): same token.
        again = self.client.acquire(name, owner=first.owner, ttl="5s", lease_id=first.lease_id)
        self.assertEqual(again.token, first.token)

    def test_stale_token_at_check_and_renew(self) -> None:
        name = unique("stale")
        old = self.client.acquire(name, ttl="5s")
        self.assertTrue(self.client.check(old.sequencer))
        self.client.release(name, old.lease_id, old.token)
        new = self.client.acquire(name, ttl="5s")
        self.addCleanup(self.client.release, name, new.lease_id, new.token)
        self.assertGreater(new.token, old.token)
        res = self.client.check(old.sequencer)
        self.assertFalse(res.valid)
        self.assertEqual(res.code, "stale_token")
        self.assertEqual(res.current_token, new.token)
        res = self.client.check(name=name, token=new.token)
        self.assertTrue(res.valid)
        self.assertEqual(res.current_token, new.token)
        with self.assertRaises(seqd.StaleTokenError) as cm:
            self.client.renew(name, old.lease_id, old.token)
        self.assertEqual(cm.exception.current_token, new.token)
        self.assertEqual(cm.exception.status, 409)

    def test_release_twice_is_lost(self) -> None:
        name = unique("twice")
        l = self.client.acquire(name, ttl="5s")
        self.client.release(name, l.lease_id, l.token)
        with self.assertRaises(seqd.LostError) as cm:
            self.client.release(name, l.lease_id, l.token)
        self.assertEqual(cm.exception.code, "lost")

    def test_bad_request_is_typed_and_changes_nothing(self) -> None:
        name = unique("bad")
        with self.assertRaises(seqd.BadRequestError) as cm:
            self.client.acquire(name, ttl="2h")
        self.assertEqual(cm.exception.status, 400)
        with self.assertRaises(seqd.BadRequestError):
            self.client.acquire("a/../b")
        self.assertFalse(self.client.status(name).held)

    def test_shared_leases_hold_together(self) -> None:
        name = unique("shared")
        with self.client.lock(name, mode="shared", ttl="2s", wait="5s") as r1:
            with self.client.lock(name, mode="shared", ttl="2s", wait="5s") as r2:
                self.assertEqual(r2.info.mode, "shared")
                self.assertNotEqual(r1.token, r2.token)
                with self.assertRaises(seqd.HeldError):
                    self.client.acquire(name, ttl="2s")  # a writer waits for the readers
                self.assertFalse(r1.lost.is_set() or r2.lost.is_set())

    def test_acquire_waits_for_a_daemon_that_starts_late(self) -> None:
        # An app that starts before its sidecar: within its wait, the
        # acquire is tried again until the daemon answers.
        port = free_port()
        client = seqd.Client(f"http://127.0.0.1:{port}", timeout=2)
        self.addCleanup(client.close)
        got: List[Any] = []
        t = threading.Thread(target=lambda: got.append(_enter(client.lock(unique("late"), ttl="2s", wait="20s"))))
        with self.assertLogs("seqd", "WARNING") as logs:
            t.start()
            eventually(lambda: any("trying again" in line for line in logs.output), 10, "a refused attempt")
            proxy = Proxy(ADDR, port)
            self.addCleanup(proxy.close)
            t.join(25)
        self.assertEqual(len(got), 1)
        self.assertIsInstance(got[0], seqd.Lease, got[0])
        self.assertTrue(got[0].release())

    def test_exception_in_the_block_releases(self) -> None:
        name = unique("raises")
        with self.assertRaises(ZeroDivisionError):
            with self.client.lock(name, ttl="5s") as lease:
                1 / 0
        self.assertTrue(lease.released)
        self.assertFalse(self.client.status(name).held)

    @unittest.skipUnless(hasattr(signal, "pthread_kill"), "needs signals")
    def test_ctrl_c_while_waiting_withdraws(self) -> None:
        name = unique("interrupted")
        holder = self.client.acquire(name, ttl="10s")
        self.addCleanup(self.client.release, name, holder.lease_id, holder.token)
        main = threading.get_ident()

        def interrupt_once_queued() -> None:
            eventually(lambda: self.client.status(name).waiters == 1, 10, "the acquire to queue")
            signal.pthread_kill(main, signal.SIGINT)

        t = threading.Thread(target=interrupt_once_queued)
        t.start()
        self.addCleanup(t.join, 15)
        kept = None
        try:
            with self.client.lock(name, ttl="2s", wait="20s"):
                self.fail("granted a held lock")
        except KeyboardInterrupt as e:
            kept = e  # its traceback keeps every frame's locals alive, as a REPL or a log record would
        self.assertIsNotNone(kept, "not interrupted")
        eventually(lambda: self.client.status(name).waiters == 0, 10, "the daemon to withdraw the interrupted acquire")
        del kept

    def test_connections_are_kept_alive(self) -> None:
        proxy = Proxy(ADDR)
        self.addCleanup(proxy.close)
        client = seqd.Client(proxy.addr)
        self.addCleanup(client.close)
        name = unique("keepalive")
        for _ in range(10):
            l = client.acquire(name, ttl="2s")
            client.renew(name, l.lease_id, l.token)
            client.release(name, l.lease_id, l.token)
        self.assertEqual(proxy.accepted, 1, "30 requests in a row opened more than one connection")

    def test_daemon_down_is_unavailable(self) -> None:
        down = seqd.Client(f"http://127.0.0.1:{free_port()}", timeout=2)
        with self.assertRaises(seqd.UnavailableError) as cm:
            down.acquire(unique("down"))
        self.assertIsNone(cm.exception.status)
        self.assertEqual(cm.exception.code, "unavailable")
        with self.assertRaises(seqd.UnavailableError):
            with down.lock(unique("down"), wait="500ms"):
                self.fail("entered a block with no daemon")


if __name__ == "__main__":
    unittest.main()
