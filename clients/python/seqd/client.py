"""The seqd client: one object per daemon, safe to share between threads."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterator, Optional

from . import _requests as rq
from ._durations import Duration
from ._http import Canceller, Transport
from ._operations import Blocking, Observation, Operations, T
from ._requests import DEFAULT_ADDR, DEFAULT_TIMEOUT, Request
from .errors import SeqdError
from .lease import Lease, Leadership
from .types import ElectionStatus


class Client(Operations, Blocking):
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

    def _connect(self, settings: rq.Settings) -> Transport:
        return Transport(settings.addr, settings.token, settings.context, settings.timeout)

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

    def _send(self, req: Request[T], canceller: Optional[Canceller] = None) -> T:
        try:
            _, doc = self._transport.request(
                req.method, req.path, req.body, timeout=req.seconds(self.timeout), canceller=canceller, ok_statuses=req.ok_statuses, accept=req.accept
            )
        except SeqdError as e:
            return req.failed(e)
        return req.answer(doc)

    # The operations (acquire, renew, release, status, check, …) are
    # seqd._operations.Operations', the same for the asyncio client.

    def observe(self, name: str, wait: Duration = "5m") -> Iterator[ElectionStatus]:
        """Yield the election's state now, then each new state, by blocking
        reads (no polling). Runs until the caller stops iterating; raises
        what :meth:`election` raises."""
        seen = Observation(self, name, wait)
        while True:
            st = seen.seen(self._send(seen.request()))
            if st is not None:
                yield st

    # -- holding helpers -------------------------------------------------

    def lock(self, name: str, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, mode: Optional[str] = None, lock_delay: Optional[Duration] = None, renew: bool = True, watch: bool = True, on_lost: Optional[Callable[[Lease], None]] = None) -> Lease:
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

        return Lease(self, self._lock_hold(name, ttl, wait, owner, mode, lock_delay, renew, watch, on_lost))

    def semaphore(self, name: str, limit: int, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, renew: bool = True, on_lost: Optional[Callable[[Lease], None]] = None) -> Lease:
        """Hold one of ``limit`` slots of a semaphore for a ``with`` block,
        as :meth:`lock` holds a lock. A loss is learnt from renewals (a
        semaphore has no blocking read)."""
        return Lease(self, self._semaphore_hold(name, limit, ttl, wait, owner, renew, on_lost))

    def campaign(self, name: str, value: Optional[str] = None, *, ttl: Duration = "15s", wait: Optional[Duration] = None, owner: Optional[str] = None, renew: bool = True, watch: bool = True, on_lost: Optional[Callable[[Lease], None]] = None) -> Leadership:
        """Lead an election for a ``with`` block::

            with client.campaign("scheduler", "10.0.0.7:8080", wait="30s") as lead:
                run_scheduler(term=lead.term, stop=lead.lost)

        Entering waits to be elected (as :meth:`lock` waits); leaving
        resigns, so that the next candidate leads at once."""

        return Leadership(self, self._campaign_hold(name, value, ttl, wait, owner, renew, watch, on_lost))

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


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"seqd.Client.{old} is deprecated: it is now Client.{new}, the name every seqd client uses", DeprecationWarning, stacklevel=3)


__all__ = ["Client", "DEFAULT_ADDR", "DEFAULT_TIMEOUT"]
