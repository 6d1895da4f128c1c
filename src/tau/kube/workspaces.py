"""Fetch TauWorkspaces and PersistentVolumeClaims as plain dicts.

Performs I/O (Kubernetes API, through `tau.kube.resources`), so failures come out as
`ClusterError` with a plain message.
"""

from __future__ import annotations

from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import PVC, TAU_WORKSPACE
from tau.kube import resources


def list_workspaces(
    api: Any, system_namespace: str, *, context: str | None = None
) -> list[dict[str, Any]]:
    """All TauWorkspaces in `system_namespace`, sorted by name."""
    items = resources.list_items(api, TAU_WORKSPACE, namespace=system_namespace, context=context)
    return sorted(items, key=lambda o: str((o.get("metadata") or {}).get("name", "")))


def get_workspace(
    api: Any, name: str, system_namespace: str, *, context: str | None = None
) -> dict[str, Any]:
    """One TauWorkspace.

    Raises:
        ClusterError: not found (with a hint to list workspaces), forbidden, CRD missing...
    """
    try:
        return resources.get(api, TAU_WORKSPACE, name, namespace=system_namespace, context=context)
    except ClusterError as exc:
        if exc.reason == "NotFound":
            exc.hint = "run `tau workspace list` to see the workspaces of this cluster"
        raise


def get_pvc(
    api: Any, name: str, namespace: str, *, context: str | None = None
) -> dict[str, Any] | None:
    """The PVC as a dict, or None when it does not exist; other failures raise."""
    return resources.find(api, PVC, name, namespace=namespace, context=context)
