"""The typed RunConfig is pinned to the schema: same fields, same defaults, aliases collapsed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau.intent import load, runconfig, validate
from tau.intent.runconfig import ALIASES, RunConfig
from tau.intent.spec import run_config_schema
from tau.status import classify

ROOT = Path(__file__).resolve().parents[1]

#: Schema paths that are not a RunConfig field of the same path, and where they went.
RESHAPED = {
    "schema_version": None,  # the managed-manifest marker; never part of a direct config
    "run.source.image": "run.source.image",
    "run.source.path": "run.source.path",
    "metrics.offload": "metrics.offload_enabled",
    "metrics.offload.enabled": "metrics.offload_enabled",
    "runtime.security.mode": "runtime.security.mode",
    **{
        f"compute.{who}{what}": f"compute.{group}.{what}"
        for who, group in (("", "resources"), ("head_", "head"), ("worker_", "worker"))
        for what in ("cpu_request", "memory_request", "cpu_limit", "memory_limit")
    },
    "storage.image_assets.name": "storage.image_assets.name",
    "storage.image_assets.image": "storage.image_assets.image",
    "storage.image_assets.source_path": "storage.image_assets.source_path",
    "storage.image_assets.mount_path": "storage.image_assets.mount_path",
}


def _schema_fields() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, child in node.get("properties", {}).items():
            found[prefix + key] = child
            walk(child, f"{prefix}{key}.")
            if isinstance(child.get("items"), dict):
                walk(child["items"], f"{prefix}{key}.")

    walk(run_config_schema(), "")
    return found


_MISSING = object()
_REQUIRED = object()


def _field_default(path: str) -> Any:
    """The default of the RunConfig field at a dotted path; _MISSING when there is no field."""
    cls: Any = RunConfig
    default: Any = _MISSING
    for part in path.split("."):
        if part not in getattr(cls, "_fields", ()):
            return _MISSING
        default = cls._field_defaults.get(part, _REQUIRED)
        cls = type(default) if hasattr(default, "_fields") else _NESTED.get(part, object)
    return default


#: Fields whose default is None but whose values are typed records.
_NESTED = {"source": runconfig.Source, "image_assets": runconfig.ImageAsset}


def test_every_schema_field_is_a_runconfig_field_or_a_collapsed_alias() -> None:
    aliases = {written for canon, paths in ALIASES for written in paths if written != canon}
    missing = []
    for path in _schema_fields():
        if path in aliases or path == "workload_kind":
            continue
        target = RESHAPED.get(path, path)
        if target is not None and _field_default(target) is _MISSING:
            missing.append(path)
    assert missing == []


def test_every_schema_default_is_the_runconfig_default() -> None:
    checked = 0
    for path, node in _schema_fields().items():
        if "default" not in node:
            continue
        default = _field_default(RESHAPED.get(path, path) or path)
        if (
            default is _MISSING or default is None
        ):  # unset stays distinguishable where render tells them apart
            continue
        wanted = node["default"]
        assert (list(default) if isinstance(default, tuple) else default) == wanted, path
        checked += 1
    assert checked >= 10


def test_the_default_retry_reasons_agree_with_the_classifier() -> None:
    assert tuple(str(r) for r in classify.DEFAULT_RETRY_ON) == runconfig.DEFAULT_RETRY_ON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a\nrun:\n  name: b\n", ("b", "run.name")),
        ("name: a\nengine: job\nscript: s.py\nentrypoint: e.py\n", ("e.py", "entrypoint")),
        ("name: a\nengine: job\nscript: s.py\nrun:\n  script: r.py\n", ("r.py", "run.script")),
        ("name: a\nengine: job\nentrypoint: e.py\n", ("e.py", "entrypoint")),
    ],
)
def test_aliases_collapse_once_by_precedence(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    path = tmp_path / "tau.yaml"
    path.write_text(
        text + "compute:\n  gpus: 0\n" + ("engine: job\n" if "engine" not in text else "")
    )
    valid = validate.validate(load.load(path))
    if expected[1].endswith("name"):
        assert valid.config.name == expected[0]
    else:
        assert (valid.config.entrypoint, valid.entry_path) == expected


def test_image_and_priority_aliases_collapse(tmp_path: Path) -> None:
    path = tmp_path / "tau.yaml"
    path.write_text(
        "name: a\nengine: job\nimage: top:1\nrun:\n  image: run:1\ncompute:\n  gpus: 0\n"
        "policy:\n  priority: priority\n"
    )
    config = validate.validate(load.load(path)).config
    assert (config.runtime.image, config.image) == ("run:1", "run:1")
    assert config.policy.priority_tier == "priority"
    with pytest.raises(AttributeError):
        config.name = "changed"  # type: ignore[misc]


def test_runconfig_imports_without_third_party_modules() -> None:
    """The type must stay cheap to import (bench/cli_speed.py measures the milliseconds)."""
    code = (
        "import sys, tau.intent.runconfig; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pydantic', 'yaml', 'jsonschema')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"


def test_every_rule_module_declares_its_stage_and_validate_runs_only_offline_ones() -> None:
    import ast
    import importlib

    package = ROOT / "src" / "tau" / "intent" / "validate"
    helpers = {"__init__", "context", "findings"}
    stages = {}
    for path in sorted(package.glob("*.py")):
        if path.stem not in helpers:
            stages[path.stem] = importlib.import_module(f"tau.intent.validate.{path.stem}").STAGE
    assert set(stages.values()) <= {"offline", "client"}
    assert stages["limits"] == "client"
    tree = ast.parse((package / "__init__.py").read_text())
    used = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "tau.intent.validate"
        for alias in node.names
    }
    assert used and all(stages[name] == "offline" for name in used), used
