"""Find a run's workload object (RayJob or Job) by name. Performs I/O."""

from __future__ import annotations

from typing import Any

from tau.errors import ExitCode, TauError
from tau.k8s.kinds import BY_KIND


class RunNotFound(TauError):
    """No RayJob or Job has the name the user gave.

    Exit 1, as for any name the user got wrong: the cluster answered the request, the run is
    simply not there. `tau run status` reports the same case as state `not_found`, exit 1, so
    every lifecycle verb says one thing about a missing run.
    """

    exit_code = ExitCode.INVALID

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f"run {namespace}/{name} not found: no RayJob or Job of that name",
            hint=f"list the runs with `tau run list -n {namespace}`",
        )
        self.namespace = namespace
        self.name = name


def find(api_client: Any, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    """("RayJob" | "Job", object) of the run called `name`.

    Raises:
        RunNotFound: neither exists.
        ClusterError: the API refused.
    """
    from tau.kube import resources

    for kind in ("RayJob", "Job"):
        # Not found, or no KubeRay on this cluster: try the next kind.
        obj = resources.find(api_client, BY_KIND[kind], name, namespace=namespace)
        if obj is not None:
            return kind, obj
    raise RunNotFound(namespace, name)
