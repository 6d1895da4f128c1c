"""The Python interpreters `requires-python` admits, each with the runtime packages a render needs.

The project's own venv is one Python; the others come from pyenv (`$PYENV_ROOT/versions/3.N.*`),
each given a venv of its own, cached outside the clone under
`$XDG_CACHE_HOME/tau/python-matrix/` and keyed by the pins it installs, so a second run only
checks it. A client dry-run imports only pyyaml, cyclopts and rich of the runtime dependencies,
so those are the packages installed, at the versions pyproject.toml pins.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The runtime distributions an offline render imports (tests/test_payload_bytes.py proves it:
#: a venv with only these renders every case).
RENDER_DISTRIBUTIONS = ("pyyaml", "cyclopts", "rich")


def admitted_minors() -> list[int]:
    """The 3.N minors of `requires-python` (which must name both a floor and a cap)."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    floor = re.search(r">=\s*3\.(\d+)", spec)
    cap = re.search(r"<\s*3\.(\d+)", spec)
    assert floor and cap, f"requires-python {spec!r} must be '>=3.A,<3.B'"
    return list(range(int(floor.group(1)), int(cap.group(1))))


def render_pins() -> list[str]:
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [
        pin for pin in pins if re.split(r"[=<>~!\[; ]", pin, maxsplit=1)[0] in RENDER_DISTRIBUTIONS
    ]


def pyenv_interpreter(minor: int) -> Path | None:
    """The newest pyenv-installed CPython 3.<minor>, or None."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = [
        path / "bin" / "python"
        for path in root.glob(f"3.{minor}.*")
        if re.fullmatch(rf"3\.{minor}\.\d+", path.name) and (path / "bin" / "python").exists()
    ]
    return max(found, key=lambda p: int(p.parent.parent.name.split(".")[2]), default=None)


def render_python(minor: int) -> Path | None:
    """A python of 3.<minor> that can render (None when no such interpreter is installed).

    Raises subprocess.CalledProcessError when its venv cannot be built (no package index).
    """
    if sys.version_info[:2] == (3, minor):
        return Path(sys.executable)
    base = pyenv_interpreter(minor)
    if base is None:
        return None
    pins = render_pins()
    key = hashlib.sha256("\n".join([str(base), *pins]).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "tau" / "python-matrix" / f"3.{minor}-{key}"
    python = venv / "bin" / "python"
    done = venv / ".tau-ready"
    if done.exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    # Test runs in sibling checkouts share the cache: one builds, the others wait for it.
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            subprocess.run([str(base), "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", *pins],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            done.write_text("\n".join(pins) + "\n")
    return python
