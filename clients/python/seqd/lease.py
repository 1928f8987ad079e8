"""Holding a lease: background renewal, the loss signal, release at the end.

The rules (when to renew, what an answer means, when the lease is lost)
are :class:`seqd._lease.LeaseMachine`'s; this module runs them on threads.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple, TypeVar, Union

from ._http import Canceller
from ._lease import WATCH_AFTER, Attempts, Leader, LeaseMachine, Stop, Watching
from ._operations import Hold
from ._requests import Request, T
from .errors import SeqdError
from .types import LeaseInfo

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

__all__ = ["Leadership", "Lease", "LostSignal"]

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


class Lease(LeaseMachine):
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

    _client: "Client"

    def __init__(self, client: "Client", hold: Hold) -> None:
        super().__init__(client, hold)
        self.lost = LostSignal(self)
        """Set when the lease is lost (see the class's documentation)."""
        self._cv = threading.Condition()
        self._guard = self._cv
        self._renew_cancel = Canceller()
        self._watch_cancel = Canceller()
        self._threads: List[threading.Thread] = []

    def _notify(self) -> None:
        self._cv.notify_all()

    def _interrupt(self) -> None:
        self._watch_cancel.cancel()

    def _try(self, req: Request[T], canceller: Optional[Canceller] = None) -> Union[T, SeqdError]:
        """The answer to ``req``, or the error it got."""
        try:
            return self._client._send(req, canceller)
        except SeqdError as e:
            return e

    def safe_for(self, ask: bool = True) -> float:
        """Seconds the lease is guaranteed to hold (0 when lost or ended).

        The local deadline bounds it. For a lock, with ``ask`` (the
        default), the daemon is asked as well (``safe_for_ms`` of the
        lock's status read with this lease's id), which also accounts for
        its ZooKeeper session; if the daemon cannot answer, the answer is 0.
        Check it before an action that no token can fence (an email, a
        payment).
        """
        req, sent = self._safe_for_request(ask), _mono()
        return self._safe_local() if req is None else self._safe_for_answer(self._try(req), sent)

    def check(self) -> Any:
        """Ask the daemon whether this lease's token is the lock's current one
        (:meth:`Client.check` with :attr:`sequencer`)."""
        return self._client.check(self.sequencer)

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
        attempts = self._begin_acquire()
        try:
            info, sent = self._acquire_retrying(attempts)
            if self._needs_confirm(sent):
                info, sent = self._confirm(info, sent)
        except BaseException:
            self._acquire_failed()
            raise
        self._granted(info, sent)
        self._start("renew", self._run_renewer)
        if self._watch_enabled:
            self._start("watch", self._run_watcher)
        return self

    def _start(self, what: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=f"seqd-{what} {self.kind} {self.name}", daemon=True)
        self._threads.append(t)
        t.start()

    def _acquire_retrying(self, attempts: Attempts) -> Tuple[LeaseInfo, float]:
        while True:
            sent = _mono()
            got = self._try(attempts.request(sent))
            if isinstance(got, LeaseInfo):
                return got, sent
            time.sleep(attempts.after(got, _mono()))

    def _confirm(self, info: LeaseInfo, acquired: float) -> Tuple[LeaseInfo, float]:
        sent = _mono()
        fresh = self._try(self._confirm_request(info, acquired, sent))
        if isinstance(fresh, SeqdError):
            release = self._unconfirmed(info, fresh)
            if release is not None:
                self._try(release)
            raise fresh
        return fresh, sent

    # -- renew and watch --------------------------------------------------

    def _run_renewer(self) -> None:
        try:
            next_at = self._sent + self.renew_interval
            while True:
                with self._cv:
                    wake = self._renew_due(next_at)
                    while wake is not None:
                        self._cv.wait(wake - _mono())
                        wake = self._renew_due(next_at)
                sent = _mono()
                req = self._renew_request(sent)
                next_at = self._renewed(self._try(req, self._renew_cancel), sent)
        except Stop:
            return
        except BaseException as e:
            self._renewer_failed(e)

    def _pause(self, secs: float) -> bool:
        """Sleep ``secs`` or until the lease ends; say whether it ended."""
        with self._cv:
            return self._cv.wait_for(lambda: self._stopping, timeout=secs)

    def _run_watcher(self) -> None:
        if self._pause(WATCH_AFTER):
            return
        w = Watching(self.renew_interval)
        try:
            while True:
                pause = self._watched(w, self._try(self._watch_request(w), self._watch_cancel))
                if pause is not None:
                    self._pause(pause)
        except Stop:
            return
        except BaseException:
            self._watcher_failed()

    # -- release --------------------------------------------------------------

    def release(self) -> bool:
        """Stop renewing and release the lease; say whether this call
        released it at the daemon.

        Does nothing for a lease already lost or released. A 409 (the lease
        ended meanwhile) marks it lost; any other failure is logged and kept
        in :attr:`last_error`: the daemon then ends the lease at its TTL.
        Never raises a :class:`SeqdError`.
        """
        was_lost = self._begin_release()
        if was_lost is None:
            return False
        self._renew_cancel.cancel()
        self._watch_cancel.cancel()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=self._client.timeout)
        if was_lost:
            return False
        got = self._try(self._release_request())
        return self._released(got)


class Leadership(Lease, Leader):
    """A lease on an election's leadership (:meth:`Client.campaign`): a
    :class:`Lease` whose token is the leader's :attr:`term`. Leaving the
    ``with`` block resigns."""

    def proclaim(self, value: str) -> LeaseInfo:
        """Publish a new value as the leader, keeping the term."""
        return self._client._send(self._proclaim_request(value))

    def resign(self) -> bool:
        """Step down (the same as :meth:`release`)."""
        return self.release()

