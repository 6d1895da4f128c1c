"""The state one validation pass shares between its rules: data, engine, and findings. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.intent.load import PathKey, SourceMap
from tau.intent.runconfig import ALIASES
from tau.intent.validate.findings import Findings, split_path

__all__ = ["Context", "canonical", "first", "lookup", "split_path"]

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
    findings: Findings
    config_dir: Path
    engine: str = "job"
    #: How the engine was chosen, quoted in Job dispatch errors (`engine=job`, `implicit dispatch`).
    intent: str = "implicit dispatch"
    name: str | None = None
    #: The entrypoint and the path it was written at (`run.script`, `entrypoint`, ...).
    entrypoint: Any = None
    entry_path: str = "entrypoint"
    #: The entrypoint's bytes when the import check read them.
    entry_bytes: bytes | None = None

    @property
    def source(self) -> SourceMap:
        return self.findings.source

    def get(self, path: str, default: Any = None) -> Any:
        return lookup(self.data, path, default)

    def has(self, path: str) -> bool:
        return lookup(self.data, path, _MISSING) is not _MISSING

    def error(
        self,
        path: str | PathKey,
        message: str,
        hint: str | None = None,
        *,
        shown: str | None = None,
    ) -> None:
        """Record a problem at a config path (see Findings.error)."""
        self.findings.error(path, message, hint, shown=shown)

    def warn(self, path: str | PathKey, message: str, hint: str | None = None) -> None:
        self.findings.warn(path, message, hint)
