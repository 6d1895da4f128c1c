"""Registry storage: the `Backend` protocol, the local file backend and `--registry` parsing.

Performs I/O. Paths given to a backend are relative POSIX paths under the registry root (see
`layout`). Every write is atomic: the bytes go to a temp file in the target directory, are
fsynced, and are then linked or renamed into place, and the directory is fsynced, so a reader
sees the old document or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from tau.registry import layout
from tau.registry.errors import BackendNotBuilt, RegistryError


class Backend(Protocol):
    """Storage of registry documents under one root."""

    def read(self, path: str) -> bytes | None:
        """The document at `path`, or None when there is none."""
        ...

    def write(self, path: str, data: bytes, *, overwrite: bool) -> bool:
        """Store `data` at `path` atomically; with overwrite off, False when it already exists."""
        ...

    def list(self, path: str) -> list[str]:
        """Sorted names of the entries directly under directory `path` ([] when it is absent)."""
        ...

    def cas(self, path: str, expected: bytes | None, data: bytes) -> bool:
        """Replace `path` with `data` only if it still holds `expected` (None: absent).

        Returns False, writing nothing, when the current content differs.
        """
        ...

    def display(self, path: str) -> str:
        """How to show `path` to a user (and record it in ``record_path`` fields)."""
        ...


class FileBackend:
    """A registry rooted at a local directory, laid out exactly like the PVC."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _full(self, path: str) -> Path:
        return self.root / path

    def display(self, path: str) -> str:
        """The absolute local path of a registry document."""
        return str(self._full(path))

    def read(self, path: str) -> bytes | None:
        """Read a document; None when absent."""
        try:
            return self._full(path).read_bytes()
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None

    def list(self, path: str) -> list[str]:
        """Entries of a directory, sorted; [] when it is absent."""
        try:
            return sorted(os.listdir(self._full(path)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def write(self, path: str, data: bytes, *, overwrite: bool) -> bool:
        """Write atomically; without overwrite, an existing document is kept and False returned.

        Raises:
            RegistryError: the document could not be written (a full disk, no permission): its
                path and what to do; no temp file is left behind.
        """
        target = self._full(path)
        with _writing(target):
            return self._place(target, data, overwrite=overwrite)

    def _place(self, target: Path, data: bytes, *, overwrite: bool) -> bool:
        tmp = self._stage(target, data)
        try:
            if overwrite:
                os.replace(tmp, target)
            else:
                # link() fails with EEXIST instead of replacing: create-if-absent in one step,
                # and the name only ever appears with its complete, fsynced content.
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    return False
            _fsync_dir(target.parent)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def cas(self, path: str, expected: bytes | None, data: bytes) -> bool:
        """Compare-and-swap under an exclusive flock on ``<path>.lock`` (safe across processes)."""
        target = self._full(path)
        with _writing(target), self._locked(target):
            if self.read(path) != expected:
                return False
            tmp = self._stage(target, data)
            try:
                os.replace(tmp, target)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            _fsync_dir(target.parent)
            return True

    def _stage(self, target: Path, data: bytes) -> Path:
        """Write `data` to a fsynced temp file next to `target` and return its path.

        A write or fsync that fails (a full disk fails either) removes the temp file.
        """
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return tmp

    @contextlib.contextmanager
    def _locked(self, target: Path) -> Iterator[None]:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target.with_name(f".{target.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock


#: errno values that mean the filesystem has no room (space or quota) for the write.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


@contextlib.contextmanager
def _writing(target: Path) -> Iterator[None]:
    """Turn a filesystem failure while writing `target` into one line naming it and the fix."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        why = (exc.strerror or type(exc).__name__).lower()
        if exc.errno in NO_SPACE:
            hint = (
                f"free space on the filesystem holding {target.parent}, or choose another "
                "registry with --registry file://DIR"
            )
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            hint = (
                f"make {target.parent} writable by this user, or choose another registry with "
                "--registry file://DIR"
            )
        else:
            hint = "choose another registry with --registry file://DIR"
        raise RegistryError(f"cannot write {target}: {why}", hint=hint) from None


def _fsync_dir(directory: Path) -> None:
    """Persist a rename or link: the directory entry itself must reach the disk."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on directories; the data is synced
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


PVC_DEFAULT = "blob-training"
REGISTRY_CHOICES = "pvc, file://DIR or az://ACCOUNT/CONTAINER"


def open_backend(spec: str, *, cluster: Callable[[], tuple[Any, str]] | None = None) -> Backend:
    """Turn a ``--registry`` value into a backend.

    Args:
        spec: ``pvc``, ``file://DIR`` or ``az://ACCOUNT/CONTAINER``.
        cluster: called only for ``pvc``: the session's (ApiClient, namespace).

    Raises:
        RegistryError: the value is not one of the accepted forms.
        BackendNotBuilt: the form is valid but this build has no backend for it.
    """
    if spec.startswith("file://"):
        raw = spec.removeprefix("file://")
        if not raw:
            raise RegistryError('--registry file:// needs a directory, e.g. "file://./registry"')
        return FileBackend(Path(raw).expanduser().absolute())
    if spec == "pvc":
        from tau.registry.pvc import PvcBackend  # lazy: pulls in the kubernetes client

        if cluster is None:
            raise RegistryError("the pvc registry needs a cluster connection")
        api, namespace = cluster()
        return PvcBackend(PVC_DEFAULT, api, namespace=namespace)
    if spec.startswith("az://"):
        raise BackendNotBuilt(
            "the az:// registry backend is not built",
            hint="use --registry file://DIR or --registry pvc",
        )
    raise RegistryError(f'invalid --registry "{spec}"', hint=f"use one of: {REGISTRY_CHOICES}")


__all__ = ["PVC_DEFAULT", "Backend", "FileBackend", "layout", "open_backend"]
