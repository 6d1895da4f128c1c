"""Keep-alive HTTP(S) connections to one API server, on the standard library. Performs I/O.

The lean session (`tau.kube.direct`) sends its requests through this pool rather than urllib3,
whose import alone (~30 ms of CPU: regexes, its HTTP/2 probe, email parsing) is a large part of
what a short `tau run status` spends. Connections are reused across requests and shared by
threads (a `--watch` reads several streams at once). A response is handed out unread: `.data`
reads it whole, `.stream()` as it arrives; either returns the connection to the pool once the
body is complete. Every transport failure leaves as `TransportError`, a `ConnectionError` that
keeps the cause's words, so `tau.kube.errors` says what happened (refused, timed out, TLS).
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

#: Seconds, or (connect, read) seconds; None waits for ever.
Timeout = float | tuple[float, float] | None

#: Methods that change nothing when repeated.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Bytes read at a time from a streamed body.
_CHUNK = 65536


class TransportError(ConnectionError):
    """The request did not get an answer (refused, timed out, TLS, connection dropped)."""


class _Https(http.client.HTTPSConnection):
    """HTTPS that checks the certificate against `server_name` (kubeconfig tls-server-name)."""

    def __init__(self, host: str, port: int | None, *, context: ssl.SSLContext, name: str):
        super().__init__(host, port, context=context)
        self._name = name
        self._tls = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._name)


class Response:
    """An answer whose body is read on demand (the calls of a urllib3 response tau uses)."""

    def __init__(self, pool: Pool, connection: http.client.HTTPConnection, answer: Any) -> None:
        self._pool = pool
        self.connection = connection
        self._answer = answer
        self.status: int = answer.status
        self.reason: str = answer.reason
        self.headers = answer.headers
        self._data: bytes | None = None

    @property
    def data(self) -> bytes:
        """The whole body (read once)."""
        if self._data is None:
            try:
                self._data = self._answer.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise TransportError(f"{type(exc).__name__}: {exc}") from exc
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
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        self.release_conn()

    def release_conn(self) -> None:
        """Give the connection back when the body is complete; drop it otherwise."""
        if self.connection is None:
            return
        if self._answer.isclosed() and not self._answer.will_close:
            self._pool.put(self.connection)
        else:
            self.connection.close()
        self.connection = None  # type: ignore[assignment]

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None  # type: ignore[assignment]


class Pool:
    """Idle connections to the server at `url`, for any thread."""

    def __init__(self, url: str, context: ssl.SSLContext | None, server_name: str = "") -> None:
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._context = context
        self._name = server_name or self._host
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _new(self) -> http.client.HTTPConnection:
        if self._https:
            assert self._context is not None
            return _Https(self._host, self._port, context=self._context, name=self._name)
        return http.client.HTTPConnection(self._host, self._port)

    def put(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(connection)

    def _take(self) -> http.client.HTTPConnection | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

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
            if connection is None:
                connection = self._new()
                connection.timeout = connect
            try:
                if connection.sock is None:
                    connection.connect()
                connected = True
                connection.sock.settimeout(read)
                connection.request(method, self._prefix + target, body=body, headers=headers)
                answer = connection.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                # Retried: a connection that never opened, a pooled one the server had closed,
                # or a request that changes nothing when repeated; never a TLS refusal or a
                # timeout, which would only fail again.
                again = not connected or reused or method in IDEMPOTENT
                if attempt == 2 or not again or isinstance(exc, (ssl.SSLError, TimeoutError)):
                    raise TransportError(f"{type(exc).__name__}: {exc}") from exc
                continue
            return Response(self, connection, answer)
        raise AssertionError("unreachable")

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
