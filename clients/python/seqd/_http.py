"""The HTTP transport: kept-alive connections, TLS, bearer token, JSON.

``http.client`` rather than ``urllib.request``: it reuses a connection for
the next request (``urllib`` opens one per request, a TCP and, with TLS, a
handshake per renewal) and lets a blocking read be cut short from another
thread.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from .errors import SeqdError, UnauthorizedError, UnavailableError, error_from_answer

# Idle connections kept per client: a holder uses one for renewals and one
# per blocking read.
_MAX_IDLE = 8

# An answer larger than this is not one of the daemon's.
_MAX_BODY = 1 << 20


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


class Transport:
    """Sends JSON requests to one daemon over a small pool of connections."""

    def __init__(self, addr: str, token: Optional[str], context: Optional[ssl.SSLContext], timeout: float) -> None:
        u = urllib.parse.urlsplit(addr)
        self.addr = addr
        self._https = u.scheme == "https"
        self._host = u.hostname or "127.0.0.1"
        self._port = u.port
        self._base = u.path.rstrip("/")
        self._token = token
        self._context = context
        self.timeout = timeout
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
    ) -> Tuple[int, Dict[str, Any]]:
        """Send a request; return (status, decoded JSON) for a 2xx answer or a
        status in ``ok_statuses``, raise a :class:`SeqdError` otherwise.

        A request on a kept-alive connection that the daemon closed while it
        was idle is sent once more on a new connection (the daemon never read
        it; Go's HTTP client does the same).
        """
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        t = self.timeout if timeout is None else timeout
        for attempt in (0, 1):
            conn, reused = self._get()
            if canceller is not None and not canceller._attach(conn):
                self._put(conn)
                raise UnavailableError("request cancelled", code="cancelled")
            try:
                status, raw, keep = self._roundtrip(conn, method, self._base + path, data, headers, t)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                alert = self._tls_alert(conn)
                conn.close()
                if alert is not None:
                    raise self._unreachable(alert, canceller) from e
                if reused and attempt == 0 and not (canceller is not None and canceller.cancelled):
                    continue
                raise self._unreachable(e, canceller) from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise self._unreachable(e, canceller) from e
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
            return self._decode(status, raw, ok_statuses)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _roundtrip(
        conn: http.client.HTTPConnection, method: str, path: str, data: Optional[bytes], headers: Dict[str, str], timeout: float
    ) -> Tuple[int, bytes, bool]:
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read(_MAX_BODY + 1)
        if len(raw) > _MAX_BODY:
            raise http.client.HTTPException("answer over 1 MiB")
        return resp.status, raw, not resp.will_close

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

    def _decode(self, status: int, raw: bytes, ok_statuses: Tuple[int, ...]) -> Tuple[int, Dict[str, Any]]:
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = None
        if 200 <= status < 300 or status in ok_statuses:
            if not isinstance(doc, dict):
                raise SeqdError(f"the daemon at {self.addr} answered {status} with a body that is not a JSON object", code="bad_answer", status=status)
            return status, doc
        raise error_from_answer(status, doc, raw)

    def _unreachable(self, e: BaseException, canceller: Optional[Canceller]) -> SeqdError:
        if canceller is not None and canceller.cancelled:
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
