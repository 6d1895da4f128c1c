"""Typed reads of a manifest's plain data: a wrong type becomes a located error, never a crash.

Pure. Every manifest rule reads its values through a `Reader`, which knows the fields the
manifest format declares (`FIELDS`, pinned to spec/tau-workflow-manifest.schema.json by a test):
reading an undeclared field is a bug in tau, so the parser and the schema cannot drift apart.
A value of the wrong type is reported with its path and the value as written, and reads as
absent, so later rules only ever see well-typed values.
"""

from __future__ import annotations

import math
from typing import Any

from tau.errors import Diagnostic
from tau.intent.load import PathKey, SourceMap, dotted
from tau.intent.validate.findings import Findings
from tau.intent.validate.structure import describe

#: Every field of the manifest format; list items share their list's path (`storage.mounts.pvc`).
FIELDS: frozenset[str] = frozenset(
    {
        "schema_version",
        "name",
        "resource_naming",
        "resource_naming.prefix",
        "compute",
        "compute.gpus",
        "compute.workers",
        "compute.cpus",
        "compute.cpu_limit",
        "compute.worker_cpus",
        "compute.worker_cpu_limit",
        "compute.memory",
        "compute.memory_limit",
        "compute.worker_memory",
        "compute.worker_memory_limit",
        "eval",
        "eval.cpu_workers",
        "eval.upstream",
        "runtime",
        "runtime.pip",
        "runtime.image",
        "runtime.env",
        "runtime.env.name",
        "runtime.env.value",
        "runtime.env.valueFrom",
        "runtime.env.valueFrom.secretKeyRef",
        "runtime.env.valueFrom.secretKeyRef.name",
        "runtime.env.valueFrom.secretKeyRef.key",
        "runtime.env.valueFrom.secretKeyRef.optional",
        "runtime.env_kv",
        "runtime.rdma",
        "runtime.rdma.enabled",
        "runtime.rdma.resource_name",
        "runtime.rdma.count",
        "runtime.rdma.shm_size",
        "storage",
        "storage.data_pvc",
        "storage.mounts",
        "storage.mounts.name",
        "storage.mounts.mountPath",
        "storage.mounts.pvc",
        "storage.mounts.readOnly",
        "artifacts",
        "artifacts.checkpoint",
        "research",
        "research.experiment",
        "model",
        "model.name",
        "model.base",
        "model.task",
        "model.tags",
        "model.primary_metric",
        "model.metric_direction",
    }
)


def field_of(path: PathKey) -> str:
    """The declared field a concrete path reads: list indices dropped."""
    return ".".join(str(part) for part in path if isinstance(part, str))


def _type_hint(want: str, value: Any) -> str | None:
    if want.startswith("an integer") and isinstance(value, str) and value.strip().isdigit():
        return "write the number without quotes"
    if "string" in want and isinstance(value, bool | int | float):
        # YAML reads 3, true and 1.5 as non-strings.
        return "quote the value to make it a string"
    return None


class Reader:
    """Reads one manifest's data, recording every problem it meets as a located Diagnostic."""

    def __init__(self, data: dict[str, Any], findings: Findings) -> None:
        self.data = data
        self.findings = findings

    @property
    def source(self) -> SourceMap:
        return self.findings.source

    def error(
        self,
        path: PathKey,
        message: str,
        hint: str | None = None,
        *,
        at: PathKey | None = None,
        key: bool = False,
    ) -> None:
        """Record an error about `path`, located at `at` (default: `path`) in the file.

        Messages start with the dotted path they are about, as the reference's do.
        """
        where = at if at is not None else path
        loc = self.source.key(where) if key else self.source.value(where)
        self.findings.out.append(Diagnostic(dotted(path), message, hint, loc))

    def wrong_type(self, path: PathKey, want: str, value: Any) -> None:
        self.error(
            path, f"{dotted(path)}: want {want}, got {describe(value)}", _type_hint(want, value)
        )

    def raw(self, path: PathKey) -> Any:
        """The value at `path` as written; None when it (or a parent) is absent, null or not
        a container (the parent's own read reports that).
        """
        if field_of(path) not in FIELDS:
            raise AssertionError(f"tau bug: manifest field {field_of(path)!r} is not declared")
        node: Any = self.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(node, list) or not 0 <= part < len(node):
                    return None
            elif not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def mapping(self, path: PathKey, want: str = "a mapping") -> dict[str, Any]:
        value = self.raw(path)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.wrong_type(path, want, value)
            return {}
        return value

    def sequence(self, path: PathKey, want: str) -> list[Any] | None:
        value = self.raw(path)
        if value is None:
            return None
        if not isinstance(value, list):
            self.wrong_type(path, want, value)
            return None
        return value

    def integer(self, path: PathKey) -> int | None:
        value = self.raw(path)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                return int(value)  # `2.0`: YAML's float for a whole number
            self.wrong_type(path, "an integer", value)
            return None
        return value

    def string(self, path: PathKey) -> str | None:
        value = self.raw(path)
        if value is None:
            return None
        if not isinstance(value, str):
            self.wrong_type(path, "a string", value)
            return None
        return value

    def boolean(self, path: PathKey) -> bool | None:
        value = self.raw(path)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.wrong_type(path, "a boolean (true or false)", value)
            return None
        return value

    def string_map(self, path: PathKey) -> tuple[tuple[str, str], ...]:
        """A mapping of strings in written order; entries of another type are reported."""
        pairs: list[tuple[str, str]] = []
        for name, value in self.mapping(path, "a mapping of strings").items():
            if isinstance(value, str):
                pairs.append((name, value))
            else:
                self.wrong_type((*path, name), "a string", value)
        return tuple(pairs)
