"""Check a parsed config against the checked-in JSON Schema and gather every problem.

Pure. The schema in spec/ is the single source of truth for field names, types, enums and
bounds; this walker reads it and words each problem for people (the path, the bad value,
the fix), which a generic JSON Schema validator does not. Deprecated enum aliases are
normalized to their canonical value with a warning.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tau.errors import Diagnostic
from tau.intent import suggest
from tau.intent.load import PathKey, RawDocument, dotted
from tau.intent.spec import run_config_schema
from tau.intent.validate.findings import Findings

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}

# The removed eval surface: evaluation is an ordinary run. Checked before unknown keys so
# users of old configs get the migration story instead of a bare "field not found". The first
# line is the reference's own; the hint tells the rest of its (multi-line) migration story.
EVAL_MIGRATION = (
    "task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run."
)
EVAL_MIGRATION_HINT = (
    "keep `engine: job`, put the evaluation in the entrypoint script and have it write its "
    "results under `storage.output` (on a PVC), where `tau run get` reads them back; move eval "
    "settings such as the model path into `runtime.env` (for example MODEL_PATH)"
)
#: Returned for a value of the wrong type, which is then left out of the normalized data so
#: later rules only ever see well-typed values.
_INVALID = object()

_EVAL_KEYS = frozenset({("task",), ("eval",), ("run", "task")})

#: Values the reference lower-cases and trims before checking them (NormalizeEngine,
#: ValidateExecution): `launcher: Torchrun` is valid there, so it is here, with a warning.
_CASE_FOLDED = frozenset(
    {("engine",), ("run", "engine"), ("execution", "launcher"), ("execution", "mode")}
)

#: Enum messages the reference words its own way (its catalog's text, values filled in):
#: `{path}` the dotted path, `{value}` the bad value quoted, `{allowed}` the values joined by |.
_ENUM_WORDING: dict[tuple[str | int, ...], str] = {
    ("engine",): "{path} {value} is not valid; use job or rayjob",
    ("run", "engine"): "{path} {value} is not valid; use job or rayjob",
    ("execution", "mode"): "{path} must be min or max, got {value}",
    ("runtime", "security", "mode"): '{path} must be "restricted" or omitted (got {value})',
    ("profiler", "mode"): "profiler {value}: must be nsys|ncu",
    # The topology contract names the policy fields after the preset file's keys.
    ("policy", "lane"): "lane={value} is invalid (allowed: {allowed})",
    ("policy", "mode"): "mode={value} is invalid (allowed: {allowed})",
    ("policy", "topology"): "placement={value} is invalid (allowed: {allowed})",
    ("policy", "gpu_class"): "gpuClass={value} is invalid (allowed: {allowed})",
    ("policy", "priority_tier"): "priority={value} is invalid (allowed: {allowed})",
    ("policy", "priority"): "priority={value} is invalid (allowed: {allowed})",
}

#: Bounds the reference words its own way: (below the minimum, above the maximum).
_BOUND_WORDING: dict[tuple[str | int, ...], tuple[str, str]] = {
    ("run", "ttl_seconds_after_finished"): (
        "{path} must be > 0 (got {value})",
        "{path} must be <= {high} (Kubernetes int32 maximum) (got {value})",
    ),
}

#: List lengths the reference words its own way.
_LENGTH_WORDING: dict[tuple[str | int, ...], str] = {
    ("storage", "image_assets"): "{path} supports at most {most} entries (got {count})",
}

#: Launchers per engine: an unknown launcher is worded for the engine the config names
#: (the reference's ValidateExecution), so a Job author is never offered ray-train.
_LAUNCHERS = {"job": "python or torchrun", "rayjob": "ray-train or ray-tune"}
_RAY_NAMES = ("ray", "rayjob", "ray-train", "ray_train")


def type_name(value: Any) -> str:
    """JSON Schema type word of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def show(value: Any) -> str:
    """A user value as it appears in a message: strings in double quotes."""
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return type_name(value)
    return str(value)


def describe(value: Any) -> str:
    """A value with its type, for type errors: `string "two"`, `a list`."""
    if isinstance(value, dict | list) or value is None:
        return _TYPE_WORDS[type_name(value)]
    return f"{type_name(value)} {show(value)}"


def _matches_type(value: Any, wanted: str) -> bool:
    kind = type_name(value)
    return kind == wanted or (wanted == "number" and kind == "integer")


@functools.cache
def known_paths() -> tuple[tuple[str, ...], ...]:
    """Every field path the schema defines (list items and free-form maps are leaves)."""
    found: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        props = node.get("properties")
        if isinstance(props, dict):
            for key, child in props.items():
                found.append((*path, key))
                walk(child, (*path, key))
        items = node.get("items")
        if isinstance(items, dict) and "properties" in items:
            walk(items, path)

    walk(run_config_schema(), ())
    return tuple(found)


def _enum_values(node: dict[str, Any]) -> tuple[list[Any], dict[str, str]]:
    """Canonical values and deprecated aliases (alias → canonical) of an enum node."""
    if "enum" in node:
        return list(node["enum"]), {}
    if "oneOf" in node:
        canonical = [
            v
            for option in node["oneOf"]
            if not option.get("deprecated")
            for v in option.get("enum", [])
        ]
        return canonical, dict(node.get("x-tau-aliases", {}))
    return [], {}


class Walker:
    """Walks plain data against a JSON Schema, collecting every problem in a Findings.

    The wording is the run config's; a schema for another file (the connection descriptor)
    subclasses this and overrides `unknown` and `wrong_type`.
    """

    #: Paths with their own messages (the removed eval surface, case-folded enums, enum wording).
    eval_keys: ClassVar[frozenset[PathKey]] = _EVAL_KEYS
    case_folded: ClassVar[frozenset[PathKey]] = _CASE_FOLDED
    enum_wording: ClassVar[Mapping[PathKey, str]] = _ENUM_WORDING
    bound_wording: ClassVar[Mapping[PathKey, tuple[str, str]]] = _BOUND_WORDING
    length_wording: ClassVar[Mapping[PathKey, str]] = _LENGTH_WORDING

    def __init__(self, findings: Findings, schema: dict[str, Any], root: Any = None) -> None:
        self.findings = findings
        self.schema = schema
        #: The whole document, for wording that depends on a sibling (the launcher's engine).
        self.root = root

    def error(
        self,
        path: PathKey,
        message: str,
        hint: str | None = None,
        *,
        key: bool = False,
        severity: str = "error",
    ) -> None:
        self.findings.error(path, message, hint, key=key, severity=severity)

    def wrong_type(self, path: PathKey, options: list[str], value: Any) -> None:
        words = " or ".join(_TYPE_WORDS.get(t) or str(t) for t in options)
        hint = None
        if "string" in options and value is not None and not isinstance(value, dict | list):
            # YAML reads 3, true, yes and 2024-01-01 as non-strings.
            hint = "quote the value to make it a string"
        self.error(path, f"{dotted(path)} must be {words} (got {describe(value)})", hint)

    def _launcher_wording(self, value: Any) -> str:
        data = self.root if isinstance(self.root, dict) else {}
        named = ""
        for group, key in (
            ("", "engine"),
            ("run", "engine"),
            ("workflow", "workload_kind"),
            ("run", "workload_kind"),
            ("compute", "workload_kind"),
        ):
            holder = data.get(group) if group else data
            found = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(found, str) and found.strip():
                named = found.strip().lower()
                break
        engine = "rayjob" if named in _RAY_NAMES else "job" if named == "job" else ""
        if engine:
            return (
                f"execution.launcher {show(value)} is not valid for engine: {engine}; "
                f"use {_LAUNCHERS[engine]}"
            )
        return (
            f"execution.launcher {show(value)} is not valid; use python, torchrun "
            "(engine: job) or ray-train, ray-tune (engine: rayjob)"
        )

    def walk(self, node: dict[str, Any], value: Any, path: PathKey) -> Any:
        wanted = node.get("type")
        if wanted is not None:
            options = wanted if isinstance(wanted, list) else [wanted]
            if not any(_matches_type(value, t) for t in options):
                self.wrong_type(path, options, value)
                return _INVALID
        if isinstance(value, dict):
            return self._object(node, value, path)
        if isinstance(value, list):
            return self._array(node, value, path)
        return self._scalar(node, value, path)

    def _object(self, node: dict[str, Any], value: dict[str, Any], path: PathKey) -> dict[str, Any]:
        props: dict[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        out: dict[str, Any] = {}
        for key, child in value.items():
            child_path = (*path, key)
            if child_path in self.eval_keys:
                self.error(child_path, EVAL_MIGRATION, EVAL_MIGRATION_HINT, key=True)
                continue
            if key in props:
                checked = self.walk(props[key], child, child_path)
            elif extra is False:
                self.unknown(node, key, child_path)
                continue
            elif isinstance(extra, dict):
                checked = self.walk(extra, child, child_path)
            else:
                checked = child
            if checked is not _INVALID:
                out[key] = checked
        return out

    def unknown(self, node: dict[str, Any], key: str, path: PathKey) -> None:
        type_label = node.get("x-tau-type", "runconfig.Config")
        parent = path[:-1]
        near = suggest.closest(key, node.get("properties", {}))
        hint = None
        if near is not None:
            hint = f"did you mean `{dotted((*parent, near))}`?"
        else:
            elsewhere = sorted(".".join(p) for p in known_paths() if p[-1] == key)
            if elsewhere:
                hint = f"`{key}` belongs elsewhere: did you mean `{elsewhere[0]}`?"
            else:
                hint = "run `tau run explain-config` for the fields of this group"
        self.error(path, f"field {key} not found in type {type_label}", hint, key=True)

    def _array(self, node: dict[str, Any], value: list[Any], path: PathKey) -> list[Any]:
        most = node.get("maxItems")
        if most is not None and len(value) > most:
            wording = self.length_wording.get(
                path, "{path} has {count} entries; at most {most} are allowed"
            )
            self.error(path, wording.format(path=dotted(path), count=len(value), most=most))
        items = node.get("items")
        if not isinstance(items, dict):
            return value
        checked = (self.walk(items, item, (*path, i)) for i, item in enumerate(value))
        return [item for item in checked if item is not _INVALID]

    def _scalar(self, node: dict[str, Any], value: Any, path: PathKey) -> Any:
        canonical, aliases = _enum_values(node)
        if canonical and path in self.case_folded and isinstance(value, str):
            folded = value.strip().lower()
            if folded != value and (folded in canonical or folded in aliases):
                self.error(
                    path,
                    f"{dotted(path)} value {show(value)} is not canonical; tau "
                    f"reads it as {show(folded)}",
                    f"write `{path[-1]}: {folded}`",
                    severity="warning",
                )
                value = folded
        if canonical:
            if value in aliases:
                new = aliases[value]
                self.error(
                    path,
                    f"{dotted(path)} value {show(value)} is deprecated; tau reads it "
                    f"as {show(new)}",
                    f"write `{path[-1]}: {new}`",
                    severity="warning",
                )
                return new
            if value not in canonical:
                if path == ("execution", "launcher"):
                    self.error(path, self._launcher_wording(value))
                    return value
                wording = self.enum_wording.get(
                    path, "{path} must be one of: {listed} (got {value})"
                )
                self.error(
                    path,
                    wording.format(
                        path=dotted(path),
                        value=show(value),
                        listed=", ".join(str(v) for v in canonical),
                        allowed="|".join(str(v) for v in canonical),
                    ),
                )
                return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = node.get("minimum"), node.get("maximum")
            below, above = self.bound_wording.get(path, (None, None))
            if low is not None and value < low:
                bound = f">= {low}" if high is None else f"between {low} and {high}"
                wording = below or "{path} must be {bound} (got {value})"
                self.error(path, wording.format(path=dotted(path), bound=bound, value=value))
            elif high is not None and value > high:
                bound = f"<= {high}" if low is None else f"between {low} and {high}"
                wording = above or "{path} must be {bound} (got {value})"
                self.error(
                    path, wording.format(path=dotted(path), bound=bound, value=value, high=high)
                )
        if isinstance(value, str):
            self._string(node, value, path)
        return value

    def _string(self, node: dict[str, Any], value: str, path: PathKey) -> None:
        longest = node.get("maxLength")
        if longest is not None and len(value) > longest:
            self.error(
                path,
                f"{dotted(path)} {show(value)} is {len(value)} characters; "
                f"at most {longest} are allowed",
            )
            return
        pattern = node.get("pattern")
        if pattern is not None and not re.search(pattern, value):
            hint = node.get("x-tau-pattern-hint", f"match the pattern {pattern}")
            # A schema may word the problem itself (the descriptor's "is not a DNS-1123 label").
            template = node.get("x-tau-pattern-message")
            if template is not None:
                self.error(path, template.format(value=value), node.get("x-tau-pattern-hint"))
                return
            self.error(path, f"{dotted(path)} {show(value)} is not valid: use {hint}")


class FileWalker(Walker):
    """The walker for another file's schema (the connection descriptor, the project catalog):
    none of the run config's special paths apply.
    """

    eval_keys: ClassVar[frozenset[PathKey]] = frozenset()
    case_folded: ClassVar[frozenset[PathKey]] = frozenset()
    enum_wording: ClassVar[Mapping[PathKey, str]] = {}
    bound_wording: ClassVar[Mapping[PathKey, tuple[str, str]]] = {}
    length_wording: ClassVar[Mapping[PathKey, str]] = {}


@dataclass(frozen=True)
class Checked:
    """The outcome of the structural check: normalized data and what it found."""

    data: dict[str, Any]
    diagnostics: list[Diagnostic]


def check(doc: RawDocument, findings: Findings | None = None) -> Checked:
    """Walk the document against the run-config schema, collecting into `findings`.

    Returns:
        The normalized data (deprecated aliases replaced, unknown keys and values of the
        wrong type dropped) and the findings' diagnostics, errors and warnings alike.
    """
    findings = findings if findings is not None else Findings(doc.source)
    walker = Walker(findings, run_config_schema(), doc.data)
    data = walker.walk(run_config_schema(), doc.data, ())
    return Checked(data if isinstance(data, dict) else {}, findings.out)
