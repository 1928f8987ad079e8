"""The seqd client: one object per daemon, safe to share between threads."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import _requests as rq
from ._durations import Duration, to_seconds
from ._http import Canceller, Transport
from ._requests import DEFAULT_ADDR, DEFAULT_TIMEOUT, Request, limit_arg, wait_secs
from .errors import SeqdError
from .lease import Lease, Leadership
from .types import CheckResult, ElectionStatus, LeaseInfo, LockStatus, MultiLeaseInfo, SemaphoreStatus


class Client(rq.Requests):
    """A client of one seqd daemon (usually the sidecar on 127.0.0.1).

    Every argument left out (``None``) is read from the environment, as the
    ``seqd`` CLI and the Go client read it:

    ==================  =====================  ===============================
    argument            environment            meaning
    ==================  =====================  ===============================
    ``addr``            ``SEQD_ADDR``          base URL, default
                                               ``http://127.0.0.1:7070``
    ``api_token_file``  ``SEQD_API_TOKEN_FILE`` file holding the bearer token
                                               (trimmed)
    ``cacert``          ``SEQD_CACERT``        PEM CA to trust for https
    ``cert``, ``key``   ``SEQD_CERT``,         PEM client certificate and its
                        ``SEQD_KEY``           key (PKCS#8, ECDSA or RSA)
    ==================  =====================  ===============================

    An empty string turns a setting off even when the environment sets it
    (an empty ``addr`` is the default address).
    ``owner`` (default ``<hostname>:<pid>``) labels this client's leases;
    every call that takes one can override it. ``timeout`` (seconds or a
    duration) bounds each request, on top of any wait it asks for.

    Connections are kept alive and reused; the client is safe to use from
    several threads. Raises :class:`ValueError` for a bad address or an
    unreadable token file, and :class:`ssl.SSLError` or :class:`OSError` for
    unreadable certificates.
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
        self._transport = Transport(s.addr, s.token, s.context, s.timeout)

    def __repr__(self) -> str:
        return f"seqd.Client({self.addr!r})"

    def close(self) -> None:
        """Close idle connections (the client stays usable)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- transport -------------------------------------------------------

    def _call(self, req: Request, canceller: Optional[Canceller] = None) -> Any:
        t = (self.timeout if req.timeout is None else req.timeout) + req.wait
        _, doc = self._transport.request(req.method, req.path, req.body, timeout=t, canceller=canceller, ok_statuses=req.ok_statuses, accept=req.accept)
        return req.decode(doc)

    # -- locks -----------------------------------------------------------

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
    ) -> LeaseInfo:
        """``POST /v1/locks/{name}/acquire``: one acquire, nothing renews it.

        ``ttl`` defaults to the daemon's 15s; ``wait`` to 0 (try once).
        ``lease_id`` (32 lowercase hex digits; a random one by default)
        makes it retryable; ``mode`` is ``"exclusive"`` or ``"shared"``.
        Raises :class:`HeldError` when not granted within ``wait``, and
        :class:`ProtocolError` for an answer that is not a well-formed
        lease of this name and lease id. Use :meth:`lock` to hold a lock.
        """
        return self._call(self.acquire_request(name, ttl, wait, owner, lease_id, mode, lock_delay, timeout))

    def renew(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/locks/{name}/renew``: extend a lease by its TTL (or a new
        ``ttl``). Raises :class:`LostError` or :class:`StaleTokenError` when
        the lease has ended."""
        return self._call(self.renew_request("lock", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    def release(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/locks/{name}/release``: end a lease, handing the lock on."""
        self._call(self.release_request("lock", name, lease_id, token, rq.timeout_secs(timeout)))

    def status(
        self,
        name: str,
        *,
        index: Optional[int] = None,
        wait: Optional[Duration] = None,
        lease_id: Optional[str] = None,
    ) -> LockStatus:
        """``GET /v1/locks/{name}``: the lock's holder, token and queue.

        With ``index`` (from an earlier status) it is a blocking read: it
        answers once the state differs from that index, or when ``wait``
        (default 5m) has passed. With the holder's own ``lease_id`` the
        answer carries ``safe_for``.
        """
        return self._call(self.status_request(name, index, wait, lease_id))

    def leases(self) -> List[LeaseInfo]:
        """``GET /v1/locks``: the live leases held through this daemon
        (without their lease ids)."""
        return self._call(self.leases_request())

    def check(self, sequencer: Optional[str] = None, *, name: Optional[str] = None, token: Optional[int] = None) -> CheckResult:
        """``POST /v1/check``: is this the current holder's token?

        Give the ``sequencer`` string a holder passed on (unchanged), or
        ``name`` and ``token``. Returns a :class:`CheckResult` whether the
        answer is yes (200) or no (409 ``stale_token`` or ``not_held``, 403
        ``bad_signature``); raises for other failures.
        """
        req = self.check_request(sequencer, name, token)
        try:
            return self._call(req)
        except SeqdError as e:
            if e.code == "bad_signature":
                return CheckResult(valid=False, current_token=None, code=e.code, error=e.message)
            raise

    def ready(self) -> bool:
        """``GET /readyz``: whether the daemon's ZooKeeper session is connected."""
        try:
            self._call(Request("GET", "/readyz"))
        except SeqdError as e:
            if e.status == 503:
                return False
            raise
        return True

    # -- semaphores ------------------------------------------------------

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
    ) -> LeaseInfo:
        """``POST /v1/semaphores/{name}/acquire``: one of ``limit`` slots.
        Every holder must name the same limit."""
        return self._call(self.acquire_semaphore_request(name, limit, ttl, wait, owner, lease_id, timeout))

    def renew_semaphore(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/semaphores/{name}/renew``."""
        return self._call(self.renew_request("semaphore", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    def release_semaphore(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/semaphores/{name}/release``."""
        self._call(self.release_request("semaphore", name, lease_id, token, rq.timeout_secs(timeout)))

    def semaphore_status(self, name: str) -> SemaphoreStatus:
        """``GET /v1/semaphores/{name}``: how many hold it now."""
        return self._call(self.semaphore_status_request(name))

    # -- elections -------------------------------------------------------

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
    ) -> LeaseInfo:
        """``POST /v1/elections/{name}/campaign``: become leader within
        ``wait`` (409 :class:`HeldError` otherwise). The lease's ``term`` is
        its token. ``value`` (default the owner) is what the leader
        publishes."""
        return self._call(self.acquire_leadership_request(name, value, ttl, wait, owner, lease_id, timeout))

    def renew_leadership(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/elections/{name}/renew``."""
        return self._call(self.renew_request("election", name, lease_id, token, ttl, rq.timeout_secs(timeout)))

    def resign(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/elections/{name}/resign``: step down; the next candidate leads."""
        self._call(self.release_request("election", name, lease_id, token, rq.timeout_secs(timeout)))

    def proclaim(self, name: str, lease_id: str, token: int, value: str) -> LeaseInfo:
        """``POST /v1/elections/{name}/proclaim``: publish a new value, same term."""
        return self._call(self.proclaim_request(name, lease_id, token, value))

    def election(self, name: str, index: Optional[int] = None, wait: Optional[Duration] = None) -> ElectionStatus:
        """``GET /v1/elections/{name}``: who leads. With ``index`` it is a
        blocking read, answered once the state differs from that index or
        when ``wait`` (default 5m) has passed."""
        return self._call(self.election_request(name, index, wait))

    def observe(self, name: str, wait: Duration = "5m") -> Iterator[ElectionStatus]:
        """Yield the election's state now, then each new state, by blocking
        reads (no polling). Runs until the caller stops iterating; raises
        what :meth:`leader` raises."""
        st = self.election(name)
        yield st
        while True:
            nxt = self.election(name, index=st.index, wait=wait)
            if nxt.index != st.index:
                yield nxt
            st = nxt

    # -- multi-locks -----------------------------------------------------

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
    ) -> MultiLeaseInfo:
        """``POST /v1/multilocks/acquire``: every lock of ``names`` at once,
        all or none, under one lease. No two acquirers of sets (or of single
        locks) can deadlock, whatever names they ask for. Raises
        :class:`HeldError` when not granted within ``wait``."""
        return self._call(self.acquire_multi_request(names, ttl, wait, owner, lease_id, lock_delay, timeout))

    def renew_multi(self, lease: MultiLeaseInfo, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> MultiLeaseInfo:
        """``POST /v1/multilocks/renew``: extend every lock of the lease at
        once, keeping each token. Raises :class:`LostError` or
        :class:`StaleTokenError` when the lease has ended."""
        return self._call(self.renew_multi_request(lease, ttl, timeout))

    def release_multi(self, lease: MultiLeaseInfo, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/multilocks/release``: end the lease, every lock at once."""
        self._call(self.release_multi_request(lease, timeout))

    def multi_lock_status(self, lease_id: str) -> Dict[str, Any]:
        """``GET /v1/multilocks/{lease_id}``: the live lease and how long it
        is safe (the decoded JSON). A lease that has ended raises
        :class:`LostError`."""
        return self._call(self.multi_lock_status_request(lease_id))

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
        on_lost: Optional[Callable[[Lease], None]] = None,
    ) -> Lease:
        """Hold a lock for the length of a ``with`` block::

            with client.lock("jobs/nightly", ttl="15s", wait="10s") as lease:
                while not lease.lost.is_set():
                    step(fencing_token=lease.token)

        The lock is acquired on entering the block, waiting up to ``wait``
        (default: try once, as the daemon does; a wait over the daemon's
        10m is asked for 10m at a time) and raising :class:`HeldError` when
        not granted; renewed in the background every TTL/3; released on
        leaving the block, also on an exception. An unreachable daemon is
        tried again until ``wait`` has passed: then
        :class:`UnavailableError`. See :class:`Lease` for how a loss is
        signalled. ``renew=False`` never renews: the lease
        ends at its TTL. ``watch=False`` learns of a loss from renewals only
        (at most one renew interval late) instead of a blocking read of the
        lock's state as well (a few milliseconds).
        """

        def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return self.acquire(name, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, mode=mode, lock_delay=lock_delay, timeout=timeout)

        return Lease(self, "lock", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, watch, on_lost)

    def semaphore(
        self,
        name: str,
        limit: int,
        *,
        ttl: Duration = "15s",
        wait: Optional[Duration] = None,
        owner: Optional[str] = None,
        renew: bool = True,
        on_lost: Optional[Callable[[Lease], None]] = None,
    ) -> Lease:
        """Hold one of ``limit`` slots of a semaphore for a ``with`` block,
        as :meth:`lock` holds a lock. A loss is learnt from renewals (a
        semaphore has no blocking read)."""
        limit = limit_arg(limit)

        def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return self.acquire_semaphore(name, limit, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, timeout=timeout)

        return Lease(self, "semaphore", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, False, on_lost)

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
        on_lost: Optional[Callable[[Lease], None]] = None,
    ) -> Leadership:
        """Lead an election for a ``with`` block::

            with client.campaign("scheduler", "10.0.0.7:8080", wait="30s") as lead:
                run_scheduler(term=lead.term, stop=lead.lost)

        Entering waits to be elected (as :meth:`lock` waits); leaving
        resigns, so that the next candidate leads at once."""

        def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return self.acquire_leadership(name, value, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, timeout=timeout)

        return Leadership(self, "election", name, acquire, to_seconds(ttl, "ttl"), wait_secs(wait), renew, watch, on_lost)

    # -- old names -------------------------------------------------------
    # One name per operation in every seqd client (docs/clients.md); these
    # are the names of earlier versions, kept so that code using them
    # still runs.

    def semaphore_acquire(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`acquire_semaphore`."""
        _deprecated("semaphore_acquire", "acquire_semaphore")
        return self.acquire_semaphore(*args, **kwargs)

    def semaphore_renew(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`renew_semaphore`."""
        _deprecated("semaphore_renew", "renew_semaphore")
        return self.renew_semaphore(*args, **kwargs)

    def semaphore_release(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`release_semaphore`."""
        _deprecated("semaphore_release", "release_semaphore")
        return self.release_semaphore(*args, **kwargs)

    def election_campaign(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`acquire_leadership`."""
        _deprecated("election_campaign", "acquire_leadership")
        return self.acquire_leadership(*args, **kwargs)

    def election_renew(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`renew_leadership`."""
        _deprecated("election_renew", "renew_leadership")
        return self.renew_leadership(*args, **kwargs)

    def election_resign(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`resign`."""
        _deprecated("election_resign", "resign")
        return self.resign(*args, **kwargs)

    def election_proclaim(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`proclaim`."""
        _deprecated("election_proclaim", "proclaim")
        return self.proclaim(*args, **kwargs)

    def leader(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`election`."""
        _deprecated("leader", "election")
        return self.election(*args, **kwargs)

    def locks(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old name of :meth:`leases`."""
        _deprecated("locks", "leases")
        return self.leases(*args, **kwargs)

    # -- shared pieces ---------------------------------------------------

    def _renew(
        self,
        kind: str,
        name: str,
        lease_id: str,
        token: int,
        ttl: Optional[Duration],
        timeout: Optional[float],
        canceller: Optional[Canceller] = None,
    ) -> LeaseInfo:
        return self._call(self.renew_request(kind, name, lease_id, token, ttl, timeout), canceller)

    def _release(self, kind: str, name: str, lease_id: str, token: int, timeout: Optional[float]) -> None:
        self._call(self.release_request(kind, name, lease_id, token, timeout))

    def _watch(self, kind: str, name: str, index: Optional[int], wait: float, lease_id: str, canceller: Canceller) -> Any:
        """A blocking read for a lease's watcher, cut short by ``canceller``."""
        return self._call(self.watch_request(kind, name, index, wait, lease_id), canceller)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"seqd.Client.{old} is deprecated: it is now Client.{new}, the name every seqd client uses", DeprecationWarning, stacklevel=3)


__all__ = ["Client", "DEFAULT_ADDR", "DEFAULT_TIMEOUT"]
