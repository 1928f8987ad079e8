"""The HTTP transport: kept-alive connections, TLS, bearer token, JSON.

``http.client`` rather than ``urllib.request``: it reuses a connection for
the next request (``urllib`` opens one per request, a TCP and, with TLS, a
handshake per renewal) and lets a blocking read be cut short from another
thread.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import ProtocolError, SeqdError, UnauthorizedError, UnavailableError, error_from_answer

# Idle connections kept per client: a holder uses one for renewals and one
# per blocking read.
_MAX_IDLE = 8

# An answer larger than this is not one of the daemon's.
_MAX_BODY = 1 << 20

# How much of a bad answer an error quotes.
_QUOTE = 200

_mono = time.monotonic

# What an accept check gets (a decoded answer) and returns (what is wrong
# with it, or None).
Accept = Callable[[Dict[str, Any]], Optional[str]]


class _CutShort(Exception):
    """An answer whose body ended before its end."""

    def __init__(self, status: int, ctype: str, raw: bytes) -> None:
        super().__init__()
        self.status, self.ctype, self.raw = status, ctype, raw


class Canceller:
    """Cuts a request in flight short from another thread (the blocking read
    of a lease's watcher, when its block ends)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None
        self.cancelled = False

    def _attach(self, conn: Optional[http.client.HTTPConnection]) -> bool:
        with self._lock:
            if self.cancelled:
                return False
            self._conn = conn
            return True

    def cancel(self) -> None:
        """Abort the request in flight, if any; later requests fail at once."""
        with self._lock:
            self.cancelled = True
            conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Wire:
    """What every transport to one daemon shares, whatever its I/O: the
    headers it sends, and the rules by which it accepts an answer or says
    why not."""

    def __init__(self, addr: str, token: Optional[str], context: Optional[ssl.SSLContext], timeout: float) -> None:
        u = urllib.parse.urlsplit(addr)
        self.addr = addr
        self._https = u.scheme == "https"
        self._host = u.hostname or "127.0.0.1"
        self._port = u.port
        self._base = u.path.rstrip("/")
        self._token = token
        self._context = context
        self.redact: Callable[[str], str] = _redactor(token)
        self.timeout = timeout

    def headers(self, data: Optional[bytes]) -> Dict[str, str]:
        """The headers of a request with body ``data``."""
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        return headers

    def decode(
        self, what: str, status: int, ctype: str, raw: bytes, ok_statuses: Tuple[int, ...], accept: Optional[Accept]
    ) -> Tuple[int, Dict[str, Any]]:
        """The decoded answer of a request, or the error it means: a non-2xx
        status not in ``ok_statuses`` is the daemon's error; a 2xx answer
        must be a JSON object sent as ``application/json`` that passes
        ``accept``, else it is a :class:`ProtocolError`."""
        if not (200 <= status < 300 or status in ok_statuses):
            try:
                doc = _loads(raw) if raw else None
            except ValueError:
                doc = None
            raise error_from_answer(status, doc, raw, self.redact)
        if ctype.split(";")[0].strip().lower() != "application/json":
            raise self.protocol_error(what, f"the answer's Content-Type is {ctype or 'missing'}, not application/json", status, ctype, raw)
        try:
            doc = _loads(raw)
        except ValueError as e:
            raise self.protocol_error(what, f"the answer is not JSON ({e})", status, ctype, raw) from None
        if not isinstance(doc, dict):
            raise self.protocol_error(what, "the answer is JSON but not an object", status, ctype, raw)
        problem = accept(doc) if accept is not None else None
        if problem is not None:
            raise self.protocol_error(what, problem, status, ctype, raw)
        return status, doc

    def protocol_error(self, what: str, problem: str, status: Optional[int], ctype: str, raw: bytes) -> ProtocolError:
        """The error for an answer that broke the protocol: it names the
        daemon and quotes the answer's first 200 bytes, without the API
        token."""
        quote = self.redact(raw.decode("utf-8", "replace"))[:_QUOTE]
        return ProtocolError(
            f"the daemon at {self.addr} broke the protocol answering {what}: {problem}; "
            f"it sent {status} {ctype or '(no Content-Type)'}: {quote!r}",
            code="protocol",
            status=status,
        )

    def timed_out(self, what: str, t: float) -> UnavailableError:
        return UnavailableError(f"the daemon at {self.addr} did not answer {what} within {t:g}s", code="unavailable")

    def unreachable(self, e: BaseException, cancelled: bool = False) -> SeqdError:
        """The error for a request that got no answer because of ``e``."""
        if cancelled:
            return UnavailableError("request cancelled", code="cancelled")
        if isinstance(e, ssl.SSLCertVerificationError):
            return UnauthorizedError(
                f"cannot verify the certificate of the daemon at {self.addr}: {e.verify_message}; "
                "give the CA that signed it (SEQD_CACERT or cacert=)",
                code="tls",
            )
        if isinstance(e, ssl.SSLError):
            return UnauthorizedError(
                f"TLS handshake with the daemon at {self.addr} failed: {e}; "
                "if it requires a client certificate, give one (SEQD_CERT and SEQD_KEY, or cert= and key=)",
                code="tls",
            )
        if isinstance(e, socket.timeout):
            return UnavailableError(f"the daemon at {self.addr} did not answer in time", code="unavailable")
        return UnavailableError(f"cannot reach the daemon at {self.addr}: {e}", code="unavailable")


def _redactor(token: Optional[str]) -> Callable[[str], str]:
    if not token:
        return lambda t: t
    secret: str = token
    return lambda t: t.replace(secret, "[redacted]")


class Transport(Wire):
    """Sends JSON requests to one daemon over a small pool of connections."""

    def __init__(self, addr: str, token: Optional[str], context: Optional[ssl.SSLContext], timeout: float) -> None:
        super().__init__(addr, token, context, timeout)
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _new_conn(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._context)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _get(self) -> Tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._new_conn(self.timeout), False

    def _put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def request(
        self,
        method: str,
        path: str,
        body: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        canceller: Optional[Canceller] = None,
        ok_statuses: Tuple[int, ...] = (),
        accept: Optional[Accept] = None,
    ) -> Tuple[int, Dict[str, Any]]:
        """Send a request; return (status, decoded JSON) for a 2xx answer or a
        status in ``ok_statuses``, raise a :class:`SeqdError` otherwise.

        The whole request (connect, send, first byte, whole body) takes at
        most ``timeout`` seconds. A 2xx answer must be a JSON object sent as
        ``application/json`` and pass ``accept``: anything else is a
        :class:`ProtocolError` that quotes it.

        A request on a kept-alive connection that the daemon closed while it
        was idle is sent once more on a new connection (the daemon never read
        it; Go's HTTP client does the same).
        """
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = self.headers(data)
        t = self.timeout if timeout is None else timeout
        deadline = _mono() + t
        what = f"{method} {path}"
        for attempt in (0, 1):
            conn, reused = self._get()
            if canceller is not None and not canceller._attach(conn):
                self._put(conn)
                raise UnavailableError("request cancelled", code="cancelled")
            try:
                status, ctype, raw, keep = self._roundtrip(conn, method, self._base + path, data, headers, deadline)
            except _CutShort as e:
                conn.close()
                raise self.protocol_error(what, "the answer was cut short", e.status, e.ctype, e.raw) from None
            except socket.timeout as e:
                conn.close()
                if canceller is not None and canceller.cancelled:
                    raise UnavailableError("request cancelled", code="cancelled") from e
                raise self.timed_out(what, t) from e
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                alert = self._tls_alert(conn)
                conn.close()
                if alert is not None:
                    raise self.unreachable(alert, canceller is not None and canceller.cancelled) from e
                if reused and attempt == 0 and not (canceller is not None and canceller.cancelled):
                    continue
                raise self.unreachable(e, canceller is not None and canceller.cancelled) from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise self.unreachable(e, canceller is not None and canceller.cancelled) from e
            except BaseException:
                # Interrupted (Ctrl-C): close now, so that the daemon sees the
                # client gone and withdraws a waiting acquire.
                conn.close()
                raise
            finally:
                if canceller is not None:
                    canceller._attach(None)
            if keep:
                self._put(conn)
            else:
                conn.close()
            return self.decode(what, status, ctype, raw, ok_statuses, accept)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _roundtrip(
        conn: http.client.HTTPConnection, method: str, path: str, data: Optional[bytes], headers: Dict[str, str], deadline: float
    ) -> Tuple[int, str, bytes, bool]:
        """One exchange, every read bounded by ``deadline``: a socket timeout
        alone bounds each read, and a daemon that drips its status line, its
        headers or its body a byte at a time would never reach it."""
        conn.timeout = _left(deadline)
        if conn.sock is not None:
            conn.sock.settimeout(conn.timeout)
        conn.request(method, path, body=data, headers=headers)
        sock = conn.sock
        if sock is not None:
            # The response reads through this socket's makefile(): each read
            # then waits no longer than what is left of the deadline.
            conn.sock = _DeadlineSocket(sock, deadline)
        try:
            resp = conn.getresponse()
        finally:
            if conn.sock is not None:
                conn.sock = sock
        ctype = resp.getheader("Content-Type") or ""
        chunks: List[bytes] = []
        size = 0
        try:
            while True:
                b = resp.read1(65536)
                if not b:
                    break
                size += len(b)
                if size > _MAX_BODY:
                    raise http.client.HTTPException("answer over 1 MiB")
                chunks.append(b)
                _left(deadline)
        except http.client.IncompleteRead as e:
            raise _CutShort(resp.status, ctype, b"".join(chunks) + e.partial) from None
        # read1 leaves a response whose length it has read open, and the
        # connection refuses the next request until it is closed.
        resp.close()
        return resp.status, ctype, b"".join(chunks), not resp.will_close

    def _tls_alert(self, conn: http.client.HTTPConnection) -> Optional[ssl.SSLError]:
        """The TLS alert behind a connection the daemon closed, if any. With
        TLS 1.3 the daemon refuses a missing client certificate after the
        handshake, and the request's send may fail (EPIPE, reset) before the
        alert is read."""
        if not self._https or conn.sock is None:
            return None
        try:
            conn.sock.settimeout(0.5)
            conn.sock.recv(1)
        except ssl.SSLError as e:
            return e
        except OSError:
            pass
        return None


def _left(deadline: float) -> float:
    """Seconds left until ``deadline``; a timeout once it has passed."""
    r = deadline - _mono()
    if r <= 0:
        raise socket.timeout("deadline passed")
    return r


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each given only what is left of a deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline
        # The socket's own reader counts as a user of the socket, so that a
        # connection closed by http.client (an answer without a length)
        # stays open until its answer has been read.
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> Optional[int]:
        self._sock.settimeout(_left(self._deadline))
        return self._raw.readinto(b)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connection's socket while an answer is read: ``http.client`` reads
    the status line, the headers and the body through ``makefile()``, which
    here bounds every read by the request's deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(raw: bytes) -> Any:
    """JSON as the daemon writes it: no NaN or Infinity."""
    return json.loads(raw, parse_constant=_refuse_constant)
