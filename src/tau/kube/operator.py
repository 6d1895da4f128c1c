"""Typed calls for the platform operator commands (`tau cluster`): reads of nodes, controllers
and Kueue policy objects, and the probe pods of `validate nodes`.

Performs I/O (Kubernetes API). Lists are read raw (`_preload_content=False`) and decoded once:
the typed models are slow on 500 nodes and reject fields of newer API versions. Every call is
wrapped by `api_call`, so failures leave as `ClusterError`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import (
    CLUSTERQUEUE,
    DEPLOYMENT,
    LOCALQUEUE,
    NODE,
    POD,
    PRIORITY_CLASS,
    QUOTA_REQUEST,
    RESOURCE_FLAVOR,
    RESOURCE_SLICE,
    TAU_CLUSTER,
    TOPOLOGY,
    WORKLOAD_PRIORITY_CLASS,
    ResourceType,
)
from tau.kube import resources
from tau.kube.client import DEFAULT_TIMEOUT
from tau.kube.errors import api_call
from tau.kube.raw import decode

__all__ = [
    "CLUSTERQUEUE",
    "LOCALQUEUE",
    "PRIORITY_CLASS",
    "RESOURCE_FLAVOR",
    "TAU_CLUSTER",
    "TOPOLOGY",
    "WORKLOAD_PRIORITY_CLASS",
]


def server_version(api: Any, *, context: str | None = None) -> dict[str, Any]:
    """The API server's /version document (gitVersion, major, minor)."""
    from tau.kube import rest

    with api_call("get", ResourceType("", "", "version", "version"), context=context):
        return decode(rest.request(api, "GET", "/version", timeout=DEFAULT_TIMEOUT))


def list_nodes(
    api: Any, *, label_selector: str | None = None, context: str | None = None
) -> list[dict[str, Any]]:
    """Every Node (matching `label_selector`), as plain dicts."""
    return resources.list_items(api, NODE, selector=label_selector or "", context=context)


def list_objects(
    api: Any,
    resource: ResourceType,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    context: str | None = None,
    missing_ok: bool = False,
) -> list[dict[str, Any]] | None:
    """Every object of a resource (cluster-wide when `namespace` is None).

    Returns:
        The items; None when `missing_ok` and the cluster does not serve the resource.
    """
    try:
        page = resources.list_page(
            api, resource, namespace=namespace, selector=label_selector or "", context=context
        )
    except ClusterError as exc:
        if missing_ok and exc.status == 404:
            return None
        raise
    return page.items


def get_object(
    api: Any,
    resource: ResourceType,
    name: str,
    *,
    namespace: str | None = None,
    context: str | None = None,
) -> dict[str, Any] | None:
    """One object, or None when it (or its resource type) does not exist."""
    return resources.find(api, resource, name, namespace=namespace, context=context)


def list_deployments(
    api: Any, *, label_selector: str, context: str | None = None
) -> list[dict[str, Any]]:
    """Deployments in every namespace matching `label_selector`."""
    return list_objects(api, DEPLOYMENT, label_selector=label_selector, context=context) or []


def list_resource_slices(api: Any, *, context: str | None = None) -> list[dict[str, Any]] | None:
    """DRA ResourceSlices (resource.k8s.io v1, else v1beta2); None when DRA is not served."""
    for version in ("v1", "v1beta2"):
        resource = replace(RESOURCE_SLICE, version=version)
        items = list_objects(api, resource, context=context, missing_ok=True)
        if items is not None:
            return items
    return None


def quota_guard_served(api: Any, namespace: str, *, context: str | None = None) -> bool:
    """Whether the cluster serves TauQuotaRequest (the quota guard's API)."""
    return (
        list_objects(api, QUOTA_REQUEST, namespace=namespace, context=context, missing_ok=True)
        is not None
    )


# ---------------------------------------------------------------------------- probe pods


def create_pod(api: Any, pod: dict[str, Any], *, context: str | None = None) -> None:
    namespace = pod["metadata"]["namespace"]
    resources.create(api, POD, pod, namespace=namespace, context=context)


def list_pods(
    api: Any, namespace: str, *, label_selector: str, context: str | None = None
) -> list[dict[str, Any]]:
    return resources.list_items(
        api, POD, namespace=namespace, selector=label_selector, context=context
    )


def pod_log(api: Any, name: str, namespace: str, *, context: str | None = None) -> str:
    options = resources.LogOptions(limit_bytes=1 << 20)
    return resources.pod_log(api, name, namespace, options, context=context)


def delete_pod(api: Any, name: str, namespace: str, *, context: str | None = None) -> None:
    """Delete a pod now (grace period 0); a pod that is already gone is fine."""
    resources.delete(api, POD, name, namespace=namespace, grace_seconds=0, context=context)
