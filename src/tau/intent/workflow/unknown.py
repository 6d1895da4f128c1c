"""Unknown-key warnings of the managed parse path, with did-you-mean suggestions.

Pure (reads the checked-in schemas). A managed tau.yaml is the manifest and the run config at
once, and the SDK writes it, so an unknown key there is a warning rather than an error (the
direct path stays strict). Silence is not an option either: a misspelled scheduling directive
(`scheduling: {node_selector: ...}` for `policy.node_selector`) would be dropped and the
workload would schedule anywhere. A key is known when the run-config schema or the manifest
schema models it; free-form maps (policy.node_selector, runtime.env_kv, model.tags) hold user
data and are never checked, and list items share their list's path (`storage.mounts.pvc`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from tau.errors import Diagnostic
from tau.intent import suggest
from tau.intent.load import PathKey, RawDocument, dotted
from tau.intent.spec import run_config_schema, workflow_manifest_schema

__all__ = ["known_paths", "suggest_path", "unknown_keys"]


@dataclass
class _Shape:
    """What the schemas say about the value at one path."""

    #: Keys of a mapping value, when some schema lists them.
    keys: set[str] = field(default_factory=set)
    #: Keys of the mapping items of a list value, when some schema lists them.
    item_keys: set[str] = field(default_factory=set)
    #: Some schema takes any keys here (a free-form map): nothing below is checked.
    free_map: bool = False
    free_items: bool = False


def _allows_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind is None or kind == "object" or (isinstance(kind, list) and "object" in kind)


def _collect(node: dict[str, Any], path: str, shapes: dict[str, _Shape], *, item: bool) -> None:
    shape = shapes.setdefault(path, _Shape())
    props = node.get("properties")
    if isinstance(props, dict):
        (shape.item_keys if item else shape.keys).update(props)
        for key, child in props.items():
            _add(child, f"{path}.{key}" if path else key, shapes)
    elif _allows_object(node):
        if item:
            shape.free_items = True
        else:
            shape.free_map = True


def _add(node: dict[str, Any], path: str, shapes: dict[str, _Shape]) -> None:
    _collect(node, path, shapes, item=False)
    items = node.get("items")
    if isinstance(items, dict):
        _collect(items, path, shapes, item=True)


@functools.cache
def _shapes() -> dict[str, _Shape]:
    shapes: dict[str, _Shape] = {}
    for schema in (run_config_schema(), workflow_manifest_schema()):
        _add(schema, "", shapes)
    return shapes


@functools.cache
def known_paths() -> tuple[str, ...]:
    """Every key path either schema models, sorted (list items share their list's path)."""
    return tuple(sorted(p for p in _shapes() if p))


@dataclass(frozen=True)
class _Unknown:
    path: str
    at: PathKey
    children: tuple[str, ...]


def unknown_keys(doc: RawDocument) -> tuple[Diagnostic, ...]:
    """A warning for every key of `doc` that neither the run config nor the manifest models.

    Args:
        doc: a managed tau.yaml or a standalone manifest file.

    Returns:
        One warning per unknown key path (a typo repeated in several list items is one
        mistake, reported at its first place), sorted by place.
    """
    found: dict[str, _Unknown] = {}
    _walk(doc.data, "", (), found)
    return tuple(sorted((_warning(doc, u) for u in found.values()), key=Diagnostic.sort_key))


def _walk(value: Any, path: str, at: PathKey, found: dict[str, _Unknown]) -> None:
    shape = _shapes().get(path)
    if shape is None:
        return
    if isinstance(value, dict) and shape.keys and not shape.free_map:
        _check_keys(value, shape.keys, path, at, found)
    elif isinstance(value, list) and shape.item_keys and not shape.free_items:
        for i, entry in enumerate(value):
            if isinstance(entry, dict):
                _check_keys(entry, shape.item_keys, path, (*at, i), found)


def _check_keys(
    value: dict[str, Any], known: set[str], path: str, at: PathKey, found: dict[str, _Unknown]
) -> None:
    for key, child in value.items():
        child_path = f"{path}.{key}" if path else key
        if key in known:
            _walk(child, child_path, (*at, key), found)
        elif child_path not in found:
            children = tuple(child) if isinstance(child, dict) else ()
            found[child_path] = _Unknown(child_path, (*at, key), children)


def _warning(doc: RawDocument, key: _Unknown) -> Diagnostic:
    message = f'unknown config key "{key.path}" in {doc.source.file} (ignored)'
    near = suggest_path(key.path) or _suggest_parent(key)
    hint = None
    if near is not None:
        message += f'; did you mean "{near}"?'
    else:
        hint = (
            "remove it; `tau run explain-config` lists the fields of tau.yaml and of the manifest"
        )
    return Diagnostic(dotted(key.at), message, hint, doc.source.key(key.at), "warning")


def _leaf_and_depth(path: str) -> tuple[str, int]:
    return path.rsplit(".", 1)[-1], path.count(".")


def suggest_path(path: str) -> str | None:
    """The known path nearest to `path`, or None when nothing is near enough.

    Whole paths are compared, and leaf names too between paths of equal depth: that catches
    a wrong parent with the right leaf (scheduling.node_selector → policy.node_selector)
    without ever offering a top-level field for a nested typo. Ties go to the nearer whole
    path (runtime.imag → runtime.image rather than run.image), then alphabetically.
    """
    leaf, depth = _leaf_and_depth(path)
    best: tuple[int, int, str] | None = None
    for candidate in known_paths():
        whole = suggest.distance(path, candidate)
        near = whole
        other_leaf, other_depth = _leaf_and_depth(candidate)
        if other_depth == depth:
            near = min(near, suggest.distance(leaf, other_leaf))
        if best is None or (near, whole, candidate) < best:
            best = (near, whole, candidate)
    if best is None or best[0] > suggest.limit(leaf):
        return None
    return best[2]


def _suggest_parent(key: _Unknown) -> str | None:
    """The parent every child of an unknown key points at, if they all agree.

    `scheduling: {node_selector: ...}` is nowhere near "policy" as a string, but its child
    names it exactly. A split vote is a guess, so it says nothing.
    """
    parents: set[str] = set()
    for child in key.children:
        near = suggest_path(f"{key.path}.{child}")
        if near is None or "." not in near:
            return None
        parents.add(near.rsplit(".", 1)[0])
    return parents.pop() if len(parents) == 1 else None
