"""Check, before a submit, that the PersistentVolumeClaims a run mounts exist in its namespace.

Performs I/O (one get per claim). TauGrid does not create claims and a Ready workspace can
still lack one; a run that mounts a missing claim is admitted by Kueue and then waits Pending
with the scheduler's `persistentvolumeclaim "x" not found`. Saying so before the submit, at the
config line that names the claim, spares the wait. It is a warning, not a refusal: the platform
may be provisioning the claim right now, and the run starts once it exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tau.errors import ClusterError, Diagnostic

HINT = (
    "a Ready workspace can still lack a PVC: the platform team provisions claims (tau does "
    "not create them); the run is submitted and waits Pending until the claim exists"
)


def _pod_specs(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    spec = doc.get("spec") or {}
    if doc.get("kind") == "Job":
        yield (spec.get("template") or {}).get("spec") or {}
    elif doc.get("kind") == "RayJob":
        cluster = spec.get("rayClusterSpec") or {}
        yield ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
        for group in cluster.get("workerGroupSpecs") or ():
            yield (group.get("template") or {}).get("spec") or {}


def mounted(documents: list[dict[str, Any]]) -> list[str]:
    """The claims the rendered workload's pods mount, each once, in order."""
    names = (
        str(volume["persistentVolumeClaim"].get("claimName") or "")
        for doc in documents
        for spec in _pod_specs(doc)
        for volume in spec.get("volumes") or ()
        if isinstance(volume.get("persistentVolumeClaim"), dict)
    )
    return [n for n in dict.fromkeys(names) if n]


def _config_path(valid: Any, claim: str) -> str:
    """The dotted config path that names `claim` (for the warning's location)."""
    storage = valid.config.storage
    for path, value in (
        ("storage.data_pvc", storage.data_pvc),
        ("storage.result_pvc", storage.result_pvc),
    ):
        if value == claim:
            return path

    def search(value: Any, path: str) -> str | None:
        if isinstance(value, str):
            return path if claim == value or value.endswith(f":{claim}") else None
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
        else:
            return None
        for key, child in items:
            found = search(child, f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None

    return search(valid.data.get("storage") or {}, "storage") or "storage"


def missing(
    api_client: Any, namespace: str, documents: list[dict[str, Any]], valid: Any
) -> list[Diagnostic]:
    """A located warning for each claim the run mounts that the namespace does not have.

    A claim tau may not read is not checked (the submit reports what RBAC refuses); any other
    failure of the check is left to the submit too, which asks the same API server.
    """
    from tau.k8s.kinds import PVC
    from tau.kube import resources

    out = []
    for claim in mounted(documents):
        try:
            found = resources.find(api_client, PVC, claim, namespace=namespace)
        except ClusterError:
            continue
        if found is not None:
            continue
        path = _config_path(valid, claim)
        out.append(
            Diagnostic(
                path,
                f'persistentvolumeclaim "{claim}" not found in namespace {namespace}',
                HINT,
                valid.where(path),
                severity="warning",
            )
        )
    return out
