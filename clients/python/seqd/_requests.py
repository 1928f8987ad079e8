"""Each operation of the HTTP API as a request to send and a rule for its
answer, with no I/O: the blocking client (:class:`seqd.Client`) and the
asyncio one (:class:`seqd.aio.Client`) send the same requests and accept
the same answers, so that neither can drift from the other."""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import urllib.parse
from typing import Any, Callable, Dict, Generic, List, NamedTuple, Optional, Tuple, TypeVar

from ._accept import lease_problem, multi_lease_problem
from ._durations import Duration, to_seconds, wire_duration
from ._http import Accept
from .errors import BadRequestError, SeqdError
from .types import CheckResult, ElectionStatus, LeaseInfo, LockStatus, MultiLeaseInfo, SemaphoreStatus

DEFAULT_ADDR = "http://127.0.0.1:7070"
"""The daemon's address when neither ``addr=`` nor ``SEQD_ADDR`` names one."""

DEFAULT_TIMEOUT = 4.0
"""Seconds a request may take, on top of any wait it asks the daemon for:
connecting, sending, the first byte and the whole answer together."""

# Default blocking-read wait of the daemon (a GET with an index and no wait).
_DEFAULT_BLOCKING_WAIT = 300.0

_ROOTS = {"lock": "/v1/locks/", "semaphore": "/v1/semaphores/", "election": "/v1/elections/"}


T = TypeVar("T")
_A = TypeVar("_A", covariant=True)  # what a request answers


def as_is(doc: Dict[str, Any]) -> Dict[str, Any]:
    return doc


class Request(Generic[_A]):
    """One call: what to send, how long it may take beyond the client's
    timeout (``wait``), what answer to accept, how to read it into a ``T``
    and, with ``rescue``, which errors are an answer all the same."""

    __slots__ = ("method", "path", "body", "wait", "timeout", "accept", "ok_statuses", "decode", "rescue")

    def __init__(
        self,
        method: str,
        path: str,
        body: Optional[Dict[str, Any]] = None,
        wait: float = 0.0,
        timeout: Optional[float] = None,  # the client's when None
        accept: Optional[Accept] = None,
        ok_statuses: Tuple[int, ...] = (),
        decode: Callable[[Dict[str, Any]], _A] = as_is,  # type: ignore[assignment]
        rescue: Optional[Callable[[SeqdError], _A]] = None,
    ) -> None:
        self.method, self.path, self.body, self.wait, self.timeout = method, path, body, wait, timeout
        self.accept, self.ok_statuses, self.decode, self.rescue = accept, ok_statuses, decode, rescue

    def seconds(self, default: float) -> float:
        """How long the call may take: its timeout (``default`` if it has
        none) plus its wait."""
        return (default if self.timeout is None else self.timeout) + self.wait

    def answer(self, doc: Dict[str, Any]) -> _A:
        return self.decode(doc)

    def failed(self, err: SeqdError) -> _A:
        """What the call answers for ``err``: its ``rescue``, or the error."""
        if self.rescue is None:
            raise err
        return self.rescue(err)


class Settings(NamedTuple):
    """A client's settings, from its arguments and the environment."""

    addr: str
    token: Optional[str]
    context: Optional[ssl.SSLContext]
    timeout: float


def settings(
    addr: Optional[str],
    api_token_file: Optional[str],
    cacert: Optional[str],
    cert: Optional[str],
    key: Optional[str],
    timeout: Duration,
) -> Settings:
    """Read a client's settings: each argument left out (``None``) from its
    ``SEQD_*`` variable; an empty string turns a setting off."""
    env = os.environ
    addr = addr or env.get("SEQD_ADDR") or DEFAULT_ADDR
    base = check_addr(addr.rstrip("/"))
    api_token_file = api_token_file if api_token_file is not None else env.get("SEQD_API_TOKEN_FILE", "")
    cacert = cacert if cacert is not None else env.get("SEQD_CACERT", "")
    cert = cert if cert is not None else env.get("SEQD_CERT", "")
    key = key if key is not None else env.get("SEQD_KEY", "")
    if bool(cert) != bool(key):
        raise ValueError("a client certificate needs both cert and key (SEQD_CERT and SEQD_KEY)")
    secs = to_seconds(timeout, "timeout")
    if secs <= 0:
        raise ValueError("timeout must be more than 0")
    token = read_token(api_token_file) if api_token_file else None
    context = None
    if base.startswith("https://"):
        context = ssl.create_default_context(cafile=cacert or None)
        if cert:
            context.load_cert_chain(cert, key)
    return Settings(base, token, context, secs)


def check_addr(addr: str) -> str:
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


def read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            tok = f.read().strip()
    except OSError as e:
        raise ValueError(f"API token file {path}: {e.strerror or e}") from None
    if not tok:
        raise ValueError(f"API token file {path} is empty")
    return tok


def path(kind: str, name: str, action: str = "") -> str:
    if not isinstance(name, str) or not name:
        raise BadRequestError(f"{kind} name {name!r}: want a non-empty name such as \"jobs/nightly\"", code="bad_request")
    p = _ROOTS[kind] + "/".join(urllib.parse.quote(seg, safe="") for seg in name.split("/"))
    return p + "/" + action if action else p


def token_arg(token: Any) -> int:
    if isinstance(token, bool) or not isinstance(token, int) or token <= 0 or token >= 1 << 64:
        raise BadRequestError(f"token {token!r}: want a positive 64-bit integer", code="bad_request")
    return token


def limit_arg(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BadRequestError(f"limit {limit!r}: want a positive integer", code="bad_request")
    return limit


def wait_secs(wait: Optional[Duration]) -> float:
    return 0.0 if wait is None else to_seconds(wait, "wait")


def timeout_secs(timeout: Optional[Duration]) -> Optional[float]:
    return None if timeout is None else to_seconds(timeout, "timeout")


def blocking_query(index: Optional[int], wait: Optional[Duration]) -> Tuple[Dict[str, str], float]:
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


def get_request(p: str, query: Dict[str, str], wait: float, decode: Callable[[Dict[str, Any]], T]) -> Request[T]:
    if query:
        p += "?" + urllib.parse.urlencode(query)
    return Request("GET", p, wait=wait, decode=decode)


def _nothing(doc: Dict[str, Any]) -> None:
    return None


def _unsigned(e: SeqdError) -> CheckResult:
    """A check's answer for a sequencer the daemon did not sign."""
    if e.code == "bad_signature":
        return CheckResult(valid=False, current_token=None, code=e.code, error=e.message)
    raise e


def _not_ready(e: SeqdError) -> bool:
    if e.status == 503:
        return False
    raise e


def ready_request() -> Request[bool]:
    return Request("GET", "/readyz", decode=lambda d: True, rescue=_not_ready)


def _live(doc: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    ms = doc.get("safe_for_ms")
    return doc if isinstance(ms, int) and not isinstance(ms, bool) and ms > 0 else None


def live_request(kind: str, name: str, lease_id: str) -> Request[Optional[Dict[str, Any]]]:
    """The state of ``name`` if ``lease_id`` is a live lease on it at this
    daemon (its status read then carries a positive ``safe_for_ms``), else
    ``None``."""
    return get_request(path(kind, name), {"lease_id": lease_id}, 0.0, _live)


def _leases(doc: Dict[str, Any]) -> List[LeaseInfo]:
    return [LeaseInfo.from_json(d) for d in doc.get("locks") or [] if isinstance(d, dict)]


class Requests:
    """The requests of every operation, for a client that has an ``owner``."""

    _owner: Optional[str]

    @property
    def owner(self) -> str:
        """The default owner of this client's leases: ``<hostname>:<pid>``
        unless given."""
        return self._owner if self._owner else f"{socket.gethostname()}:{os.getpid()}"

    def _acquire_body(self, owner: Optional[str], lease_id: Optional[str], ttl: Optional[Duration], wait: Optional[Duration]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"owner": owner or self.owner, "lease_id": lease_id if lease_id is not None else secrets.token_hex(16)}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        if wait is not None:
            body["wait"] = wire_duration(wait, "wait")
        return body

    @staticmethod
    def _take(kind: str, name: str, action: str, body: Dict[str, Any], wait: Optional[Duration], timeout: Optional[Duration]) -> Request[LeaseInfo]:
        """An acquire or a campaign: a lease for ``name`` under the lease id
        the body sends, or a :class:`ProtocolError`."""
        lease_id = body["lease_id"]
        return Request(
            "POST", path(kind, name, action), body, wait_secs(wait), timeout_secs(timeout),
            accept=lambda d: lease_problem(d, name, lease_id), decode=LeaseInfo.from_json,
        )

    def acquire_request(
        self,
        name: str,
        ttl: Optional[Duration],
        wait: Optional[Duration],
        owner: Optional[str],
        lease_id: Optional[str],
        mode: Optional[str],
        lock_delay: Optional[Duration],
        timeout: Optional[Duration],
    ) -> Request[LeaseInfo]:
        body = self._acquire_body(owner, lease_id, ttl, wait)
        if mode is not None:
            body["mode"] = mode
        if lock_delay is not None:
            body["lock_delay"] = wire_duration(lock_delay, "lock_delay")
        return self._take("lock", name, "acquire", body, wait, timeout)

    def acquire_semaphore_request(
        self, name: str, limit: int, ttl: Optional[Duration], wait: Optional[Duration], owner: Optional[str], lease_id: Optional[str], timeout: Optional[Duration]
    ) -> Request[LeaseInfo]:
        body = self._acquire_body(owner, lease_id, ttl, wait)
        body["limit"] = limit_arg(limit)
        return self._take("semaphore", name, "acquire", body, wait, timeout)

    def acquire_leadership_request(
        self, name: str, value: Optional[str], ttl: Optional[Duration], wait: Optional[Duration], owner: Optional[str], lease_id: Optional[str], timeout: Optional[Duration]
    ) -> Request[LeaseInfo]:
        body = self._acquire_body(owner, lease_id, ttl, wait)
        if value is not None:
            body["value"] = value
        return self._take("election", name, "campaign", body, wait, timeout)

    @staticmethod
    def renew_request(kind: str, name: str, lease_id: str, token: int, ttl: Optional[Duration], timeout: Optional[float]) -> Request[LeaseInfo]:
        body: Dict[str, Any] = {"lease_id": lease_id, "token": token_arg(token)}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        return Request(
            "POST", path(kind, name, "renew"), body, timeout=timeout,
            accept=lambda d: lease_problem(d, name, lease_id, token), decode=LeaseInfo.from_json,
        )

    @staticmethod
    def release_request(kind: str, name: str, lease_id: str, token: int, timeout: Optional[float]) -> Request[None]:
        action = "resign" if kind == "election" else "release"
        return Request("POST", path(kind, name, action), {"lease_id": lease_id, "token": token_arg(token)}, timeout=timeout, decode=_nothing)

    @staticmethod
    def proclaim_request(name: str, lease_id: str, token: int, value: str) -> Request[LeaseInfo]:
        body = {"lease_id": lease_id, "token": token_arg(token), "value": value}
        return Request("POST", path("election", name, "proclaim"), body, accept=lambda d: lease_problem(d, name, lease_id, token), decode=LeaseInfo.from_json)

    @staticmethod
    def status_request(name: str, index: Optional[int], wait: Optional[Duration], lease_id: Optional[str]) -> Request[LockStatus]:
        q, secs = blocking_query(index, wait)
        if lease_id is not None:
            q["lease_id"] = lease_id
        return get_request(path("lock", name), q, secs, LockStatus.from_json)

    @staticmethod
    def leases_request() -> Request[List[LeaseInfo]]:
        return get_request("/v1/locks", {}, 0.0, _leases)

    @staticmethod
    def check_request(sequencer: Optional[str], name: Optional[str], token: Optional[int]) -> Request[CheckResult]:
        if (sequencer is None) == (name is None):
            raise BadRequestError("check: give either a sequencer, or name and token", code="bad_request")
        body: Dict[str, Any] = {"sequencer": sequencer} if sequencer is not None else {"name": name, "token": token_arg(token)}
        return Request("POST", "/v1/check", body, ok_statuses=(409,), decode=CheckResult.from_json, rescue=_unsigned)

    @staticmethod
    def semaphore_status_request(name: str) -> Request[SemaphoreStatus]:
        return get_request(path("semaphore", name), {}, 0.0, SemaphoreStatus.from_json)

    @staticmethod
    def election_request(name: str, index: Optional[int], wait: Optional[Duration]) -> Request[ElectionStatus]:
        q, secs = blocking_query(index, wait)
        return get_request(path("election", name), q, secs, ElectionStatus.from_json)

    @staticmethod
    def watch_request(kind: str, name: str, index: Optional[int], wait: float, lease_id: str) -> Request[Any]:
        """The blocking read of a held lease's watcher."""
        q, secs = blocking_query(index, wait if index is not None else None)
        if kind == "lock":
            q["lease_id"] = lease_id
            return get_request(path("lock", name), q, secs, LockStatus.from_json)
        return get_request(path("election", name), q, secs, ElectionStatus.from_json)

    def acquire_multi_request(
        self,
        names: List[str],
        ttl: Optional[Duration],
        wait: Optional[Duration],
        owner: Optional[str],
        lease_id: Optional[str],
        lock_delay: Optional[Duration],
        timeout: Optional[Duration],
    ) -> Request[MultiLeaseInfo]:
        names = list(names)
        body = self._acquire_body(owner, lease_id, ttl, wait)
        body["names"] = names
        if lock_delay is not None:
            body["lock_delay"] = wire_duration(lock_delay, "lock_delay")
        sent_id = body["lease_id"]
        return Request(
            "POST", "/v1/multilocks/acquire", body, wait_secs(wait), timeout_secs(timeout),
            accept=lambda d: multi_lease_problem(d, names, sent_id), decode=MultiLeaseInfo.from_json,
        )

    @staticmethod
    def renew_multi_request(lease: MultiLeaseInfo, ttl: Optional[Duration], timeout: Optional[Duration]) -> Request[MultiLeaseInfo]:
        body: Dict[str, Any] = {"lease_id": lease.lease_id, "locks": [{"name": lk.name, "token": token_arg(lk.token)} for lk in lease.locks]}
        if ttl is not None:
            body["ttl"] = wire_duration(ttl, "ttl")
        names = [lk.name for lk in lease.locks]
        tokens = [lk.token for lk in lease.locks]
        return Request(
            "POST", "/v1/multilocks/renew", body, timeout=timeout_secs(timeout),
            accept=lambda d: multi_lease_problem(d, names, lease.lease_id, tokens), decode=MultiLeaseInfo.from_json,
        )

    @staticmethod
    def release_multi_request(lease: MultiLeaseInfo, timeout: Optional[Duration]) -> Request[None]:
        body = {"lease_id": lease.lease_id, "locks": [{"name": lk.name, "token": token_arg(lk.token)} for lk in lease.locks]}
        return Request("POST", "/v1/multilocks/release", body, timeout=timeout_secs(timeout), decode=_nothing)

    @staticmethod
    def multi_lock_status_request(lease_id: str) -> Request[Dict[str, Any]]:
        return get_request("/v1/multilocks/" + urllib.parse.quote(lease_id, safe=""), {}, 0.0, as_is)
