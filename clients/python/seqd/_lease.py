"""A held lease's state machine, with no I/O: what to send next, how long to
wait, and what an answer means (renewed, retry, lost). The blocking lease
(:mod:`seqd.lease`, threads) and the asyncio one (:mod:`seqd.aio.lease`,
tasks) are drivers of this one machine: they send what it asks for, wait
as long as it says and hand it the answers, so that a rule of renewal or
loss is written once."""

from __future__ import annotations

import contextlib
import datetime
import logging
import secrets
import time
from typing import Any, ContextManager, Dict, Optional, Tuple, Union

from ._operations import Hold, Operations
from ._requests import Request, live_request
from .errors import HeldError, LostError, ProtocolError, SeqdError, StaleTokenError, UnavailableError
from .types import ElectionStatus, LeaseInfo, LockStatus

log = logging.getLogger("seqd")

MAX_WAIT = 600.0
"""The longest wait the daemon takes in one acquire; longer waits loop."""

RENEW_DIVISOR = 3
"""A lease renews every TTL/RENEW_DIVISOR (the daemon's api.RenewDivisor)."""

RETRY_DIVISOR = 4
"""After a renewal that did not reach the daemon, it retries every
(TTL/RENEW_DIVISOR)/RETRY_DIVISOR (api.RetryDivisor)."""

WATCH_WAIT = 30.0
"""The wait of each blocking read of a lease's watcher."""

WATCH_AFTER = 0.2
"""Seconds a lease's watcher waits before its first blocking read. A lease
released sooner never reads: its read would be cut short by the release,
and its kept-alive connection closed with it, so that every short lease
would cost a new connection and a request more."""

_mono = time.monotonic


class Stop(Exception):
    """The lease's renewer or watcher has nothing more to do."""


class Attempts:
    """The attempts of one acquire: each asks the daemon to wait for what is
    left of the helper's wait, under one lease id, so that an acquire
    retried after an answer that never arrived finds the lease it made."""

    def __init__(self, lease: "LeaseMachine") -> None:
        self._lease = lease
        self.lease_id = secrets.token_hex(16)
        self._give_up = _mono() + lease._hold.wait
        self._delay = retry_delay(lease.renew_interval)

    def request(self, now: float) -> Request[LeaseInfo]:
        left = max(0.0, self._give_up - now)
        return self._lease._hold.acquire(round(min(left, MAX_WAIT), 3), self.lease_id, self._lease._client.timeout)

    def after(self, err: SeqdError, now: float) -> float:
        """Seconds to wait before the next attempt after ``err``; raises
        ``err`` when there is none."""
        if isinstance(err, HeldError) and now < self._give_up - 0.001:
            return 0.0
        if isinstance(err, UnavailableError) and now + self._delay < self._give_up:
            log.warning("seqd: acquire %s %r: %s; trying again", self._lease.kind, self._lease.name, err)
            return self._delay
        raise err


class Watching:
    """Where a lease's watcher is: the index of its last read, the token it
    saw, how long it backs off after a failed read."""

    def __init__(self, renew_interval: float) -> None:
        self.index: Optional[int] = None
        self.last_token: Optional[int] = None
        self.retry = retry_delay(renew_interval)
        self.backoff = self.retry
        self.most = max(self.retry, renew_interval)


class LeaseMachine:
    """The state of a lease and every rule of holding it. A driver provides
    ``lost`` (its event), ``_guard`` (what serializes the state between its
    threads), ``_notify`` (wake its waiting renewer and watcher) and
    ``_interrupt`` (cut its requests in flight short on a loss)."""

    lost: Any
    _guard: ContextManager[Any] = contextlib.nullcontext()

    def __init__(self, client: Operations, hold: Hold) -> None:
        self._client = client
        self._hold = hold
        self.kind = hold.kind
        """``"lock"``, ``"semaphore"`` or ``"election"``."""
        self.name = hold.name
        self.ttl = hold.ttl
        """Seconds the lease lives without a renewal."""
        self.renew_interval = hold.ttl / RENEW_DIVISOR
        """Seconds between renewals: a third of the TTL."""
        self._renew_enabled = hold.renew
        self._watch_enabled = hold.watch and hold.renew and hold.kind in ("lock", "election")
        self.info: Optional[LeaseInfo] = None
        """The daemon's last answer for this lease (acquire or renew)."""
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
        self._poked = False
        self._stopping = False

    def _notify(self) -> None:
        pass

    def _interrupt(self) -> None:
        pass

    # -- what the holder reads --------------------------------------------

    def _need(self) -> LeaseInfo:
        if self.info is None:
            raise RuntimeError("the lease has not been acquired: hold it in its block or acquire() it first")
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

    def __repr__(self) -> str:
        where = type(self).__module__.replace(".lease", "")
        if self.info is None:
            return f"<{where}.{type(self).__name__} {self.kind} {self.name!r} {self._state}>"
        state = "lost" if self.lost.is_set() else self._state
        return f"<{where}.{type(self).__name__} {self.kind} {self.name!r} token={self.info.token} {state}>"

    # -- how long it is safe ------------------------------------------------

    def _safe_local(self) -> float:
        return max(0.0, self._deadline - _mono()) if self.held else 0.0

    def _safe_for_request(self, ask: bool) -> Optional[Request[LockStatus]]:
        """The status read that :meth:`safe_for` asks, or ``None`` when the
        local deadline alone answers."""
        if not ask or self.kind != "lock" or self._safe_local() == 0.0:
            return None
        return self._client.status_request(self.name, None, None, self.lease_id)

    def _safe_for_answer(self, st: Union[LockStatus, SeqdError], sent: float) -> float:
        if isinstance(st, SeqdError):
            log.debug("seqd: safe_for of %s %r: %s", self.kind, self.name, st)
            return 0.0
        if st.safe_for is None:
            return 0.0
        remote = st.safe_for - (_mono() - sent)
        return max(0.0, min(self._safe_local(), remote))

    # -- acquire --------------------------------------------------------------

    def _begin_acquire(self) -> Attempts:
        with self._guard:
            if self._state != "new":
                raise RuntimeError("a Lease is acquired once; ask the client for a new one")
            self._state = "acquiring"
        return Attempts(self)

    def _needs_confirm(self, sent: float) -> bool:
        """Whether a grant that took long needs a renewal at once: the grant
        came some time after the request was sent, so sent+ttl is too short
        a deadline; a renewal measures it from a fresh send."""
        return self._renew_enabled and _mono() - sent > self.renew_interval / 2

    def _confirm_request(self, info: LeaseInfo, acquired: float, sent: float) -> Request[LeaseInfo]:
        # Not much past the grant's own deadline (the lease is not handed out
        # meanwhile), but long enough for a loaded daemon to answer.
        timeout = min(self._client.timeout, max(1.0, acquired + (info.ttl or self.ttl) - sent))
        return self._client.renew_request(self.kind, self.name, info.lease_id, info.token, None, timeout)

    def _unconfirmed(self, info: LeaseInfo, err: SeqdError) -> Optional[Request[None]]:
        """The release of a grant whose confirming renewal failed without
        ending it (the daemon unreachable), or ``None``."""
        if isinstance(err, (LostError, StaleTokenError, ProtocolError)):
            return None
        return self._client.release_request(self.kind, self.name, info.lease_id, info.token, None)

    def _acquire_failed(self) -> None:
        with self._guard:
            self._state = "ended"

    def _granted(self, info: LeaseInfo, sent: float) -> None:
        with self._guard:
            self.info = info
            self._sent = sent
            self._deadline = sent + (info.ttl or self.ttl)
            self._state = "held"

    def _withdraw_requests(self, lease_id: str) -> Tuple[Request[Optional[Dict[str, Any]]], Request[LeaseInfo]]:
        """After a cancelled acquire: whether the lease is live at the daemon
        after all, and the idempotent retry that gives back its token."""
        return live_request(self.kind, self.name, lease_id), self._hold.acquire(0.0, lease_id, self._client.timeout)

    # -- renew ----------------------------------------------------------------

    def _poke(self) -> None:
        """Renew now (the watcher saw the lease's state change)."""
        with self._guard:
            self._poked = True
            self._notify()

    def _renew_due(self, next_at: float) -> Optional[float]:
        """``None`` when the renewer acts now (a renewal, or the loss at the
        deadline), else when it should look again; :class:`Stop` once the
        lease has ended."""
        with self._guard:
            if self._stopping:
                raise Stop
            now = _mono()
            if now >= self._deadline or (self._renew_enabled and (self._poked or now >= next_at)):
                self._poked = False
                return None
            return min(next_at, self._deadline) if self._renew_enabled else self._deadline

    def _renew_request(self, sent: float) -> Request[LeaseInfo]:
        """The renewal to send at ``sent``; the loss, and :class:`Stop`, when
        the deadline has passed."""
        deadline = self._deadline
        if sent >= deadline:
            self._lose(self._expired_error())
            raise Stop
        info = self._need()
        timeout = max(0.05, min(self._client.timeout, deadline - sent))
        return self._client.renew_request(self.kind, self.name, info.lease_id, info.token, None, timeout)

    def _renewed(self, fresh: Union[LeaseInfo, SeqdError], sent: float) -> float:
        """Take a renewal's outcome; return when to renew next."""
        if isinstance(fresh, (LostError, StaleTokenError)):
            self._lose(fresh)
            raise Stop
        if isinstance(fresh, ProtocolError):
            self._lose(protocol_loss(self.kind, self.name, fresh))
            raise Stop
        if isinstance(fresh, SeqdError):
            if self._stopping:
                raise Stop
            self.last_error = fresh
            log.debug("seqd: renew %s %r: %s", self.kind, self.name, fresh)
            return _mono() + retry_delay(self.renew_interval)
        with self._guard:
            if self._stopping:
                raise Stop
            self.info = fresh
            self._deadline = sent + (fresh.ttl or self.ttl)
            self.renewals += 1
            self.last_error = None
        return sent + self.renew_interval

    def _renewer_failed(self, e: BaseException) -> None:
        """A bug in the renewer: never leave a lease reported live."""
        log.exception("seqd: the renewer of %s %r failed", self.kind, self.name)
        self._lose(SeqdError(f"the renewer failed: {e!r}", code="internal"))

    # -- watch ----------------------------------------------------------------

    def _watch_request(self, w: Watching) -> Request[Any]:
        if self._stopping:
            raise Stop
        return self._client.watch_request(self.kind, self.name, w.index, WATCH_WAIT, self._need().lease_id)

    def _watched(self, w: Watching, st: Any) -> Optional[float]:
        """Take a blocking read's outcome; return how long to pause before
        the next read (``None``: read again at once)."""
        if isinstance(st, SeqdError):
            if self._stopping:
                raise Stop
            if st.status is not None and 400 <= st.status < 500:
                # Refused, not failed: asking again will not help. The
                # renewals still watch over the lease.
                log.warning("seqd: no blocking read of %s %r: %s", self.kind, self.name, st)
                raise Stop
            w.index = None
            self._poke()  # the daemon failed: renew now to learn where the lease stands
            pause, w.backoff = w.backoff, min(w.backoff * 2, w.most)
            return pause
        w.backoff = w.retry
        info = self._need()
        if suspicious(st, info.token, w.last_token, info.mode == "shared"):
            self._poke()
        w.index = st.index
        if isinstance(st, LockStatus):
            w.last_token = st.token
        return None

    def _watcher_failed(self) -> None:
        log.exception("seqd: the watcher of %s %r failed", self.kind, self.name)

    # -- loss -----------------------------------------------------------------

    def _lose(self, err: SeqdError, notify: bool = True) -> None:
        with self._guard:
            if self._lost_error is not None:
                return
            self._lost_error = err
            self._stopping = True
            self._notify()
        self._interrupt()
        self.lost.set()
        log.warning("seqd: lost the lease on %s %r (token %s): %s", self.kind, self.name, self.info.token if self.info else "?", err)
        on_lost = self._hold.on_lost
        if notify and on_lost is not None:
            try:
                self._called_back(on_lost(self))
            except Exception:
                log.exception("seqd: on_lost of %s %r raised", self.kind, self.name)

    def _called_back(self, result: Any) -> None:
        """What ``on_lost`` returned (an asyncio lease runs a coroutine)."""

    # -- release --------------------------------------------------------------

    def _begin_release(self) -> Optional[bool]:
        """Stop renewing; ``None`` if the lease is not held, else whether it
        was lost (then it is not released at the daemon)."""
        with self._guard:
            if self._state != "held":
                return None
            expired = self._lost_error is None and _mono() >= self._deadline
            was_lost = self._lost_error is not None or expired
            self._state = "ended"
            self._stopping = True
            self._notify()
        if expired:  # before the renewer could say so
            self._lose(self._expired_error(), notify=False)
        return was_lost

    def _release_request(self) -> Request[None]:
        info = self._need()
        left = self._deadline - _mono()
        return self._client.release_request(self.kind, self.name, info.lease_id, info.token, max(0.2, min(self._client.timeout, left)))

    def _released(self, outcome: Optional[SeqdError]) -> bool:
        """Take a release's outcome; say whether it released the lease."""
        if isinstance(outcome, (LostError, StaleTokenError)):
            self._lose(outcome, notify=False)
            return False
        if outcome is not None:
            self.last_error = outcome
            log.warning("seqd: release of %s %r failed (%s); the daemon ends the lease at its TTL", self.kind, self.name, outcome)
            return False
        self.released = True
        return True



class Leader(LeaseMachine):
    """What a leadership adds to a lease: its token is the term."""

    @property
    def term(self) -> int:
        """The leadership's term: strictly higher for each new leader."""
        return self.token

    def _proclaim_request(self, value: str) -> Request[LeaseInfo]:
        info = self._need()
        return self._client.proclaim_request(self.name, info.lease_id, info.token, value)


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
    return max(0.05, min(interval / RETRY_DIVISOR, 1.0))
