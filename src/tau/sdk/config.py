"""A workload's config as plain data: loaded from dicts, YAML or TOML files, deep-merged.

Pure, except that `load_config` reads the files it is given and `config(env=...)` reads the
process environment. A config is the starting point of a handle's manifest: the decorator's
keyword arguments are laid over it, so a checked-in file stays the source of truth and the
code names only what differs.
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tau.sdk.errors import SdkError
from tau.sdk.secrets import SecretRef, SecretSource

ConfigSource = str | Path | Mapping[str, Any] | Sequence[Any] | None


def load_config(source: ConfigSource) -> dict[str, Any]:
    """One mapping from `source`: a dict (copied), a .yaml/.yml/.toml path, or a list of those
    merged left to right (later wins).
    """
    if source is None:
        return {}
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    if isinstance(source, str | Path):
        return _load_file(Path(source))
    if isinstance(source, Sequence) and not isinstance(source, bytes | bytearray):
        merged: dict[str, Any] = {}
        for item in source:
            merged = deep_merge(merged, load_config(item))
        return merged
    raise SdkError(f"unsupported tau config source: {type(source).__name__}")


def _load_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise SdkError(f"tau config not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise SdkError(f"tau config {path} must be .yaml, .yml, or .toml")
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SdkError(f"cannot read tau config {path}: {detail}") from None
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        raise SdkError(f"tau config {path} must contain a mapping")
    return copy.deepcopy(dict(data))


def config(
    *sources: str | Path | Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Merge `sources`, then the env vars `env` maps dotted paths to (when set), then
    `overrides`: config files first, the environment and code on top.
    """
    merged = load_config(list(sources))
    if env:
        from_env: dict[str, Any] = {}
        for dotted, var in env.items():
            if var in os.environ:
                _set_path(from_env, dotted, os.environ[var])
        merged = deep_merge(merged, from_env)
    if overrides:
        merged = deep_merge(merged, dict(overrides))
    return merged


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `override` laid over it: mappings merge key by key, anything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _set_path(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        raise SdkError("env override path must not be empty")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def runtime_env_entries(env: Mapping[str, Any] | Sequence[Any] | None) -> list[dict[str, Any]]:
    """`runtime.env` entries from a mapping or a list of `KEY=VALUE` strings / entry dicts.

    A SecretRef becomes `valueFrom.secretKeyRef`; a SecretSource becomes
    `valueFrom.tauSecretSource` (its locator only), rewritten when the run is generated.
    """
    if env is None:
        return []
    if isinstance(env, Mapping):
        return [_entry(str(k), v) for k, v in env.items()]
    if isinstance(env, str | bytes | bytearray):
        raise SdkError("tau env must be a mapping or sequence of env entries")
    out: list[dict[str, Any]] = []
    for item in env:
        if isinstance(item, Mapping):
            out.append(copy.deepcopy(dict(item)))
            continue
        text = str(item)
        if "=" not in text or text.startswith("="):
            raise SdkError(f"tau env entries must be KEY=VALUE, got {_shape(text)}")
        key, value = text.split("=", 1)
        out.append(_entry(key, value))
    return out


def _shape(text: str) -> str:
    """An env entry without its value (it may be a secret): only the part before any '='."""
    return repr(text.split("=", 1)[0] + ("=..." if "=" in text else ""))


def merge_runtime_env(existing: Any, extra: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`existing` entries with `extra` replacing those of the same name, sorted by name."""
    by_name = {str(e.get("name")): dict(e) for e in runtime_env_entries(existing) if e.get("name")}
    for item in extra:
        name = str(item.get("name") or "")
        if not name:
            raise SdkError("tau env entry missing name")
        by_name[name] = copy.deepcopy(dict(item))
    return [by_name[k] for k in sorted(by_name)]


def _entry(name: str, value: Any) -> dict[str, Any]:
    if not name or "=" in name:
        raise SdkError(f"invalid env var name {name!r}")
    if isinstance(value, SecretSource):
        locator = {"key": value.key}
        if value.env:
            locator["env"] = value.env
        if value.path:
            locator["path"] = value.path
        return {"name": name, "valueFrom": {"tauSecretSource": locator}}
    if isinstance(value, SecretRef):
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": value.name, "key": value.key}}}
    return {"name": name, "value": str(value)}
