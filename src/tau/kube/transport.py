"""Keep-alive HTTP/1.1 connections to one API server, on sockets and ssl. Performs I/O.

The lean session (`tau.kube.direct`) sends its requests through this pool rather than urllib3
or `http.client`, whose imports alone (~30 ms and ~10 ms of CPU: regexes, HTTP/2 probes, the
`email` package that parses their headers) were a large part of what a short `tau run status`
spends. The protocol tau needs of an API server is small: one request at a time per connection,
an answer framed by Content-Length, by chunked transfer coding or by the end of the connection,
and keep-alive. Connections are reused across requests and shared by threads (a `--watch`
reads several streams at once). A response is handed out unread: `.data` reads it whole,
`.stream()` as it arrives; either returns the connection to the pool once the body is complete.
Every transport failure leaves as `TransportError`, a `ConnectionError` that keeps the cause's
words, so `tau.kube.errors` says what happened (refused, timed out, TLS, a malformed answer).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

#: Seconds, or (connect, read) seconds; None waits for ever.
Timeout = float | tuple[float, float] | None

#: Methods that change nothing when repeated.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Methods that always carry a body (an empty one is sent as Content-Length: 0).
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
#: Bytes read at a time from a streamed body.
_CHUNK = 65536
#: The longest status, header or chunk-size line accepted, and the most header lines.
_MAX_LINE = 65536
_MAX_HEADERS = 100


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


class Connection:
    """One connection to the server; opened on first use."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self.sock: socket.socket | None = None
        self.file: Any = None

    def open(self, timeout: float | None) -> None:
        pool = self._pool
        sock = socket.create_connection((pool.host, pool.port), timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if pool.tls is not None:
                sock = pool.tls.wrap_socket(sock, server_hostname=pool.server_name)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.file = sock.makefile("rb")

    def send(self, head: bytes, body: bytes | None) -> None:
        assert self.sock is not None
        self.sock.sendall(head + body if body else head)

    def line(self) -> bytes:
        """One CRLF-terminated line (without it).

        Raises:
            ProtocolError: the line is too long or the connection ended inside it.
        """
        raw = self.file.readline(_MAX_LINE + 1)
        if len(raw) > _MAX_LINE:
            raise ProtocolError("line too long")
        if not raw.endswith(b"\n"):
            raise ProtocolError("connection closed inside a line")
        return raw.rstrip(b"\r\n")

    def close(self) -> None:
        for part in (self.file, self.sock):
            if part is not None:
                part.close()
        self.file = self.sock = None


def _head(connection: Connection) -> tuple[int, str, Headers, bool]:
    """(status, reason, headers, HTTP/1.0) of the next answer, skipping interim 1xx answers.

    Raises:
        ConnectionResetError: the server closed the connection before answering (a pooled
            connection it had dropped: the request is retried).
        ProtocolError: the answer is malformed.
    """
    while True:
        first = connection.file.readline(_MAX_LINE + 1)
        if not first:
            raise ConnectionResetError("the server closed the connection without an answer")
        version, _, rest = first.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {first[:80]!r}")
        headers = Headers()
        for _ in range(_MAX_HEADERS + 1):
            line = connection.line()
            if not line:
                break
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise ProtocolError(f"malformed header line: {line[:80]!r}")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        else:
            raise ProtocolError("too many headers")
        if not 100 <= int(code) < 200:
            return int(code), reason, headers, version == "HTTP/1.0"


class Response:
    """An answer whose body is read on demand (the calls of a urllib3 response tau uses)."""

    def __init__(self, pool: Pool, connection: Connection, method: str) -> None:
        self._pool = pool
        self.connection: Connection | None = connection
        self.status, self.reason, self.headers, old = _head(connection)
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        self._close_after = "close" in tokens or (old and "keep-alive" not in tokens)
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self._started_chunks = False
        #: Body bytes still due (-1: until the end of the connection; chunked: of this chunk).
        self._left = 0
        self._done = method == "HEAD" or self.status in (204, 304)
        if not self._done and not self._chunked:
            length = self.headers.get("content-length")
            if length is None:
                self._left, self._close_after = -1, True
            elif length.strip().isdigit():
                self._left = int(length)
                self._done = self._left == 0
            else:
                raise ProtocolError(f"bad Content-Length: {length!r}")
        self._data: bytes | None = b"" if self._done else None
        if self._done:
            self.release_conn()

    @property
    def data(self) -> bytes:
        """The whole body (read once)."""
        if self._data is None:
            try:
                self._data = b"".join(self._pieces(None))
            except (OSError, ProtocolError) as exc:
                self.close()
                raise TransportError(f"{type(exc).__name__}: {exc}") from exc
            self.release_conn()
        return self._data

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        """The body as it arrives, in pieces of at most `amt` bytes."""
        del decode_content  # identity only: tau never asks for a compressed body
        try:
            yield from self._pieces(amt or _CHUNK)
        except (OSError, ProtocolError) as exc:
            self.close()
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        self.release_conn()

    def _pieces(self, amt: int | None) -> Iterator[bytes]:
        """The rest of the body: whole runs when `amt` is None, else as it arrives."""
        connection = self.connection
        while not self._done and connection is not None:
            if self._chunked and self._left == 0:
                self._left = self._chunk_size(connection)
                if self._left == 0:
                    self._done = True
                    break
            if self._left < 0:  # until the server closes
                piece = connection.file.read() if amt is None else connection.file.read1(amt)
                if not piece:
                    self._done = True
                    break
            else:
                want = self._left if amt is None else min(amt, self._left)
                read = connection.file.read if amt is None else connection.file.read1
                piece = read(want)
                if not piece:
                    raise ProtocolError(f"body ended {self._left} bytes short")
                self._left -= len(piece)
                if self._left == 0 and not self._chunked:
                    self._done = True
            yield piece

    def _chunk_size(self, connection: Connection) -> int:
        """The next chunk's size; after the last chunk its trailer is read too."""
        # Every chunk but the first follows the CRLF that ends the previous chunk's data.
        if self._started_chunks and connection.line():
            raise ProtocolError("chunk longer than its size")
        self._started_chunks = True
        size = connection.line().split(b";", 1)[0].strip()
        try:
            value = int(size, 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size: {size[:20]!r}") from None
        if value == 0:
            while connection.line():  # the trailer, up to its blank line
                pass
        return value

    def release_conn(self) -> None:
        """Give the connection back when the body is complete; drop it otherwise."""
        if self.connection is None:
            return
        if self._done and not self._close_after:
            self._pool.put(self.connection)
        else:
            self.connection.close()
        self.connection = None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Pool:
    """Idle connections to the server at `url`, for any thread."""

    def __init__(self, url: str, context: ssl.SSLContext | None, server_name: str = "") -> None:
        parts = urlsplit(url)
        https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if https else 80)
        self.tls = context if https else None
        if https and context is None:
            raise ValueError("an https server needs a TLS context")
        self.server_name = server_name or self.host
        self._prefix = parts.path.rstrip("/")
        # As http.client writes it: the port only when it is not the scheme's own.
        name = f"[{self.host}]" if ":" in self.host else self.host
        self._host_header = (
            name if parts.port in (None, 443 if https else 80) else f"{name}:{self.port}"
        )
        self._idle: list[Connection] = []
        self._lock = threading.Lock()

    def put(self, connection: Connection) -> None:
        with self._lock:
            self._idle.append(connection)

    def _take(self) -> Connection | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _head(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {self._prefix}{target} HTTP/1.1", f"Host: {self._host_header}"]
        lines.append("Accept-Encoding: identity")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None or method in _WITH_BODY:
            lines.append(f"Content-Length: {len(body or b'')}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

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
        head = self._head(method, target, headers, body)
        for attempt in (1, 2):
            connection = self._take()
            reused = connection is not None
            connected = reused
            connection = connection or Connection(self)
            try:
                if connection.sock is None:
                    connection.open(connect)
                connected = True
                assert connection.sock is not None
                connection.sock.settimeout(read)
                connection.send(head, body)
                return Response(self, connection, method)
            except (OSError, ProtocolError) as exc:
                connection.close()
                # Retried: a connection that never opened, a pooled one the server had closed,
                # or a request that changes nothing when repeated; never a TLS refusal or a
                # timeout, which would only fail again.
                again = not connected or reused or method in IDEMPOTENT
                if attempt == 2 or not again or isinstance(exc, (ssl.SSLError, TimeoutError)):
                    raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
