"""What tau installs: exactly what its code imports, as ranges, the portal's in `tau[portal]`."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from tau.errors import PORTAL_MODULES
from tests.lower_bounds import lower_bounds

ROOT = Path(__file__).resolve().parents[1]
#: Import name → distribution name, where they differ.
DISTRIBUTION = {"yaml": "pyyaml"}
#: Imported by code that tau ships into pods (the Ray Tune driver runs there, not here).
IN_POD_ONLY = {"ray"}
#: Optional extras other than the portal: imported only when the extra is installed.
EXTRAS = {"azure"}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: The code whose imports are the portal extra's: the portal, and the team store's object side
#: that `tau run` uses only to keep logs in a team store (it says `tau[portal]` when missing).
PORTAL_CODE = (ROOT / "src" / "tau" / "portal", ROOT / "src" / "tau" / "objectstore.py")


def _imports(*roots: Path, skip: tuple[Path, ...] = ()) -> set[str]:
    """Third-party distributions imported by the modules under `roots` (not under `skip`)."""
    found: set[str] = set()
    for root in roots:
        for path in [root] if root.is_file() else root.rglob("*.py"):
            if any(path.is_relative_to(s) for s in skip):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    names = {
        n for n in found if n not in sys.stdlib_module_names and n not in ("tau", "tau_models")
    }
    return {DISTRIBUTION.get(n, n) for n in names} - IN_POD_ONLY - EXTRAS


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[=<>~!\[; ]", d, maxsplit=1)[0].lower() for d in requirements}


def test_runtime_dependencies_are_what_tau_and_its_shipped_models_import() -> None:
    # Everything the wheel ships but the portal: src/tau and generated/tau_models (pydantic).
    tau = _imports(ROOT / "src" / "tau", ROOT / "generated", skip=PORTAL_CODE)
    assert _names(PROJECT["dependencies"]) == tau
    assert "pydantic" in tau  # imported by the shipped generated models


def test_the_portal_extra_is_what_only_the_portal_imports() -> None:
    portal = _imports(*PORTAL_CODE) - _names(PROJECT["dependencies"])
    assert _names(PROJECT["optional-dependencies"]["portal"]) == portal
    # The error for a missing extra names the same modules (psycopg[binary] is `psycopg`).
    assert {DISTRIBUTION.get(m, m) for m in PORTAL_MODULES} == portal


def test_runtime_requirements_are_ranges_with_a_lower_bound() -> None:
    requirements = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["portal"]]
    for requirement in requirements:
        assert "==" not in requirement and ">=" in requirement, requirement
    # The lower-bounds run installs exactly these (tests/lower_bounds.py, `make lower-bounds`).
    assert len(lower_bounds(PROJECT)) == len(requirements)
    with pytest.raises(ValueError, match="a range with a >= bound"):
        lower_bounds({"dependencies": ["rich==15.0.0"], "optional-dependencies": {"portal": []}})


def test_development_installs_the_portal_and_pins_what_the_suite_runs() -> None:
    dev = PROJECT["optional-dependencies"]["dev"]
    assert "tau[portal]" in dev  # `make install` (pip install -e '.[dev]') brings the portal
    pinned = _names([d for d in dev if "==" in d])
    runtime = _names([*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["portal"]])
    assert runtime <= pinned  # CI runs one known version of each; lower-bounds runs the other


def test_taugrid_portal_without_its_extra_names_it(monkeypatch, capsys) -> None:
    import importlib.util

    from tau.portal.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("pyarrow", "uvicorn") else real(name, *a),
    )
    assert main(["experiment", "list", "--store", "/nonexistent"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        "error: taugrid-portal needs tau's portal extra, which is not installed here (missing: "
        "pyarrow, uvicorn)\n  hint: install tau with its portal extra, `tau[portal]`, the way tau "
        "was installed"
    )
    assert main(["version", "--short"]) == 0  # the version needs no extra


def test_a_portal_module_missing_mid_command_is_the_same_error(capsys) -> None:
    from tau.errors import run_command

    def command() -> None:
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    assert run_command(command) == 1
    assert capsys.readouterr().err.startswith(
        "error: taugrid-portal needs tau's portal extra, which is not installed here (missing: "
        "pyarrow)\n"
    )
