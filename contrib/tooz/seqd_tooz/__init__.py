"""seqd-tooz: a tooz driver on seqd. ``tooz.coordination.get_coordinator("seqd://…")``
hands out locks that carry a fencing token.

Code written against tooz (OpenStack's coordination library) takes its
locks through ``coordinator.get_lock(name)``; with this driver each such
lock is a seqd lease, renewed in the background, and the lock object
carries what tooz's own drivers cannot give: :attr:`SeqdLock.token` and
:attr:`SeqdLock.sequencer` to pass to the resource, and
:attr:`SeqdLock.lost`, set when the lease is lost::

    from tooz import coordination

    coordinator = coordination.get_coordinator("seqd://127.0.0.1:7070", b"worker-1")
    coordinator.start()
    with coordinator.get_lock(b"volumes/42") as lock:
        store.put("volumes/42", data, fencing_token=lock.token)
    coordinator.stop()

The driver is registered under tooz's entry-point group ``tooz.backends``
(names ``seqd`` and ``seqd+https``) by this package's metadata, so that
``pip install ./clients/python ./contrib/tooz`` next to tooz is all it
takes. The seqd client itself registers nothing with tooz.

URL: ``seqd://HOST:PORT`` (``http://``), ``seqd+https://HOST:PORT``, or
``seqd://`` for ``SEQD_ADDR``. Options, in the query or as keyword
arguments of ``get_coordinator``: ``ttl`` (default ``15s``) and
``timeout`` (per request, default 4s), each a number of seconds (``2``,
``0.5``) or a duration (``2s``, ``1m30s``); ``api_token_file``,
``cacert``, ``cert``, ``key`` (each defaulting to its ``SEQD_*`` variable,
as for :class:`seqd.Client`), ``prefix`` (a name prefix for every lock,
joined with ``/``) and ``owner`` (default: the member id).
``acquire(shared=True)`` takes a shared (reader) lock. tooz's groups and
leader election are not provided (they raise ``tooz.NotImplemented``).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Dict, List, Optional, Set

import tooz  # type: ignore[import]
from tooz import coordination, locking

from seqd import Client, Duration, HeldError, Lease, LostSignal, SeqdError, UnavailableError, parse_go_duration

_OPTIONS = ("ttl", "timeout", "api_token_file", "cacert", "cert", "key", "prefix", "owner")

# The longest wait of one acquire (the daemon's limit): a lock acquired
# with blocking=True asks again until it is granted.
_MAX_WAIT = 600.0


def _duration(value: Any, option: str) -> Duration:
    """An option's duration: a number of seconds (``2``, ``0.5``: tooz's
    drivers take their timeouts so) or a duration (``2s``, ``1m30s``)."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str):
        try:
            text = float(text)
        except ValueError:
            try:
                parse_go_duration(text)
                return text
            except SeqdError:
                pass
    if isinstance(text, bool) or not isinstance(text, (int, float)) or not math.isfinite(text) or text < 0:
        raise ValueError(f"seqd tooz driver: option {option}={value!r} is neither seconds (2, 0.5) nor a duration (2s, 1m30s)")
    return text


def _translate(e: SeqdError) -> Exception:
    if isinstance(e, UnavailableError):
        return coordination.ToozConnectionError(str(e))
    return tooz.ToozError(str(e))


class SeqdLock(locking.Lock):
    """A tooz lock that is a seqd lease: exclusive, or shared with
    ``acquire(shared=True)``; renewed in the background while held.

    Holding is never guaranteed: pass :attr:`token` (or :attr:`sequencer`)
    to the resource, which refuses a lower one, and check :attr:`lost`
    between steps.
    """

    def __init__(self, name: Any, driver: "SeqdDriver") -> None:
        super().__init__(name)
        text = name.decode("utf-8") if isinstance(name, bytes) else str(name)
        self.seqd_name = f"{driver.prefix}/{text}" if driver.prefix else text
        """The name of the lock at seqd."""
        self._driver = driver
        self._mu = threading.Lock()
        self.lease: Optional[Lease] = None
        """The seqd lease of the current (or last) hold."""

    @property
    def token(self) -> int:
        """The fencing token of the current hold."""
        return self._need().token

    @property
    def sequencer(self) -> str:
        """The sequencer of the current hold, to pass to a resource unchanged."""
        return self._need().sequencer

    @property
    def lost(self) -> LostSignal:
        """A :class:`threading.Event` set when the current hold is lost."""
        return self._need().lost

    def _need(self) -> Lease:
        if self.lease is None:
            raise RuntimeError(f"the lock {self.seqd_name!r} has not been acquired")
        return self.lease

    def acquire(self, blocking: Any = True, shared: bool = False) -> bool:
        """Acquire the lock: ``blocking=True`` waits until it is granted,
        ``False`` tries once, a number waits at most that many seconds.
        Returns whether it was acquired; raises
        ``tooz.coordination.ToozConnectionError`` when the daemon cannot be
        reached and ``tooz.ToozError`` for what the daemon refuses (an
        invalid name, a bad option)."""
        client = self._driver._need_client()
        forever = blocking is True
        wait = 0.0 if blocking is False else (_MAX_WAIT if forever else float(blocking))
        mode = "shared" if shared else None
        while True:
            lease = client.lock(self.seqd_name, ttl=self._driver.ttl, wait=wait, mode=mode, owner=self._driver.owner)
            try:
                lease.acquire()
            except HeldError:
                if forever:
                    continue
                return False
            except SeqdError as e:
                raise _translate(e) from e
            with self._mu:
                self.lease = lease
            self._driver._held(self, True)
            return True

    def release(self) -> bool:
        """Release the lock; returns whether this call released it (a hold
        that was lost, or none, is not released)."""
        with self._mu:
            lease = self.lease
        if lease is None or not lease.held:
            self._driver._held(self, False)
            return False
        released = lease.release()
        self._driver._held(self, False)
        return released

    def is_still_owner(self) -> bool:
        """Whether this lock's hold is live: held here, and its token the
        lock's current one at the daemon (which reads ZooKeeper)."""
        with self._mu:
            lease = self.lease
        if lease is None or not lease.held:
            return False
        try:
            return bool(lease.check())
        except SeqdError as e:
            raise _translate(e) from e


class SeqdDriver(coordination.CoordinationDriver):
    """The ``seqd://`` coordination driver: locks only (see the module's
    documentation for the URL and its options)."""

    CHARACTERISTICS = (
        coordination.Characteristics.DISTRIBUTED_ACROSS_THREADS,
        coordination.Characteristics.DISTRIBUTED_ACROSS_PROCESSES,
        coordination.Characteristics.DISTRIBUTED_ACROSS_HOSTS,
        coordination.Characteristics.LINEARIZABLE,
    )

    def __init__(self, member_id: Any, parsed_url: Any, options: Dict[str, List[str]]) -> None:
        super().__init__(member_id, parsed_url, options)
        opts = {k: v[-1] if isinstance(v, (list, tuple)) else v for k, v in (options or {}).items()}
        unknown = sorted(set(opts) - set(_OPTIONS))
        if unknown:
            raise ValueError(f"seqd tooz driver: unknown option {unknown[0]!r}; it takes {', '.join(_OPTIONS)}")
        scheme = "https" if parsed_url.scheme == "seqd+https" else "http"
        host = parsed_url.netloc
        self._addr: Optional[str] = f"{scheme}://{host}" if host else None
        self.ttl: Duration = _duration(opts.get("ttl", "15s"), "ttl")
        self.prefix: str = opts.get("prefix", "").strip("/")
        member = member_id.decode("utf-8", "replace") if isinstance(member_id, bytes) else str(member_id)
        self.owner: str = opts.get("owner") or member
        self._client_args = {k: opts[k] for k in ("api_token_file", "cacert", "cert", "key") if k in opts}
        self._timeout: Duration = _duration(opts.get("timeout", 4.0), "timeout")
        self._client: Optional[Client] = None
        self._locks: Set[SeqdLock] = set()
        self._mu = threading.Lock()

    def _start(self) -> None:
        try:
            client = Client(self._addr, owner=self.owner, timeout=self._timeout, **self._client_args)
        except (ValueError, OSError, SeqdError) as e:
            raise tooz.ToozError(f"seqd tooz driver: {e}") from e
        try:
            client.ready()
        except SeqdError as e:
            raise _translate(e) from e
        self._client = client

    def _stop(self) -> None:
        with self._mu:
            held, self._locks = list(self._locks), set()
        for lk in held:
            lk.release()
        if self._client is not None:
            self._client.close()
        self._client = None

    def _need_client(self) -> Client:
        if self._client is None:
            raise tooz.ToozError("the seqd coordinator is not started: call start() first")
        return self._client

    def _held(self, lock: SeqdLock, held: bool) -> None:
        with self._mu:
            if held:
                self._locks.add(lock)
            else:
                self._locks.discard(lock)

    def get_lock(self, name: Any) -> SeqdLock:
        """A lock of this name (bytes or str): a relative path of segments
        of ``A-Z a-z 0-9 . _ -`` joined by ``/``, at most 256 bytes with the
        prefix; other names are refused by the daemon when acquired."""
        return SeqdLock(name, self)
