"""Bind and run the app on uvicorn. Performs I/O (a listening socket).

The socket is bound before anything is printed or opened, so the printed URL is the real one
(port 0 picks a free port) and a browser opened right after finds the server listening.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tau.errors import TauError, UsageError
from tau.portal.web.security import LOOPBACK_NAMES, HostGuard

DEFAULT_ADDR = "127.0.0.1:8080"
_WILDCARDS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def shown_host(self) -> str:
        """The host a browser should use: wildcards are shown as 127.0.0.1."""
        host = "127.0.0.1" if self.host in _WILDCARDS else self.host
        return f"[{host}]" if ":" in host else host


def parse_addr(addr: str) -> Address:
    """`host:port`, `[v6]:port` or `:port` (all interfaces).

    Raises:
        UsageError: the address cannot be parsed.
    """
    text = addr.strip()
    try:
        if text.startswith("["):
            host, _, port = text[1:].partition("]:")
        else:
            host, sep, port = text.rpartition(":")
            if not sep:
                raise ValueError("missing port")
        number = int(port)
        if not 0 <= number <= 65535:
            raise ValueError(f"port {number} out of range")
    except ValueError as exc:
        raise UsageError(
            f'parse --addr "{addr}": {exc}', hint="use HOST:PORT, e.g. --addr 127.0.0.1:8080"
        ) from None
    return Address(host.strip("[]"), number)


def bind(address: Address) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host, address.port))
    except OSError as exc:
        sock.close()
        raise TauError(
            f"cannot listen on {address.host}:{address.port}: {exc.strerror}",
            hint="pick another port with --addr 127.0.0.1:PORT (port 0 picks a free one)",
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def bound_address(sock: socket.socket, requested: Address) -> Address:
    return Address(requested.host, int(sock.getsockname()[1]))


def guard_for(address: Address, allowed_hosts: Iterable[str] = ()) -> HostGuard:
    """Loopback names always; the bound name when it is a real one; plus --allowed-host."""
    names = [*LOOPBACK_NAMES, *allowed_hosts]
    if address.host not in _WILDCARDS:
        names.append(address.host)
    return HostGuard(names, address.port)


def warning_for(address: Address) -> str | None:
    if address.loopback:
        return None
    return (
        f"warning: listening on {address.host or '*'}:{address.port}, which is not loopback: "
        "this server has no authentication, so anyone who can reach it can read what it "
        "serves; prefer the default 127.0.0.1 or put it behind an authenticating proxy. "
        "It answers only Host names it knows (loopback names); add each name or IP clients "
        "use with --allowed-host NAME (repeatable)"
    )


def run(app: Any, sock: socket.socket, *, on_started: Callable[[], None] | None = None) -> None:
    """Serve `app` on the bound socket until SIGINT or SIGTERM, then drain (5 s) and return.

    A stop signal is the way to end a server, not a failure: after the drain the command exits
    0 (contract §10). uvicorn re-raises the signal it caught once it has shut down, which would
    end the process by that signal (exit -15, or "interrupted" for Ctrl-C); the handlers
    installed around it take that re-raised signal instead.
    """
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        server_header=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    if on_started is not None:
        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets=sockets)
            on_started()

        server.startup = startup  # type: ignore[method-assign]
    with _stop_signals(server):
        server.run(sockets=[sock])


@contextmanager
def _stop_signals(server: Any) -> Iterator[None]:
    """SIGINT and SIGTERM ask `server` to stop (uvicorn installs its own while it serves)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
