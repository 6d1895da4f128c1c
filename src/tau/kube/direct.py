"""A lean API session for a kubeconfig user that holds a static credential. Performs I/O.

Importing the official client costs about a quarter of a second of CPU before the first request
(its kubeconfig machinery, dynamic client, pydantic and model registry all load with it): more
than kubectl takes for a whole `get`. tau only ever sends plain JSON requests by path
(`tau.kube.rest`), so when the kubeconfig's user signs in with something tau can send itself (a
bearer token, a token file, a client certificate, or nothing) the session is this client:
standard-library HTTP (`tau.kube.transport`) with the kubeconfig's TLS settings, through the
proxy kubectl would use (`tau.kube.proxy`). A user that signs in through an exec plugin or an
auth provider (AKS's kubelogin, OIDC) or a password gets the official client, which runs and
refreshes those (`tau.kube.client.api_client` decides).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

#: Cluster fields this client understands; any other one is the official client's to handle.
_CLUSTER_FIELDS = {
    "server",
    "proxy-url",
    "certificate-authority",
    "certificate-authority-data",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "extensions",
}
#: User fields this client understands (static credentials only).
_USER_FIELDS = {
    "token",
    "tokenFile",
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "extensions",
}


class HttpError(Exception):
    """The server answered outside 2xx; `tau.kube.errors` translates it like an ApiException."""

    def __init__(self, status: int, reason: str, body: str, headers: Any = None) -> None:
        super().__init__(status, reason)
        self.status = status
        self.reason = reason
        self.body = body
        self.headers = headers

    def __str__(self) -> str:
        return f"({self.status}) {self.reason}"


def named(config: dict[str, Any], kind: str, name: Any) -> dict[str, Any] | None:
    """The body of the kubeconfig entry `name` of `kind` (`contexts`, `clusters`, `users`):
    {} when the entry has none, None when there is no such entry. Pure.
    """
    for entry in config.get(kind) or ():
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(kind[:-1])
            return body if isinstance(body, dict) else {}
    return None


def entries(config: dict[str, Any], context: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The cluster and user of `context` when this client can serve them, else None. Pure."""
    ctx = named(config, "contexts", context)
    if ctx is None:
        return None
    cluster = named(config, "clusters", ctx.get("cluster"))
    user = named(config, "users", ctx.get("user")) if ctx.get("user") else {}
    if cluster is None or user is None or not str(cluster.get("server") or ""):
        return None
    if set(cluster) - _CLUSTER_FIELDS or set(user) - _USER_FIELDS:
        return None
    return cluster, user


class DirectClient:
    """Requests to one API server with one static credential; `rest.request` drives it.

    Attributes:
        host: the API server URL, as the kubeconfig gives it.
        entries: the kubeconfig's cluster and user this session was built from.
        sent: how many requests it has sent.
    """

    def __init__(
        self,
        cluster: dict[str, Any],
        user: dict[str, Any],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        from tau.kube import proxy
        from tau.kube.transport import Pool

        self.entries = (cluster, user)
        self.sent = 0
        self.host = str(cluster["server"]).rstrip("/")
        self._token = str(user.get("token") or "")
        self._token_file = str(user.get("tokenFile") or "")
        tls = _tls(cluster, user) if self.host.startswith("https:") else None
        via = proxy.for_server(
            self.host,
            os.environ if environ is None else environ,
            str(cluster.get("proxy-url") or ""),
        )
        self._pool = Pool(self.host, tls, str(cluster.get("tls-server-name") or ""), via)

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = {"User-Agent": "tau", **extra}
        token = self._token
        if self._token_file:
            # Re-read on every request, as kubectl does: a projected token rotates on disk.
            token = Path(self._token_file).read_text().strip()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def send(
        self,
        method: str,
        url_path: str,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: Any,
        timeout: Any,
    ) -> Any:
        """One request; the response with its body unread (`tau.kube.transport.Response`).

        Raises:
            HttpError: the server answered outside 2xx.
            TransportError: no answer.
        """
        target = url_path
        if query:
            target += "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in query)
        payload = None if body is None else json.dumps(body).encode()
        self.sent += 1
        for attempt in (1, 2):
            response = self._pool.request(
                method, target, body=payload, headers=self._headers(headers), timeout=timeout
            )
            wait = _retry_after(method, response) if attempt == 1 else None
            if wait is None:
                break
            _ = response.data  # return the connection before waiting
            time.sleep(wait)
        if not 200 <= response.status <= 299:
            data = response.data
            raise HttpError(
                response.status,
                str(response.reason or ""),
                data.decode("utf-8", "replace"),
                response.headers,
            )
        return response

    def close(self) -> None:
        self._pool.clear()


#: The longest Retry-After honoured, in seconds.
_MAX_RETRY_AFTER = 30.0


def _retry_after(method: str, response: Any) -> float | None:
    """Seconds to wait before the one retry of an answer that asks for it (413, 429 or 503
    with Retry-After: an apiserver whose storage is still initializing, or throttling), as
    the official client's connection pool does; None when it does not ask.
    """
    from tau.kube.transport import IDEMPOTENT

    if method not in IDEMPOTENT or response.status not in (413, 429, 503):
        return None
    value = str(response.headers.get("Retry-After") or "").strip()
    if not value.isdigit():
        return None
    return min(float(value), _MAX_RETRY_AFTER)


def _tls(cluster: dict[str, Any], user: dict[str, Any]) -> ssl.SSLContext:
    """The TLS context: the kubeconfig's CA (else the system's) and its client certificate."""
    # Verifying, with hostname checks; the system's CA store is read only when the kubeconfig
    # names no CA (reading it costs more CPU than the requests of a short command).
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        context.load_verify_locations(
            cadata=base64.b64decode(str(cluster["certificate-authority-data"])).decode()
        )
    elif cluster.get("certificate-authority"):
        context.load_verify_locations(cafile=str(cluster["certificate-authority"]))
    else:
        context.load_default_certs()
    cert = _pem(user, "client-certificate")
    key = _pem(user, "client-key")
    if cert is not None:
        _load_chain(context, cert, key)
    return context


def _pem(user: dict[str, Any], field: str) -> bytes | Path | None:
    if user.get(f"{field}-data"):
        return base64.b64decode(str(user[f"{field}-data"]))
    if user.get(field):
        return Path(str(user[field]))
    return None


def _load_chain(context: ssl.SSLContext, cert: bytes | Path, key: bytes | Path | None) -> None:
    """Load a client certificate given as files or as inline data (ssl reads files only: inline
    data goes through a private temporary directory that is removed at once).
    """
    if isinstance(cert, Path) and (key is None or isinstance(key, Path)):
        context.load_cert_chain(str(cert), str(key) if key is not None else None)
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tau-tls-") as folder:
        paths: list[str | None] = []
        for name, value in (("cert.pem", cert), ("key.pem", key)):
            if value is None:
                paths.append(None)
                continue
            if isinstance(value, Path):
                paths.append(str(value))
                continue
            target = os.path.join(folder, name)
            with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
                out.write(value)
            paths.append(target)
        context.load_cert_chain(str(paths[0]), paths[1])
