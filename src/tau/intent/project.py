"""The `run.working_dir` project archive a RayJob ships to Ray as runtime_env.working_dir.

Performs I/O (reads the project directory). The zip is deterministic: entries sorted, fixed
timestamps and modes, so the same tree gives the same bytes and the same payload digest.
"""

from __future__ import annotations

import fnmatch
import io
import zipfile
from pathlib import Path

from tau.intent.probe import is_dir

MAX_SWEEP_BYTES = 8 * 1024 * 1024
MAX_ARCHIVE_BYTES = 45 * 1024
ARCHIVE_NAME = "_tau_project.zip"
DEFAULT_EXCLUDES = (
    ".git",
    ".git/*",
    "*/.git/*",
    "__pycache__",
    "*/__pycache__/*",
    "*.pyc",
    ".venv/*",
    "*/.venv/*",
    ".DS_Store",
    "*.egg-info/*",
)


class ProjectError(ValueError):
    """The project cannot be archived; the message says why."""


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.split("/")[0], p) for p in patterns)


def archive(root: Path, excludes: tuple[str, ...] = ()) -> bytes:
    """The project under `root` as a deterministic zip.

    Raises:
        ProjectError: the directory is missing, too large to sweep, or the zip too large.
    """
    if not is_dir(root):
        raise ProjectError(f"{root} is not a directory")
    try:
        return _archive(root, (*DEFAULT_EXCLUDES, *excludes))
    except OSError as exc:
        raise ProjectError(f"cannot read {exc.filename or root}: {exc.strerror or exc}") from None


def _archive(root: Path, patterns: tuple[str, ...]) -> bytes:
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not _excluded(p.relative_to(root).as_posix(), patterns)
    )
    swept = sum(p.stat().st_size for p in files)
    if swept > MAX_SWEEP_BYTES:
        raise ProjectError(
            f"the project holds {swept} bytes; at most {MAX_SWEEP_BYTES} are "
            "shipped (exclude data and checkpoints with run.working_dir_excludes)"
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in files:
            info = zipfile.ZipInfo(
                path.relative_to(root).as_posix(), date_time=(1980, 1, 1, 0, 0, 0)
            )
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ProjectError(
            f"the project archive is {len(data)} bytes compressed; at most "
            f"{MAX_ARCHIVE_BYTES} fit in the RayJob payload (exclude data files "
            "with run.working_dir_excludes, or bake the code into the image)"
        )
    return data


def module_of(entrypoint: Path, root: Path) -> str | None:
    """The dotted module of a `.py` entrypoint inside `root`, or None when it is outside."""
    try:
        rel = entrypoint.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    if rel.suffix != ".py":
        return None
    return ".".join(rel.with_suffix("").parts)
