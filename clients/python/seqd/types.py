"""The answers of the daemon, as read-only records.

Each record keeps the decoded JSON in ``raw``, so that a field added by a
newer daemon is not lost to an older client.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Dict, Optional

from ._durations import parse_go_duration, parse_time


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _token(v: Any) -> Optional[int]:
    """A token, or ``None`` for anything that is not one (0 included)."""
    t = _int(v)
    return t if t is not None and t > 0 else None


@dataclasses.dataclass(frozen=True)
class LeaseInfo:
    """A grant, as acquire, renew, campaign and proclaim answer it.

    Attributes:
        name: the lock's (semaphore's, election's) name.
        token: the fencing token, an exact 64-bit integer.
        sequencer: what the holder passes to a resource (opaque: pass it on
            unchanged; it may carry a kind prefix and a signature).
        lease_id: the id that, with the token, renews and releases the lease.
            Keep it secret.
        owner: the owner named at acquire.
        ttl: seconds the lease lives from its last grant or renewal.
        expires_at: when the daemon will end it unless renewed (its clock).
        term: an election's term (the token), else ``None``.
        limit: a semaphore's limit, else ``None``.
        mode: ``"shared"`` for a shared lease, else ``None``.
    """

    name: str
    token: int
    sequencer: str
    lease_id: str
    owner: str
    ttl: float
    expires_at: Optional[datetime.datetime]
    term: Optional[int] = None
    limit: Optional[int] = None
    mode: Optional[str] = None
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "LeaseInfo":
        ttl = d.get("ttl")
        return cls(
            name=d.get("name", ""),
            token=_int(d.get("token")) or 0,
            sequencer=d.get("sequencer", ""),
            lease_id=d.get("lease_id", ""),
            owner=d.get("owner", ""),
            ttl=parse_go_duration(ttl) / 1e9 if isinstance(ttl, str) else 0.0,
            expires_at=parse_time(d.get("expires_at")),
            term=_int(d.get("term")),
            limit=_int(d.get("limit")),
            mode=d.get("mode") or None,
            raw=d,
        )


@dataclasses.dataclass(frozen=True)
class LockToken:
    """One lock of a multi-lock lease: its name, token and sequencer."""

    name: str
    token: int
    sequencer: str


@dataclasses.dataclass(frozen=True)
class MultiLeaseInfo:
    """A multi-lock lease, as acquire_multi and renew_multi answer it: every
    lock of ``locks`` is held under the one ``lease_id``, renewed, released
    or lost together."""

    locks: tuple
    lease_id: str
    owner: str
    ttl: float
    expires_at: Optional[datetime.datetime]
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def sequencers(self) -> str:
        """Every lock's sequencer, space-separated (as ``SEQD_SEQUENCERS``)."""
        return " ".join(lk.sequencer for lk in self.locks)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "MultiLeaseInfo":
        ttl = d.get("ttl")
        locks = tuple(
            LockToken(name=x.get("name", ""), token=_int(x.get("token")) or 0, sequencer=x.get("sequencer", ""))
            for x in d.get("locks") or []
            if isinstance(x, dict)
        )
        return cls(
            locks=locks,
            lease_id=d.get("lease_id", ""),
            owner=d.get("owner", ""),
            ttl=parse_go_duration(ttl) / 1e9 if isinstance(ttl, str) else 0.0,
            expires_at=parse_time(d.get("expires_at")),
            raw=d,
        )


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The answer of a check: is this token the current holder's?

    ``bool(result)`` is ``valid``. ``code`` says why not: ``"stale_token"``
    (below the current token), ``"not_held"`` (nobody holds the lock with it)
    or ``"bad_signature"`` (the daemon did not sign that sequencer).
    """

    valid: bool
    current_token: Optional[int]
    """The lock's current token; ``None`` when the daemon knows none (it
    sends 0 then, never a token) or did not say."""
    code: Optional[str] = None
    error: Optional[str] = None
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.valid

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "CheckResult":
        return cls(
            valid=d.get("valid") is True,
            current_token=_token(d.get("current_token")),
            code=d.get("code") or None,
            error=d.get("error") or None,
            raw=d,
        )


@dataclasses.dataclass(frozen=True)
class LockStatus:
    """A lock's state, read from ZooKeeper (holders on any daemon).

    ``safe_for`` (seconds) is present only when asked with the holder's own
    ``lease_id``: how long its lease is guaranteed to hold (0 once ended).
    ``index`` is opaque: pass it back to wait for a change.
    """

    name: str
    held: bool
    token: int
    owner: str
    expires_at: Optional[datetime.datetime]
    waiters: int
    index: int
    safe_for: Optional[float] = None
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "LockStatus":
        ms = _int(d.get("safe_for_ms"))
        return cls(
            name=d.get("name", ""),
            held=d.get("held") is True,
            token=_int(d.get("token")) or 0,
            owner=d.get("owner", ""),
            expires_at=parse_time(d.get("expires_at")),
            waiters=_int(d.get("waiters")) or 0,
            index=_int(d.get("index")) or 0,
            safe_for=None if ms is None else ms / 1000.0,
            raw=d,
        )


@dataclasses.dataclass(frozen=True)
class Leader:
    """An election's leader: its value, term and owner (known only on the
    daemon its campaign runs through; ``""`` elsewhere)."""

    owner: str
    value: str
    term: int
    since: Optional[datetime.datetime]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Leader":
        return cls(
            owner=d.get("owner", ""),
            value=d.get("value", ""),
            term=_int(d.get("term")) or 0,
            since=parse_time(d.get("since")),
        )


@dataclasses.dataclass(frozen=True)
class ElectionStatus:
    """An election's state: the leader (``None`` when nobody leads), the
    number of candidates, the opaque ``index`` for blocking reads, and
    ``self``: whether a campaign through the daemon asked leads."""

    name: str
    leader: Optional[Leader]
    candidates: int
    index: int
    self: bool
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ElectionStatus":
        leader = d.get("leader")
        return cls(
            name=d.get("name", ""),
            leader=Leader.from_json(leader) if isinstance(leader, dict) else None,
            candidates=_int(d.get("candidates")) or 0,
            index=_int(d.get("index")) or 0,
            self=d.get("self") is True,
            raw=d,
        )


@dataclasses.dataclass(frozen=True)
class SemaphoreStatus:
    """A semaphore's state: how many lease nodes it has (holders, on any daemon)."""

    name: str
    holders: int
    raw: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SemaphoreStatus":
        return cls(name=d.get("name", ""), holders=_int(d.get("holders")) or 0, raw=d)
