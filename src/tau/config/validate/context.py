"""The state one validation pass shares between its rules: data, engine, and findings. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau.config.load import PathKey, SourceMap, dotted
from tau.config.runconfig import ALIASES
from tau.errors import Diagnostic

_MISSING = object()


def lookup(data: dict[str, Any], dotted_path: str, default: Any = None) -> Any:
    """Value at a dotted path of plain config data, or `default` when any part is absent."""
    node: Any = data
    for part in dotted_path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def first(data: dict[str, Any], *paths: str) -> tuple[str, Any]:
    """The first of `paths` holding a non-blank value, with that value: alias precedence."""
    for path in paths:
        value = lookup(data, path)
        if value is not None and value != "":
            return path, value
    return paths[-1], None


_PRECEDENCE = dict(ALIASES)


def canonical(data: dict[str, Any], path: str) -> tuple[str, Any]:
    """(written path, value) of a canonical field by alias precedence (runconfig.ALIASES)."""
    return first(data, *_PRECEDENCE[path])


@dataclass
class Context:
    """One validation pass over normalized config data."""

    data: dict[str, Any]
    source: SourceMap
    config_dir: Path
    engine: str = "job"
    #: How the engine was chosen, quoted in Job dispatch errors (`engine=job`, `implicit dispatch`).
    intent: str = "implicit dispatch"
    name: str | None = None
    #: The entrypoint and the path it was written at (`run.script`, `entrypoint`, ...).
    entrypoint: Any = None
    entry_path: str = "entrypoint"
    out: list[Diagnostic] = field(default_factory=list)

    def get(self, path: str, default: Any = None) -> Any:
        return lookup(self.data, path, default)

    def has(self, path: str) -> bool:
        return lookup(self.data, path, _MISSING) is not _MISSING

    def error(
        self, path: str | PathKey, message: str, hint: str | None = None, *, severity: str = "error"
    ) -> None:
        """Record a problem at a config path.

        Args:
            path: dotted (`runtime.env.FOO`, `storage.volumes[1]`), or a tuple when a map
                key itself holds dots (`("policy", "node_selector", "kubernetes.io/os")`).
        """
        key = split_path(path) if isinstance(path, str) else path
        loc = self.source.value(key)
        self.out.append(Diagnostic(dotted(key), message, hint, loc, severity))

    def warn(self, path: str | PathKey, message: str, hint: str | None = None) -> None:
        self.error(path, message, hint, severity="warning")


def split_path(path: str) -> PathKey:
    """`storage.volumes[1]` → ("storage", "volumes", 1); map keys never contain dots here."""
    parts: list[str | int] = []
    for piece in path.split(".") if path else []:
        while "[" in piece:
            head, _, rest = piece.partition("[")
            if head:
                parts.append(head)
            index, _, piece = rest.partition("]")
            parts.append(int(index))
        if piece:
            parts.append(piece)
    return tuple(parts)
