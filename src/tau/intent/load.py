"""Read a tau.yaml file into plain data plus a source map of line and column per config path.

Performs I/O (reads one file). This is the only module that opens tau.yaml. YAML syntax
errors and duplicate keys become Diagnostics with their location, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tau.errors import ConfigError, Diagnostic, Location

#: A config path: mapping keys and list indices from the document root.
PathKey = tuple[str | int, ...]

#: libyaml's parser where PyYAML has it (its wheels do): several times faster than the pure-Python
#: one, with the same safe constructors and the same node marks for file:line:col.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNREADABLE = object()
#: Bounds that keep a hostile or broken file from exhausting the stack or the memory: no field
#: of a run config nests more than a few levels, and aliases must not expand without limit.
MAX_DEPTH = 64
MAX_VALUES = 100_000


def dotted(path: PathKey) -> str:
    """Format a config path as `storage.volumes[1]` / `runtime.env.FOO`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True)
class SourceMap:
    """Where each key and value of a document sits in its file."""

    file: str
    keys: dict[PathKey, Location] = field(default_factory=dict)
    values: dict[PathKey, Location] = field(default_factory=dict)

    def key(self, path: PathKey) -> Location:
        """Location of the key at `path`, falling back to its nearest located ancestor."""
        return (
            self._nearest(self.keys, path)
            or self._nearest(self.values, path)
            or Location(self.file)
        )

    def value(self, path: PathKey) -> Location:
        """Location of the value at `path`, falling back to its key, then its ancestors."""
        return self._nearest(self.values, path) or self.key(path)

    @staticmethod
    def _nearest(table: dict[PathKey, Location], path: PathKey) -> Location | None:
        for cut in range(len(path), -1, -1):
            loc = table.get(path[:cut])
            if loc is not None:
                return loc
        return None


@dataclass(frozen=True)
class RawDocument:
    """A parsed config: its data (a mapping), where it came from, and its source map."""

    path: Path
    data: dict[str, Any]
    source: SourceMap
    #: Problems that still left a readable mapping (a duplicate key keeps its first value, an
    #: unreadable tagged value reads as null); `tau.intent.validate.validate` reports them together
    #: with every other problem of the file.
    problems: tuple[Diagnostic, ...] = ()


def _loc(file: str, mark: yaml.Mark) -> Location:
    return Location(file, mark.line + 1, mark.column + 1)


class _Builder:
    """Turns a composed YAML node tree into plain data, recording every position."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.source = SourceMap(file)
        self.problems: list[Diagnostic] = []
        self._scalars = yaml.constructor.SafeConstructor()
        #: The collection nodes from the root to the one being built: a node that is its own
        #: ancestor is a self-referencing alias (`a: &a [*a]`).
        self._open: list[yaml.Node] = []
        self._count = 0

    def _refuse(self, node: yaml.Node, path: PathKey, message: str, hint: str) -> object:
        self.problems.append(
            Diagnostic(dotted(path), message, hint, _loc(self.file, node.start_mark))
        )
        return _UNREADABLE

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        self.source.values[path] = _loc(self.file, node.start_mark)
        self._count += 1
        if self._count > MAX_VALUES:
            if self._count == MAX_VALUES + 1:
                return self._refuse(
                    node,
                    path,
                    f"invalid YAML: the document expands to more than {MAX_VALUES} values",
                    "write the values out instead of nesting aliases of aliases",
                )
            return _UNREADABLE
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            if any(node is open_node for open_node in self._open):
                return self._refuse(
                    node,
                    path,
                    "invalid YAML: a self-referencing alias (the value contains itself)",
                    "replace the alias with the value it stands for",
                )
            if len(self._open) >= MAX_DEPTH:
                return self._refuse(
                    node,
                    path,
                    f"invalid YAML: values nest deeper than {MAX_DEPTH} levels",
                    "flatten the value; run config fields nest a few levels at most",
                )
            self._open.append(node)
            try:
                if isinstance(node, yaml.MappingNode):
                    return self._mapping(node, path)
                items = (self.build(item, (*path, i)) for i, item in enumerate(node.value))
                return [item for item in items if item is not _UNREADABLE]
            finally:
                self._open.pop()
        try:
            return self._scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError):
            # An unknown local tag (`!custom x`) or a bad explicit one (`!!int abc`).
            self.problems.append(
                Diagnostic(
                    dotted(path),
                    f"invalid YAML: cannot read {node.value!r} tagged {node.tag}",
                    hint="remove the tag; tau.yaml uses plain YAML values",
                    location=_loc(self.file, node.start_mark),
                )
            )
            return _UNREADABLE  # left out of the data: its problem is reported already

    def _pairs(
        self, node: yaml.MappingNode, seen: tuple[yaml.Node, ...] = ()
    ) -> list[tuple[yaml.Node, yaml.Node]]:
        """The key/value nodes of a mapping with `<<` merge keys expanded (as yaml.v3 does).

        Keys written in the mapping itself win over merged ones; among merged mappings the
        first listed wins.
        """
        own = [(k, v) for k, v in node.value if k.tag != _MERGE_TAG]
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                continue
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    self.problems.append(
                        Diagnostic(
                            "",
                            "invalid YAML: a `<<` merge key takes a mapping or a list of mappings",
                            location=_loc(self.file, source.start_mark),
                        )
                    )
                    continue
                if any(source is n for n in (*seen, node)) or len(seen) >= MAX_DEPTH:
                    self.problems.append(
                        Diagnostic(
                            "",
                            "invalid YAML: a `<<` merge key merges a mapping into itself",
                            location=_loc(self.file, source.start_mark),
                        )
                    )
                    continue
                merged.extend(self._pairs(source, (*seen, node)))
        taken = {k.value for k, _ in own if isinstance(k, yaml.ScalarNode)}
        extra: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in merged:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if name not in taken:
                taken.add(name)
                extra.append((key_node, value_node))
        return own + extra

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in self._pairs(node):
            if not isinstance(key_node, yaml.ScalarNode):
                self.problems.append(
                    Diagnostic(
                        dotted(path),
                        "mapping keys must be plain strings",
                        location=_loc(self.file, key_node.start_mark),
                    )
                )
                continue
            # The key as written: `null:`/`true:`/`1:` name fields "null"/"true"/"1", as in Go.
            key = key_node.value
            child = (*path, key)
            if key in out:
                first = self.source.keys[child]
                self.problems.append(
                    Diagnostic(
                        dotted(child),
                        f"duplicate key {key!r} (first set at line {first.line})",
                        hint="keep exactly one entry for each key",
                        location=_loc(self.file, key_node.start_mark),
                    )
                )
                continue
            self.source.keys[child] = _loc(self.file, key_node.start_mark)
            value = self.build(value_node, child)
            if value is not _UNREADABLE:
                out[key] = value
        return out


def _is_empty(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null") and node.value == ""


def parse(text: str, path: Path, *, kind: str = "run config") -> RawDocument:
    """Parse config text; raise ConfigError listing every syntax problem found.

    Args:
        text: the YAML source.
        path: the file it came from (used for locations and relative paths).
        kind: what the file holds, as messages name it ("run config", "descriptor").

    Returns:
        The document; an empty file gives an empty mapping.

    Raises:
        ConfigError: the text is not YAML, holds several documents, or is not a mapping.
            Duplicate keys and unreadable values do not raise: they ride along in
            `RawDocument.problems`.
    """
    file = str(path)
    try:
        nodes = list(yaml.compose_all(text, Loader=SAFE_LOADER))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = _loc(file, mark) if mark else Location(file)
        problem = (exc.problem or str(exc)).strip()
        raise ConfigError([Diagnostic("", f"invalid YAML: {problem}", location=loc)]) from None
    except yaml.reader.ReaderError as exc:
        # A character YAML does not allow; its position is an offset into the text.
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"invalid YAML: unacceptable character #x{char:04x}: {exc.reason}"
        raise ConfigError([Diagnostic("", message, location=Location(file, line, col))]) from None
    except yaml.YAMLError as exc:
        message = f"invalid YAML: {exc}"
        raise ConfigError([Diagnostic("", message, location=Location(file))]) from None
    # A trailing `---` opens an empty document; only documents with content count.
    while len(nodes) > 1 and _is_empty(nodes[-1]):
        nodes.pop()
    if not nodes:
        return RawDocument(path, {}, SourceMap(file))
    if len(nodes) > 1:
        raise ConfigError(
            [
                Diagnostic(
                    "",
                    f"a {kind} holds exactly one YAML document",
                    hint="remove the extra `---` documents",
                    location=_loc(file, nodes[1].start_mark),
                )
            ]
        )
    builder = _Builder(file)
    data = builder.build(nodes[0], ())
    if data is _UNREADABLE:
        raise ConfigError(builder.problems)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            [
                *builder.problems,
                Diagnostic(
                    "",
                    f"a {kind} is a mapping of fields, got {type(data).__name__}",
                    location=_loc(file, nodes[0].start_mark),
                ),
            ]
        )
    return RawDocument(path, data, builder.source, tuple(builder.problems))


def load(path: Path) -> RawDocument:
    """Read and parse one config file.

    Raises:
        ConfigError: the file cannot be read or parsed.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            [Diagnostic("", f"config file {str(path)!r} not found", location=Location(str(path)))]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            [Diagnostic("", f"cannot read config: {exc}", location=Location(str(path)))]
        ) from None
    return parse(text, path)
