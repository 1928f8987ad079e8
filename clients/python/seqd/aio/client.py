"""The asyncio client: :class:`seqd.Client`'s operations as coroutines."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Set

from .. import _requests as rq
from .._durations import Duration, to_seconds
from .._requests import DEFAULT_TIMEOUT, Request, limit_arg, wait_secs
from ..errors import SeqdError
from ..types import CheckResult, ElectionStatus, LeaseInfo, LockStatus, MultiLeaseInfo, SemaphoreStatus
from ._http import AsyncTransport
from .lease import Leadership, Lease

log = logging.getLogger("seqd")


class Client(rq.Requests):
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

    def __init__(
        self,
        addr: Optional[str] = None,
        *,
        api_token_file: Optional[str] = None,
        cacert: Optional[str] = None,
        cert: Optional[str] = None,
        key: Optional[str] = None,
        owner: Optional[str] = None,
        timeout: Duration = DEFAULT_TIMEOUT,
    ) -> None:
        s = rq.settings(addr, api_token_file, cacert, cert, key, timeout)
        self.addr = s.addr
        self.timeout = s.timeout
        self._owner = owner
        self._transport = AsyncTransport(s.addr, s.token, s.context, s.timeout)
        self._tasks: Set["asyncio.Future[Any]"] = set()

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

    async def _call(self, req: Request) -> Any:
        t = (self.timeout if req.timeout is None else req.timeout) + req.wait
        _, doc = await self._transport.request(req.method, req.path, req.body, timeout=t, ok_statuses=req.ok_statuses, accept=req.accept)
        return req.decode(doc)

    # -- locks -----------------------------------------------------------

    async def acquire(
        self,
        name: str,
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        mode: Optional[str] = None,
        lock_delay: Optional[Duration] = None,
        timeout: Optional[Duration] = None,
    ) -> LeaseInfo:
        """As :meth:`seqd.Client.acquire`."""
        return await self._call(self.acquire_request(name, ttl, wait, owner, lease_id, mode, lock_delay, timeout))

    async def renew(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """As :meth:`seqd.Client.renew`."""
        return await self._call(self.renew_request("lock", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    async def release(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """As :meth:`seqd.Client.release`."""
        await self._call(self.release_request("lock", name, lease_id, token, rq.timeout_secs(timeout)))

    async def status(self, name: str, *, index: Optional[int] = None, wait: Optional[Duration] = None, lease_id: Optional[str] = None) -> LockStatus:
        """As :meth:`seqd.Client.status`."""
        return await self._call(self.status_request(name, index, wait, lease_id))

    async def leases(self) -> List[LeaseInfo]:
        """As :meth:`seqd.Client.leases`."""
        return await self._call(self.leases_request())

    async def check(self, sequencer: Optional[str] = None, *, name: Optional[str] = None, token: Optional[int] = None) -> CheckResult:
        """As :meth:`seqd.Client.check`."""
        req = self.check_request(sequencer, name, token)
        try:
            return await self._call(req)
        except SeqdError as e:
            if e.code == "bad_signature":
                return CheckResult(valid=False, current_token=None, code=e.code, error=e.message)
            raise

    async def ready(self) -> bool:
        """As :meth:`seqd.Client.ready`."""
        try:
            await self._call(Request("GET", "/readyz"))
        except SeqdError as e:
            if e.status == 503:
                return False
            raise
        return True

    # -- semaphores ------------------------------------------------------

    async def acquire_semaphore(
        self,
        name: str,
        limit: int,
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        timeout: Optional[Duration] = None,
    ) -> LeaseInfo:
        """As :meth:`seqd.Client.acquire_semaphore`."""
        return await self._call(self.acquire_semaphore_request(name, limit, ttl, wait, owner, lease_id, timeout))

    async def renew_semaphore(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """As :meth:`seqd.Client.renew_semaphore`."""
        return await self._call(self.renew_request("semaphore", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    async def release_semaphore(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """As :meth:`seqd.Client.release_semaphore`."""
        await self._call(self.release_request("semaphore", name, lease_id, token, rq.timeout_secs(timeout)))

    async def semaphore_status(self, name: str) -> SemaphoreStatus:
        """As :meth:`seqd.Client.semaphore_status`."""
        return await self._call(self.semaphore_status_request(name))

    # -- elections -------------------------------------------------------

    async def acquire_leadership(
        self,
        name: str,
        value: Optional[str] = None,
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        timeout: Optional[Duration] = None,
    ) -> LeaseInfo:
        """As :meth:`seqd.Client.acquire_leadership`."""
        return await self._call(self.acquire_leadership_request(name, value, ttl, wait, owner, lease_id, timeout))

    async def renew_leadership(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """As :meth:`seqd.Client.renew_leadership`."""
        return await self._call(self.renew_request("election", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    async def resign(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """As :meth:`seqd.Client.resign`."""
        await self._call(self.release_request("election", name, lease_id, token, rq.timeout_secs(timeout)))

    async def proclaim(self, name: str, lease_id: str, token: int, value: str) -> LeaseInfo:
        """As :meth:`seqd.Client.proclaim`."""
        return await self._call(self.proclaim_request(name, lease_id, token, value))

    async def election(self, name: str, index: Optional[int] = None, wait: Optional[Duration] = None) -> ElectionStatus:
        """As :meth:`seqd.Client.election`."""
        return await self._call(self.election_request(name, index, wait))

    async def observe(self, name: str, wait: Duration = "5m") -> AsyncIterator[ElectionStatus]:
        """The election's state now, then each new state, by blocking reads
        (``async for st in client.observe("scheduler")``)."""
        st = await self.election(name)
        yield st
        while True:
            nxt = await self.election(name, index=st.index, wait=wait)
            if nxt.index != st.index:
                yield nxt
            st = nxt

    # -- multi-locks -----------------------------------------------------

    async def acquire_multi(
        self,
        names: List[str],
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        lock_delay: Optional[Duration] = None,
        timeout: Optional[Duration] = None,
    ) -> MultiLeaseInfo:
        """As :meth:`seqd.Client.acquire_multi`."""
        return await self._call(self.acquire_multi_request(names, ttl, wait, owner, lease_id, lock_delay, timeout))

    async def renew_multi(self, lease: MultiLeaseInfo, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> MultiLeaseInfo:
        """As :meth:`seqd.Client.renew_multi`."""
        return await self._call(self.renew_multi_request(lease, ttl, timeout))

    async def release_multi(self, lease: MultiLeaseInfo, *, timeout: Optional[Duration] = None) -> None:
        """As :meth:`seqd.Client.release_multi`."""
        await self._call(self.release_multi_request(lease, timeout))

    async def multi_lock_status(self, lease_id: str) -> Dict[str, Any]:
        """As :meth:`seqd.Client.multi_lock_status`."""
        return await self._call(self.multi_lock_status_request(lease_id))

    # -- holding helpers -------------------------------------------------

    def lock(
        self,
        name: str,
        *,
        ttl: Duration = "15s",
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        mode: Optional[str] = None,
        lock_delay: Optional[Duration] = None,
        renew: bool = True,
        watch: bool = True,
        on_lost: Optional[Callable[[Lease], Any]] = None,
        cancel_on_loss: bool = False,
    ) -> Lease:
        """Hold a lock for the length of an ``async with`` block, as
        :meth:`seqd.Client.lock` holds one for a ``with`` block::

            async with client.lock("jobs/nightly", ttl="15s", wait="10s", cancel_on_loss=True) as lease:
                await step(fencing_token=lease.token)

        With ``cancel_on_loss`` the task in the block is cancelled when the
        lease is lost and the block raises the loss (:class:`LostError`)."""

        async def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return await self.acquire(name, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, mode=mode, lock_delay=lock_delay, timeout=timeout)

        return Lease(self, "lock", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, watch, on_lost, cancel_on_loss)

    def semaphore(
        self,
        name: str,
        limit: int,
        *,
        ttl: Duration = "15s",
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        renew: bool = True,
        on_lost: Optional[Callable[[Lease], Any]] = None,
        cancel_on_loss: bool = False,
    ) -> Lease:
        """Hold one of ``limit`` slots of a semaphore for an ``async with`` block."""
        limit = limit_arg(limit)

        async def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return await self.acquire_semaphore(name, limit, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, timeout=timeout)

        return Lease(self, "semaphore", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, False, on_lost, cancel_on_loss)

    def campaign(
        self,
        name: str,
        value: Optional[str] = None,
        *,
        ttl: Duration = "15s",
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        renew: bool = True,
        watch: bool = True,
        on_lost: Optional[Callable[[Lease], Any]] = None,
        cancel_on_loss: bool = False,
    ) -> Leadership:
        """Lead an election for an ``async with`` block; leaving it resigns."""

        async def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return await self.acquire_leadership(name, value, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, timeout=timeout)

        return Leadership(self, "election", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, watch, on_lost, cancel_on_loss)

    # -- what the leases use ----------------------------------------------

    async def _renew(self, kind: str, name: str, lease_id: str, token: int, timeout: Optional[float]) -> LeaseInfo:
        return await self._call(self.renew_request(kind, name, lease_id, token, None, timeout))

    async def _release(self, kind: str, name: str, lease_id: str, token: int, timeout: Optional[float]) -> None:
        await self._call(self.release_request(kind, name, lease_id, token, timeout))

    async def _watch(self, kind: str, name: str, index: Optional[int], wait: float, lease_id: str) -> Any:
        return await self._call(self.watch_request(kind, name, index, wait, lease_id))

    async def _live(self, kind: str, name: str, lease_id: str) -> Optional[Dict[str, Any]]:
        """The state of ``name`` if ``lease_id`` is a live lease on it at
        this daemon (its status read then carries a positive
        ``safe_for_ms``), else ``None``."""
        doc = await self._call(rq.get_request(rq.path(kind, name), {"lease_id": lease_id}, 0.0, rq.as_is))
        ms = doc.get("safe_for_ms")
        return doc if isinstance(ms, int) and not isinstance(ms, bool) and ms > 0 else None


__all__ = ["Client"]
