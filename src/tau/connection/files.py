"""Where tau keeps local connection state, and how it writes private files.

Performs I/O. Every file written here is created 0600 and replaced atomically (temp file in the
same directory, fsync, rename, fsync of the directory), so a crash never leaves a half-written
kubeconfig and another user on the machine never sees a credential-bearing file.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$TAU_CONFIG_DIR`, else the platform user config dir + `/tau` (`~/.config/tau` on Linux)."""
    env = os.environ if env is None else env
    if env.get("TAU_CONFIG_DIR"):
        return Path(env["TAU_CONFIG_DIR"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "tau"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tau"


def safe_name(name: str) -> str:
    """A file-name-safe form of a context or workspace name (`arn:aws/x` → `arn-aws-x`)."""
    return _UNSAFE.sub("-", name).strip("-.") or "default"


def short_hash(text: str, length: int = 12) -> str:
    """The first `length` hex digits of sha256(text); keeps file names distinct, not secret."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:length]


def write_private(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data`, mode 0600, creating parent dirs 0700."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # mkstemp creates the file 0600 from the start, so the bytes are never world-readable.
    fd, tmp = tempfile.mkstemp(prefix=".candidate-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is flushed; not every OS allows it.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
