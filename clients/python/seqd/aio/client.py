"""The asyncio client: :class:`seqd.Client`'s operations as coroutines."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Awaitable, Callable, Optional, Set

from .. import _requests as rq
from .._durations import Duration
from .._operations import Async, Observation, Operations, T
from .._requests import Request
from ..errors import SeqdError
from ..types import ElectionStatus
from ._http import AsyncTransport
from .lease import Leadership, Lease

log = logging.getLogger("seqd")


class Client(Operations, Async):
    """A client of one seqd daemon for asyncio code: the operations of
    :class:`seqd.Client`, under the same names, as coroutines::

        client = seqd.aio.Client()
        async with client.lock("jobs/nightly", ttl="15s", wait="10s") as lease:
            await write(resource, fencing_token=lease.token)

    It takes the same arguments and reads the same environment
    (``SEQD_ADDR``, ``SEQD_API_TOKEN_FILE``, ``SEQD_CACERT``,
    ``SEQD_CERT``, ``SEQD_KEY``), and accepts an answer by the same rules.
    Every request is bounded (connecting, sending, the first byte and the
    whole answer together, within its wait plus ``timeout``) and gives way
    to a cancellation at once: ``asyncio.timeout`` and ``asyncio.wait_for``
    around a call end it, and a cancelled acquire is withdrawn at the
    daemon. Use one client from one event loop; close it with
    ``await client.aclose()`` (or ``async with seqd.aio.Client() as
    client``).
    """

    _tasks: Set["asyncio.Future[Any]"]

    def _connect(self, settings: rq.Settings) -> AsyncTransport:
        self._tasks = set()
        return AsyncTransport(settings.addr, settings.token, settings.context, settings.timeout)

    def __repr__(self) -> str:
        return f"seqd.aio.Client({self.addr!r})"

    async def aclose(self) -> None:
        """Wait for the client's own background work (releases of leases
        whose holder was cancelled) and close its idle connections. The
        client stays usable."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self._transport.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def _track(self, fut: "asyncio.Future[Any]") -> None:
        self._tasks.add(fut)
        fut.add_done_callback(self._tasks.discard)

    def _background(self, coro: Awaitable[Any]) -> None:
        self._track(asyncio.ensure_future(coro))

    async def _send(self, req: Request[T]) -> T:
        try:
            _, doc = await self._transport.request(req.method, req.path, req.body, timeout=req.seconds(self.timeout), ok_statuses=req.ok_statuses, accept=req.accept)
        except SeqdError as e:
            return req.failed(e)
        return req.answer(doc)

    async def observe(self, name: str, wait: Duration = "5m") -> AsyncIterator[ElectionStatus]:
        """The election's state now, then each new state, by blocking reads
        (``async for st in client.observe("scheduler")``)."""
        seen = Observation(self, name, wait)
        while True:
            st = seen.seen(await self._send(seen.request()))
            if st is not None:
                yield st

    # -- holding helpers -------------------------------------------------

    def lock(self, name: str, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, mode: Optional[str] = None, lock_delay: Optional[Duration] = None, renew: bool = True, watch: bool = True, on_lost: Optional[Callable[[Lease], Any]] = None, cancel_on_loss: bool = False) -> Lease:
        """Hold a lock for the length of an ``async with`` block, as
        :meth:`seqd.Client.lock` holds one for a ``with`` block::

            async with client.lock("jobs/nightly", ttl="15s", wait="10s", cancel_on_loss=True) as lease:
                await step(fencing_token=lease.token)

        With ``cancel_on_loss`` the task in the block is cancelled when the
        lease is lost and the block raises the loss (:class:`LostError`)."""

        return Lease(self, self._lock_hold(name, ttl, wait, owner, mode, lock_delay, renew, watch, on_lost), cancel_on_loss)

    def semaphore(self, name: str, limit: int, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, renew: bool = True, on_lost: Optional[Callable[[Lease], Any]] = None, cancel_on_loss: bool = False) -> Lease:
        """Hold one of ``limit`` slots of a semaphore for an ``async with`` block."""
        return Lease(self, self._semaphore_hold(name, limit, ttl, wait, owner, renew, on_lost), cancel_on_loss)

    def campaign(self, name: str, value: Optional[str] = None, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, renew: bool = True, watch: bool = True, on_lost: Optional[Callable[[Lease], Any]] = None, cancel_on_loss: bool = False) -> Leadership:
        """Lead an election for an ``async with`` block; leaving it resigns."""

        return Leadership(self, self._campaign_hold(name, value, ttl, wait, owner, renew, watch, on_lost), cancel_on_loss)


__all__ = ["Client"]
