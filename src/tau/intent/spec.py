"""Locate and read the checked-in specification files (schema, preset catalog).

Performs I/O (reads files under spec/, cached). In a source checkout they sit in the
repository's spec/; in a wheel they are packaged as tau/_spec.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

RUN_CONFIG_SCHEMA = "tau-run-config.schema.json"
WORKFLOW_MANIFEST_SCHEMA = "tau-workflow-manifest.schema.json"
CONNECTION_SCHEMA = "tau-workspace-connection.schema.json"
PROJECTS_SCHEMA = "tau-projects.schema.json"
PRESET_CATALOG = "presets/azure-topology-policy.yaml"


@functools.cache
def spec_dir() -> Path:
    """The directory holding the spec files."""
    package = Path(__file__).resolve().parents[1]  # src/tau (or site-packages/tau)
    for candidate in (package / "_spec", package.parents[1] / "spec"):
        if (candidate / RUN_CONFIG_SCHEMA).is_file():
            return candidate
    raise FileNotFoundError(f"tau spec files not found next to {package}")


def spec_path(name: str) -> Path:
    """Path of one spec file by its name relative to spec/."""
    return spec_dir() / name


@functools.cache
def run_config_schema_bytes() -> bytes:
    """The run-config JSON Schema exactly as checked in (`tau run schema` prints these bytes)."""
    return spec_path(RUN_CONFIG_SCHEMA).read_bytes()


@functools.cache
def run_config_schema() -> dict[str, Any]:
    """The run-config JSON Schema, parsed."""
    schema: dict[str, Any] = json.loads(run_config_schema_bytes())
    return schema


@functools.cache
def workflow_manifest_schema_bytes() -> bytes:
    """The managed-workflow manifest JSON Schema exactly as checked in
    (`tau run schema --manifest` prints these bytes).
    """
    return spec_path(WORKFLOW_MANIFEST_SCHEMA).read_bytes()


@functools.cache
def workflow_manifest_schema() -> dict[str, Any]:
    """The managed-workflow manifest JSON Schema, parsed."""
    schema: dict[str, Any] = json.loads(workflow_manifest_schema_bytes())
    return schema


@functools.cache
def connection_schema() -> dict[str, Any]:
    """The JSON Schema of tau/workspace.connection.yaml, parsed."""
    schema: dict[str, Any] = json.loads(spec_path(CONNECTION_SCHEMA).read_bytes())
    return schema


@functools.cache
def projects_schema() -> dict[str, Any]:
    """The JSON Schema of the monorepo project catalog tau.projects.yaml, parsed."""
    schema: dict[str, Any] = json.loads(spec_path(PROJECTS_SCHEMA).read_bytes())
    return schema
