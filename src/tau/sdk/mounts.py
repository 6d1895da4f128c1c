"""Extra PVC mounts of a workload (`storage.mounts`), beside the data PVC at /data.

Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tau.sdk.errors import SdkError


def pvc_mount(name: str, *, pvc: str, mount_path: str, read_only: bool = False) -> dict[str, Any]:
    """One `storage.mounts` entry: PVC `pvc` mounted at the absolute `mount_path`."""
    if not name or not pvc or not str(mount_path).startswith("/"):
        raise SdkError("tau.pvc_mount requires name, pvc, and an absolute mount_path")
    return {"name": name, "pvc": pvc, "mountPath": mount_path, "readOnly": bool(read_only)}


def normalize_mounts(mounts: Sequence[Any] | None) -> list[dict[str, Any]]:
    """Copies of the mount mappings; anything else is refused (use tau.pvc_mount)."""
    out = []
    for item in mounts or ():
        if not isinstance(item, Mapping):
            raise SdkError("tau mounts must be mappings; use tau.pvc_mount(...)")
        out.append(copy.deepcopy(dict(item)))
    return out
