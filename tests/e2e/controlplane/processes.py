"""Start the control plane's processes, wait for each to answer, and stop every one of them.

Each process runs in its own session (process group) with its output in `<logs>/<name>.log`,
so a stop reaches whatever it forked, and a failed start shows the tail of its log. Waiting is
on conditions (a health endpoint answering, a port accepting), bounded by a deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class StartError(RuntimeError):
    """A component did not come up; the message carries the tail of its log."""


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    name: str
    argv: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    #: The environment it was started with beyond the supervisor's own (kept for a restart).
    env: dict[str, str] | None = None

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


@dataclass
class Supervisor:
    """Owns every process it started; `stop_all` ends them in reverse order."""

    logs: Path
    processes: list[Process] = field(default_factory=list)

    def start(
        self, name: str, argv: Sequence[str], *, env: dict[str, str] | None = None
    ) -> Process:
        self.logs.mkdir(parents=True, exist_ok=True)
        proc = Process(name, [str(a) for a in argv], self.logs / f"{name}.log", env=env)
        self.launch(proc)
        self.processes.append(proc)
        return proc

    def launch(self, proc: Process) -> None:
        """(Re)start `proc` as it was first started: same argv, environment and log (appended
        to). A fault test stops a component and brings the same one back with this."""
        with proc.log.open("ab") as out:
            proc.popen = subprocess.Popen(
                proc.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(proc.env or {})},
                start_new_session=True,
            )

    def stop_all(self, grace: float = 10.0) -> None:
        for proc in reversed(self.processes):
            stop_process(proc, grace)
        self.processes.clear()

    def pids(self) -> list[int]:
        return [p.popen.pid for p in self.processes if p.popen is not None]


def stop_process(proc: Process, grace: float = 10.0) -> None:
    """SIGTERM to the process group, SIGKILL after `grace` seconds."""
    if proc.popen is None or proc.popen.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.popen.pid, signal.SIGTERM)
    try:
        proc.popen.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.popen.pid, signal.SIGKILL)
        proc.popen.wait(grace)


def wait_until(
    what: str,
    ready: Callable[[], bool],
    *,
    timeout: float,
    proc: Process | None = None,
    interval: float = 0.2,
) -> None:
    """Poll `ready` until it is true; fail early when `proc` died, late when time is up."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.popen is not None and proc.popen.poll() is not None:
            raise StartError(
                f"{proc.name} exited with {proc.popen.returncode} before {what}:\n{proc.tail()}"
            )
        with contextlib.suppress(Exception):
            if ready():
                return
        if time.monotonic() > deadline:
            tail = f":\n{proc.tail()}" if proc is not None else ""
            raise StartError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")
        time.sleep(interval)


def https_ok(
    url: str, *, ca: Path | None = None, client: tuple[Path, Path] | None = None
) -> Callable[[], bool]:
    """A readiness check: GET `url` answers 200 (TLS verified against `ca` when given)."""

    def check() -> bool:
        ctx = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
        if client:
            ctx.load_cert_chain(str(client[0]), str(client[1]))
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
                return int(resp.status) == 200
        except urllib.error.HTTPError:
            return False

    return check


def http_ok(url: str) -> Callable[[], bool]:
    def check() -> bool:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status) == 200

    return check


def port_open(port: int) -> Callable[[], bool]:
    def check() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    return check
