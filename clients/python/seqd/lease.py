"""Holding a lease: background renewal, the loss signal, release at the end."""

from __future__ import annotations

import datetime
import logging
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple, TypeVar

from ._http import Canceller
from .errors import HeldError, LostError, ProtocolError, SeqdError, StaleTokenError, UnavailableError
from .types import ElectionStatus, LeaseInfo, LockStatus

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("seqd")

_MAX_WAIT = 600.0
"""The longest wait the daemon takes in one acquire; longer waits loop."""

_WATCH_WAIT = 30.0
"""The wait of each blocking read of a lease's watcher."""

_WATCH_AFTER = 0.2
"""Seconds a lease's watcher waits before its first blocking read. A lease
released sooner never reads: its read would be cut short by the release,
and its kept-alive connection closed with it, so that every short lease
would cost a new connection and a request more."""

_mono = time.monotonic

_L = TypeVar("_L", bound="Lease")


class LostSignal(threading.Event):
    """A :class:`threading.Event` that is set when its lease is lost.

    ``is_set()`` is also true as soon as the lease's local deadline has
    passed, before the renewer thread has had a chance to run: a lease is
    never reported live past the time it could have expired.
    """

    def __init__(self, lease: "Lease") -> None:
        super().__init__()
        self._lease = lease

    def is_set(self) -> bool:
        return super().is_set() or self._lease._past_deadline()

    isSet = is_set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait until the lease is lost or ``timeout`` seconds have passed;
        return whether it is lost. A held lease's wait returns by its
        deadline at the latest, whatever its renewal is doing."""
        end = None if timeout is None else _mono() + timeout
        while True:
            if self.is_set():
                return True
            now = _mono()
            step = None if end is None else end - now
            left = self._lease._deadline_left(now)
            if left is not None:
                step = left if step is None else min(step, left)
            if step is not None and step <= 0:
                return self.is_set()
            super().wait(step)


class Lease:
    """A lease held for a ``with`` block (:meth:`Client.lock`,
    :meth:`Client.semaphore`; :class:`Leadership` for elections).

    Entering the block acquires it (or use :meth:`acquire`); a daemon thread
    renews it every TTL/3; leaving the block releases it (or use
    :meth:`release`), also on an exception.

    **Loss.** Holding is never guaranteed: pass :attr:`token` (or
    :attr:`sequencer`) to the resource you write to, so that it can refuse a
    holder that lost the lease without knowing. The lease is marked lost —
    :attr:`lost` set, :attr:`lost_error` saying why, ``on_lost`` called from
    the renewer's thread — as soon as the daemon answers a renewal with 409
    ``lost``, ``stale_token`` or ``broken``, or when its deadline passes
    without a confirmed renewal (the daemon unreachable or failing for that
    long). The deadline is the time the last confirmed acquire or renew was
    *sent* plus the TTL, on the monotonic clock, so it never lies past the
    daemon's ``expires_at``. With ``watch`` (locks and elections), a
    blocking read of the lock's state runs beside the renewals (from 0.2s
    after the grant: a lease released sooner costs no read and keeps its
    connection) and triggers a renewal at once when the state changes, so a
    lease deleted from outside is seen lost within milliseconds rather than
    at the next renewal.

    A lease that was lost is not released (the block still ends normally,
    without an error); nothing interrupts the block's own code: check
    ``lease.lost.is_set()``, wait on it, or call :meth:`raise_if_lost`
    between steps.
    """

    def __init__(
        self,
        client: "Client",
        kind: str,
        name: str,
        acquire: Callable[[float, str, float], LeaseInfo],
        ttl: float,
        wait: float,
        renew: bool,
        watch: bool,
        on_lost: Optional[Callable[["Lease"], None]],
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
        self.info: Optional[LeaseInfo] = None
        """The daemon's last answer for this lease (acquire or renew)."""
        self.lost = LostSignal(self)
        """Set when the lease is lost (see the class's documentation)."""
        self._lost_error: Optional[SeqdError] = None
        self.last_error: Optional[SeqdError] = None
        """The last failed renewal or release, if the latest one failed."""
        self.renewals = 0
        """How many renewals the daemon confirmed."""
        self.released = False
        """Whether :meth:`release` ended the lease at the daemon."""
        self._state = "new"  # new, acquiring, held, ended
        self._lost_flag = False
        self._deadline = 0.0
        self._sent = 0.0
        self._cv = threading.Condition()
        self._poked = False
        self._stopping = False
        self._renew_cancel = Canceller()
        self._watch_cancel = Canceller()
        self._threads: List[threading.Thread] = []

    # -- what the holder reads --------------------------------------------

    def _need(self) -> LeaseInfo:
        if self.info is None:
            raise RuntimeError("the lease has not been acquired: use it in a with block or call acquire()")
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
        """The owner the lease was granted to."""
        return self._need().owner

    @property
    def expires_at(self) -> Optional[datetime.datetime]:
        """When the daemon ends the lease unless renewed, on its clock."""
        return self._need().expires_at

    @property
    def deadline(self) -> float:
        """The local deadline on :func:`time.monotonic`'s clock: the lease is
        reported lost from then on unless a renewal is confirmed before."""
        return self._deadline

    @property
    def held(self) -> bool:
        """Acquired, not released, not lost."""
        return self._state == "held" and not self.lost.is_set()

    def _deadline_left(self, now: float) -> Optional[float]:
        """Seconds until the deadline of a held lease (a little past it, so
        that a wait wakes once it has passed), else ``None``."""
        if self._state != "held":
            return None
        return max(0.0, self._deadline - now) + 0.001

    def _past_deadline(self) -> bool:
        return self._state == "held" and _mono() >= self._deadline

    @property
    def lost_error(self) -> Optional[SeqdError]:
        """Why the lease was lost (``None`` while it is not): the daemon's
        409 (:class:`LostError`, :class:`StaleTokenError`), or a
        :class:`LostError` with code ``"expired"`` when its deadline passed
        without a confirmed renewal."""
        err = self._lost_error
        if err is None and self._past_deadline():
            err = self._expired_error()
        return err

    def _expired_error(self) -> LostError:
        return expired_error(self.kind, self.name, self.last_error)

    def raise_if_lost(self) -> None:
        """Raise the :attr:`lost_error` if the lease is lost."""
        err = self.lost_error
        if err is not None:
            raise err

    def safe_for(self, ask: bool = True) -> float:
        """Seconds the lease is guaranteed to hold (0 when lost or ended).

        The local deadline bounds it. For a lock, with ``ask`` (the
        default), the daemon is asked as well (``safe_for_ms`` of the
        lock's status read with this lease's id), which also accounts for
        its ZooKeeper session; if the daemon cannot answer, the answer is 0.
        Check it before an action that no token can fence (an email, a
        payment).
        """
        local = max(0.0, self._deadline - _mono()) if self.held else 0.0
        if not ask or self.kind != "lock" or local == 0.0:
            return local
        sent = _mono()
        try:
            st = self._client.status(self.name, lease_id=self.lease_id)
        except SeqdError as e:
            log.debug("seqd: safe_for of %s %r: %s", self.kind, self.name, e)
            return 0.0
        if st.safe_for is None:
            return 0.0
        remote = st.safe_for - (_mono() - sent)
        local = max(0.0, self._deadline - _mono()) if self.held else 0.0
        return max(0.0, min(local, remote))

    def check(self) -> Any:
        """Ask the daemon whether this lease's token is the lock's current one
        (:meth:`Client.check` with :attr:`sequencer`)."""
        return self._client.check(self.sequencer)

    def __repr__(self) -> str:
        if self.info is None:
            return f"<seqd.{type(self).__name__} {self.kind} {self.name!r} {self._state}>"
        state = "lost" if self.lost.is_set() else self._state
        return f"<seqd.{type(self).__name__} {self.kind} {self.name!r} token={self.info.token} {state}>"

    # -- acquire --------------------------------------------------------------

    def __enter__(self: _L) -> _L:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self: _L) -> _L:
        """Acquire the lease (waiting as the helper was told) and start renewing
        it. Raises :class:`HeldError` when not granted within the wait,
        :class:`UnavailableError` when the daemon stays unreachable, or any
        other :class:`SeqdError` the daemon answers. A Lease is acquired once."""
        with self._cv:
            if self._state != "new":
                raise RuntimeError("a Lease is acquired once; ask the client for a new one")
            self._state = "acquiring"
        try:
            info, sent = self._acquire_retrying()
            if self._renew_enabled and _mono() - sent > self.renew_interval / 2:
                # A long wait: the grant came some time after the request was
                # sent, so sent+ttl is too short a deadline. Renew now to
                # measure from a fresh send.
                info, sent = self._confirm(info, sent)
        except BaseException:
            with self._cv:
                self._state = "ended"
            raise
        with self._cv:
            self.info = info
            self._sent = sent
            self._deadline = sent + (info.ttl or self.ttl)
            self._state = "held"
        self._start("renew", self._run_renewer)
        if self._watch_enabled and self.kind in ("lock", "election"):
            self._start("watch", self._run_watcher)
        return self

    def _start(self, what: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=f"seqd-{what} {self.kind} {self.name}", daemon=True)
        self._threads.append(t)
        t.start()

    def _acquire_retrying(self) -> Tuple[LeaseInfo, float]:
        # The lease id is chosen here, so that an acquire retried after an
        # answer that never arrived finds the lease it created.
        lease_id = secrets.token_hex(16)
        give_up = _mono() + self._wait
        delay = retry_delay(self.renew_interval)
        while True:
            left = max(0.0, give_up - _mono())
            sent = _mono()
            try:
                return self._acquire_fn(round(min(left, _MAX_WAIT), 3), lease_id, self._client.timeout), sent
            except HeldError:
                if _mono() >= give_up - 0.001:
                    raise
            except UnavailableError as e:
                if _mono() + delay >= give_up:
                    raise
                log.warning("seqd: acquire %s %r: %s; trying again", self.kind, self.name, e)
                time.sleep(delay)

    def _confirm(self, info: LeaseInfo, acquired: float) -> Tuple[LeaseInfo, float]:
        sent = _mono()
        # Not much past the grant's own deadline (the lease is not handed out
        # meanwhile), but long enough for a loaded daemon to answer.
        timeout = min(self._client.timeout, max(1.0, acquired + (info.ttl or self.ttl) - sent))
        try:
            return self._client._renew(self.kind, self.name, info.lease_id, info.token, None, timeout, None), sent
        except (LostError, StaleTokenError, ProtocolError):
            raise
        except SeqdError:
            try:
                self._client._release(self.kind, self.name, info.lease_id, info.token, None)
            except SeqdError:
                pass
            raise

    # -- renew and watch --------------------------------------------------

    def _poke(self) -> None:
        with self._cv:
            self._poked = True
            self._cv.notify_all()

    def _run_renewer(self) -> None:
        try:
            self._renew_loop()
        except BaseException as e:  # a bug: never leave a lease reported live
            log.exception("seqd: the renewer of %s %r failed", self.kind, self.name)
            self._lose(SeqdError(f"the renewer failed: {e!r}", code="internal"))

    def _renew_loop(self) -> None:
        interval = self.renew_interval
        retry = retry_delay(interval)
        next_at = self._sent + interval
        info = self._need()
        while True:
            with self._cv:
                while True:
                    if self._stopping:
                        return
                    now = _mono()
                    if now >= self._deadline:
                        break
                    if self._renew_enabled and (self._poked or now >= next_at):
                        break
                    wake = min(next_at, self._deadline) if self._renew_enabled else self._deadline
                    self._cv.wait(wake - now)
                self._poked = False
                deadline = self._deadline
            sent = _mono()
            if sent >= deadline:
                self._lose(self._expired_error())
                return
            try:
                fresh = self._client._renew(
                    self.kind, self.name, info.lease_id, info.token, None,
                    max(0.05, min(self._client.timeout, deadline - sent)), self._renew_cancel,
                )
            except (LostError, StaleTokenError) as e:
                self._lose(e)
                return
            except ProtocolError as e:
                self._lose(protocol_loss(self.kind, self.name, e))
                return
            except SeqdError as e:
                if self._stopping:
                    return
                self.last_error = e
                log.debug("seqd: renew %s %r: %s", self.kind, self.name, e)
                next_at = _mono() + retry
                continue
            with self._cv:
                if self._stopping:
                    return
                self.info = fresh
                self._deadline = sent + (fresh.ttl or self.ttl)
                self.renewals += 1
                self.last_error = None
            next_at = sent + interval

    def _run_watcher(self) -> None:
        with self._cv:
            if self._cv.wait_for(lambda: self._stopping, timeout=_WATCH_AFTER):
                return
        retry = retry_delay(self.renew_interval)
        backoff = retry
        index: Optional[int] = None
        last_token: Optional[int] = None
        info = self._need()
        while not self._stopping:
            try:
                st = self._client._watch(self.kind, self.name, index, _WATCH_WAIT, info.lease_id, self._watch_cancel)
            except SeqdError as e:
                if self._stopping:
                    return
                if e.status is not None and 400 <= e.status < 500:
                    # Refused, not failed: asking again will not help. The
                    # renewals still watch over the lease.
                    log.warning("seqd: no blocking read of %s %r: %s", self.kind, self.name, e)
                    return
                index = None
                self._poke()  # the daemon failed: renew now to learn where the lease stands
                with self._cv:
                    self._cv.wait_for(lambda: self._stopping, timeout=backoff)
                backoff = min(backoff * 2, max(retry, self.renew_interval))
                continue
            except BaseException:
                log.exception("seqd: the watcher of %s %r failed", self.kind, self.name)
                return
            backoff = retry
            if self._suspicious(st, info.token, last_token):
                self._poke()
            index = st.index
            if isinstance(st, LockStatus):
                last_token = st.token

    def _suspicious(self, st: Any, token: int, last_token: Optional[int]) -> bool:
        return suspicious(st, token, last_token, self.info is not None and self.info.mode == "shared")

    def _lose(self, err: SeqdError, notify: bool = True) -> None:
        with self._cv:
            if self._lost_flag:
                return
            self._lost_flag = True
            self._lost_error = err
            self._stopping = True
            self._cv.notify_all()
        self._watch_cancel.cancel()
        self.lost.set()
        log.warning("seqd: lost the lease on %s %r (token %s): %s", self.kind, self.name, self.info.token if self.info else "?", err)
        if notify and self._on_lost is not None:
            try:
                self._on_lost(self)
            except Exception:
                log.exception("seqd: on_lost of %s %r raised", self.kind, self.name)

    # -- release --------------------------------------------------------------

    def release(self) -> bool:
        """Stop renewing and release the lease; say whether this call
        released it at the daemon.

        Does nothing for a lease already lost or released. A 409 (the lease
        ended meanwhile) marks it lost; any other failure is logged and kept
        in :attr:`last_error`: the daemon then ends the lease at its TTL.
        Never raises a :class:`SeqdError`.
        """
        with self._cv:
            if self._state != "held":
                return False
            expired = not self._lost_flag and _mono() >= self._deadline
            was_lost = self._lost_flag or expired
            self._state = "ended"
            self._stopping = True
            self._cv.notify_all()
        if expired:  # before the renewer could say so
            self._lose(self._expired_error(), notify=False)
        self._renew_cancel.cancel()
        self._watch_cancel.cancel()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=self._client.timeout)
        if was_lost:
            return False
        info = self._need()
        left = self._deadline - _mono()
        try:
            self._client._release(self.kind, self.name, info.lease_id, info.token, max(0.2, min(self._client.timeout, left)))
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
    """A lease on an election's leadership (:meth:`Client.campaign`): a
    :class:`Lease` whose token is the leader's :attr:`term`. Leaving the
    ``with`` block resigns."""

    @property
    def term(self) -> int:
        """The leadership's term: strictly higher for each new leader."""
        return self.token

    def proclaim(self, value: str) -> LeaseInfo:
        """Publish a new value as the leader, keeping the term."""
        info = self._need()
        return self._client.proclaim(self.name, info.lease_id, info.token, value)

    def resign(self) -> bool:
        """Step down (the same as :meth:`release`)."""
        return self.release()


def suspicious(st: Any, token: int, last_token: Optional[int], shared: bool) -> bool:
    """Whether a state read by a lease's watcher suggests that the lease
    may have ended (a renewal then tells for sure)."""
    if isinstance(st, ElectionStatus):
        return st.leader is None or st.leader.term != token or not st.self
    assert isinstance(st, LockStatus)
    if st.safe_for is None or st.safe_for <= 0 or not st.held:
        return True
    if shared:
        return last_token is not None and st.token != last_token
    return st.token != token


def expired_error(kind: str, name: str, why: Optional[SeqdError]) -> LostError:
    """The loss of a lease whose deadline passed without a confirmed renewal."""
    tail = f" (last error: {why})" if why is not None else ""
    return LostError(f"no renewal of the lease on {kind} {name!r} was confirmed within its TTL{tail}", code="expired")


def protocol_loss(kind: str, name: str, e: ProtocolError) -> LostError:
    """The loss of a lease whose renewal got an answer it cannot trust."""
    return LostError(f"the lease on {kind} {name!r} is lost: its renewal's answer broke the protocol: {e.message}", code="protocol")


def retry_delay(interval: float) -> float:
    """How soon to try again after a renewal that failed without an answer
    on the lease: often enough to catch a restarted daemon well before the
    deadline, never in a tight loop."""
    return max(0.05, min(interval / 4, 1.0))
