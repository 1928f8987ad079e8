"""Every operation of a client, written once for the blocking client and the
asyncio one.

An operation builds its :class:`~seqd._requests.Request` (what to send,
what answer to accept, how to read it) and does no I/O. The
:class:`operation` descriptor makes it a method of each client: on a
:class:`Blocking` client the method sends the request and returns the
answer, on an :class:`Async` client it is a coroutine function that does
the same. Names, arguments, defaults and documentation are therefore one
text for both clients.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, Generic, List, Optional, TypeVar, overload

from . import _requests as rq
from ._durations import Duration, to_seconds
from ._requests import DEFAULT_TIMEOUT, Request, T, limit_arg, wait_secs
from .types import CheckResult, ElectionStatus, LeaseInfo, LockStatus, MultiLeaseInfo, SemaphoreStatus

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Concatenate, ParamSpec

    P = ParamSpec("P")
else:
    P = TypeVar("P")



class Blocking:
    """A client whose operations return their answers."""

    def _send(self, req: Request[T]) -> T:
        raise NotImplementedError


class Async:
    """A client whose operations are coroutines."""

    async def _send(self, req: Request[T]) -> T:
        raise NotImplementedError


class operation(Generic[P, T]):
    """An operation of every client, from the function that builds its
    request: a method that sends it on a :class:`Blocking` client, a
    coroutine function on an :class:`Async` one."""

    def __init__(self, build: "Callable[Concatenate[Any, P], Request[T]]") -> None:
        self._build = build
        functools.update_wrapper(self, build)
        # What help() shows: the arguments after self, and the answer.
        sig = inspect.signature(build)
        answer = sig.return_annotation
        if isinstance(answer, str) and answer.startswith("Request[") and answer.endswith("]"):
            answer = answer[len("Request[") : -1]
        self._signature = sig.replace(parameters=list(sig.parameters.values())[1:], return_annotation=answer)

    @overload
    def __get__(self, client: None, owner: Any) -> "operation[P, T]": ...

    @overload
    def __get__(self, client: Blocking, owner: Any) -> "Callable[P, T]": ...

    @overload
    def __get__(self, client: Async, owner: Any) -> "Callable[P, Awaitable[T]]": ...

    def __get__(self, client: Any, owner: Any) -> Any:
        if client is None:
            return self
        build = self._build
        if isinstance(client, Async):

            async def call(*args: Any, **kwargs: Any) -> Any:
                return await client._send(build(client, *args, **kwargs))

        else:

            def call(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                return client._send(build(client, *args, **kwargs))

        functools.update_wrapper(call, build)
        call.__signature__ = self._signature  # type: ignore[attr-defined]
        return call


class Hold:
    """What a holding helper (``lock``, ``semaphore``, ``campaign``) was
    asked for: the lease to acquire and how to keep it."""

    def __init__(
        self,
        kind: str,
        name: str,
        acquire: Callable[[float, str, float], Request[LeaseInfo]],
        ttl: Duration,
        wait: Optional[Duration],
        renew: bool,
        watch: bool,
        on_lost: Optional[Callable[[Any], Any]],
    ) -> None:
        self.kind, self.name, self.acquire = kind, name, acquire
        self.ttl = to_seconds(ttl, "ttl")
        self.wait = wait_secs(wait)
        self.renew, self.watch, self.on_lost = renew, watch, on_lost


class Operations(rq.Requests):
    """The operations of a client of one daemon (see :class:`seqd.Client`)."""

    addr: str
    timeout: float

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
        self._transport = self._connect(s)

    def _connect(self, settings: rq.Settings) -> Any:
        """The client's transport to the daemon."""
        raise NotImplementedError

    # -- locks -----------------------------------------------------------

    @operation
    def acquire(
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
    ) -> Request[LeaseInfo]:
        """``POST /v1/locks/{name}/acquire``: one acquire, nothing renews it.

        ``ttl`` defaults to the daemon's 15s; ``wait`` to 0 (try once).
        ``lease_id`` (32 lowercase hex digits; a random one by default)
        makes it retryable; ``mode`` is ``"exclusive"`` or ``"shared"``.
        Raises :class:`HeldError` when not granted within ``wait``, and
        :class:`ProtocolError` for an answer that is not a well-formed
        lease of this name and lease id. Use :meth:`lock` to hold a lock.
        """
        return self.acquire_request(name, ttl, wait, owner, lease_id, mode, lock_delay, timeout)

    @operation
    def renew(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> Request[LeaseInfo]:
        """``POST /v1/locks/{name}/renew``: extend a lease by its TTL (or a new
        ``ttl``). Raises :class:`LostError` or :class:`StaleTokenError` when
        the lease has ended."""
        return self.renew_request("lock", name, lease_id, token, ttl, rq.timeout_secs(timeout))

    @operation
    def release(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> Request[None]:
        """``POST /v1/locks/{name}/release``: end a lease, handing the lock on."""
        return self.release_request("lock", name, lease_id, token, rq.timeout_secs(timeout))

    @operation
    def status(self, name: str, *, index: Optional[int] = None, wait: Optional[Duration] = None, lease_id: Optional[str] = None) -> Request[LockStatus]:
        """``GET /v1/locks/{name}``: the lock's holder, token and queue.

        With ``index`` (from an earlier status) it is a blocking read: it
        answers once the state differs from that index, or when ``wait``
        (default 5m) has passed. With the holder's own ``lease_id`` the
        answer carries ``safe_for``.
        """
        return self.status_request(name, index, wait, lease_id)

    @operation
    def leases(self) -> Request[List[LeaseInfo]]:
        """``GET /v1/locks``: the live leases held through this daemon
        (without their lease ids)."""
        return self.leases_request()

    @operation
    def check(self, sequencer: Optional[str] = None, *, name: Optional[str] = None, token: Optional[int] = None) -> Request[CheckResult]:
        """``POST /v1/check``: is this the current holder's token?

        Give the ``sequencer`` string a holder passed on (unchanged), or
        ``name`` and ``token``. Returns a :class:`CheckResult` whether the
        answer is yes (200) or no (409 ``stale_token`` or ``not_held``, 403
        ``bad_signature``); raises for other failures.
        """
        return self.check_request(sequencer, name, token)

    @operation
    def ready(self) -> Request[bool]:
        """``GET /readyz``: whether the daemon's ZooKeeper session is connected."""
        return rq.ready_request()

    # -- semaphores ------------------------------------------------------

    @operation
    def acquire_semaphore(
        self,
        name: str,
        limit: int,
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        timeout: Optional[Duration] = None,
    ) -> Request[LeaseInfo]:
        """``POST /v1/semaphores/{name}/acquire``: one of ``limit`` slots.
        Every holder must name the same limit."""
        return self.acquire_semaphore_request(name, limit, ttl, wait, owner, lease_id, timeout)

    @operation
    def renew_semaphore(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> Request[LeaseInfo]:
        """``POST /v1/semaphores/{name}/renew``."""
        return self.renew_request("semaphore", name, lease_id, token, ttl, rq.timeout_secs(timeout))

    @operation
    def release_semaphore(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> Request[None]:
        """``POST /v1/semaphores/{name}/release``."""
        return self.release_request("semaphore", name, lease_id, token, rq.timeout_secs(timeout))

    @operation
    def semaphore_status(self, name: str) -> Request[SemaphoreStatus]:
        """``GET /v1/semaphores/{name}``: how many hold it now."""
        return self.semaphore_status_request(name)

    # -- elections -------------------------------------------------------

    @operation
    def acquire_leadership(
        self,
        name: str,
        value: Optional[str] = None,
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        timeout: Optional[Duration] = None,
    ) -> Request[LeaseInfo]:
        """``POST /v1/elections/{name}/campaign``: become leader within
        ``wait`` (409 :class:`HeldError` otherwise). The lease's ``term`` is
        its token. ``value`` (default the owner) is what the leader
        publishes."""
        return self.acquire_leadership_request(name, value, ttl, wait, owner, lease_id, timeout)

    @operation
    def renew_leadership(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> Request[LeaseInfo]:
        """``POST /v1/elections/{name}/renew``."""
        return self.renew_request("election", name, lease_id, token, ttl, rq.timeout_secs(timeout))

    @operation
    def resign(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> Request[None]:
        """``POST /v1/elections/{name}/resign``: step down; the next candidate leads."""
        return self.release_request("election", name, lease_id, token, rq.timeout_secs(timeout))

    @operation
    def proclaim(self, name: str, lease_id: str, token: int, value: str) -> Request[LeaseInfo]:
        """``POST /v1/elections/{name}/proclaim``: publish a new value, same term."""
        return self.proclaim_request(name, lease_id, token, value)

    @operation
    def election(self, name: str, index: Optional[int] = None, wait: Optional[Duration] = None) -> Request[ElectionStatus]:
        """``GET /v1/elections/{name}``: who leads. With ``index`` it is a
        blocking read, answered once the state differs from that index or
        when ``wait`` (default 5m) has passed."""
        return self.election_request(name, index, wait)

    # -- multi-locks -----------------------------------------------------

    @operation
    def acquire_multi(
        self,
        names: List[str],
        *,
        ttl: Optional[Duration] = None,
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        lease_id: Optional[str] = None,
        lock_delay: Optional[Duration] = None,
        timeout: Optional[Duration] = None,
    ) -> Request[MultiLeaseInfo]:
        """``POST /v1/multilocks/acquire``: every lock of ``names`` at once,
        all or none, under one lease. No two acquirers of sets (or of single
        locks) can deadlock, whatever names they ask for. Raises
        :class:`HeldError` when not granted within ``wait``."""
        return self.acquire_multi_request(names, ttl, wait, owner, lease_id, lock_delay, timeout)

    @operation
    def renew_multi(self, lease: MultiLeaseInfo, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> Request[MultiLeaseInfo]:
        """``POST /v1/multilocks/renew``: extend every lock of the lease at
        once, keeping each token. Raises :class:`LostError` or
        :class:`StaleTokenError` when the lease has ended."""
        return self.renew_multi_request(lease, ttl, timeout)

    @operation
    def release_multi(self, lease: MultiLeaseInfo, *, timeout: Optional[Duration] = None) -> Request[None]:
        """``POST /v1/multilocks/release``: end the lease, every lock at once."""
        return self.release_multi_request(lease, timeout)

    @operation
    def multi_lock_status(self, lease_id: str) -> Request[Dict[str, Any]]:
        """``GET /v1/multilocks/{lease_id}``: the live lease and how long it
        is safe (the decoded JSON). A lease that has ended raises
        :class:`LostError`."""
        return self.multi_lock_status_request(lease_id)

    # -- what the holding helpers hold -------------------------------------

    def _lock_hold(
        self,
        name: str,
        ttl: Duration,
        wait: Optional[Duration],
        owner: Optional[str],
        mode: Optional[str],
        lock_delay: Optional[Duration],
        renew: bool,
        watch: bool,
        on_lost: Optional[Callable[[Any], Any]],
    ) -> Hold:
        def acquire(wait: float, lease_id: str, timeout: float) -> Request[LeaseInfo]:
            return self.acquire_request(name, ttl, wait, owner, lease_id, mode, lock_delay, timeout)

        return Hold("lock", name, acquire, ttl, wait, renew, watch, on_lost)

    def _semaphore_hold(
        self, name: str, limit: int, ttl: Duration, wait: Optional[Duration], owner: Optional[str], renew: bool, on_lost: Optional[Callable[[Any], Any]]
    ) -> Hold:
        limit = limit_arg(limit)

        def acquire(wait: float, lease_id: str, timeout: float) -> Request[LeaseInfo]:
            return self.acquire_semaphore_request(name, limit, ttl, wait, owner, lease_id, timeout)

        # A semaphore has no blocking read: a loss is learnt from renewals.
        return Hold("semaphore", name, acquire, ttl, wait, renew, False, on_lost)

    def _campaign_hold(
        self,
        name: str,
        value: Optional[str],
        ttl: Duration,
        wait: Optional[Duration],
        owner: Optional[str],
        renew: bool,
        watch: bool,
        on_lost: Optional[Callable[[Any], Any]],
    ) -> Hold:
        def acquire(wait: float, lease_id: str, timeout: float) -> Request[LeaseInfo]:
            return self.acquire_leadership_request(name, value, ttl, wait, owner, lease_id, timeout)

        return Hold("election", name, acquire, ttl, wait, renew, watch, on_lost)


class Observation:
    """The blocking reads of ``observe``: the election's state now, then each
    state whose index differs from the last one seen."""

    def __init__(self, ops: Operations, name: str, wait: Duration) -> None:
        self._ops, self._name, self._wait = ops, name, wait
        self._last: Optional[ElectionStatus] = None

    def request(self) -> Request[ElectionStatus]:
        if self._last is None:
            return self._ops.election_request(self._name, None, None)
        return self._ops.election_request(self._name, self._last.index, self._wait)

    def seen(self, st: ElectionStatus) -> Optional[ElectionStatus]:
        """``st`` if it is new, else ``None``."""
        last, self._last = self._last, st
        return st if last is None or st.index != last.index else None

