"""Canonical YAML and JSON of rendered manifests: the same bytes for the same input.

Pure. Top-level keys come as apiVersion, kind, metadata, spec, then the rest; nested keys
are sorted; block style, no wrapping, no anchors; multi-line strings as literal blocks so
scripts read as scripts in a review. The YAML emitter is written here for the plain data
render produces (dicts, lists, strings, numbers, booleans, null): a general emitter spent
most of the render time deciding things that never vary here.

What it writes reads back as written under YAML 1.1 (PyYAML) and 1.2 (kubectl's readers): a
string with a character outside YAML's printable set is double-quoted with YAML's escapes
(a raw DEL made the output unreadable), NaN and the infinities are the YAML floats `.nan`,
`.inf`, `-.inf`, every float carries a dot before its exponent (1.1 reads `1e+16` as a
string), and a string a 1.2 reader would take for a number, boolean or null (`1e3`, `0o17`)
is quoted. tests/test_yaml_writer.py round-trips random documents through PyYAML.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import yaml

_TOP = ("apiVersion", "kind", "metadata", "spec")
_RESOLVER = yaml.resolver.Resolver()
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_STR_TAG = "tag:yaml.org,2002:str"
#: Plain scalars the YAML 1.2 core schema resolves to something other than a string (the
#: 1.1 resolver above misses `1e3`, `0o17`, `.NaN` written another way, ...).
_CORE_NOT_STR = re.compile(
    r"~|null|Null|NULL|true|True|TRUE|false|False|FALSE"
    r"|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN"
)
#: YAML's named escapes (spec 1.2 §5.7), used for the characters that have one.
_ESCAPES = {
    "\x00": "\\0",
    "\x07": "\\a",
    "\x08": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\x0b": "\\v",
    "\x0c": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


@functools.lru_cache(maxsize=8192)
def _plain_ok(text: str) -> bool:
    """Whether `text` can be written unquoted and still read back as the same string."""
    if not text or text != text.strip() or not text.isprintable():
        return False
    if text[0] in _INDICATORS and not (text[0] == "-" and len(text) > 1 and text[1] != " "):
        return False
    if ": " in text or " #" in text or text.endswith(":") or _CORE_NOT_STR.fullmatch(text):
        return False
    return bool(_RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG)


def _literal_ok(text: str) -> bool:
    lines = text.rstrip("\n").split("\n")
    # A block's indentation is read from its first non-empty line: that line must not start
    # with a space, and no empty line before it may hold one either (they hold none here).
    first = next((line for line in lines if line), "")
    return (
        not text.endswith("\n\n")
        and bool(first)
        and not first.startswith(" ")
        and all(line == line.rstrip() and (line.isprintable() or line == "") for line in lines)
    )


def _double_quoted(text: str) -> str:
    """A YAML double-quoted scalar: printable characters as they are, the rest escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02X}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(f"\\U{ord(char):08X}")
    return '"' + "".join(out) + '"'


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, int):
        return repr(value)
    text = str(value)
    if _plain_ok(text):
        return text
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return _double_quoted(text)


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
