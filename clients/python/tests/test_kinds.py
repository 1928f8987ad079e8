"""Semaphores and elections against the harness's plain daemon."""

from __future__ import annotations

import threading
import time
import unittest
from typing import Dict, List

import seqd

from .support import ADDR, eventually, needs_daemon, report, unique


@needs_daemon
class SemaphoreTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR, owner="py-sem")
        self.addCleanup(self.client.close)

    def _most_at_once(self, name: str, limit: int, holders: int) -> int:
        """Run holders threads through the semaphore; return the most that
        held at once. Each keeps its slot until as many as the limit have
        held at once (or 5s), then a little longer, so that a semaphore that
        let one more in would be seen doing it."""
        lock = threading.Lock()
        active = [0]
        most = [0]
        errors: List[BaseException] = []
        start = threading.Barrier(holders)
        full = threading.Event()

        def hold() -> None:
            try:
                start.wait()
                with self.client.semaphore(name, limit, ttl="2s", wait="20s") as lease:
                    self.assertEqual(lease.info.limit, limit)
                    with lock:
                        active[0] += 1
                        most[0] = max(most[0], active[0])
                        if active[0] >= limit:
                            full.set()
                    full.wait(5)
                    time.sleep(0.3)
                    self.assertFalse(lease.lost.is_set())
                    with lock:
                        active[0] -= 1
            except BaseException as e:  # reported by the test's thread
                errors.append(e)

        threads = [threading.Thread(target=hold) for _ in range(holders)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertFalse(any(t.is_alive() for t in threads), "a holder is still running")
        if errors:
            raise errors[0]
        return most[0]

    def test_limit_two_three_holders(self) -> None:
        most = self._most_at_once(unique("sem2"), 2, 3)
        self.assertLessEqual(most, 2, "more holders than the limit at once")
        self.assertEqual(most, 2, "the measurement never saw two holders at once")
        # Control: the same measurement with room for all three sees three.
        control = self._most_at_once(unique("sem3"), 3, 3)
        self.assertEqual(control, 3)
        report(f"semaphore limit 2, three holders: at most {most} at once (control, limit 3: {control})")

    def test_full_semaphore_is_held_and_status_counts(self) -> None:
        name = unique("semfull")
        with self.assertWarns(DeprecationWarning):  # the old name still works
            a = self.client.semaphore_acquire(name, 1, ttl="5s")
        self.addCleanup(self.client.release_semaphore, name, a.lease_id, a.token)
        self.assertTrue(a.sequencer)
        self.assertEqual(self.client.semaphore_status(name).holders, 1)
        with self.assertRaises(seqd.HeldError):
            with self.client.semaphore(name, 1, wait="200ms"):
                self.fail("a full semaphore granted a slot")
        renewed = self.client.renew_semaphore(name, a.lease_id, a.token)
        self.assertEqual(renewed.token, a.token)
        with self.assertRaises(seqd.HeldError):
            self.client.acquire_semaphore(name, 1, wait="100ms")


@needs_daemon
class ElectionTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR, owner="py-elect")
        self.addCleanup(self.client.close)

    def test_two_candidates_hand_over_on_resign(self) -> None:
        name = unique("election")
        a = self.client.campaign(name, "a", ttl="2s", wait="5s", owner="cand-a").acquire()
        self.addCleanup(a.release)
        self.assertEqual(a.term, a.token)
        st = self.client.election(name)
        self.assertIsNotNone(st.leader)
        self.assertEqual((st.leader.value, st.leader.term, st.leader.owner), ("a", a.term, "cand-a"))
        self.assertTrue(st.self)

        b_lead: Dict[str, int] = {}
        b_may_go = threading.Event()
        failed: List[BaseException] = []

        def candidate_b() -> None:
            try:
                with self.client.campaign(name, "b", ttl="2s", wait="20s", owner="cand-b") as b:
                    b_lead["term"] = b.term
                    b.proclaim("b2")
                    b_may_go.wait(20)
            except BaseException as e:
                failed.append(e)

        t = threading.Thread(target=candidate_b)
        t.start()
        self.addCleanup(t.join, 25)
        self.addCleanup(b_may_go.set)
        eventually(lambda: self.client.election(name).candidates == 2, 10, "candidate b to queue")
        st = self.client.election(name)
        self.assertEqual(st.leader.value, "a", "b leads while a still does")
        self.assertNotIn("term", b_lead)

        t0 = time.monotonic()
        self.assertTrue(a.resign())
        # Blocking reads follow the change; no polling.
        seen = []
        for state in self.client.observe(name, wait="10s"):
            seen.append(state)
            if state.leader is not None and state.leader.value == "b2":
                break
            self.assertLess(time.monotonic() - t0, 15, f"no hand-over; states seen: {seen}")
        hand_over = time.monotonic() - t0
        self.assertFalse(failed, failed)
        self.assertGreater(b_lead["term"], a.term)
        self.assertEqual(state.leader.term, b_lead["term"])
        self.assertEqual(state.leader.owner, "cand-b")
        self.assertEqual(state.candidates, 1)
        # The old term is stale for a resource that checks it.
        self.assertFalse(self.client.check(a.sequencer).valid)
        b_may_go.set()
        t.join(10)
        self.assertFalse(failed, failed)
        eventually(lambda: self.client.election(name).leader is None, 10, "b to resign")
        report(f"election hand-over on resign: the next leader's value seen {hand_over * 1000:.0f}ms after resign")

    def test_campaign_with_a_leader_is_held(self) -> None:
        name = unique("election-held")
        with self.client.campaign(name, "a", ttl="2s", wait="5s"):
            with self.assertRaises(seqd.HeldError):
                self.client.acquire_leadership(name, "b", ttl="2s", wait="200ms")
            self.assertEqual(self.client.election(name).leader.value, "a")


if __name__ == "__main__":
    unittest.main()
