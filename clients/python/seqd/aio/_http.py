"""HTTP/1.1 over asyncio streams (TCP or TLS), with kept-alive connections.

The standard library has no asyncio HTTP client; the daemon speaks a small
part of HTTP/1.1 (JSON bodies with a Content-Length, chunked, or up to the
close), which is all this reads. Every rule about what an answer must be
is :class:`seqd._http.Wire`'s, shared with the blocking transport.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
from typing import Any, Dict, List, Optional, Tuple

from .._http import _MAX_BODY, _MAX_IDLE, Accept, Wire, _CutShort

# The longest status or header line, and the most header lines, accepted.
_MAX_LINE = 8192
_MAX_HEADERS = 100


class _Closed(Exception):
    """The connection ended before any byte of an answer: on a kept-alive
    connection, the daemon closed it while idle and never read the request."""


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        try:
            self.writer.close()
        except (OSError, RuntimeError):  # a closed loop
            pass


class _Slot:
    """The connection an exchange uses, so that whoever abandons the
    exchange (a timeout, a cancellation) can close it."""

    conn: Optional[_Conn] = None


class AsyncTransport(Wire):
    """Sends JSON requests to one daemon over a small pool of connections,
    from coroutines of one event loop."""

    def __init__(self, addr: str, token: Optional[str], context: Optional[ssl.SSLContext], timeout: float) -> None:
        super().__init__(addr, token, context, timeout)
        self._idle: List[_Conn] = []

    def close(self) -> None:
        """Close the idle connections."""
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        ok_statuses: Tuple[int, ...] = (),
        accept: Optional[Accept] = None,
    ) -> Tuple[int, Dict[str, Any]]:
        """As :meth:`seqd._http.Transport.request`. Cancelling the calling
        task closes the request's connection, so that the daemon sees the
        client gone (and withdraws a waiting acquire)."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = self._head(method, self._base + path, data)
        t = self.timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + t
        what = f"{method} {path}"
        for attempt in (0, 1):
            slot = _Slot()
            reused = bool(self._idle)
            if reused:
                slot.conn = self._idle.pop()
            try:
                status, ctype, raw, keep = await asyncio.wait_for(self._exchange(slot, head, data), max(0.0, deadline - loop.time()))
            except _CutShort as e:
                _drop(slot)
                raise self.protocol_error(what, "the answer was cut short", e.status, e.ctype, e.raw) from None
            except asyncio.TimeoutError as e:
                _drop(slot)
                raise self.timed_out(what, t) from e
            except (_Closed, ConnectionResetError, BrokenPipeError) as e:
                _drop(slot)
                if reused and attempt == 0:
                    continue
                raise self.unreachable(e) from e
            except (OSError, ssl.SSLError, http.client.HTTPException, ValueError) as e:
                _drop(slot)
                raise self.unreachable(e) from e
            except BaseException:
                _drop(slot)  # cancelled: the daemon must see the client gone
                raise
            if keep and slot.conn is not None and len(self._idle) < _MAX_IDLE:
                self._idle.append(slot.conn)
            else:
                _drop(slot)
            return self.decode(what, status, ctype, raw, ok_statuses, accept)
        raise AssertionError("unreachable")  # pragma: no cover

    def _head(self, method: str, target: str, data: Optional[bytes]) -> bytes:
        host = self._host if self._port is None else f"{self._host}:{self._port}"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
        lines += [f"{k}: {v}" for k, v in self.headers(data).items()]
        if data is not None:
            lines.append(f"Content-Length: {len(data)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _exchange(self, slot: _Slot, head: bytes, data: Optional[bytes]) -> Tuple[int, str, bytes, bool]:
        if slot.conn is None:
            port = self._port or (443 if self._https else 80)
            if self._https:
                r, w = await asyncio.open_connection(self._host, port, ssl=self._context or ssl.create_default_context(), server_hostname=self._host)
            else:
                r, w = await asyncio.open_connection(self._host, port)
            slot.conn = _Conn(r, w)
        conn = slot.conn
        conn.writer.write(head + (data or b""))
        await conn.writer.drain()
        line = await conn.reader.readline()
        if not line:
            raise _Closed("the connection closed before an answer")
        status = _status(line)
        headers: Dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            h = await conn.reader.readline()
            if len(h) > _MAX_LINE:
                raise http.client.HTTPException("header line too long")
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise _CutShort(status, headers.get("content-type", ""), b"")
            k, sep, v = h.decode("latin-1").partition(":")
            if not sep:
                raise http.client.HTTPException(f"malformed header line {h[:80]!r}")
            headers[k.strip().lower()] = v.strip()
        else:
            raise http.client.HTTPException("too many header lines")
        ctype = headers.get("content-type", "")
        raw, framed = await _body(conn.reader, headers, status, ctype)
        keep = framed and "close" not in headers.get("connection", "").lower()
        return status, ctype, raw, keep


def _drop(slot: _Slot) -> None:
    if slot.conn is not None:
        slot.conn.close()
        slot.conn = None


def _status(line: bytes) -> int:
    parts = line.decode("latin-1").split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise http.client.HTTPException(f"not an HTTP/1.x status line: {line[:80]!r}")
    return int(parts[1])


async def _body(reader: asyncio.StreamReader, headers: Dict[str, str], status: int, ctype: str) -> Tuple[bytes, bool]:
    """The answer's body, and whether its end was framed (so that the
    connection can carry another request)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _chunked(reader, status, ctype), True
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise http.client.HTTPException(f"bad Content-Length {length!r}")
        n = int(length)
        if n > _MAX_BODY:
            raise http.client.HTTPException("answer over 1 MiB")
        try:
            return await reader.readexactly(n), True
        except asyncio.IncompleteReadError as e:
            raise _CutShort(status, ctype, e.partial) from None
    if status in (204, 304) or 100 <= status < 200:
        return b"", True
    raw = await reader.read(_MAX_BODY + 1)
    chunks = [raw]
    size = len(raw)
    while raw:
        raw = await reader.read(_MAX_BODY + 1 - size)
        size += len(raw)
        chunks.append(raw)
        if size > _MAX_BODY:
            raise http.client.HTTPException("answer over 1 MiB")
    return b"".join(chunks), False


async def _chunked(reader: asyncio.StreamReader, status: int, ctype: str) -> bytes:
    chunks: List[bytes] = []
    size = 0
    try:
        while True:
            line = await reader.readline()
            if not line:
                raise _CutShort(status, ctype, b"".join(chunks))
            n = int(line.split(b";", 1)[0].strip() or b"x", 16)
            if n == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            size += n
            if size > _MAX_BODY:
                raise http.client.HTTPException("answer over 1 MiB")
            chunks.append(await reader.readexactly(n))
            await reader.readexactly(2)
    except asyncio.IncompleteReadError as e:
        raise _CutShort(status, ctype, b"".join(chunks) + e.partial) from None

