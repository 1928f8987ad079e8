"""The seqd client: one object per daemon, safe to share between threads."""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import urllib.parse
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ._accept import lease_problem, multi_lease_problem
from ._durations import Duration, to_seconds, wire_duration
from ._http import Accept, Canceller, Transport
from .errors import BadRequestError, SeqdError
from .lease import Lease, Leadership
from .types import CheckResult, ElectionStatus, LeaseInfo, LockStatus, MultiLeaseInfo, SemaphoreStatus

DEFAULT_ADDR = "http://127.0.0.1:7070"
"""The daemon's address when neither ``addr=`` nor ``SEQD_ADDR`` names one."""

DEFAULT_TIMEOUT = 4.0
"""Seconds a request may take, on top of any wait it asks the daemon for:
connecting, sending, the first byte and the whole answer together."""

# Default blocking-read wait of the daemon (a GET with an index and no wait).
_DEFAULT_BLOCKING_WAIT = 300.0

_ROOTS = {"lock": "/v1/locks/", "semaphore": "/v1/semaphores/", "election": "/v1/elections/"}


def _path(kind: str, name: str, action: str = "") -> str:
    if not isinstance(name, str) or not name:
        raise BadRequestError(f"{kind} name {name!r}: want a non-empty name such as \"jobs/nightly\"", code="bad_request")
    p = _ROOTS[kind] + "/".join(urllib.parse.quote(seg, safe="") for seg in name.split("/"))
    return p + "/" + action if action else p


def _token(token: Any) -> int:
    if isinstance(token, bool) or not isinstance(token, int) or token <= 0 or token >= 1 << 64:
        raise BadRequestError(f"token {token!r}: want a positive 64-bit integer", code="bad_request")
    return token


def _check_addr(addr: str) -> str:
    u = urllib.parse.urlsplit(addr)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"seqd address {addr!r} is not the daemon's base URL: write it like http://127.0.0.1:7070")
    if u.query or u.fragment:
        raise ValueError(f"seqd address {addr!r}: the daemon's base URL takes no query or fragment")
    try:
        u.port
    except ValueError:
        raise ValueError(f"seqd address {addr!r}: bad port") from None
    return addr


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            tok = f.read().strip()
    except OSError as e:
        raise ValueError(f"API token file {path}: {e.strerror or e}") from None
    if not tok:
        raise ValueError(f"API token file {path} is empty")
    return tok


class Client:
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
        env = os.environ
        addr = addr or env.get("SEQD_ADDR") or DEFAULT_ADDR
        self.addr = _check_addr(addr.rstrip("/"))
        api_token_file = api_token_file if api_token_file is not None else env.get("SEQD_API_TOKEN_FILE", "")
        cacert = cacert if cacert is not None else env.get("SEQD_CACERT", "")
        cert = cert if cert is not None else env.get("SEQD_CERT", "")
        key = key if key is not None else env.get("SEQD_KEY", "")
        if bool(cert) != bool(key):
            raise ValueError("a client certificate needs both cert and key (SEQD_CERT and SEQD_KEY)")
        self.timeout = to_seconds(timeout, "timeout")
        if self.timeout <= 0:
            raise ValueError("timeout must be more than 0")
        self._owner = owner
        token = _read_token(api_token_file) if api_token_file else None
        context = None
        if self.addr.startswith("https://"):
            context = ssl.create_default_context(cafile=cacert or None)
            if cert:
                context.load_cert_chain(cert, key)
        self._transport = Transport(self.addr, token, context, self.timeout)

    def __repr__(self) -> str:
        return f"seqd.Client({self.addr!r})"

    def close(self) -> None:
        """Close idle connections (the client stays usable)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def owner(self) -> str:
        """The default owner of this client's leases: ``<hostname>:<pid>``
        unless given."""
        return self._owner if self._owner else f"{socket.gethostname()}:{os.getpid()}"

    # -- transport -------------------------------------------------------

    def _post(
        self,
        path: str,
        body: Dict[str, Any],
        wait: float = 0.0,
        timeout: Optional[float] = None,
        canceller: Optional[Canceller] = None,
        accept: Optional[Accept] = None,
    ) -> Dict[str, Any]:
        t = (self.timeout if timeout is None else timeout) + wait
        return self._transport.request("POST", path, body, timeout=t, canceller=canceller, accept=accept)[1]

    def _take(self, kind: str, name: str, action: str, body: Dict[str, Any], wait: Optional[Duration], timeout: Optional[Duration]) -> LeaseInfo:
        """An acquire or a campaign: a lease for ``name`` under the lease id
        the body sends, or a :class:`ProtocolError`."""
        lease_id = body["lease_id"]
        return LeaseInfo.from_json(
            self._post(_path(kind, name, action), body, self._secs(wait), self._secs_opt(timeout), accept=lambda d: lease_problem(d, name, lease_id))
        )

    def _get(self, path: str, query: Dict[str, str], wait: float = 0.0, canceller: Optional[Canceller] = None) -> Dict[str, Any]:
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return self._transport.request("GET", path, timeout=self.timeout + wait, canceller=canceller)[1]

    @staticmethod
    def _blocking_query(index: Optional[int], wait: Optional[Duration]) -> Tuple[Dict[str, str], float]:
        q: Dict[str, str] = {}
        secs = 0.0
        if index is not None:
            q["index"] = str(index)
            secs = _DEFAULT_BLOCKING_WAIT
        if wait is not None:
            w = wire_duration(wait, "wait")
            assert w is not None
            q["wait"] = w
            secs = to_seconds(wait)
        return q, secs

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
        body = self._acquire_body(owner, lease_id, ttl, wait)
        if mode is not None:
            body["mode"] = mode
        if lock_delay is not None:
            body["lock_delay"] = wire_duration(lock_delay, "lock_delay")
        return self._take("lock", name, "acquire", body, wait, timeout)

    def renew(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/locks/{name}/renew``: extend a lease by its TTL (or a new
        ``ttl``). Raises :class:`LostError` or :class:`StaleTokenError` when
        the lease has ended."""
        return self._renew("lock", name, lease_id, token, ttl, self._secs_opt(timeout))

    def release(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/locks/{name}/release``: end a lease, handing the lock on."""
        self._release("lock", name, lease_id, token, self._secs_opt(timeout))

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
        q, secs = self._blocking_query(index, wait)
        if lease_id is not None:
            q["lease_id"] = lease_id
        return LockStatus.from_json(self._get(_path("lock", name), q, secs))

    def leases(self) -> List[LeaseInfo]:
        """``GET /v1/locks``: the live leases held through this daemon
        (without their lease ids)."""
        doc = self._get("/v1/locks", {})
        return [LeaseInfo.from_json(d) for d in doc.get("locks") or [] if isinstance(d, dict)]

    def check(self, sequencer: Optional[str] = None, *, name: Optional[str] = None, token: Optional[int] = None) -> CheckResult:
        """``POST /v1/check``: is this the current holder's token?

        Give the ``sequencer`` string a holder passed on (unchanged), or
        ``name`` and ``token``. Returns a :class:`CheckResult` whether the
        answer is yes (200) or no (409 ``stale_token`` or ``not_held``, 403
        ``bad_signature``); raises for other failures.
        """
        if (sequencer is None) == (name is None):
            raise BadRequestError("check: give either a sequencer, or name and token", code="bad_request")
        body: Dict[str, Any] = {"sequencer": sequencer} if sequencer is not None else {"name": name, "token": _token(token)}
        try:
            _, doc = self._transport.request("POST", "/v1/check", body, ok_statuses=(409,))
        except SeqdError as e:
            if e.code == "bad_signature":
                return CheckResult(valid=False, current_token=None, code=e.code, error=e.message)
            raise
        return CheckResult.from_json(doc)

    def ready(self) -> bool:
        """``GET /readyz``: whether the daemon's ZooKeeper session is connected."""
        try:
            self._transport.request("GET", "/readyz")
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
        body = self._acquire_body(owner, lease_id, ttl, wait)
        body["limit"] = _limit(limit)
        return self._take("semaphore", name, "acquire", body, wait, timeout)

    def renew_semaphore(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/semaphores/{name}/renew``."""
        return self._renew("semaphore", name, lease_id, token, ttl, self._secs_opt(timeout))

    def release_semaphore(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/semaphores/{name}/release``."""
        self._release("semaphore", name, lease_id, token, self._secs_opt(timeout))

    def semaphore_status(self, name: str) -> SemaphoreStatus:
        """``GET /v1/semaphores/{name}``: how many hold it now."""
        return SemaphoreStatus.from_json(self._get(_path("semaphore", name), {}))

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
        body = self._acquire_body(owner, lease_id, ttl, wait)
        if value is not None:
            body["value"] = value
        return self._take("election", name, "campaign", body, wait, timeout)

    def renew_leadership(self, name: str, lease_id: str, token: int, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> LeaseInfo:
        """``POST /v1/elections/{name}/renew``."""
        return self._renew("election", name, lease_id, token, ttl, self._secs_opt(timeout))

    def resign(self, name: str, lease_id: str, token: int, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/elections/{name}/resign``: step down; the next candidate leads."""
        self._release("election", name, lease_id, token, self._secs_opt(timeout))

    def proclaim(self, name: str, lease_id: str, token: int, value: str) -> LeaseInfo:
        """``POST /v1/elections/{name}/proclaim``: publish a new value, same term."""
        body = {"lease_id": lease_id, "token": _token(token), "value": value}
        return LeaseInfo.from_json(self._post(_path("election", name, "proclaim"), body, accept=lambda d: lease_problem(d, name, lease_id, token)))

    def election(self, name: str, index: Optional[int] = None, wait: Optional[Duration] = None) -> ElectionStatus:
        """``GET /v1/elections/{name}``: who leads. With ``index`` it is a
        blocking read, answered once the state differs from that index or
        when ``wait`` (default 5m) has passed."""
        q, secs = self._blocking_query(index, wait)
        return ElectionStatus.from_json(self._get(_path("election", name), q, secs))

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
        names = list(names)
        body = self._acquire_body(owner, lease_id, ttl, wait)
        body["names"] = names
        if lock_delay is not None:
            body["lock_delay"] = wire_duration(lock_delay, "lock_delay")
        sent_id = body["lease_id"]
        doc = self._post("/v1/multilocks/acquire", body, self._secs(wait), self._secs_opt(timeout), accept=lambda d: multi_lease_problem(d, names, sent_id))
        return MultiLeaseInfo.from_json(doc)

    def renew_multi(self, lease: MultiLeaseInfo, *, ttl: Optional[Duration] = None, timeout: Optional[Duration] = None) -> MultiLeaseInfo:
        """``POST /v1/multilocks/renew``: extend every lock of the lease at
        once, keeping each token. Raises :class:`LostError` or
        :class:`StaleTokenError` when the lease has ended."""
        body: Dict[str, Any] = {"lease_id": lease.lease_id, "locks": [{"name": lk.name, "token": _token(lk.token)} for lk in lease.locks]}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        names = [lk.name for lk in lease.locks]
        tokens = [lk.token for lk in lease.locks]
        doc = self._post("/v1/multilocks/renew", body, timeout=self._secs_opt(timeout), accept=lambda d: multi_lease_problem(d, names, lease.lease_id, tokens))
        return MultiLeaseInfo.from_json(doc)

    def release_multi(self, lease: MultiLeaseInfo, *, timeout: Optional[Duration] = None) -> None:
        """``POST /v1/multilocks/release``: end the lease, every lock at once."""
        body = {"lease_id": lease.lease_id, "locks": [{"name": lk.name, "token": _token(lk.token)} for lk in lease.locks]}
        self._post("/v1/multilocks/release", body, timeout=self._secs_opt(timeout))

    def multi_lock_status(self, lease_id: str) -> Dict[str, Any]:
        """``GET /v1/multilocks/{lease_id}``: the live lease and how long it
        is safe (the decoded JSON). A lease that has ended raises
        :class:`LostError`."""
        return self._get("/v1/multilocks/" + urllib.parse.quote(lease_id, safe=""), {})

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

        return Lease(self, "lock", name, acquire, to_seconds(ttl, "ttl"), _wait_secs(wait), renew, watch, on_lost)

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
        limit = _limit(limit)

        def acquire(wait: float, lease_id: str, timeout: float) -> LeaseInfo:
            return self.acquire_semaphore(name, limit, ttl=ttl, wait=wait, owner=owner, lease_id=lease_id, timeout=timeout)

        return Lease(self, "semaphore", name, acquire, to_seconds(ttl, "ttl"), _wait_secs(wait), renew, False, on_lost)

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

        return Leadership(self, "election", name, acquire, to_seconds(ttl, "ttl"), _wait_secs(wait), renew, watch, on_lost)

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

    def _acquire_body(self, owner: Optional[str], lease_id: Optional[str], ttl: Optional[Duration], wait: Optional[Duration]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"owner": owner or self.owner, "lease_id": lease_id if lease_id is not None else secrets.token_hex(16)}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        if wait is not None:
            body["wait"] = wire_duration(wait, "wait")
        return body

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
        body: Dict[str, Any] = {"lease_id": lease_id, "token": _token(token)}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        return LeaseInfo.from_json(
            self._post(_path(kind, name, "renew"), body, timeout=timeout, canceller=canceller, accept=lambda d: lease_problem(d, name, lease_id, token))
        )

    def _release(self, kind: str, name: str, lease_id: str, token: int, timeout: Optional[float]) -> None:
        action = "resign" if kind == "election" else "release"
        self._post(_path(kind, name, action), {"lease_id": lease_id, "token": _token(token)}, timeout=timeout)

    def _watch(self, kind: str, name: str, index: Optional[int], wait: float, lease_id: str, canceller: Canceller) -> Any:
        """A blocking read for a lease's watcher, cut short by ``canceller``."""
        q, secs = self._blocking_query(index, wait if index is not None else None)
        if kind == "lock":
            q["lease_id"] = lease_id
            return LockStatus.from_json(self._get(_path("lock", name), q, secs, canceller))
        return ElectionStatus.from_json(self._get(_path("election", name), q, secs, canceller))

    @staticmethod
    def _secs(wait: Optional[Duration]) -> float:
        return 0.0 if wait is None else to_seconds(wait, "wait")

    @staticmethod
    def _secs_opt(timeout: Optional[Duration]) -> Optional[float]:
        return None if timeout is None else to_seconds(timeout, "timeout")


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"seqd.Client.{old} is deprecated: it is now Client.{new}, the name every seqd client uses", DeprecationWarning, stacklevel=3)


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BadRequestError(f"limit {limit!r}: want a positive integer", code="bad_request")
    return limit


def _wait_secs(wait: Optional[Duration]) -> float:
    return 0.0 if wait is None else to_seconds(wait, "wait")


__all__ = ["Client", "DEFAULT_ADDR", "DEFAULT_TIMEOUT"]
