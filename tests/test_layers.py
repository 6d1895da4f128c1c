"""Arrows only point down: no module imports a higher layer (the order is tau.layers.LAYERS),
and no module reaches itself again through the modules it imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tau.layers import LAYERS, RENDER_USERS

SRC = Path(__file__).resolve().parents[1] / "src" / "tau"
RANK = {name: rank for rank, peers in enumerate(LAYERS) for name in peers}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name in tau: a module or a name in one) for every import of the file, lazy
    and TYPE_CHECKING ones too.
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from tau.a import b`: b is the module tau.a.b, or a name defined in tau.a.
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, name) for line, name in found if name.startswith("tau.")]


def _modules():
    """(path, parts under src/tau) of every module but tau's own __init__ and __main__."""
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


def _import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Module → the modules of tau it imports (a name imported from a package is the package)."""
    paths = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        graph[module] = set()
        for _, name in _imports(path):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_import_graph_sees_a_cycle_hidden_in_a_function(tmp_path: Path):
    package = tmp_path / "tau" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "tau" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from tau.pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from tau.pkg import c\n")
    (package / "c.py").write_text("import tau.pkg.a\nfrom tau.pkg import VALUE\n")
    graph = _import_graph(tmp_path / "tau")
    assert graph["tau.pkg.c"] == {"tau.pkg.a", "tau.pkg"}
    assert _cycles(graph) == [["tau.pkg.a", "tau.pkg.b", "tau.pkg.c"]]


def test_no_import_cycles():
    # Function-level and TYPE_CHECKING imports count: a cycle they hide is still a cycle.
    assert _cycles(_import_graph()) == []
