"""Which proxy a request to the API server goes through, as kubectl chooses it. Pure.

kubectl (client-go) takes the cluster's `proxy-url` from the kubeconfig when it has one, else
Go's `ProxyFromEnvironment`: `HTTPS_PROXY` for an https server and `HTTP_PROXY` for an http
one (upper case first, then lower case), never for `localhost` or a loopback address, and not
for a host that `NO_PROXY` names. A `NO_PROXY` entry is `*` (no proxy at all), an IP address, a
CIDR block, or a domain that matches itself and every name below it (`.example.com` and
`*.example.com` only the names below it), each with an optional `:port`. A proxy value without
a scheme is an http proxy, as Go reads it.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from tau.errors import ClusterError


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy: its address and, when the URL held them, its credentials."""

    host: str
    port: int
    username: str = ""
    password: str = ""

    def headers(self) -> dict[str, str]:
        """`Proxy-Authorization` when the proxy URL carried a user (Basic, as Go sends it)."""
        if not self.username:
            return {}
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return {"Proxy-Authorization": f"Basic {token}"}

    def __str__(self) -> str:
        # Never the password: this is what errors show.
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def parse(value: str, *, source: str) -> Proxy:
    """The proxy a URL names (`source` is where it came from, for the error).

    Raises:
        ClusterError: the value is not an http:// proxy URL tau can use.
    """
    text = value.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme != "http":
        raise ClusterError(
            f"{source}: proxy scheme {parts.scheme}:// is not supported",
            hint="use an http:// proxy (CONNECT tunnels https to the API server), or connect "
            "without a proxy",
        )
    try:
        port = parts.port or 80
    except ValueError:
        port = -1
    if not parts.hostname or port <= 0:
        raise ClusterError(
            f"{source}: {_shown(parts)} is not a proxy address",
            hint="write it as http://HOST:PORT (optionally http://USER:PASSWORD@HOST:PORT)",
        )
    return Proxy(
        parts.hostname,
        port,
        unquote(parts.username or ""),
        unquote(parts.password or ""),
    )


def _shown(parts: object) -> str:
    """The URL without its password (it may hold one)."""
    netloc = str(getattr(parts, "netloc", ""))
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else netloc
    return f"{getattr(parts, 'scheme', '')}://{netloc}"


def _env(environ: Mapping[str, str], name: str) -> tuple[str, str]:
    for key in (name.upper(), name.lower()):
        if environ.get(key):
            return key, environ[key]
    return "", ""


def for_server(server: str, environ: Mapping[str, str], proxy_url: str = "") -> Proxy | None:
    """The proxy for requests to `server` (the kubeconfig's URL), or None to go direct.

    Args:
        server: the API server's URL.
        environ: the process environment.
        proxy_url: the kubeconfig cluster's `proxy-url`, which wins over the environment.

    Raises:
        ClusterError: the chosen proxy value is not usable.
    """
    if proxy_url:
        return parse(proxy_url, source="kubeconfig proxy-url")
    parts = urlsplit(server)
    https = parts.scheme == "https"
    name, value = _env(environ, "HTTPS_PROXY" if https else "HTTP_PROXY")
    if not value:
        return None
    host = (parts.hostname or "").lower()
    port = str(parts.port or (443 if https else 80))
    if not _use_proxy(host, port, _env(environ, "NO_PROXY")[1]):
        return None
    return parse(value, source=name)


def _use_proxy(host: str, port: str, no_proxy: str) -> bool:
    """Go's `useProxy`: False for localhost, loopback addresses and what NO_PROXY names."""
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return False
        if "/" in entry:
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                continue
            if ip is not None and ip.version == network.version and ip in network:
                return False
            continue
        entry_host, entry_port = _split(entry)
        if not entry_host or (entry_port and entry_port != port):
            continue
        entry_ip = _ip(entry_host)
        if entry_ip is not None:
            if ip is not None and ip == entry_ip:
                return False
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        if entry_host.startswith("."):
            if host.endswith(entry_host):
                return False
        elif host == entry_host or host.endswith("." + entry_host):
            return False
    return True


def _split(entry: str) -> tuple[str, str]:
    """(host, port) of a NO_PROXY entry; a bare IPv6 address has no port."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
