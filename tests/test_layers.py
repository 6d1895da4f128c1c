"""Arrows only point down: no module imports a higher layer (the order is tau.layers.LAYERS)."""

from __future__ import annotations

import ast
from pathlib import Path

from tau.layers import LAYERS, RENDER_USERS

SRC = Path(__file__).resolve().parents[1] / "src" / "tau"
RANK = {name: rank for rank, peers in enumerate(LAYERS) for name in peers}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted tau module) for every import of the file, lazy and TYPE_CHECKING ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tau":
                found += [(node.lineno, f"tau.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, name) for line, name in found if name.startswith("tau.")]


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[0] in ("__init__", "__main__"):
            continue
        yield path, parts


def test_every_package_has_a_layer():
    assert {parts[0] for _, parts in _modules()} <= set(RANK)


def test_no_module_imports_a_higher_layer():
    upward = []
    for path, parts in _modules():
        for line, name in _imports(path):
            target = name.split(".")[1]
            if target in RANK and RANK[target] > RANK[parts[0]]:
                upward.append(f"{path.relative_to(SRC.parent)}:{line}: {parts[0]} -> {target}")
    assert upward == []


def test_render_is_used_through_the_pipeline_only():
    outside = []
    for path, parts in _modules():
        unit = ".".join(parts[:2]) if parts[0] == "serving" else parts[0]
        if unit in RENDER_USERS or parts[0] in RENDER_USERS:
            continue
        outside += [
            f"{path.relative_to(SRC.parent)}:{line}: {name}"
            for line, name in _imports(path)
            if name == "tau.render" or name.startswith("tau.render.")
        ]
    assert outside == []
