"""ASGI middleware every response passes: Host guard, read-only methods, security headers.

Pure ASGI (not Starlette's BaseHTTPMiddleware) so it adds no per-request task and works for
streaming responses. The Host check is the DNS-rebinding guard: a page on an attacker's domain
that resolves to 127.0.0.1 still sends its own name in `Host`, and is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tau.portal.web.errors import body, wants_html

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


#: The most of a client's Host header an error message repeats.
SHOWN_HOST = 80


class MalformedHost(ValueError):
    """A Host header that is not `name[:port]`: the reason, for a 400 (never a 500)."""


def split_host(value: str) -> tuple[str, int | None]:
    """`name[:port]` or `[v6][:port]` → (name, port); port None when absent.

    The port is 1 to 5 ASCII digits (0-65535): `str.isdigit` alone takes `²` and other Unicode
    digits that `int` refuses, and `int` refuses more than 4,300 digits, each of which once
    turned a hostile header into a 500.

    Raises:
        MalformedHost: the port is not a port number.
    """
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, sep, port = value.rpartition(":")
        if not sep:
            name, port = value, ""
    if not port:
        return name.rstrip("."), None
    if not (port.isascii() and port.isdigit() and len(port) <= 5) or int(port) > 65535:
        raise MalformedHost("its port is not a number from 0 to 65535")
    return name.rstrip("."), int(port)


class HostGuard:
    """Which Host headers this server answers to (names are lowercase, without port)."""

    def __init__(self, names: Iterable[str], port: int | None = None) -> None:
        self.names = {n.strip().lower().strip("[]") for n in names if n.strip()}
        self.port = port

    def allows(self, header: str) -> bool:
        """Whether this server answers to `header`.

        Raises:
            MalformedHost: the header is not `name[:port]` (a 400 of its own).
        """
        name, port = split_host(header)
        if name not in self.names:
            return False
        return self.port is None or port is None or port == self.port


def host_problem(guard: HostGuard, host: str) -> str | None:
    """Why a request with this Host header is refused (400), or None when it is served."""
    shown = host if len(host) <= SHOWN_HOST else host[:SHOWN_HOST] + f"... ({len(host)} chars)"
    try:
        if guard.allows(host):
            return None
    except MalformedHost as exc:
        return (
            f'Host header "{shown}" is malformed: {exc}; open the URL the server printed '
            "(loopback by default)"
        )
    return (
        f'Host header "{shown}" is not served here; open the URL the server printed '
        "(loopback by default), or add the name with --allowed-host"
    )


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
        problem = host_problem(self.guard, host)
        browser = _wants_page(scope)
        if problem is not None:
            await _reject(send, 400, problem, browser=browser)
            return
        if scope["method"] not in READ_METHODS:
            await _reject(
                send,
                405,
                f"{scope['method']} is not allowed: Stellar and the portal are read-only "
                "(GET); change runs with the tau CLI",
                extra=((b"allow", b"GET, HEAD"),),
                browser=browser,
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


def _wants_page(scope: Scope) -> bool:
    accept = ""
    for key, value in scope.get("headers") or ():
        if key == b"accept":
            accept = value.decode("latin-1")
            break
    return wants_html(accept, str(scope.get("path") or ""))


#: The refusal page for browsers. Self-contained and unstyled: a refused Host cannot fetch the
#: stylesheet either, and the CSP allows no inline style.
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{status} {phrase} · taugrid-portal</title>
</head><body><h1>{status} {phrase}</h1><p data-status="{status}">{detail}</p>
<p>taugrid-portal answers only the names it was started for.</p></body></html>
"""


def _page(status: int, detail: str) -> bytes:
    from html import escape
    from http import HTTPStatus

    phrase = HTTPStatus(status).phrase
    return _PAGE.format(status=status, phrase=escape(phrase), detail=escape(detail)).encode()


async def _reject(
    send: Any,
    status: int,
    detail: str,
    extra: tuple[tuple[bytes, bytes], ...] = (),
    *,
    browser: bool = False,
) -> None:
    """The refusal: an HTML page for a browser, the JSON error body for API clients."""
    if browser:
        payload, kind = _page(status, detail), b"text/html; charset=utf-8"
    else:
        payload, kind = json.dumps(body(status, detail)).encode(), b"application/json"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(payload)).encode()),
                *extra,
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
