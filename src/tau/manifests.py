"""Canonical YAML and JSON of rendered manifests: the same bytes for the same input.

Pure. Top-level keys come as apiVersion, kind, metadata, spec, then the rest; nested keys
are sorted; block style, no wrapping, no aliases; multi-line strings as literal blocks so
scripts read as scripts in a review.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

_TOP = ("apiVersion", "kind", "metadata", "spec")


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not any(l != l.rstrip() for l in value.split("\n")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    head = {k: doc[k] for k in _TOP if k in doc}
    return {**head, **{k: doc[k] for k in sorted(doc) if k not in head}}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def dump_yaml(docs: list[dict[str, Any]]) -> str:
    """Multi-document canonical YAML with one trailing newline."""
    parts = []
    for doc in docs:
        body = {k: _sorted(v) for k, v in _ordered(doc).items()}
        parts.append(yaml.dump(body, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                               allow_unicode=True, width=1 << 20))
    return "---\n".join(parts)


def dump_json(docs: list[dict[str, Any]]) -> str:
    """One document as itself, several as a v1 List, indented, one trailing newline."""
    body: dict[str, Any] = (_ordered(docs[0]) if len(docs) == 1 else
                            {"apiVersion": "v1", "kind": "List", "items": [_ordered(d) for d in docs]})
    return json.dumps(_sorted_top(body), indent=2, ensure_ascii=False) + "\n"


def _sorted_top(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: (_sorted(v) if k != "items" else [_sorted_top(i) for i in v]) for k, v in doc.items()}
