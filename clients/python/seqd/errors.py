"""The errors of the seqd client.

Every failure is a :class:`SeqdError`. The daemon's answers carry a
``code`` (``held``, ``stale_token``, ``lost``, ...) and an HTTP ``status``;
failures to reach the daemon have ``status`` ``None`` and the code
``unavailable`` (or ``tls`` for a refused TLS handshake).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Type


class SeqdError(Exception):
    """A request to seqd failed.

    Attributes:
        code: the daemon's error code (``"held"``, ``"stale_token"``,
            ``"lost"``, ``"unavailable"``, ...), or the client's own word for
            a failure that never reached the daemon.
        status: the HTTP status, or ``None`` when the daemon did not answer.
        current_token: the lock's current token where the daemon knows one
            (409 answers), else ``None``.
        message: the daemon's sentence (or the client's).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: Optional[int] = None,
        current_token: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.current_token = current_token

    def __str__(self) -> str:
        where = f"{self.status} {self.code}" if self.status is not None else self.code
        return f"{self.message} ({where})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code!r}, "
            f"status={self.status!r}, current_token={self.current_token!r})"
        )


class HeldError(SeqdError):
    """409 ``held``: the lock (semaphore, election) was not granted within the wait."""


class StaleTokenError(SeqdError):
    """409 ``stale_token``: the token is below the lock's current one.

    ``current_token`` is the newer token.
    """


class LostError(SeqdError):
    """409 ``lost`` (or ``broken``): the lease has ended.

    It was released, expired, lost with the daemon's ZooKeeper session, broken
    by an operator, or is unknown to the daemon asked.
    """


class UnavailableError(SeqdError):
    """The daemon could not be reached, did not answer in time, or answered
    503 ``unavailable`` (it cannot reach ZooKeeper now). Try again."""


class UnauthorizedError(SeqdError):
    """401 ``unauthorized`` (a missing or wrong API token), 403 (not allowed),
    or a TLS handshake the daemon refused or that could not verify it
    (code ``tls``)."""


class BadRequestError(SeqdError):
    """400 ``bad_request``: an invalid name, duration, body or argument. Also
    raised by the client itself, before any request, for arguments it can
    tell are wrong."""


class ProtocolError(SeqdError):
    """The daemon's answer broke the protocol: not JSON, not
    ``application/json``, of the wrong shape, cut short, for another lock or
    lease, or with a token that is not an integer in 1..2^64-1 or that
    changed. It names the daemon and quotes what it sent (at most 200
    bytes, never the API token). Something other than seqd answered (a
    proxy, a wrong port) or the daemon is broken: the client trusts none of
    it, and a held lease that gets such an answer is lost at once (code
    ``protocol``)."""


_BY_CODE: Dict[str, Type[SeqdError]] = {
    "held": HeldError,
    "stale_token": StaleTokenError,
    "lost": LostError,
    "broken": LostError,
    "unavailable": UnavailableError,
    "unauthorized": UnauthorizedError,
    "bad_request": BadRequestError,
}


def error_from_answer(status: int, body: Any, raw: bytes, redact: Callable[[str], str] = lambda s: s) -> SeqdError:
    """The typed error for a non-2xx answer of the daemon; ``redact`` takes
    the API token out of what the answer quotes."""
    code = ""
    message = ""
    current: Optional[int] = None
    if isinstance(body, dict):
        c, e = body.get("code"), body.get("error")
        code = c if isinstance(c, str) else ""
        message = redact(e) if isinstance(e, str) else ""
        tok = body.get("current_token")
        if isinstance(tok, int) and not isinstance(tok, bool) and tok > 0:
            current = tok
    if not message:
        message = redact(raw.decode("utf-8", "replace")).strip()[:200] or f"HTTP {status}"
    if not code:
        code = "http"
    cls = _BY_CODE.get(code)
    if cls is None:
        if status == 401 or status == 403:
            cls = UnauthorizedError
        elif status == 400:
            cls = BadRequestError
        elif status in (502, 503, 504):
            cls = UnavailableError
        else:
            cls = SeqdError
    return cls(message, code=code, status=status, current_token=current)
