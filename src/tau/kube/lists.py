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
    """

    items: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    error: str = ""
    status: int | None = None

    @property
    def ok(self) -> bool:
        return not self.error


def _reason(exc: Any) -> str:
    try:
        message = json.loads(getattr(exc, "body", "") or "{}").get("message", "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    return message or str(getattr(exc, "reason", "") or exc)


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
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    ns = None if resource.kind in CLUSTER_SCOPED else namespace
    kwargs: dict[str, Any] = {
        "label_selector": selector,
        "limit": limit,
        "_request_timeout": timeout,
        **RAW,
    }
    try:
        if resource.group in ("", "batch"):
            if resource.kind == "Node":
                response = client.CoreV1Api(api_client).list_node(**kwargs)
            elif resource.kind == "Pod":
                core = client.CoreV1Api(api_client)
                response = (
                    core.list_namespaced_pod(ns, **kwargs)
                    if ns
                    else core.list_pod_for_all_namespaces(**kwargs)
                )
            elif resource.kind == "Job":
                batch = client.BatchV1Api(api_client)
                response = (
                    batch.list_namespaced_job(ns, **kwargs)
                    if ns
                    else batch.list_job_for_all_namespaces(**kwargs)
                )
            else:
                raise ValueError(f"list_kind does not read {resource.kind}")
        else:
            custom = client.CustomObjectsApi(api_client)
            args = (resource.group, resource.version)
            response = (
                custom.list_namespaced_custom_object(*args, ns, resource.plural, **kwargs)
                if ns
                else custom.list_cluster_custom_object(*args, resource.plural, **kwargs)
            )
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
    return Listed(items=items, truncated=bool((body.get("metadata") or {}).get("continue")))


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
