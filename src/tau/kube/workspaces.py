"""Fetch TauWorkspaces and PersistentVolumeClaims as plain dicts.

Performs I/O (Kubernetes API). Every call is wrapped by `api_call`, so failures come out as
`ClusterError` with a plain message.
"""

from __future__ import annotations

from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import PVC, TAU_WORKSPACE
from tau.kube.client import DEFAULT_TIMEOUT
from tau.kube.errors import api_call

W = TAU_WORKSPACE


def list_workspaces(
    api: Any, system_namespace: str, *, context: str | None = None
) -> list[dict[str, Any]]:
    """All TauWorkspaces in `system_namespace`, sorted by name."""
    from kubernetes.client import CustomObjectsApi

    with api_call("list", W, namespace=system_namespace, context=context):
        body = CustomObjectsApi(api).list_namespaced_custom_object(
            W.group, W.version, system_namespace, W.plural, _request_timeout=DEFAULT_TIMEOUT
        )
    items = list(body.get("items") or [])
    return sorted(items, key=lambda o: str((o.get("metadata") or {}).get("name", "")))


def get_workspace(
    api: Any, name: str, system_namespace: str, *, context: str | None = None
) -> dict[str, Any]:
    """One TauWorkspace.

    Raises:
        ClusterError: not found (with a hint to list workspaces), forbidden, CRD missing...
    """
    from kubernetes.client import CustomObjectsApi

    try:
        with api_call("get", W, namespace=system_namespace, name=name, context=context):
            return dict(
                CustomObjectsApi(api).get_namespaced_custom_object(
                    W.group,
                    W.version,
                    system_namespace,
                    W.plural,
                    name,
                    _request_timeout=DEFAULT_TIMEOUT,
                )
            )
    except ClusterError as exc:
        if exc.status == 404 and "CRD" not in exc.message:
            exc.hint = "run `tau workspace list` to see the workspaces of this cluster"
        raise


def get_pvc(
    api: Any, name: str, namespace: str, *, context: str | None = None
) -> dict[str, Any] | None:
    """The PVC as a dict, or None when it does not exist; other failures raise."""
    from kubernetes.client import CoreV1Api

    try:
        with api_call("get", PVC, namespace=namespace, name=name, context=context):
            obj = CoreV1Api(api).read_namespaced_persistent_volume_claim(
                name, namespace, _request_timeout=DEFAULT_TIMEOUT
            )
    except ClusterError as exc:
        if exc.status == 404:
            return None
        raise
    return dict(api.sanitize_for_serialization(obj))
