"""Whether a path inside a workload's pods lies on a PersistentVolumeClaim.

Pure. `/data` is only durable when a claim is mounted there: a run without `storage.data_pvc`
writes its "checkpoints" into the container's own filesystem (or an emptyDir), which goes with
the workload. Resume asks this of the failed workload and of its replacement before deleting
anything.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import Any


def pod_specs(workload: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The pod specs of a Job (its template) or a RayJob (its head and worker groups)."""
    spec = workload.get("spec") or {}
    if workload.get("kind") == "RayJob":
        cluster = spec.get("rayClusterSpec") or {}
        groups = [cluster.get("headGroupSpec") or {}, *(cluster.get("workerGroupSpecs") or [])]
        for group in groups:
            yield (group.get("template") or {}).get("spec") or {}
    else:
        yield (spec.get("template") or {}).get("spec") or {}


def claim_at(workload: Mapping[str, Any], path: str) -> str | None:
    """The claim holding `path` in some container of the workload, or None when no container
    has it on a PersistentVolumeClaim (the deepest mount covering the path decides).
    """
    norm = posixpath.normpath(path)
    for spec in pod_specs(workload):
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        for container in spec.get("containers") or []:
            covering = [
                m
                for m in container.get("volumeMounts") or []
                if _covers(str(m.get("mountPath") or ""), norm)
            ]
            if not covering:
                continue
            deepest = max(covering, key=lambda m: len(posixpath.normpath(m["mountPath"])))
            claim = (volumes.get(deepest.get("name")) or {}).get("persistentVolumeClaim")
            if claim and claim.get("claimName"):
                return str(claim["claimName"])
    return None


def _covers(mount: str, path: str) -> bool:
    if not mount:
        return False
    root = posixpath.normpath(mount)
    return path == root or path.startswith(root.rstrip("/") + "/")
