"""The rules of a workload manifest that the decorators and the generator both apply.

Pure. `tau.sdk.workloads` builds a handle's manifest with them and `tau.sdk.generate` applies
them again when it turns that manifest into a run config (the override flags, the eval's
upstream checkpoint), so both read the same defaults and refuse the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from tau.sdk.errors import SdkError
from tau.sdk.overrides import nonblank_text

DEFAULT_WORKLOAD_KIND = "rayjob"
EVAL_WORKLOAD_KIND = "rayjob-eval"
DEFAULT_CHECKPOINT_ARTIFACT = "last.safetensors"


def validate_checkpoint_artifact(path: object, subject: str) -> str:
    """A checkpoint file path relative to the run's artifacts folder: no '/', '.', '..' games."""
    if not isinstance(path, str):
        raise SdkError(f"{subject} must be a string")
    value = path.strip()
    if not value:
        raise SdkError(f"{subject} must not be empty")
    pure = PurePosixPath(value)
    if pure.is_absolute() or any(part in ("", ".", "..") for part in value.split("/")):
        raise SdkError(
            f"{subject} must be a relative pod path without '.' or '..' segments (got {path!r})"
        )
    return pure.as_posix()


def copy_block(manifest: Mapping[str, Any], key: str, what: str) -> dict[str, Any]:
    """A copy of `manifest[key]` to edit (empty when unset); `what` names the source if it is
    not a mapping.
    """
    raw = manifest.get(key) or {}
    if not isinstance(raw, dict):
        raise SdkError(f"tau-py: {what}['{key}'] must be a dict")
    return dict(raw)


def with_data_pvc(
    manifest: dict[str, Any], data_pvc: str | None, *, override: bool = False
) -> dict[str, Any]:
    """`storage.data_pvc` set; a different value already there is a conflict unless `override`."""
    if data_pvc is None:
        return manifest
    pvc = nonblank_text(data_pvc, "data_pvc")
    storage = copy_block(manifest, "storage", "config/extra_manifest")
    existing = storage.get("data_pvc")
    if existing is not None and str(existing) != pvc and not override:
        raise SdkError(
            f"tau-py: data_pvc={pvc!r} conflicts with existing storage.data_pvc={existing!r}"
        )
    storage["data_pvc"] = pvc
    return {**manifest, "storage": storage}
