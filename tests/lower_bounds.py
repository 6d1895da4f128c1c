"""Run a fast subset of the suite with every dependency at its lower bound (`make lower-bounds`).

pyproject.toml gives tau's runtime dependencies and the `portal` extra as ranges; this proves
their `>=` bounds: each is installed at exactly that version (the test tools at the dev pins)
into a virtual environment cached outside the clone, keyed by the bounds, the pins and the
Python version, so a second run on the same machine only runs the tests. The subset covers
each dependency's use: the CLI (cyclopts), renders (pyyaml, the shipped pydantic models through
the manifest checks), the official client against the API emulator (kubernetes), the status
view (rich), the store, Stellar and the portal server (pyarrow, jinja2, markupsafe, starlette,
uvicorn); psycopg, whose tests need the team store's servers, is only imported.

    python -m tests.lower_bounds            # build (once) and test
    python -m tests.lower_bounds --print    # the pinned lower bounds only
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The test tools the subset needs, at their dev pins (read from pyproject.toml).
TOOLS = ("pytest", "hypothesis", "jsonschema", "kubernetes-validate")
SUBSET = (
    "tests/test_dependencies.py",
    "tests/test_cli_run.py",
    "tests/test_cli_conventions.py",
    "tests/test_cli_interrupt.py",
    "tests/test_golden.py",
    "tests/test_kube_client.py",
    "tests/test_status_text.py",
    "tests/test_workflow_schema.py",
    "tests/test_portal_store.py",
    "tests/test_portal_stellar_golden.py",
    "tests/test_portal_web_http.py",
    "tests/test_portal_non_finite.py",
)
#: Imported at least, where the subset has no test that runs them (psycopg needs the team
#: store's servers: tests/teamstore).
IMPORTED = ("psycopg",)
_REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+(?:\[[^\]]*\])?)\s*(.*)$")


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def lower_bounds(project: dict | None = None) -> list[str]:
    """`name==bound` for every runtime dependency and every requirement of the portal extra.

    Raises:
        ValueError: a requirement without a `>=` lower bound (an exact pin or no bound).
    """
    project = project or _project()
    pinned = []
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["portal"]]:
        match = _REQUIREMENT.match(requirement.strip())
        bound = re.search(r">=\s*([0-9][^,;\s]*)", match[2]) if match else None
        if match is None or bound is None or "==" in match[2]:
            raise ValueError(f"{requirement!r}: a runtime requirement is a range with a >= bound")
        pinned.append(f"{match[1]}=={bound[1]}")
    return pinned


def _tool_pins(project: dict) -> list[str]:
    wanted = {t.lower() for t in TOOLS}
    return [d for d in project["optional-dependencies"]["dev"] if d.split("==")[0] in wanted]


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tau-ci" / "lower-bounds"


def _environment(pins: list[str]) -> Path:
    """The cached virtual environment with exactly `pins` installed (built on first use)."""
    key = hashlib.sha256("\n".join([sys.version, *pins]).encode()).hexdigest()[:16]
    venv = _cache() / key
    python = venv / "bin" / "python"
    if (venv / "ready").is_file():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pins], check=True)
    (venv / "ready").write_text("\n".join(pins) + "\n")
    return python


def _check_installed(python: Path, bounds: list[str]) -> None:
    """Fail when pip resolved a dependency above its bound (a test tool needing a newer one)."""
    from packaging.version import Version

    listed = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    held = {}
    for line in listed.splitlines():
        name, _, version = line.partition("==")
        held[name.lower().replace("_", "-")] = version
    for pin in bounds:
        name, _, bound = re.sub(r"\[.*\]", "", pin).partition("==")
        version = held.get(name.lower().replace("_", "-"), "")
        if not version or Version(version) != Version(bound):
            raise SystemExit(f"lower bounds: {name} {bound} wanted, the venv holds {version}")


def main(argv: list[str]) -> int:
    project = _project()
    bounds = lower_bounds(project)
    if argv[:1] == ["--print"]:
        print("\n".join(bounds))
        return 0
    python = _environment([*bounds, *_tool_pins(project)])
    _check_installed(python, bounds)
    subprocess.run([str(python), "-c", "; ".join(f"import {m}" for m in IMPORTED)], check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "generated")]))
    tests = [t for t in SUBSET if (ROOT / t).is_file()]
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests, *argv]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
