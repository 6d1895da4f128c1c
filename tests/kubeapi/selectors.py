"""Label- and field-selector parsing and matching with the semantics of kube-apiserver.

Label selectors support equality (``a=b``, ``a==b``, ``a!=b``), existence (``a``, ``!a``) and sets
(``a in (x,y)``, ``a notin (x)``). As on a real server, ``!=`` and ``notin`` also match objects
that lack the label. Field selectors support ``=``, ``==`` and ``!=`` on ``metadata.name``,
``metadata.namespace`` and whatever fields the resource type declares selectable; any other field
is a 400, which is what a real server says for an unsupported field label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_REQUIREMENT = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY_REQUIREMENT = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS_REQUIREMENT = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


def _split_top_level(selector: str) -> list[str]:
    # Commas separate requirements except inside the parentheses of a set requirement.
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _label_requirement(text: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_REQUIREMENT.match(text):
        key, operator, raw_values = match.groups()
        values = {value.strip() for value in raw_values.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY_REQUIREMENT.match(text):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_REQUIREMENT.match(text):
        negated, key = match.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: found '{text.strip()}', invalid selector")


def parse_label_selector(selector: str | None) -> Predicate:
    """Compile a label selector string into a predicate over whole objects."""
    if not selector or not selector.strip():
        return lambda _obj: True
    requirements = [_label_requirement(part) for part in _split_top_level(selector)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted field, "" when absent, as the server compares them."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


_ALWAYS_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})


def parse_field_selector(selector: str | None, selectable: Iterable[str]) -> Predicate:
    """Compile a field selector, rejecting fields the resource type does not index."""
    if not selector or not selector.strip():
        return lambda _obj: True
    allowed = _ALWAYS_SELECTABLE | frozenset(selectable)
    requirements: list[tuple[str, bool, str]] = []
    for part in _split_top_level(selector):
        match = re.match(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*(\S*)\s*$", part)
        if match is None:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
        path, operator, value = match.groups()
        if path not in allowed:
            raise bad_request(f"field label not supported: {path}")
        requirements.append((path, operator != "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all(
            (field_value(obj, path) == value) is equal for path, equal, value in requirements
        )

    return matches
