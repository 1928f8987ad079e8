"""Holding a lease from asyncio: a renewal task, the loss event, release at
the end, and the holder's task cancelled on loss when asked."""

from __future__ import annotations

import asyncio
import datetime
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, List, Literal, Optional, Tuple, TypeVar

from ..errors import HeldError, LostError, ProtocolError, SeqdError, StaleTokenError, UnavailableError
from ..lease import _MAX_WAIT, _WATCH_AFTER, _WATCH_WAIT, expired_error, protocol_loss, retry_delay, suspicious
from ..types import LeaseInfo, LockStatus

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("seqd")

_mono = time.monotonic

_L = TypeVar("_L", bound="Lease")

# What acquires a lease: (wait, lease id, timeout) -> the grant.
AcquireFn = Callable[[float, str, float], Awaitable[LeaseInfo]]


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


class Lease:
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

    def __init__(
        self,
        client: "Client",
        kind: str,
        name: str,
        acquire: AcquireFn,
        ttl: float,
        wait: float,
        renew: bool,
        watch: bool,
        on_lost: Optional[Callable[["Lease"], Any]],
        cancel_on_loss: bool,
    ) -> None:
        self._client = client
        self.kind = kind
        """``"lock"``, ``"semaphore"`` or ``"election"``."""
        self.name = name
        self.ttl = ttl
        """Seconds the lease lives without a renewal."""
        self.renew_interval = ttl / 3
        """Seconds between renewals: a third of the TTL."""
        self._acquire_fn = acquire
        self._wait = wait
        self._renew_enabled = renew
        self._watch_enabled = watch and renew
        self._on_lost = on_lost
        self._cancel_on_loss = cancel_on_loss
        self.info: Optional[LeaseInfo] = None
        """The daemon's last answer for this lease (acquire or renew)."""
        self.lost = LostSignal(self)
        """Set when the lease is lost."""
        self._lost_error: Optional[SeqdError] = None
        self.last_error: Optional[SeqdError] = None
        """The last failed renewal or release, if the latest one failed."""
        self.renewals = 0
        """How many renewals the daemon confirmed."""
        self.released = False
        """Whether :meth:`release` ended the lease at the daemon."""
        self._state = "new"  # new, acquiring, held, ended
        self._deadline = 0.0
        self._sent = 0.0
        self._poke = asyncio.Event()
        self._stop = asyncio.Event()
        self._tasks: List["asyncio.Task[None]"] = []
        self._holder: Optional["asyncio.Task[Any]"] = None
        self._cancelled_holder = False

    # -- what the holder reads --------------------------------------------

    def _need(self) -> LeaseInfo:
        if self.info is None:
            raise RuntimeError("the lease has not been acquired: use it in an async with block or await acquire()")
        return self.info

    @property
    def token(self) -> int:
        """The fencing token (an exact 64-bit integer)."""
        return self._need().token

    @property
    def sequencer(self) -> str:
        """The sequencer string to pass to a resource, unchanged."""
        return self._need().sequencer

    @property
    def lease_id(self) -> str:
        """The lease's id (keep it secret: with the token it releases the lease)."""
        return self._need().lease_id

    @property
    def owner(self) -> str:
        return self._need().owner

    @property
    def expires_at(self) -> Optional[datetime.datetime]:
        """When the daemon ends the lease unless renewed, on its clock."""
        return self._need().expires_at

    @property
    def deadline(self) -> float:
        """The local deadline on :func:`time.monotonic`'s clock."""
        return self._deadline

    @property
    def held(self) -> bool:
        """Acquired, not released, not lost."""
        return self._state == "held" and not self.lost.is_set()

    def _deadline_left(self, now: float) -> Optional[float]:
        if self._state != "held":
            return None
        return max(0.0, self._deadline - now) + 0.001

    def _past_deadline(self) -> bool:
        return self._state == "held" and _mono() >= self._deadline

    @property
    def lost_error(self) -> Optional[SeqdError]:
        """Why the lease was lost (``None`` while it is not)."""
        err = self._lost_error
        if err is None and self._past_deadline():
            err = expired_error(self.kind, self.name, self.last_error)
        return err

    def raise_if_lost(self) -> None:
        """Raise the :attr:`lost_error` if the lease is lost."""
        err = self.lost_error
        if err is not None:
            raise err

    async def safe_for(self, ask: bool = True) -> float:
        """Seconds the lease is guaranteed to hold (0 when lost or ended),
        as :meth:`seqd.Lease.safe_for`."""
        local = max(0.0, self._deadline - _mono()) if self.held else 0.0
        if not ask or self.kind != "lock" or local == 0.0:
            return local
        sent = _mono()
        try:
            st = await self._client.status(self.name, lease_id=self.lease_id)
        except SeqdError as e:
            log.debug("seqd: safe_for of %s %r: %s", self.kind, self.name, e)
            return 0.0
        if st.safe_for is None:
            return 0.0
        remote = st.safe_for - (_mono() - sent)
        local = max(0.0, self._deadline - _mono()) if self.held else 0.0
        return max(0.0, min(local, remote))

    async def check(self) -> Any:
        """Ask the daemon whether this lease's token is the lock's current one."""
        return await self._client.check(self.sequencer)

    def __repr__(self) -> str:
        if self.info is None:
            return f"<seqd.aio.{type(self).__name__} {self.kind} {self.name!r} {self._state}>"
        state = "lost" if self.lost.is_set() else self._state
        return f"<seqd.aio.{type(self).__name__} {self.kind} {self.name!r} token={self.info.token} {state}>"

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
        if self._state != "new":
            raise RuntimeError("a Lease is acquired once; ask the client for a new one")
        self._state = "acquiring"
        # The lease id is chosen here, so that an acquire retried after an
        # answer that never arrived finds the lease it created.
        lease_id = secrets.token_hex(16)
        try:
            info, sent = await self._acquire_retrying(lease_id)
            if self._renew_enabled and _mono() - sent > self.renew_interval / 2:
                # A long wait: renew now to measure the deadline from a fresh send.
                info, sent = await self._confirm(info, sent)
        except asyncio.CancelledError:
            self._state = "ended"
            self._client._background(self._withdraw(lease_id))
            raise
        except BaseException:
            self._state = "ended"
            raise
        self.info = info
        self._sent = sent
        self._deadline = sent + (info.ttl or self.ttl)
        self._state = "held"
        self._tasks.append(asyncio.ensure_future(self._run_renewer()))
        if self._watch_enabled and self.kind in ("lock", "election"):
            self._tasks.append(asyncio.ensure_future(self._run_watcher()))
        return self

    async def _acquire_retrying(self, lease_id: str) -> Tuple[LeaseInfo, float]:
        give_up = _mono() + self._wait
        delay = retry_delay(self.renew_interval)
        while True:
            left = max(0.0, give_up - _mono())
            sent = _mono()
            try:
                return await self._acquire_fn(round(min(left, _MAX_WAIT), 3), lease_id, self._client.timeout), sent
            except HeldError:
                if _mono() >= give_up - 0.001:
                    raise
            except UnavailableError as e:
                if _mono() + delay >= give_up:
                    raise
                log.warning("seqd: acquire %s %r: %s; trying again", self.kind, self.name, e)
                await asyncio.sleep(delay)

    async def _confirm(self, info: LeaseInfo, acquired: float) -> Tuple[LeaseInfo, float]:
        sent = _mono()
        timeout = min(self._client.timeout, max(1.0, acquired + (info.ttl or self.ttl) - sent))
        try:
            return await self._client._renew(self.kind, self.name, info.lease_id, info.token, timeout), sent
        except (LostError, StaleTokenError, ProtocolError):
            raise
        except SeqdError:
            try:
                await self._client._release(self.kind, self.name, info.lease_id, info.token, None)
            except SeqdError:
                pass
            raise

    async def _withdraw(self, lease_id: str) -> None:
        """After a cancelled acquire: if the daemon granted the lease all the
        same (the grant crossed the cancellation), release it."""
        try:
            live = await self._client._live(self.kind, self.name, lease_id)
            if live is None:
                return
            info = await self._acquire_fn(0.0, lease_id, self._client.timeout)  # the same lease: an idempotent retry
            await self._client._release(self.kind, self.name, lease_id, info.token, None)
            log.info("seqd: released %s %r, granted to a cancelled acquire", self.kind, self.name)
        except SeqdError as e:
            log.debug("seqd: withdrawing a cancelled acquire of %s %r: %s", self.kind, self.name, e)

    # -- renew and watch --------------------------------------------------

    async def _sleep_until(self, when: float) -> None:
        """Sleep until ``when`` (monotonic), a poke or the stop, whichever is first."""
        left = when - _mono()
        if left <= 0 or self._poke.is_set() or self._stop.is_set():
            return
        waits = [asyncio.ensure_future(self._poke.wait()), asyncio.ensure_future(self._stop.wait())]
        try:
            await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _run_renewer(self) -> None:
        try:
            await self._renew_loop()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # a bug: never leave a lease reported live
            log.exception("seqd: the renewer of %s %r failed", self.kind, self.name)
            self._lose(SeqdError(f"the renewer failed: {e!r}", code="internal"))

    async def _renew_loop(self) -> None:
        interval = self.renew_interval
        retry = retry_delay(interval)
        next_at = self._sent + interval
        info = self._need()
        while True:
            while True:
                if self._stop.is_set():
                    return
                now = _mono()
                if now >= self._deadline:
                    break
                if self._renew_enabled and (self._poke.is_set() or now >= next_at):
                    break
                await self._sleep_until(min(next_at, self._deadline) if self._renew_enabled else self._deadline)
            self._poke.clear()
            deadline = self._deadline
            sent = _mono()
            if sent >= deadline:
                self._lose(expired_error(self.kind, self.name, self.last_error))
                return
            try:
                fresh = await self._client._renew(self.kind, self.name, info.lease_id, info.token, max(0.05, min(self._client.timeout, deadline - sent)))
            except (LostError, StaleTokenError) as e:
                self._lose(e)
                return
            except ProtocolError as e:
                self._lose(protocol_loss(self.kind, self.name, e))
                return
            except SeqdError as e:
                self.last_error = e
                log.debug("seqd: renew %s %r: %s", self.kind, self.name, e)
                next_at = _mono() + retry
                continue
            if self._stop.is_set():
                return
            self.info = fresh
            self._deadline = sent + (fresh.ttl or self.ttl)
            self.renewals += 1
            self.last_error = None
            next_at = sent + interval

    async def _run_watcher(self) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), _WATCH_AFTER)
            return
        except asyncio.TimeoutError:
            pass
        retry = retry_delay(self.renew_interval)
        backoff = retry
        index: Optional[int] = None
        last_token: Optional[int] = None
        info = self._need()
        while not self._stop.is_set():
            try:
                st = await self._client._watch(self.kind, self.name, index, _WATCH_WAIT, info.lease_id)
            except SeqdError as e:
                if e.status is not None and 400 <= e.status < 500:
                    log.warning("seqd: no blocking read of %s %r: %s", self.kind, self.name, e)
                    return
                index = None
                self._poke.set()  # the daemon failed: renew now to learn where the lease stands
                await self._sleep_until_stop(backoff)
                backoff = min(backoff * 2, max(retry, self.renew_interval))
                continue
            backoff = retry
            if suspicious(st, info.token, last_token, self.info is not None and self.info.mode == "shared"):
                self._poke.set()
            index = st.index
            if isinstance(st, LockStatus):
                last_token = st.token

    async def _sleep_until_stop(self, secs: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), secs)
        except asyncio.TimeoutError:
            pass

    def _lose(self, err: SeqdError, notify: bool = True) -> None:
        if self._lost_error is not None:
            return
        self._lost_error = err
        self._stop.set()
        self.lost.set()
        for t in self._tasks:
            if t is not asyncio.current_task():
                t.cancel()  # the watcher's blocking read
        log.warning("seqd: lost the lease on %s %r (token %s): %s", self.kind, self.name, self.info.token if self.info else "?", err)
        holder = self._holder
        if holder is not None and not holder.done():
            self._cancelled_holder = True
            holder.cancel()
        if notify and self._on_lost is not None:
            try:
                r = self._on_lost(self)
                if asyncio.iscoroutine(r):
                    self._client._background(r)
            except Exception:
                log.exception("seqd: on_lost of %s %r raised", self.kind, self.name)

    # -- release --------------------------------------------------------------

    async def release(self) -> bool:
        """Stop renewing and release the lease; say whether this call
        released it at the daemon. As :meth:`seqd.Lease.release`: never
        raises a :class:`SeqdError`. The release itself is shielded from a
        cancellation of the caller, so that a cancelled holder still hands
        the lock on at once."""
        if self._state != "held":
            return False
        expired = self._lost_error is None and _mono() >= self._deadline
        was_lost = self._lost_error is not None or expired
        self._state = "ended"
        self._holder = None
        self._stop.set()
        if expired:
            self._lose(expired_error(self.kind, self.name, self.last_error), notify=False)
        for t in self._tasks:
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if was_lost:
            return False
        info = self._need()
        left = self._deadline - _mono()
        done = asyncio.ensure_future(self._release_at_daemon(info, max(0.2, min(self._client.timeout, left))))
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            self._client._track(done)  # it finishes on its own
            raise

    async def _release_at_daemon(self, info: LeaseInfo, timeout: float) -> bool:
        try:
            await self._client._release(self.kind, self.name, info.lease_id, info.token, timeout)
        except (LostError, StaleTokenError) as e:
            self._lose(e, notify=False)
            return False
        except SeqdError as e:
            self.last_error = e
            log.warning("seqd: release of %s %r failed (%s); the daemon ends the lease at its TTL", self.kind, self.name, e)
            return False
        self.released = True
        return True


class Leadership(Lease):
    """A lease on an election's leadership (:meth:`Client.campaign`): its
    token is the leader's :attr:`term`. Leaving the block resigns."""

    @property
    def term(self) -> int:
        """The leadership's term: strictly higher for each new leader."""
        return self.token

    async def proclaim(self, value: str) -> LeaseInfo:
        """Publish a new value as the leader, keeping the term."""
        info = self._need()
        return await self._client.proclaim(self.name, info.lease_id, info.token, value)

    async def resign(self) -> bool:
        """Step down (the same as :meth:`release`)."""
        return await self.release()

