"""The field reference of `tau run explain-config`, generated from the checked-in schema.

Pure. One row per dotted field path, sorted, as Markdown or as JSON-ready data.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from tau.config.spec import run_config_schema


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
        return "any"
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


def fields() -> list[Field]:
    """Every field of the schema, sorted by path."""
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

    walk(run_config_schema(), "")
    return sorted(rows, key=lambda r: r.field)


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def markdown() -> str:
    """The reference as Markdown."""
    lines = [
        "# Tau run config reference",
        "",
        "Generated from the tau run-config schema (`tau run schema -o json`); it covers direct "
        "`tau run --config` files only. SDK-generated managed manifests are outside it.",
        "",
        "Status says where a field applies: `supported` (direct runs), `direct-only` (direct "
        "Jobs only), `workflow-only` (managed workflows; rejected in direct configs) and "
        "`reserved` (not part of the direct contract). Unknown fields are errors.",
        "",
        "| Field | Type | Status | Description | Values / defaults |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in fields():
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
    return "\n".join(lines) + "\n"


def as_json() -> str:
    """The reference as a JSON document."""
    doc = {
        "fields": [
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(row).items()}
            for row in fields()
        ]
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
