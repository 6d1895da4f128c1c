"""Find a run's workload object (RayJob or Job) by name. Performs I/O."""

from __future__ import annotations

from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import BY_KIND


def find(api_client: Any, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    """("RayJob" | "Job", object) of the run called `name`.

    Raises:
        ClusterError: neither exists (404), or the API refused.
    """
    from tau.kube import resources

    for kind in ("RayJob", "Job"):
        # Not found, or no KubeRay on this cluster: try the next kind.
        obj = resources.find(api_client, BY_KIND[kind], name, namespace=namespace)
        if obj is not None:
            return kind, obj
    raise ClusterError(
        f"run {namespace}/{name} not found: no RayJob or Job of that name",
        status=404,
        hint=f"list the runs with `tau run list -n {namespace}`",
    )
