"""In CI the upstream-CRD conformance checks fail rather than skip when the CRDs are missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import tests.manifest_check as mc, pathlib; mc.UPSTREAM_DIR = pathlib.Path('/nonexistent'); "
    "print(mc.upstream_available())"
)


def _probe(ci: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CI": ci}
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_missing_upstream_crds_skip_locally() -> None:
    done = _probe("")
    assert done.returncode == 0 and done.stdout.strip() == "False"


def test_missing_upstream_crds_fail_in_ci() -> None:
    done = _probe("true")
    assert done.returncode != 0
    assert "CI=true but the upstream CRDs are missing at /nonexistent" in done.stderr
