"""Streaming sha256 of real files and the dataset digest over them.

Performs I/O (reads files). Files are hashed in fixed 1 MiB chunks, never read whole, and several
files are hashed at once on a small thread pool: hashlib releases the GIL while it hashes, so the
pool keeps every core busy on a directory of many files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.registry.errors import RegistryError

CHUNK = 1 << 20


@dataclass(frozen=True, order=True)
class FileFact:
    """What a scan learns about one file.

    Attributes:
        path: POSIX path relative to the scanned root.
        bytes: size in bytes.
        sha256: lowercase hex digest of the content.
    """

    path: str
    bytes: int
    sha256: str


def sha256_file(path: Path) -> tuple[int, str]:
    """Return ``(size, sha256 hex)`` of one file, reading it in CHUNK-sized pieces."""
    digest = hashlib.sha256()
    size = 0
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as fh:
        # readinto a reused buffer: no per-chunk allocation, and the hash runs without the GIL.
        while n := fh.readinto(buf):
            digest.update(view[:n])
            size += n
    return size, digest.hexdigest()


def list_files(root: Path) -> list[str]:
    """Every regular file under `root` as sorted POSIX relative paths (symlinks are refused).

    Raises:
        RegistryError: `root` is not a directory, or holds a symlink (a record must describe
            bytes, not pointers that can change under it).
    """
    if not root.is_dir():
        raise RegistryError(f'"{root}" is not a directory')
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for entry in (*dirnames, *filenames):
            full = Path(dirpath, entry)
            if full.is_symlink():
                raise RegistryError(f'"{full}" is a symlink; register the real files')
        found.extend(Path(dirpath, f).relative_to(root).as_posix() for f in filenames)
    return sorted(found)


def scan(
    root: Path, paths: Iterable[str] | None = None, *, workers: int | None = None
) -> list[FileFact]:
    """Hash files under `root` (all of them, or the given relative paths) on a thread pool.

    Args:
        root: directory the paths are relative to.
        paths: which files; None means every file under `root`.
        workers: pool size; defaults to the CPU count (at least 2, at most 8).

    Returns:
        One FileFact per file, sorted by path.
    """
    rels = list_files(root) if paths is None else sorted(paths)
    size = workers or min(8, max(2, os.cpu_count() or 1))

    def one(rel: str) -> FileFact:
        nbytes, hexdigest = sha256_file(root / rel)
        return FileFact(rel, nbytes, hexdigest)

    if len(rels) <= 1:
        return [one(r) for r in rels]
    with ThreadPoolExecutor(max_workers=size) as pool:
        return sorted(pool.map(one, rels))


def dataset_digest(files: Iterable[Mapping[str, Any] | FileFact]) -> str:
    """``sha256:`` over the sorted, newline-joined lines ``"<sha256>  <path>"`` (reference rule)."""
    lines = []
    for f in files:
        sha, path = (f.sha256, f.path) if isinstance(f, FileFact) else (f["sha256"], f["path"])
        lines.append(f"{str(sha).lower()}  {path}")
    return "sha256:" + hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
