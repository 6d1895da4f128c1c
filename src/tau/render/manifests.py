"""Canonical YAML and JSON of rendered manifests: the same bytes for the same input.

Pure. Top-level keys come as apiVersion, kind, metadata, spec, then the rest; nested keys
are sorted; block style, no wrapping, no anchors; multi-line strings as literal blocks so
scripts read as scripts in a review. The YAML emitter is written here for the plain data
render produces (dicts, lists, strings, numbers, booleans, null): a general emitter spent
most of the render time deciding things that never vary here.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml

_TOP = ("apiVersion", "kind", "metadata", "spec")
_RESOLVER = yaml.resolver.Resolver()
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_STR_TAG = "tag:yaml.org,2002:str"


@functools.lru_cache(maxsize=8192)
def _plain_ok(text: str) -> bool:
    """Whether `text` can be written unquoted and still read back as the same string."""
    if not text or text != text.strip() or not text.isprintable():
        return False
    if text[0] in _INDICATORS and not (text[0] == "-" and len(text) > 1 and text[1] != " "):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    return bool(_RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG)


def _literal_ok(text: str) -> bool:
    lines = text.rstrip("\n").split("\n")
    return (
        not text.endswith("\n\n")
        and not lines[0].startswith(" ")
        and all(line == line.rstrip() and (line.isprintable() or line == "") for line in lines)
    )


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _plain_ok(text):
        return text
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text, ensure_ascii=False)


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key in value:
            item = value[key]
            head = f"{pad}{_scalar(key)}:"
            _emit_child(head, item, indent, out, nested_indent=indent + 2)
    else:
        for item in value:
            if isinstance(item, dict) and item:
                first = True
                for key in item:
                    head = f"{pad}- {_scalar(key)}:" if first else f"{pad}  {_scalar(key)}:"
                    _emit_child(head, item[key], indent + 2, out, nested_indent=indent + 4)
                    first = False
            else:
                _emit_child(f"{pad}-", item, indent, out, nested_indent=indent + 2)


def _emit_child(head: str, value: Any, indent: int, out: list[str], *, nested_indent: int) -> None:
    if isinstance(value, dict) and value:
        out.append(head + "\n")
        _emit(value, nested_indent, out)
    elif isinstance(value, list) and value:
        out.append(head + "\n")
        # Sequences inside mappings are not indented further, as kubectl and Helm print them.
        # A list that is itself a list item ("- - x") is the one that must indent.
        _emit(value, nested_indent if head.endswith("-") else indent, out)
    elif isinstance(value, dict | list):
        out.append(f"{head} {'{}' if isinstance(value, dict) else '[]'}\n")
    elif isinstance(value, str) and "\n" in value and _literal_ok(value):
        chomp = "" if value.endswith("\n") else "-"
        out.append(f"{head} |{chomp}\n")
        block = " " * nested_indent
        for line in value.rstrip("\n").split("\n"):
            out.append(f"{block}{line}\n" if line else "\n")
    else:
        out.append(f"{head} {_scalar(value)}\n")


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    head = {k: doc[k] for k in _TOP if k in doc}
    return {**head, **{k: doc[k] for k in sorted(doc) if k not in head}}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with the canonical key order (top-level order, nested keys sorted)."""
    return {k: _sorted(v) for k, v in _ordered(doc).items()}


def dump_yaml(docs: list[dict[str, Any]]) -> str:
    """Multi-document canonical YAML with one trailing newline."""
    parts = []
    for doc in docs:
        out: list[str] = []
        _emit(canonical(doc), 0, out)
        parts.append("".join(out))
    return "---\n".join(parts)


def dump_json(docs: list[dict[str, Any]]) -> str:
    """One document as itself, several as a v1 List, indented, one trailing newline."""
    if len(docs) == 1:
        body: dict[str, Any] = canonical(docs[0])
    else:
        body = {"apiVersion": "v1", "kind": "List", "items": [canonical(d) for d in docs]}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
