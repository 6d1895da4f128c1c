"""ASGI middleware every response passes: Host guard, read-only methods, security headers.

Pure ASGI (not Starlette's BaseHTTPMiddleware) so it adds no per-request task and works for
streaming responses. The Host check is the DNS-rebinding guard: a page on an attacker's domain
that resolves to 127.0.0.1 still sends its own name in `Host`, and is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tau.portal.web.errors import body

Scope = dict[str, Any]
#: Only the page's own origin: no inline script or style, no frames, no plugins.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
READ_METHODS = frozenset({"GET", "HEAD"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def split_host(value: str) -> tuple[str, int | None]:
    """`name[:port]` or `[v6][:port]` → (name, port); port None when absent or malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, sep, port = value.rpartition(":")
        if not sep:
            name, port = value, ""
    if port and not port.isdigit():
        return name, -1
    return name.rstrip("."), int(port) if port else None


class HostGuard:
    """Which Host headers this server answers to (names are lowercase, without port)."""

    def __init__(self, names: Iterable[str], port: int | None = None) -> None:
        self.names = {n.strip().lower().strip("[]") for n in names if n.strip()}
        self.port = port

    def allows(self, header: str) -> bool:
        name, port = split_host(header)
        if name not in self.names or port == -1:
            return False
        return self.port is None or port is None or port == self.port


class SecurityMiddleware:
    def __init__(self, app: Any, guard: HostGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = ""
        for key, value in scope.get("headers") or ():
            if key == b"host":
                host = value.decode("latin-1")
                break
        if not self.guard.allows(host):
            await _reject(
                send,
                400,
                f'Host header "{host}" is not served here; open the URL the server printed '
                "(loopback by default), or add the name with --allowed-host",
            )
            return
        if scope["method"] not in READ_METHODS:
            await _reject(
                send,
                405,
                f"{scope['method']} is not allowed: Stellar and the portal are read-only "
                "(GET); change runs with the tau CLI",
                extra=((b"allow", b"GET, HEAD"),),
            )
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers") or ()}
                message["headers"] = [
                    *(message.get("headers") or ()),
                    *(h for h in HEADERS if h[0] not in present),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _reject(
    send: Any, status: int, detail: str, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    payload = json.dumps(body(status, detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *extra,
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
