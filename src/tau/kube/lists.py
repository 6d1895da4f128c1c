"""Bounded list reads of whole kinds, for read-only boards. Performs I/O.

One call per kind (cluster-wide, or one namespace), never one per object, so the number of
requests a board refresh makes does not grow with the cluster. Each list is capped by `limit`;
a cut list says so (`truncated`). A failure never raises: it comes back as the reason a board
is unavailable (no cluster, CRD not installed, forbidden).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau.k8s.kinds import (
    CLUSTERQUEUE,
    JOB,
    LOCALQUEUE,
    NODE,
    POD,
    RAYCLUSTER,
    RAYJOB,
    WORKLOAD,
    ResourceType,
)

#: Items per list call; a larger cluster gets a truncated board rather than an unbounded read.
DEFAULT_LIMIT = 5000


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
    from tau.errors import ClusterError
    from tau.kube.resources import list_page

    try:
        # A cluster-scoped kind is listed whole even when a namespace is given.
        page = list_page(
            api_client,
            resource,
            namespace=namespace,
            selector=selector,
            limit=limit,
            timeout=timeout,
        )
    except ClusterError as exc:
        if exc.status == 404:
            detail = f"{resource.qualified} is not served (is {resource.owner or 'it'} installed?)"
        elif exc.status == 403:
            detail = f"forbidden to list {resource.qualified}: {exc.message}"
        else:
            detail = exc.message
        return Listed(error=detail, status=exc.status)
    return Listed(
        items=page.items, truncated=page.truncated, resource_version=page.resource_version
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
