"""The store's advisory writer lock `.tau-exp.lock` (flock), polled every 250 ms.

Performs I/O. The holder writes its pid, host and command into the file so that a writer
that times out can name who holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from tau.portal.errors import WriteConflict

POLL_SECONDS = 0.25
TIMEOUT_SECONDS = 10.0


class WriterLock:
    """An exclusive flock on `path`; a context manager."""

    def __init__(self, path: Path, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise WriteConflict(
                        f"timed out waiting for experiment store writer lock {self.path}"
                        + (f" (held by {holder})" if holder else ""),
                        hint="another taugrid-portal writer is running; retry when it finishes",
                    ) from None
                time.sleep(POLL_SECONDS)
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(
                os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:3])
            ),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def try_lock(path: Path) -> WriterLock | None:
    """The lock when it is free right now, else None (for optional maintenance)."""
    lock = WriterLock(path, timeout=0.0)
    try:
        lock.acquire()
    except WriteConflict:
        return None
    return lock


def _read_holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        info = json.loads(raw.decode() or "{}")
    except (OSError, ValueError):
        return ""
    if not isinstance(info, dict) or "pid" not in info:
        return ""
    text = f"pid {info['pid']} on {info.get('host', '?')}"
    if info.get("command"):
        text += f", {info['command']}"
    if info.get("since"):
        text += f", since {info['since']}"
    return text
