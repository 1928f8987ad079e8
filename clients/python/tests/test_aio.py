"""seqd.aio against the harness's real daemons: 50 waiters at once,
cancellation, loss, the TLS settings from the environment."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
import unittest
from typing import Any, List
from unittest import mock

import seqd
import seqd.aio

from .support import ADDR, SECURE, Proxy, break_lease, needs_daemon, report, unique

_mono = time.monotonic


async def _eventually(cond: Any, timeout: float, what: str) -> None:
    end = _mono() + timeout
    while not await cond():
        if _mono() > end:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.02)


class Overlap:
    """Counts holders inside a critical section: ``most`` is the largest
    number ever inside at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.tokens: List[int] = []

    async def hold(self, token: int) -> None:
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.tokens.append(token)
        await asyncio.sleep(0.005)  # let the other waiters run meanwhile
        self.inside -= 1


async def _gather_waiters(name: str, n: int, mode: Any = None) -> Overlap:
    seen = Overlap()
    async with seqd.aio.Client(ADDR) as c:

        async def waiter() -> None:
            async with c.lock(name, ttl="10s", wait="60s", mode=mode) as lease:
                await seen.hold(lease.token)

        await asyncio.gather(*(waiter() for _ in range(n)))
    return seen


@needs_daemon
class AsyncLockTest(unittest.TestCase):
    def test_fifty_waiters_hold_one_at_a_time_with_rising_tokens(self) -> None:
        start = _mono()
        seen = asyncio.run(_gather_waiters(unique("aio-gather"), 50))
        took = _mono() - start
        self.assertEqual(len(seen.tokens), 50, "every waiter held the lock once")
        self.assertEqual(seen.most, 1, f"{seen.most} waiters held the lock at once")
        for a, b in zip(seen.tokens, seen.tokens[1:]):
            self.assertLess(a, b, f"tokens in grant order: {seen.tokens}")
        report(f"python aio: 50 waiters through one lock in {took:.2f}s ({took / 50 * 1000:.1f} ms a holder)")

    def test_overlap_check_sees_shared_holders(self) -> None:
        # Negative control: the same check, on shared holders (who may hold
        # together), sees more than one inside at once.
        seen = asyncio.run(_gather_waiters(unique("aio-shared"), 10, mode="shared"))
        self.assertGreater(seen.most, 1, "shared holders were never seen together: the overlap check cannot see overlap")

    def test_cancelled_waiter_leaves_no_contender(self) -> None:
        async def run() -> None:
            name = unique("aio-cancel")
            async with seqd.aio.Client(ADDR) as c:
                async with c.lock(name, ttl="10s") as holder:
                    waiter = asyncio.ensure_future(c.lock(name, ttl="10s", wait="60s").acquire())
                    await _eventually(lambda: _waiters(c, name, 1), 10, "the waiter queued")
                    waiter.cancel()
                    with self.assertRaises(asyncio.CancelledError):
                        await waiter
                    await _eventually(lambda: _waiters(c, name, 0), 10, "the cancelled waiter's contender gone")
                    st = await c.status(name)
                    self.assertEqual(st.token, holder.token, "the holder still holds")
                # The next acquirer, trying once, gets it: nobody is queued.
                async with c.lock(name, ttl="10s") as nxt:
                    self.assertGreater(nxt.token, holder.token)

        asyncio.run(run())

    def test_asyncio_timeout_bounds_a_wait_and_withdraws_it(self) -> None:
        async def run() -> None:
            name = unique("aio-timeout")
            async with seqd.aio.Client(ADDR) as c:
                async with c.lock(name, ttl="10s"):
                    start = _mono()
                    with self.assertRaises((asyncio.TimeoutError, TimeoutError)):
                        async with asyncio.timeout(0.5):  # type: ignore[attr-defined]  # Python 3.11+
                            async with c.lock(name, ttl="10s", wait="60s"):
                                self.fail("granted a held lock")
                    took = _mono() - start
                    self.assertLess(took, 2.0, f"asyncio.timeout(0.5) returned after {took:.2f}s")
                    await _eventually(lambda: _waiters(c, name, 0), 10, "the timed-out waiter's contender gone")

        asyncio.run(run())

    def test_contender_check_sees_a_waiter_not_withdrawn(self) -> None:
        # Negative control of the two tests above: a waiter that is still
        # waiting (a blocking client in a thread) is seen by the same check.
        name = unique("aio-orphan")
        sync = seqd.Client(ADDR)
        with sync.lock(name, ttl="10s"):
            t = threading.Thread(target=lambda: sync.lock(name, ttl="10s", wait="3s").acquire().release, daemon=True)
            t.start()

            async def run() -> None:
                async with seqd.aio.Client(ADDR) as c:
                    await _eventually(lambda: _waiters(c, name, 1), 10, "the blocking waiter queued")
                    with self.assertRaises(AssertionError):
                        await _eventually(lambda: _waiters(c, name, 0), 0.5, "no waiter")

            asyncio.run(run())
        t.join(10)

    def test_grant_that_crossed_a_cancellation_is_released(self) -> None:
        async def run() -> None:
            name = unique("aio-crossed")
            async with seqd.aio.Client(ADDR) as c:
                lease = c.lock(name, ttl="10s")
                lease_id = secrets.token_hex(16)
                granted = await c.acquire(name, ttl="10s", lease_id=lease_id)  # the answer the cancelled acquire never read
                self.assertTrue((await c.status(name)).held)
                await lease._withdraw(lease_id)
                st = await c.status(name)
                self.assertFalse(st.held, f"the crossed grant (token {granted.token}) is still held: {st}")

        asyncio.run(run())


@needs_daemon
class AsyncLossTest(unittest.TestCase):
    def test_loss_sets_lost_and_cancels_the_holder(self) -> None:
        async def run() -> None:
            name = unique("aio-loss")
            async with seqd.aio.Client(ADDR) as c:
                lease = c.lock(name, ttl="6s", cancel_on_loss=True)
                broke_at: List[float] = []

                async def holder() -> str:
                    async with lease:
                        broke_at.append(_mono())
                        await asyncio.get_running_loop().run_in_executor(None, break_lease, "lock", name)
                        await asyncio.sleep(30)
                    return "the block ran to its end"

                with self.assertRaises(seqd.LostError) as cm:
                    await asyncio.wait_for(holder(), 20)
                took = _mono() - broke_at[0]
                self.assertTrue(lease.lost.is_set())
                self.assertIs(cm.exception, lease.lost_error)
                self.assertFalse(lease.held)
                self.assertLess(took, 6.0, "the loss came after the TTL")
                report(f"python aio: broken lease lost and its holder cancelled {took * 1000:.0f} ms after the break ({took / 2.0:.2f} of the renew interval)")

        asyncio.run(run())

    def test_without_cancel_on_loss_the_holder_runs_on(self) -> None:
        # Negative control: the same loss with cancel_on_loss off sets lost
        # and leaves the holder's task alone.
        async def run() -> None:
            name = unique("aio-loss-nocancel")
            async with seqd.aio.Client(ADDR) as c:
                async with c.lock(name, ttl="6s") as lease:
                    await asyncio.get_running_loop().run_in_executor(None, break_lease, "lock", name)
                    await asyncio.wait_for(lease.lost.wait(), 10)
                    await asyncio.sleep(0.2)  # a cancellation would land here
                    self.assertIsNotNone(lease.lost_error)

        asyncio.run(run())

    def test_outside_cancellation_stays_a_cancellation(self) -> None:
        async def run() -> None:
            name = unique("aio-outside-cancel")
            async with seqd.aio.Client(ADDR) as c:
                got: List[seqd.aio.Lease] = []

                async def holder() -> None:
                    async with c.lock(name, ttl="6s", cancel_on_loss=True) as lease:
                        got.append(lease)
                        await asyncio.sleep(30)

                task = asyncio.ensure_future(holder())
                while not got:
                    await asyncio.sleep(0.01)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                self.assertTrue(got[0].released, "the cancelled holder released the lock")
                self.assertFalse((await c.status(name)).held)

        asyncio.run(run())

    def test_lost_wait_returns_by_the_deadline_when_the_daemon_hangs(self) -> None:
        async def run() -> None:
            proxy = Proxy(ADDR)
            try:
                async with seqd.aio.Client(proxy.addr, timeout=1.0) as c:
                    async with c.lock(unique("aio-hang"), ttl="2s", watch=False) as lease:
                        proxy.hang()
                        await asyncio.wait_for(lease.lost.wait(), 6)
                        late = _mono() - lease.deadline
                        self.assertGreaterEqual(late, 0.0)
                        self.assertLess(late, 1.0, f"lost.wait() returned {late:.2f}s after the deadline")
                        self.assertEqual(getattr(lease.lost_error, "code", None), "expired")
            finally:
                proxy.close()

        asyncio.run(run())


@needs_daemon
class AsyncSettingsTest(unittest.TestCase):
    def test_reads_token_and_tls_files_from_the_environment(self) -> None:
        async def run() -> None:
            with mock.patch.dict(os.environ, SECURE):
                c = seqd.aio.Client()
            self.assertTrue(c.addr.startswith("https://"))
            async with c:
                async with c.lock(unique("aio-secure"), ttl="5s") as lease:
                    self.assertTrue((await lease.check()).valid)
            with mock.patch.dict(os.environ, dict(SECURE, SEQD_API_TOKEN_FILE="")):
                bare = seqd.aio.Client()
            with self.assertRaises(seqd.UnauthorizedError):
                await bare.acquire(unique("aio-secure-refused"))
            await bare.aclose()

        asyncio.run(run())


async def _waiters(c: seqd.aio.Client, name: str, n: int) -> bool:
    return (await c.status(name)).waiters == n


if __name__ == "__main__":
    unittest.main()
