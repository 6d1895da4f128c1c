"""Build the team store tests' S3-compatible server, versitygw, from the Go module proxy.

The same cache and key as the e2e control plane's binaries (tests/e2e/controlplane/build.py):
`<cache>/bin/versitygw-<version>-<key>/versitygw`, keyed by go.mod, go.sum, the link flags and
the Go version, outside the clone, so a second run builds nothing.

    python -m tests.teamstore.build     # build when missing, print the binary's path
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.controlplane.build import Component, bin_dir, build, go_version

HERE = Path(__file__).resolve().parent
MODULE = "github.com/versity/versitygw"
VERSION = "v1.8.0"


class _Local(Component):
    """A pinned component whose go.mod/go.sum live beside this file, not the control plane's."""

    @property
    def folder(self) -> Path:
        return HERE / self.name


VERSITYGW = _Local(
    name="versitygw",
    module=MODULE,
    version=VERSION,
    binaries={"versitygw": "cmd/versitygw"},
    ldflags=(),
    staging=None,
)


def cached() -> Path | None:
    """The built binary when the cache has it (no Go needed to ask)."""
    try:
        path = bin_dir(VERSITYGW, go_version()) / "versitygw"
    except (OSError, subprocess.CalledProcessError):
        return None
    return path if path.is_file() else None


def main() -> int:
    try:
        dest, seconds = build(VERSITYGW, go_version())
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"error: building versitygw {VERSION} failed: {err}", file=sys.stderr)
        return 1
    state = f"built in {seconds:.0f}s" if seconds is not None else "cached"
    print(f"{dest / 'versitygw'} ({state})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
