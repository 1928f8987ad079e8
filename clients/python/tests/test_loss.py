"""A lease ended from outside: deleted in ZooKeeper, the daemon restarted,
the daemon stopped answering. Each test measures how long the holder took
to learn of it, as a ratio of the renew interval (TTL/3)."""

from __future__ import annotations

import random
import threading
import time
import unittest
from typing import List

import seqd

from .support import ADDR, Proxy, break_lease, control, needs_daemon, report, unique

TTL = 2.0
INTERVAL = TTL / 3
# Slack for a loaded machine on top of "within one renew interval": the
# renew request itself and thread scheduling.
SLACK = 1.0


def work_until_lost(lease: seqd.Lease, steps: List[int]) -> None:
    """The block's work: steps until the lease is lost."""
    while not lease.lost.wait(0.01):
        steps[0] += 1


@needs_daemon
class LossTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR, owner="py-loss")
        self.addCleanup(self.client.close)

    def _break_and_time(self, watch: bool, kind: str = "lock") -> float:
        """Hold a lease, break it after a random part of a renew interval,
        and return the seconds from the break to the loss signal seen by
        the block's work."""
        name = unique(f"break-{kind}")
        if kind == "lock":
            holder = self.client.lock(name, ttl=TTL, wait="5s", watch=watch)
        elif kind == "election":
            holder = self.client.campaign(name, "v", ttl=TTL, wait="5s", watch=watch)
        else:
            holder = self.client.semaphore(name, 2, ttl=TTL, wait="5s")
        steps = [0]
        with holder as lease:
            worker = threading.Thread(target=work_until_lost, args=(lease, steps))
            worker.start()
            time.sleep(random.uniform(0.1, 0.1 + INTERVAL))
            self.assertFalse(lease.lost.is_set(), "lost before the break")
            t0 = time.monotonic()
            self.assertGreaterEqual(break_lease(kind, name), 1)
            seen = lease.lost.wait(TTL + SLACK)
            latency = time.monotonic() - t0
            worker.join(5)
            self.assertTrue(seen, "the loss was not signalled")
            self.assertFalse(worker.is_alive(), "the block's work did not see the loss")
            self.assertIn(lease.lost_error.code, ("lost", "stale_token", "broken"), lease.lost_error)
            self.assertLess(latency, INTERVAL + SLACK, f"loss seen {latency:.3f}s after the break; renew interval {INTERVAL:.3f}s")
            self.assertFalse(self.client.check(lease.sequencer).valid)
        # The block ended normally: no 409 for the lost lease.
        self.assertFalse(lease.released)
        self.assertEqual([t.name for t in threading.enumerate() if t.name.endswith(" " + name)], [], "threads left behind")
        self.assertGreater(steps[0], 0)
        return latency

    def test_break_seen_within_a_renew_interval_by_renewals(self) -> None:
        lat = [self._break_and_time(watch=False) for _ in range(3)]
        report(f"loss-detection latency, renewals only (ttl {TTL}s, interval {INTERVAL:.3f}s): "
               + ", ".join(f"{x / INTERVAL:.2f}" for x in lat) + " x interval")

    def test_break_seen_at_once_by_the_watch(self) -> None:
        lat = [self._break_and_time(watch=True) for _ in range(3)]
        report(f"loss-detection latency, renewals + blocking read (ttl {TTL}s): "
               + ", ".join(f"{x * 1000:.0f}ms = {x / INTERVAL:.3f}" for x in lat) + " x interval")

    def test_break_of_an_election_and_a_semaphore(self) -> None:
        e = self._break_and_time(watch=True, kind="election")
        s = self._break_and_time(watch=False, kind="semaphore")
        report(f"loss-detection latency: election (watch) {e / INTERVAL:.3f}, semaphore {s / INTERVAL:.2f} x interval")

    def test_restart_of_the_daemon_is_a_loss(self) -> None:
        name = unique("restart")
        with self.client.lock(name, ttl=TTL, wait="5s") as lease:
            token = lease.token
            control("/restart")
            t0 = time.monotonic()
            seen = lease.lost.wait(TTL + SLACK)
            latency = time.monotonic() - t0
            self.assertTrue(seen, "a lease the restarted daemon does not know was not reported lost")
            self.assertIn(lease.lost_error.code, ("lost", "expired"), lease.lost_error)
        self.assertFalse(lease.released)
        report(f"loss-detection latency after a daemon restart (from the new daemon ready): "
               f"{latency / INTERVAL:.2f} x interval ({lease.lost_error.code})")
        # The restarted daemon serves new leases, above the lost one.
        with self.client.lock(unique("after-restart"), ttl=TTL, wait="5s") as nxt:
            self.assertGreater(nxt.token, token)

    def test_unanswering_daemon_loses_the_lease_at_its_deadline(self) -> None:
        proxy = Proxy(ADDR)
        self.addCleanup(proxy.close)
        client = seqd.Client(proxy.addr, owner="py-hang", timeout=5)
        self.addCleanup(client.close)
        with client.lock(unique("hang"), ttl=TTL, wait="5s", watch=False) as lease:
            self.assertTrue(_wait_for(lambda: lease.renewals >= 1, 5))
            proxy.hang()
            # The renewals hang now; the requests' own timeout (5s) is
            # longer than the TTL, yet the lease must be reported lost by
            # its deadline: the last confirmed renewal's send time + TTL.
            while True:
                d = lease.deadline
                before = time.monotonic()
                is_lost = lease.lost.is_set()
                after = time.monotonic()
                if is_lost:
                    self.assertGreaterEqual(after, d, "reported lost before its deadline")
                    break
                self.assertLess(before, d, f"reported live {before - d:.3f}s past its deadline")
                time.sleep(0.01)
            self.assertEqual(lease.lost_error.code, "expired")
            # The event's own flag, which wakes waiters, is the renewer's to set.
            self.assertTrue(threading.Event.wait(lease.lost, SLACK), "the renewer did not set the event after the deadline")
            late = time.monotonic() - d
            self.assertIsInstance(lease.last_error, seqd.UnavailableError)
            self.assertEqual(lease.safe_for(ask=False), 0.0)
        self.assertFalse(lease.released)
        report(f"unanswering daemon: lost.is_set() true from the local deadline on; event set {late * 1000:.0f}ms after it")


def _wait_for(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


if __name__ == "__main__":
    unittest.main()
