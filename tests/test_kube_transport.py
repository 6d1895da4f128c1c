"""The lean session's HTTP/1.1: framing, keep-alive, retries and failures, byte for byte.

A scripted server answers each request with the bytes a test gives it, so every framing an
API server may use (Content-Length, chunked with extensions and trailers, until close) and
every way a connection may end is exercised without the emulator in between.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau.kube.transport import Pool, TransportError


class Closing(bytes):
    """An answer after which the server closes the connection."""


class Scripted:
    """Accepts connections and answers the n-th request (over all connections) with
    `answers[n]`; an answer of None closes the connection instead.
    """

    def __init__(self, answers: list[bytes | None], tls: ssl.SSLContext | None = None) -> None:
        self.answers = answers
        self.tls = tls
        self.requests: list[bytes] = []
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return
        self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                self.requests.append(head + reader.read(length))
                answer = self.answers[len(self.requests) - 1]
                if answer is None:
                    return
                conn.sendall(answer)
                if isinstance(answer, Closing):
                    return

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def script() -> Iterator[list[Scripted]]:
    started: list[Scripted] = []
    yield started
    for server in started:
        server.close()


def serve(script: list[Scripted], *answers: bytes | None) -> tuple[Scripted, Pool]:
    server = Scripted(list(answers))
    script.append(server)
    return server, Pool(server.url, None)


def get(pool: Pool, method: str = "GET", body: bytes | None = None) -> bytes:
    return pool.request(method, "/api/v1/pods", body=body, headers={}, timeout=5).data


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def test_requests_share_one_keep_alive_connection(script) -> None:
    server, pool = serve(script, OK, OK, OK)
    assert [get(pool) for _ in range(3)] == [b"{}"] * 3
    assert server.connections == 1
    first = server.requests[0].decode()
    port = server.url.rsplit(":", 1)[1]
    assert first.startswith(f"GET /api/v1/pods HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n")
    assert "Content-Length" not in first


def test_a_chunked_body_with_extensions_and_a_trailer_is_joined(script) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    server, pool = serve(script, chunked, OK)
    assert get(pool) == b"abcdefg"
    assert get(pool) == b"{}" and server.connections == 1  # the trailer was read to its end


def test_a_streamed_chunked_body_arrives_in_pieces_of_at_most_amt(script) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n"
    _, pool = serve(script, chunked)
    response = pool.request("GET", "/log", body=None, headers={}, timeout=5)
    pieces = list(response.stream(4))
    assert b"".join(pieces) == b"0123456789" and max(map(len, pieces)) <= 4


def test_a_body_without_length_ends_with_the_connection(script) -> None:
    server, pool = serve(script, Closing(b"HTTP/1.1 200 OK\r\n\r\nall of it"), OK)
    assert get(pool) == b"all of it"
    assert get(pool) == b"{}" and server.connections == 2


def test_connection_close_and_http_1_0_are_not_reused(script) -> None:
    closing = Closing(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
    old = Closing(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    server, pool = serve(script, closing, old, OK)
    assert [get(pool) for _ in range(3)] == [b"{}"] * 3
    assert server.connections == 3


def test_no_body_after_head_204_and_304(script) -> None:
    server, pool = serve(
        script,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n",
        OK,
    )
    assert get(pool, "HEAD") == b"" and get(pool) == b"" and get(pool) == b""
    assert get(pool) == b"{}" and server.connections == 1


def test_headers_are_read_in_any_case(script) -> None:
    _, pool = serve(script, b"HTTP/1.1 429 Too Many\r\nretry-after: 3\r\nContent-Length: 0\r\n\r\n")
    response = pool.request("GET", "/x", body=None, headers={}, timeout=5)
    assert (response.status, response.reason) == (429, "Too Many")
    assert response.headers.get("Retry-After") == "3" and response.data == b""


def test_a_body_is_sent_with_its_length_and_an_empty_post_with_zero(script) -> None:
    server, pool = serve(script, OK, OK)
    get(pool, "POST", b'{"a":1}')
    get(pool, "POST")
    assert server.requests[0].endswith(b'Content-Length: 7\r\n\r\n{"a":1}')
    assert server.requests[1].endswith(b"Content-Length: 0\r\n\r\n")


def test_a_pooled_connection_the_server_dropped_is_retried_on_a_new_one(script) -> None:
    server, pool = serve(script, OK, None, OK)
    assert get(pool) == b"{}"
    assert get(pool, "POST", b"{}") == b"{}"  # even a create: it never reached the server
    assert server.connections == 2


def test_a_create_on_a_new_connection_is_not_repeated(script) -> None:
    server, pool = serve(script, None, OK)
    with pytest.raises(TransportError, match="closed the connection"):
        get(pool, "POST", b"{}")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "answer",
    [
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
    ],
)
def test_a_malformed_answer_is_a_transport_error(script, answer: bytes) -> None:
    _, pool = serve(script, answer, answer)
    with pytest.raises(TransportError, match="ProtocolError"):
        get(pool)


def test_a_body_cut_short_is_a_transport_error(script) -> None:
    _, pool = serve(script, Closing(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
    response = pool.request("GET", "/x", body=None, headers={}, timeout=5)
    with pytest.raises(TransportError, match="7 bytes short"):
        _ = response.data


def test_a_refused_connection_is_a_transport_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    with pytest.raises(TransportError, match="ConnectionRefusedError"):
        get(Pool(url, None))


def _certificates(tmp_path: Path) -> tuple[bytes, Path, Path]:
    """A CA (PEM) and a server certificate and key it signed for the name apiserver.test."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("test-ca"))
        .issuer_name(name("test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("apiserver.test")]), False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "server.crt", tmp_path / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca.public_bytes(serialization.Encoding.PEM), cert_path, key_path


def test_https_checks_the_certificate_against_the_tls_server_name(tmp_path: Path) -> None:
    """kubeconfig `tls-server-name`: the server is reached by address, its certificate names
    another host; the CA and that name are checked, and a wrong name is refused."""
    ca, cert, key = _certificates(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = Scripted([OK, OK], tls)
    try:
        url = server.url.replace("http:", "https:")
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.load_verify_locations(cadata=ca.decode())
        pool = Pool(url, client, "apiserver.test")
        assert get(pool) == b"{}" and get(pool) == b"{}" and server.connections == 1
        with pytest.raises(TransportError, match="SSLCertVerificationError"):
            get(Pool(url, client))  # the address is not a name the certificate holds
    finally:
        server.close()
