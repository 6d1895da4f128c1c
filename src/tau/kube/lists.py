"""Bounded list reads of whole kinds, for read-only boards. Performs I/O.

One call per kind (cluster-wide, or one namespace), never one per object, so the number of
requests a board refresh makes does not grow with the cluster. Each list is capped by `limit`;
a cut list says so (`truncated`). A failure never raises: it comes back as the reason a board
is unavailable (no cluster, CRD not installed, forbidden).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tau.k8s.kinds import (
    CLUSTERQUEUE,
    JOB,
    LOCALQUEUE,
    POD,
    RAYCLUSTER,
    RAYJOB,
    WORKLOAD,
    ResourceType,
)
from tau.kube.raw import RAW, decode

NODE = ResourceType("", "v1", "nodes", "Node")
#: Items per list call; a larger cluster gets a truncated board rather than an unbounded read.
DEFAULT_LIMIT = 5000
#: Kinds listed cluster-wide even when a namespace is given.
CLUSTER_SCOPED = frozenset({"Node", "ClusterQueue"})


@dataclass(frozen=True)
class Listed:
    """The outcome of one list call.

    Attributes:
        items: the objects (plain JSON dicts).
        truncated: the server had more than `limit` items.
        error: why the list failed ("" when it did not).
        status: the HTTP status of the failure, when there was one.
        resource_version: the list's resourceVersion, where a watch resumes (`tau.kube.streams`).
    """

    items: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    error: str = ""
    status: int | None = None
    resource_version: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def _reason(exc: Any) -> str:
    try:
        message = json.loads(getattr(exc, "body", "") or "{}").get("message", "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    return message or str(getattr(exc, "reason", "") or exc)


def list_call(
    api_client: Any, resource: ResourceType, namespace: str | None
) -> tuple[Any, tuple[Any, ...]]:
    """The official client's list function for `resource` and its positional arguments.

    One mapping from a kind to its list call, shared by `list_kind` and the watch streams
    (`tau.kube.streams`), which call the same function with `watch=True`.
    """
    from kubernetes import client

    ns = None if resource.kind in CLUSTER_SCOPED else namespace
    if resource.group in ("", "batch"):
        core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
        if resource.kind == "Node":
            return core.list_node, ()
        calls = {
            "Pod": (core.list_namespaced_pod, core.list_pod_for_all_namespaces),
            "Event": (core.list_namespaced_event, core.list_event_for_all_namespaces),
            "Job": (batch.list_namespaced_job, batch.list_job_for_all_namespaces),
        }
        if resource.kind not in calls:
            raise ValueError(f"list_kind does not read {resource.kind}")
        namespaced, everywhere = calls[resource.kind]
        return (namespaced, (ns,)) if ns else (everywhere, ())
    custom = client.CustomObjectsApi(api_client)
    args = (resource.group, resource.version)
    if ns:
        return custom.list_namespaced_custom_object, (*args, ns, resource.plural)
    return custom.list_cluster_custom_object, (*args, resource.plural)


def list_kind(
    api_client: Any,
    resource: ResourceType,
    namespace: str | None = None,
    *,
    selector: str = "",
    limit: int = DEFAULT_LIMIT,
    timeout: float = 10.0,
) -> Listed:
    """All objects of `resource` (in `namespace`, or cluster-wide when None), one request."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    kwargs: dict[str, Any] = {
        "label_selector": selector,
        "limit": limit,
        "_request_timeout": timeout,
        **RAW,
    }
    func, args = list_call(api_client, resource, namespace)
    try:
        response = func(*args, **kwargs)
    except ApiException as exc:
        status = int(exc.status) if exc.status else None
        if status == 404:
            detail = f"{resource.qualified} is not served (is {resource.owner or 'it'} installed?)"
        elif status == 403:
            detail = f"forbidden to list {resource.qualified}: {_reason(exc)}"
        else:
            detail = f"listing {resource.qualified} failed: {status} {_reason(exc)}"
        return Listed(error=detail, status=status)
    except (HTTPError, OSError) as exc:
        return Listed(error=f"cannot reach the Kubernetes API: {type(exc).__name__}", status=None)
    body = decode(response)
    items = list(body.get("items") or [])
    meta = body.get("metadata") or {}
    return Listed(
        items=items,
        truncated=bool(meta.get("continue")),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


#: What one portal refresh reads, in order: a constant eight calls.
BOARD_KINDS: tuple[ResourceType, ...] = (
    JOB,
    RAYJOB,
    RAYCLUSTER,
    WORKLOAD,
    LOCALQUEUE,
    CLUSTERQUEUE,
    NODE,
    POD,
)
