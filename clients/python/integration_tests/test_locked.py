"""seqd.locked, the decorator that runs a function under a lock with its
token: as Celery tasks of a real Celery app (Debian's python3-celery, eager
mode), as a plain function (a cron job) and as a coroutine function,
against the harness's real daemons."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import unittest
from typing import Any, List

import celery  # type: ignore[import]

import seqd
import seqd.aio
from tests.support import ADDR, break_lease, needs_daemon, unique


def celery_app() -> Any:
    app = celery.Celery("seqd-tests", broker="memory://", backend="cache+memory://")
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    return app


@needs_daemon
class CeleryTaskTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = seqd.Client(ADDR)
        self.addCleanup(self.client.close)
        self.app = celery_app()

    def test_task_runs_under_the_lock_with_its_token(self) -> None:
        name = unique("celery-token")
        client = self.client
        seen: List[Any] = []

        @self.app.task
        @seqd.locked(name, client=client)
        def nightly(day: str, *, token: int) -> int:
            st = client.status(name)
            seen.append((day, st.held, st.token))
            return token

        first = nightly.delay("2026-12-01").get()
        second = nightly.apply_async(args=["2026-12-02"]).get()
        self.assertEqual(seen, [("2026-12-01", True, first), ("2026-12-02", True, second)], "the task ran holding the lock, with its token")
        self.assertGreater(second, first)
        self.assertFalse(client.status(name).held, "the lock was released after the task")

    def test_celery_checks_the_callers_arguments_without_the_token(self) -> None:
        @self.app.task
        @seqd.locked(unique("celery-sig"), client=self.client)
        def job(day: str, *, token: int) -> str:
            return day

        self.assertNotIn("token", inspect.signature(job.run).parameters)
        with self.assertRaises(TypeError):
            job.delay()  # day is missing: Celery's own argument check refuses it
        with self.assertRaises(TypeError):
            job.delay("d", token=5)  # the token is the lock's, not the caller's

    def test_concurrent_tasks_run_one_at_a_time(self) -> None:
        name = unique("celery-exclusive")
        inside: List[int] = []
        most = [0]
        tokens: List[int] = []
        mu = threading.Lock()

        @self.app.task
        @seqd.locked(name, wait="30s", client=self.client)
        def step(i: int, *, token: int) -> None:
            with mu:
                inside.append(i)
                most[0] = max(most[0], len(inside))
                tokens.append(token)
            time.sleep(0.02)
            with mu:
                inside.remove(i)

        # Each thread calls the task object (Celery's Task.__call__) rather
        # than delay(): eager delay() guards against joins with one
        # process-wide flag that threads running tasks at once leave set.
        threads = [threading.Thread(target=step, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(tokens), 8)
        self.assertEqual(most[0], 1, f"{most[0]} tasks ran at once")
        self.assertEqual(tokens, sorted(tokens))

    def test_the_overlap_check_sees_undecorated_tasks_overlap(self) -> None:
        # Negative control: the same tasks without the decorator are seen
        # running together by the same check.
        inside: List[int] = []
        most = [0]
        mu = threading.Lock()
        both = threading.Barrier(2, timeout=10)

        @self.app.task
        def step(i: int) -> None:
            with mu:
                inside.append(i)
                most[0] = max(most[0], len(inside))
            both.wait()
            with mu:
                inside.remove(i)

        threads = [threading.Thread(target=step, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        self.assertEqual(most[0], 2)

    def test_held_elsewhere_raises_or_skips(self) -> None:
        name = unique("celery-held")
        ran: List[int] = []

        @self.app.task
        @seqd.locked(name, client=self.client)
        def strict(*, token: int) -> None:
            ran.append(token)

        @self.app.task
        @seqd.locked(name, client=self.client, skip_if_held=True)
        def lenient(*, token: int) -> str:
            ran.append(token)
            return "ran"

        with self.client.lock(name, ttl="10s"):
            with self.assertRaises(seqd.HeldError):
                strict.delay().get()
            self.assertIsNone(lenient.delay().get())
        self.assertEqual(ran, [], "a task ran while the lock was held elsewhere")
        self.assertEqual(lenient.delay().get(), "ran")

    def test_loss_while_running_fails_the_task(self) -> None:
        name = unique("celery-loss")
        client = self.client

        @self.app.task
        @seqd.locked(name, client=client, pass_lease=True)
        def fragile(*, lease: seqd.Lease) -> str:
            break_lease("lock", name)
            lease.lost.wait(10)
            return "done with a lost lock"

        with self.assertRaises(seqd.LostError):
            fragile.delay().get()

    def test_a_lock_name_from_the_arguments(self) -> None:
        prefix = unique("celery-volumes")
        client = self.client
        held: List[str] = []

        @self.app.task
        @seqd.locked(lambda volume: f"{prefix}/{volume}", client=client)
        def resize(volume: str, *, token: int) -> None:
            held.append(volume if client.status(f"{prefix}/{volume}").held else "not held")

        resize.delay("v1").get()
        resize.delay("v2").get()
        self.assertEqual(held, ["v1", "v2"])


@needs_daemon
class LockedFunctionTest(unittest.TestCase):
    def test_a_cron_job_from_the_environment(self) -> None:
        name = unique("cron")

        @seqd.locked(name, skip_if_held=True)
        def job(*, token: int) -> int:
            return token

        self.assertGreater(job(), 0)  # SEQD_ADDR names the harness's daemon

    def test_decorating_a_function_without_the_argument_is_refused(self) -> None:
        with self.assertRaisesRegex(TypeError, "takes no 'token' argument"):
            seqd.locked("x")(lambda: None)

    def test_a_coroutine_function_is_cancelled_at_the_loss(self) -> None:
        name = unique("aio-locked")
        done: List[str] = []

        @seqd.locked(name, pass_lease=True)
        async def job(*, lease: seqd.aio.Lease) -> None:
            await asyncio.get_running_loop().run_in_executor(None, break_lease, "lock", name)
            await asyncio.sleep(30)
            done.append("ran to the end")

        start = time.monotonic()
        with self.assertRaises(seqd.LostError):
            asyncio.run(job())
        self.assertEqual(done, [])
        self.assertLess(time.monotonic() - start, 15)

        @seqd.locked(name)
        async def fine(*, token: int) -> int:
            return token

        self.assertGreater(asyncio.run(fine()), 0)


if __name__ == "__main__":
    unittest.main()
