"""Find a run's workload object (RayJob or Job) by name. Performs I/O."""

from __future__ import annotations

from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import BY_KIND
from tau.kube.errors import api_call


def find(api_client: Any, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    """("RayJob" | "Job", object) of the run called `name`.

    Raises:
        ClusterError: neither exists (404), or the API refused.
    """
    from tau.runs.submit import read

    for kind in ("RayJob", "Job"):
        try:
            with api_call("get", BY_KIND[kind], namespace=namespace, name=name):
                return kind, read(api_client, kind, namespace, name)
        except ClusterError as exc:
            # Not found, or no KubeRay on this cluster: try the next kind.
            if exc.status != 404:
                raise
    raise ClusterError(
        f"run {namespace}/{name} not found: no RayJob or Job of that name",
        status=404,
        hint=f"list the runs with `tau run list -n {namespace}`",
    )
