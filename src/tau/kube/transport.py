"""Keep-alive HTTP/1.1 connections to one API server, through `http.client`. Performs I/O.

The lean session (`tau.kube.direct`) sends its requests through this pool rather than urllib3,
whose import alone (its HTTP/2 probes, its own pools and retries) was a large part of what a
short `tau run status` spends. The framing is the standard library's: `http.client` costs a
command about 13 ms of imports (`-X importtime`, cumulative, on a 2-core machine at load 4.5;
`bench/transport_import.py` pairs fresh interpreters with and without it: 33 ms against a 46 ms
interpreter start at load 5, about 2.5 times a quiet machine's), under the 20 ms a hand-written
framing would have to save to be kept. It does the framing (Content-Length, chunked transfer
coding, the end of the connection, interim answers); this module adds what tau needs on top:
connections reused across requests and shared by threads (a `--watch` reads several streams at
once), a connect timeout apart from the read timeout, the kubeconfig's `tls-server-name`, a
proxy chosen as kubectl chooses it (`tau.kube.proxy`), and one retry where it is safe. A
response is handed out unread: `.data` reads it whole, `.stream()` as it arrives; either returns
the connection to the pool once the body is complete. Every transport failure leaves as
`TransportError`, a `ConnectionError` that keeps the cause's words, so `tau.kube.errors` says
what happened (refused, timed out, TLS, a malformed answer).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from tau.kube.proxy import Proxy

#: Seconds, or (connect, read) seconds; None waits for ever.
Timeout = float | tuple[float, float] | None

#: Methods that change nothing when repeated.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Methods that always carry a body (an empty one is sent as Content-Length: 0).
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
#: Bytes read at a time from a streamed body.
_CHUNK = 65536


class TransportError(ConnectionError):
    """The request did not get an answer (refused, timed out, TLS, connection dropped)."""


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x as this client reads it."""


class Headers(dict[str, str]):
    """Response headers by lower-cased name; `get` takes any case."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


class _Connection(http.client.HTTPConnection):
    """One connection: plain, or TLS checked against the kubeconfig's server name, either
    direct or through a proxy's CONNECT tunnel (`set_tunnel`).
    """

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, server_name: str):
        super().__init__(host, port)
        self._tls = tls
        self._server_name = server_name

    def open(self, connect: float | None, read: float | None) -> None:
        self.timeout = connect
        self.connect()
        assert self.sock is not None
        self.sock.settimeout(read)

    def connect(self) -> None:
        # http.client's own connect also sends the CONNECT of a tunnel when one is set.
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


class Response:
    """An answer whose body is read on demand (the calls of a urllib3 response tau uses)."""

    def __init__(self, pool: Pool, connection: _Connection, answer: http.client.HTTPResponse):
        self._pool = pool
        self.connection: _Connection | None = connection
        self._answer = answer
        self.status = answer.status
        self.reason = answer.reason
        self.headers = Headers()
        for name, value in answer.getheaders():
            key = name.lower()
            self.headers[key] = f"{self.headers[key]}, {value}" if key in self.headers else value
        self._data: bytes | None = None
        if answer.length == 0 and not answer.chunked:  # HEAD, 204, 304 or an empty body
            self._data = answer.read()  # nothing to read: this only marks the answer done
            self.release_conn()

    @property
    def data(self) -> bytes:
        """The whole body (read once)."""
        if self._data is None:
            try:
                self._data = self._answer.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise _failure(exc) from exc
            self.release_conn()
        return self._data

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        """The body as it arrives, in pieces of at most `amt` bytes."""
        del decode_content  # identity only: tau never asks for a compressed body
        try:
            while True:
                piece = self._answer.read1(amt or _CHUNK)
                if not piece:
                    break
                yield piece
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise _failure(exc) from exc
        self.release_conn()

    def release_conn(self) -> None:
        """Give the connection back when the body is complete; drop it otherwise."""
        if self.connection is None:
            return
        if self._answer.isclosed() and not self._answer.will_close:
            self._pool.put(self.connection)
        else:
            self.connection.close()
        self.connection = None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _failure(exc: BaseException) -> TransportError:
    """The TransportError for a failure while reading, in words a person reads."""
    if isinstance(exc, http.client.IncompleteRead):
        return TransportError(f"ProtocolError: body ended {exc.expected} bytes short")
    return TransportError(f"{type(exc).__name__}: {exc}")


def _check(answer: http.client.HTTPResponse) -> None:
    """Refuse what `http.client` lets through but an API server never sends.

    Raises:
        ProtocolError: a header line without a colon, or a Content-Length that is no number.
    """
    if answer.msg.defects:
        raise ProtocolError(f"malformed header: {answer.msg.defects[0]}")
    length = answer.getheader("content-length")
    if length is not None and not length.strip().isdigit():
        raise ProtocolError(f"bad Content-Length: {length!r}")


class Pool:
    """Idle connections to the server at `url`, for any thread."""

    def __init__(
        self,
        url: str,
        context: ssl.SSLContext | None,
        server_name: str = "",
        proxy: Proxy | None = None,
    ) -> None:
        parts = urlsplit(url)
        https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if https else 80)
        self.tls = context if https else None
        if https and context is None:
            raise ValueError("an https server needs a TLS context")
        self.server_name = server_name or self.host
        self.proxy = proxy
        self._prefix = parts.path.rstrip("/")
        # As http.client writes it: the port only when it is not the scheme's own.
        name = f"[{self.host}]" if ":" in self.host else self.host
        self._host_header = (
            name if parts.port in (None, 443 if https else 80) else f"{name}:{self.port}"
        )
        # A plain-http server behind a proxy is asked with the absolute URI (no tunnel).
        self._absolute = f"http://{self._host_header}" if proxy and not https else ""
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def put(self, connection: _Connection) -> None:
        with self._lock:
            self._idle.append(connection)

    def _take(self) -> _Connection | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _new(self) -> _Connection:
        proxy = self.proxy
        if proxy is None:
            return _Connection(self.host, self.port, self.tls, self.server_name)
        connection = _Connection(proxy.host, proxy.port, self.tls, self.server_name)
        if self.tls is not None:
            connection.set_tunnel(self.host, self.port, headers=proxy.headers())
        return connection

    def _send(self, connection: _Connection, method: str, target: str, headers, body) -> None:
        connection.putrequest(
            method,
            f"{self._absolute}{self._prefix}{target}",
            skip_host=True,
            skip_accept_encoding=True,
        )
        connection.putheader("Host", self._host_header)
        connection.putheader("Accept-Encoding", "identity")
        if self._absolute and self.proxy is not None:
            for name, value in self.proxy.headers().items():
                connection.putheader(name, value)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None or method in _WITH_BODY:
            connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body or None)

    def request(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        headers: dict[str, str],
        timeout: Timeout,
    ) -> Response:
        """Send one request and read the status line and headers.

        A failed request is retried once on a new connection (as the official client's pool
        does) where that is safe: see below.

        Raises:
            TransportError: no answer.
        """
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        for attempt in (1, 2):
            connection = self._take()
            reused = connection is not None
            connected = reused
            connection = connection or self._new()
            try:
                if connection.sock is None:
                    connection.open(connect, read)
                connected = True
                assert connection.sock is not None
                connection.sock.settimeout(read)
                self._send(connection, method, target, headers, body)
                answer = connection.getresponse()
                _check(answer)
                return Response(self, connection, answer)
            except (OSError, http.client.HTTPException, ProtocolError) as exc:
                connection.close()
                # Retried: a connection that never opened, a pooled one the server had closed,
                # or a request that changes nothing when repeated; never a TLS refusal, a
                # timeout or a refusal by the proxy, which would only fail again.
                again = not connected or reused or method in IDEMPOTENT
                final = isinstance(exc, (ssl.SSLError, TimeoutError)) or _proxy_refused(exc)
                if attempt == 2 or not again or final:
                    raise _transport_error(exc, self.proxy) from exc
        raise AssertionError("unreachable")

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _proxy_refused(exc: BaseException) -> bool:
    # http.client raises OSError("Tunnel connection failed: 407 ...") when CONNECT is refused.
    return isinstance(exc, OSError) and str(exc).startswith("Tunnel connection failed")


def _transport_error(exc: BaseException, proxy: Proxy | None) -> TransportError:
    if isinstance(exc, http.client.RemoteDisconnected):
        return TransportError(f"{type(exc).__name__}: the server closed the connection")
    if isinstance(exc, (http.client.BadStatusLine, http.client.LineTooLong, ProtocolError)):
        return TransportError(f"ProtocolError: {exc}")
    via = f" (through the proxy {proxy})" if proxy is not None else ""
    return TransportError(f"{type(exc).__name__}: {exc}{via}")
