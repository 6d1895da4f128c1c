"""Runtime dependencies are exactly the third-party packages src/tau imports."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Import name → distribution name, where they differ.
DISTRIBUTION = {"yaml": "pyyaml"}
#: Imported by code that tau ships into pods (the Ray Tune driver runs there, not here).
IN_POD_ONLY = {"ray"}
#: Optional extras: imported only when the extra is installed.
EXTRAS = {"azure"}


def _imports() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src" / "tau").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_runtime_dependencies_are_what_src_imports() -> None:
    third_party = (
        {
            DISTRIBUTION.get(name, name)
            for name in _imports()
            if name not in sys.stdlib_module_names and name != "tau"
        }
        - IN_POD_ONLY
        - EXTRAS
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[=<>~!\[; ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert declared == third_party
