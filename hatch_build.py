"""Hatch build hook: record the commit and the build date in the package (tau._build_info).

`tau version` and `tau --version` print them. A wheel or sdist built from a Git checkout gets
the checkout's commit (with `+dirty` when the work tree had changes) and the time of the build
(SOURCE_DATE_EPOCH when set, for reproducible builds); a wheel built from that sdist (what
`python -m build` does) keeps the sdist's record, since it has no Git history of its own. An
editable install records nothing: tau asks Git at run time (tau.build_info).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

RECORD = Path("src/tau/_build_info.py")


def _git(root: str, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def record(root: str) -> str:
    """The text of tau/_build_info.py for a build of the checkout at `root`."""
    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    if commit != "unknown" and _git(root, "status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    source = _git(root, "remote", "get-url", "origin")
    return (
        '"""Written by hatch_build.py when this tau was built; never edited by hand."""\n\n'
        f"COMMIT = {commit!r}\n"
        f"BUILT = {when.strftime('%Y-%m-%dT%H:%M:%SZ')!r}\n"
        f"SOURCE = {source!r}\n"
    )


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name not in ("wheel", "sdist") or version == "editable":
            return
        destination = "tau/_build_info.py" if self.target_name == "wheel" else str(RECORD)
        kept = Path(self.root) / RECORD
        if kept.is_file():
            # An unpacked sdist: its record is packaged as it is (named here because
            # .gitignore, which hatch follows, leaves it out of the package's files).
            build_data["force_include"][str(kept)] = destination
            return
        handle, path = tempfile.mkstemp(prefix="tau-build-info-", suffix=".py")
        with os.fdopen(handle, "w") as out:
            out.write(record(self.root))
        build_data["force_include"][path] = destination
