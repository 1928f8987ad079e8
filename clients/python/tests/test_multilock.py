"""Multi-locks against the harness's plain daemon: several locks at once,
all or none."""

from __future__ import annotations

import unittest

import seqd

from .support import ADDR, needs_daemon, unique


@needs_daemon
class MultiLockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR, owner="py-test")
        self.addCleanup(self.client.close)

    def test_holds_every_lock_until_released(self) -> None:
        a, b = unique("multi-a"), unique("multi-b")
        lease = self.client.acquire_multi([a, b], ttl="5s")
        self.assertEqual([lk.name for lk in lease.locks], [a, b])
        self.assertTrue(all(lk.token > 0 for lk in lease.locks))
        self.assertEqual(lease.sequencers.split(), [lk.sequencer for lk in lease.locks])
        # Each lock is held: a single-lock acquire of either is refused.
        for name in (a, b):
            with self.assertRaises(seqd.HeldError):
                self.client.acquire(name, wait="100ms")
        self.assertEqual(self.client.multi_lock_status(lease.lease_id)["lease_id"], lease.lease_id)
        renewed = self.client.renew_multi(lease)
        self.assertEqual([lk.token for lk in renewed.locks], [lk.token for lk in lease.locks])
        self.client.release_multi(lease)
        # Released: both are free again, and the lease is gone.
        for name in (a, b):
            got = self.client.acquire(name, ttl="2s")
            self.client.release(name, got.lease_id, got.token)
        with self.assertRaises((seqd.LostError, seqd.StaleTokenError)):
            self.client.renew_multi(lease)

    def test_a_set_with_a_held_lock_is_not_granted(self) -> None:
        a, b = unique("multi-held-a"), unique("multi-held-b")
        held = self.client.acquire(b, ttl="5s")
        self.addCleanup(self.client.release, b, held.lease_id, held.token)
        with self.assertRaises(seqd.HeldError):
            self.client.acquire_multi([a, b], wait="200ms")
        # None of it was taken: a is free.
        got = self.client.acquire(a, ttl="2s")
        self.client.release(a, got.lease_id, got.token)
