"""Holding a lease from asyncio: a renewal task, the loss event, release at
the end, and the holder's task cancelled on loss when asked.

The rules (when to renew, what an answer means, when the lease is lost)
are :class:`seqd._lease.LeaseMachine`'s, the same as the blocking lease's;
this module runs them on tasks of one event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, List, Literal, Optional, Tuple, TypeVar, Union

from .._lease import WATCH_AFTER, Attempts, Leader, LeaseMachine, Stop, Watching
from .._operations import Hold
from .._requests import Request, T
from ..errors import LostError, SeqdError
from ..types import LeaseInfo

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("seqd")

_mono = time.monotonic

_L = TypeVar("_L", bound="Lease")


class LostSignal(asyncio.Event):
    """An :class:`asyncio.Event` that is set when its lease is lost.

    ``is_set()`` is also true as soon as the lease's local deadline has
    passed, before the renewal task has had a chance to run, and ``await
    lost.wait()`` returns by that deadline at the latest, whatever the
    renewal is doing: a lease is never reported live past the time it
    could have expired.
    """

    def __init__(self, lease: "Lease") -> None:
        super().__init__()
        self._lease = lease

    def is_set(self) -> bool:
        return super().is_set() or self._lease._past_deadline()

    async def wait(self) -> "Literal[True]":
        while not self.is_set():
            left = self._lease._deadline_left(_mono())
            if left is None:
                await super().wait()
                break
            try:
                await asyncio.wait_for(super().wait(), left)
            except asyncio.TimeoutError:
                pass
        return True


class Lease(LeaseMachine):
    """A lease held for an ``async with`` block (:meth:`Client.lock`,
    :meth:`Client.semaphore`; :class:`Leadership` for elections).

    Entering the block acquires it; a task renews it every TTL/3 (and, for
    locks and elections, a blocking read of its state notices a loss within
    milliseconds); leaving the block releases it, also on an exception or a
    cancellation. The rules of loss are those of :class:`seqd.Lease`:
    :attr:`lost` is set, :attr:`lost_error` says why, and ``on_lost`` is
    called from the renewal task.

    With ``cancel_on_loss`` the task that entered the block is cancelled
    when the lease is lost, and the block then raises the
    :attr:`lost_error` (a :class:`LostError` or :class:`StaleTokenError`)
    instead of :class:`asyncio.CancelledError`, as ``asyncio.timeout``
    turns its cancellation into :class:`TimeoutError`. A cancellation from
    elsewhere still propagates as a cancellation.
    """

    _client: "Client"

    def __init__(self, client: "Client", hold: Hold, cancel_on_loss: bool) -> None:
        super().__init__(client, hold)
        self.lost = LostSignal(self)
        """Set when the lease is lost."""
        self._cancel_on_loss = cancel_on_loss
        self._wake = asyncio.Event()  # a poke or the end
        self._tasks: List["asyncio.Task[None]"] = []
        self._holder: Optional["asyncio.Task[Any]"] = None
        self._cancelled_holder = False

    def _notify(self) -> None:
        self._wake.set()

    def _interrupt(self) -> None:
        for t in self._tasks:
            if t is not asyncio.current_task():
                t.cancel()  # the watcher's blocking read
        holder = self._holder
        if holder is not None and not holder.done():
            self._cancelled_holder = True
            holder.cancel()

    def _called_back(self, result: Any) -> None:
        if asyncio.iscoroutine(result):
            self._client._background(result)

    async def _try(self, req: Request[T]) -> Union[T, SeqdError]:
        """The answer to ``req``, or the error it got."""
        try:
            return await self._client._send(req)
        except SeqdError as e:
            return e

    async def safe_for(self, ask: bool = True) -> float:
        """Seconds the lease is guaranteed to hold (0 when lost or ended),
        as :meth:`seqd.Lease.safe_for`."""
        req, sent = self._safe_for_request(ask), _mono()
        return self._safe_local() if req is None else self._safe_for_answer(await self._try(req), sent)

    async def check(self) -> Any:
        """Ask the daemon whether this lease's token is the lock's current one."""
        return await self._client.check(self.sequencer)

    # -- acquire --------------------------------------------------------------

    async def __aenter__(self: _L) -> _L:
        await self.acquire()
        if self._cancel_on_loss:
            self._holder = asyncio.current_task()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Optional[bool]:
        self._holder = None
        await self.release()
        if self._cancelled_holder and exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            task = asyncio.current_task()
            uncancel = getattr(task, "uncancel", None)
            # Only our own cancellation becomes the loss; one from elsewhere
            # (Python 3.11 counts them) still propagates.
            if uncancel is None or uncancel() == 0:
                err = self.lost_error or LostError(f"the lease on {self.kind} {self.name!r} was lost", code="lost")
                raise err from exc
        return None

    async def acquire(self: _L) -> _L:
        """Acquire the lease (waiting as the helper was told) and start
        renewing it; raises as :meth:`seqd.Lease.acquire`. Cancelling the
        calling task withdraws the request: the daemon deletes a waiting
        contender, and a grant that crossed the cancellation is released."""
        attempts = self._begin_acquire()
        try:
            info, sent = await self._acquire_retrying(attempts)
            if self._needs_confirm(sent):
                info, sent = await self._confirm(info, sent)
        except asyncio.CancelledError:
            self._acquire_failed()
            self._client._background(self._withdraw(attempts.lease_id))
            raise
        except BaseException:
            self._acquire_failed()
            raise
        self._granted(info, sent)
        self._tasks.append(asyncio.ensure_future(self._run_renewer()))
        if self._watch_enabled:
            self._tasks.append(asyncio.ensure_future(self._run_watcher()))
        return self

    async def _acquire_retrying(self, attempts: Attempts) -> Tuple[LeaseInfo, float]:
        while True:
            sent = _mono()
            got = await self._try(attempts.request(sent))
            if isinstance(got, LeaseInfo):
                return got, sent
            await asyncio.sleep(attempts.after(got, _mono()))

    async def _confirm(self, info: LeaseInfo, acquired: float) -> Tuple[LeaseInfo, float]:
        sent = _mono()
        fresh = await self._try(self._confirm_request(info, acquired, sent))
        if not isinstance(fresh, SeqdError):
            return fresh, sent
        release = self._unconfirmed(info, fresh)
        if release is not None:
            await self._try(release)
        raise fresh

    async def _withdraw(self, lease_id: str) -> None:
        """After a cancelled acquire: if the daemon granted the lease all the
        same (the grant crossed the cancellation), release it."""
        live, retry = self._withdraw_requests(lease_id)
        try:
            if await self._client._send(live) is None:
                return
            info = await self._client._send(retry)  # the same lease: an idempotent retry
            await self._client._send(self._client.release_request(self.kind, self.name, lease_id, info.token, None))
            log.info("seqd: released %s %r, granted to a cancelled acquire", self.kind, self.name)
        except SeqdError as e:
            log.debug("seqd: withdrawing a cancelled acquire of %s %r: %s", self.kind, self.name, e)

    # -- renew and watch --------------------------------------------------

    async def _sleep_until(self, when: float) -> None:
        """Sleep until ``when`` (monotonic), a poke or the end, whichever is first."""
        left = when - _mono()
        if left > 0:
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                pass
        self._wake.clear()

    async def _run_renewer(self) -> None:
        try:
            next_at = self._sent + self.renew_interval
            while True:
                wake = self._renew_due(next_at)
                if wake is not None:
                    await self._sleep_until(wake)
                    continue
                sent = _mono()
                fresh = await self._try(self._renew_request(sent))
                next_at = self._renewed(fresh, sent)
        except (Stop, asyncio.CancelledError):
            return
        except BaseException as e:
            self._renewer_failed(e)

    async def _pause(self, secs: float) -> bool:
        """Sleep ``secs`` or until the lease ends; say whether it ended."""
        end = _mono() + secs
        while not self._stopping and _mono() < end:
            await self._sleep_until(end)
        return self._stopping

    async def _run_watcher(self) -> None:
        if await self._pause(WATCH_AFTER):
            return
        w = Watching(self.renew_interval)
        try:
            while True:
                pause = self._watched(w, await self._try(self._watch_request(w)))
                if pause is not None:
                    await self._pause(pause)
        except (Stop, asyncio.CancelledError):
            return
        except BaseException:
            self._watcher_failed()

    # -- release --------------------------------------------------------------

    async def release(self) -> bool:
        """Stop renewing and release the lease; say whether this call
        released it at the daemon. As :meth:`seqd.Lease.release`: never
        raises a :class:`SeqdError`. The release itself is shielded from a
        cancellation of the caller, so that a cancelled holder still hands
        the lock on at once."""
        self._holder = None
        was_lost = self._begin_release()
        if was_lost is None:
            return False
        for t in self._tasks:
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if was_lost:
            return False
        done = asyncio.ensure_future(self._try(self._release_request()))
        try:
            return self._released(await asyncio.shield(done))
        except asyncio.CancelledError:
            done.add_done_callback(lambda f: f.cancelled() or self._released(f.result()))
            self._client._track(done)  # it finishes on its own
            raise


class Leadership(Lease, Leader):
    """A lease on an election's leadership (:meth:`Client.campaign`): its
    token is the leader's :attr:`term`. Leaving the block resigns."""

    async def proclaim(self, value: str) -> LeaseInfo:
        """Publish a new value as the leader, keeping the term."""
        return await self._client._send(self._proclaim_request(value))

    async def resign(self) -> bool:
        """Step down (the same as :meth:`release`)."""
        return await self.release()
