"""A small HTTP proxy on loopback for the tests: CONNECT tunnels and absolute-URI requests.

Every target is sent to one upstream address whatever name the client asked for, so a test can
name the API server by a host that resolves nowhere: an answer then proves the request went
through the proxy. It records each request line and Proxy-Authorization it saw, and can ask for
credentials (407) like a corporate proxy.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class ConnectProxy:
    def __init__(self, upstream: tuple[str, int], *, credentials: str | None = None) -> None:
        self.upstream = upstream
        self.credentials = credentials
        self.seen: list[str] = []
        self.authorizations: list[str] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._server.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        head = _read_head(client)
        if head is None:
            client.close()
            return
        request, authorization, headers = head
        self.seen.append(request)
        self.authorizations.append(authorization)
        if self.credentials is not None and authorization != self.credentials:
            client.sendall(
                b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
            )
            client.close()
            return
        upstream = socket.create_connection(self.upstream)
        if request.startswith("CONNECT "):
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(client, upstream)
            return
        # Absolute-URI requests, one after another on a kept-alive connection: each is sent on
        # with the path alone, as an origin server expects; the answers flow back untouched.
        threading.Thread(target=_copy, args=(upstream, client), daemon=True).start()
        while head is not None:
            request, _, headers = head
            method, target, version = request.split(" ", 2)
            path = "/" + target.split("://", 1)[1].partition("/")[2]
            length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
            lines = [f"{method} {path} {version}", *(f"{k}: {v}" for k, v in headers), "", ""]
            body = _read_exactly(client, length)
            try:
                upstream.sendall("\r\n".join(lines).encode("latin-1") + body)
            except OSError:
                break
            head = _read_head(client)
            if head is not None:
                self.seen.append(head[0])
                self.authorizations.append(head[1])
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)


def _read_head(sock: socket.socket) -> tuple[str, str, list[tuple[str, str]]] | None:
    """(request line, Proxy-Authorization, other headers) of the next request, or None at the
    end; byte by byte, so nothing past the head is taken from the socket."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        try:
            byte = sock.recv(1)
        except OSError:
            return None
        if not byte:
            return None
        raw += byte
    lines = raw.decode("latin-1").split("\r\n")[:-2]
    authorization = ""
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "proxy-authorization":
            authorization = value.strip()
        else:
            headers.append((name.strip(), value.strip()))
    return lines[0], authorization, headers


def _read_exactly(sock: socket.socket, length: int) -> bytes:
    data = b""
    while len(data) < length:
        piece = sock.recv(length - len(data))
        if not piece:
            break
        data += piece
    return data


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    threading.Thread(target=_copy, args=(a, b), daemon=True).start()
    _copy(b, a)
