"""This tau's version, commit and build date: what `tau version` and `tau --version` print.

A wheel or sdist carries tau/_build_info.py, written by the build (hatch_build.py at the root of
the repository). An editable install or a source checkout has none: its commit is asked of Git
(the checkout this package is in) and it has no build date. Performs I/O (files, `git`).
"""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

from tau import __version__


class BuildInfo(NamedTuple):
    version: str
    commit: str
    built: str
    #: The Git URL the build's checkout came from ("" when it had no `origin`).
    source: str


def _record() -> Any:
    """tau._build_info, or None in a source checkout (imported by name: it is generated)."""
    try:
        return importlib.import_module("tau._build_info")
    except ImportError:
        return None


def build_info() -> BuildInfo:
    record = _record()
    if record is None:
        return BuildInfo(__version__, _checkout_commit(), "not built (a source checkout)", "")
    return BuildInfo(__version__, str(record.COMMIT), str(record.BUILT), str(record.SOURCE))


def recorded_source() -> str:
    """The Git URL the build recorded ("" for a source checkout, or a build without one)."""
    record = _record()
    return "" if record is None else str(record.SOURCE)


def extra_install_hint(extra: str) -> str:
    """How to install tau with its optional `extra` (aks, portal): this project's own install,
    from the Git URL this tau was built from when the build recorded one.
    """
    url = recorded_source() or "<tau repository URL>"
    return (
        f"install tau with its {extra} extra, `tau[{extra}]`, the way tau was installed: e.g. "
        f"`pipx install --force 'tau-<version>-py3-none-any.whl[{extra}]'` or "
        f"`pip install 'tau[{extra}] @ git+{url}'` (README, \"Install\")"
    )


def _checkout_commit() -> str:
    """HEAD of the Git checkout holding this package (`+dirty` with changes), or "unknown"."""
    here = str(Path(__file__).resolve().parent)

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", here, *args], capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def text() -> str:
    """The lines of `tau version`."""
    info = build_info()
    return f"tau {info.version}\n  commit: {info.commit}\n  built:  {info.built}"
