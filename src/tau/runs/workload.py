"""Find a run's workload object (RayJob or Job) by name. Performs I/O."""

from __future__ import annotations

from typing import Any

from tau.errors import ClusterError


def find(api_client: Any, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    """("RayJob" | "Job", object) of the run called `name`.

    Raises:
        ClusterError: neither exists (404), or the API refused.
    """
    from kubernetes.client.exceptions import ApiException

    from tau.kube_errors import translate
    from tau.submit import read

    for kind in ("RayJob", "Job"):
        try:
            return kind, read(api_client, kind, namespace, name)
        except ApiException as exc:
            if exc.status != 404:
                raise translate(exc, kind=kind, name=name, namespace=namespace) from None
    raise ClusterError(f"run {namespace}/{name} not found: no RayJob or Job of that name",
                       status=404, hint=f"list the runs with `tau run list -n {namespace}`")
