"""The files of a Git revision, laid out in a scratch directory for the renderer to read.

Performs I/O (runs `git`, writes a temporary directory). Nothing is checked out: the tree is
listed with `git ls-tree` and the blobs are read with one `git cat-file --batch`, so the work
tree, the index and HEAD stay as they are. Writing the tree out (rather than teaching every
reader of the config, its presets, entrypoint, extra scripts, manifest and working_dir to read
from Git) lets the revision render through exactly the code the work tree renders through.

A blob larger than LARGE_BLOB is written as a sparse file of its size: nothing that large can
travel in a run's payload (at most 1 MiB of files), so its bytes never reach a render, while
its size still counts where the renderer sums sizes. Submodules are empty directories.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from tau.errors import UsageError

LARGE_BLOB = 2 * 1024 * 1024
_GIT_TIMEOUT = 120.0


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"cannot run git: {exc}", hint="install git, or drop --against") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"git {args[0]} failed: {reason[-1] if reason else done.returncode}")
    return done.stdout


def git_root(cwd: Path) -> Path:
    """The top of the work tree holding `cwd`.

    Raises:
        UsageError: `cwd` is not inside a Git work tree.
    """
    try:
        return Path(_git(cwd, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    except UsageError:
        raise UsageError(
            f"--against compares with a Git revision, but {cwd} is not inside a Git work tree",
            hint="run from the repository's checkout, or use --live",
        ) from None


def commit_of(root: Path, revision: str) -> str:
    """The commit `revision` names (a branch, tag, sha, `HEAD~1`, `origin/main`).

    Raises:
        UsageError: the revision names no commit of the repository.
    """
    try:
        return (
            _git(root, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
            .decode()
            .strip()
        )
    except UsageError:
        raise UsageError(
            f'--against "{revision}": no such commit in {root}',
            hint="name a branch, tag or commit (e.g. HEAD, main); for origin/main run "
            "`git fetch origin main` first",
        ) from None


class Entry(NamedTuple):
    """One entry of `git ls-tree -r -l`: a blob, a symlink (mode 120000) or a submodule."""

    mode: str
    kind: str
    oid: str
    size: int
    path: str


def _entries(root: Path, commit: str) -> list[Entry]:
    """Every entry of the commit's tree."""
    out = []
    for record in _git(root, "ls-tree", "-r", "-z", "-l", "--full-tree", commit).split(b"\0"):
        if not record:
            continue
        head, _, path = record.partition(b"\t")
        mode, kind, oid, size = head.decode().split()
        rel = path.decode("utf-8", "surrogateescape")
        out.append(Entry(mode, kind, oid, int(size) if size.isdigit() else 0, rel))
    return out


def _blobs(root: Path, oids: set[str]) -> dict[str, bytes]:
    """The content of each blob, read through one `git cat-file --batch`."""
    if not oids:
        return {}
    raw = _git(root, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in sorted(oids)).encode())
    out: dict[str, bytes] = {}
    at = 0
    while at < len(raw):
        end = raw.index(b"\n", at)
        oid, _, size = raw[at:end].decode().split(" ")
        start = end + 1
        out[oid] = raw[start : start + int(size)]
        at = start + int(size) + 1
    return out


def write_tree(root: Path, commit: str, dest: Path) -> None:
    """Write the commit's files under `dest` (modes, symlinks and large blobs as above)."""
    entries = _entries(root, commit)
    small = {e.oid for e in entries if e.kind == "blob" and e.size <= LARGE_BLOB}
    content = _blobs(root, small)
    for entry in entries:
        path = dest / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind != "blob":
            path.mkdir(exist_ok=True)
        elif entry.mode == "120000":
            os.symlink(content[entry.oid].decode("utf-8", "surrogateescape"), path)
        elif entry.oid not in content:
            with open(path, "wb") as handle:
                handle.truncate(entry.size)
        else:
            path.write_bytes(content[entry.oid])
            if entry.mode == "100755":
                path.chmod(0o755)


@contextmanager
def checked_out(root: Path, revision: str) -> Iterator[Path]:
    """A scratch directory holding `revision`'s tree; removed on exit.

    It carries an empty `.git` so that tau's Git-root lookups (the monorepo catalog) stop at it
    exactly as they stop at the real root.
    """
    commit = commit_of(root, revision)
    with tempfile.TemporaryDirectory(prefix="tau-review-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        write_tree(root, commit, tree)
        (tree / ".git").mkdir(exist_ok=True)
        yield tree
