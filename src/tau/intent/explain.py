"""The field reference of `tau run explain-config`, generated from the checked-in schemas.

Pure. One row per dotted field path, sorted, as Markdown or as JSON-ready data: the run
config's fields, then the managed-workflow manifest's (spec/tau-workflow-manifest.schema.json).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from tau.intent.spec import run_config_schema, workflow_manifest_schema

#: JSON Schema's types; a field that takes every one of them is shown as "any".
_ALL_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


@dataclass(frozen=True)
class Field:
    """One documented config field."""

    field: str
    type: str
    status: str
    description: str
    values: tuple[str, ...]
    deprecated_values: tuple[str, ...]
    default: Any


def _type_of(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        return "any" if set(kind) >= _ALL_TYPES else " or ".join(map(str, kind))
    if node.get("x-tau-format") == "duration":
        return "duration"
    if kind == "array":
        items = node.get("items", {})
        return "list of objects" if "properties" in items else f"list of {items.get('type', 'any')}"
    if kind == "object":
        if "properties" in node:
            return "object"
        extra = node.get("additionalProperties")
        return "map of string" if isinstance(extra, dict) else "map"
    return str(kind)


def _values(node: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if "enum" in node:
        return tuple(map(str, node["enum"])), ()
    canonical: list[str] = []
    deprecated: list[str] = []
    for option in node.get("oneOf", []):
        (deprecated if option.get("deprecated") else canonical).extend(map(str, option["enum"]))
    return tuple(canonical), tuple(deprecated)


def fields(schema: dict[str, Any] | None = None) -> list[Field]:
    """Every field of a schema (the run config's by default), sorted by path."""
    rows: list[Field] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, child in node.get("properties", {}).items():
            path = f"{prefix}{key}"
            values, deprecated = _values(child)
            default = child.get("default", child.get("x-tau-default-note"))
            rows.append(
                Field(
                    path,
                    _type_of(child),
                    child.get("x-tau-status", ""),
                    child.get("description", ""),
                    values,
                    deprecated,
                    default,
                )
            )
            walk(child, f"{path}.")
            items = child.get("items")
            if isinstance(items, dict):
                walk(items, f"{path}.")

    walk(run_config_schema() if schema is None else schema, "")
    return sorted(rows, key=lambda r: r.field)


def manifest_fields() -> list[Field]:
    """Every field of the managed-workflow manifest, sorted by path."""
    return fields(workflow_manifest_schema())


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


_TABLE_HEAD = (
    "| Field | Type | Status | Description | Values / defaults |",
    "| --- | --- | --- | --- | --- |",
)


def _rows(rows: list[Field]) -> list[str]:
    lines = []
    for row in rows:
        extra = []
        if row.values:
            extra.append("values: " + ", ".join(row.values))
        if row.deprecated_values:
            extra.append("deprecated: " + ", ".join(row.deprecated_values))
        if row.default is not None:
            extra.append("default: " + _default_text(row.default))
        lines.append(
            f"| `{row.field}` | {row.type} | {row.status} | {_cell(row.description)} | "
            f"{_cell('; '.join(extra))} |"
        )
    return lines


#: The heading of the manifest section; everything above it is the run config's reference.
MANIFEST_HEADING = "# Managed workflow manifest reference"


def markdown() -> str:
    """The reference as Markdown: the run config, then the managed-workflow manifest."""
    lines = [
        "# Tau run config reference",
        "",
        "Generated from the tau run-config schema (`tau run schema -o json`); it covers "
        "`tau run --config` files. SDK-generated managed manifests have their own reference "
        "below.",
        "",
        "Status says where a field applies: `supported` (direct runs), `direct-only` (direct "
        "Jobs only), `workflow-only` (managed workflows: a managed tau.yaml or a config whose "
        "workflow.file names a manifest; rejected elsewhere) and `reserved` (not part of the "
        "direct contract). Unknown fields are errors.",
        "",
        *_TABLE_HEAD,
        *_rows(fields()),
        "",
        MANIFEST_HEADING,
        "",
        "Generated from the manifest schema (`tau run schema --manifest`). A managed workflow "
        "manifest has `schema_version: 1` and no `engine`; it is either the tau.yaml itself "
        "(then the run config's groups sit beside these fields) or the file a run config's "
        "`workflow.file` names. tau validates it, reporting every problem at once, and renders "
        "it as one Job (`job`) or RayJob (`rayjob`, `rayjob-eval`).",
        "",
        "Status: `supported` (rendered) and `unsupported` (rejected with an error naming the "
        "field). Unknown keys are warnings, not errors.",
        "",
        *_TABLE_HEAD,
        *_rows(manifest_fields()),
    ]
    return "\n".join(lines) + "\n"


def _json_rows(rows: list[Field]) -> list[dict[str, Any]]:
    return [
        {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(r).items()} for r in rows
    ]


def as_json() -> str:
    """The reference as a JSON document: `fields` (run config) and `manifest_fields`."""
    doc = {"fields": _json_rows(fields()), "manifest_fields": _json_rows(manifest_fields())}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
