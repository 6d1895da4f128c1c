"""The Kubernetes API groups over a session's client: the one door to the `kubernetes` package.

Performs no I/O itself. Only src/tau/kube/ may import `kubernetes` (a ruff banned-api rule
enforces it, lazy imports included); code above this layer gets its API groups, its watch and
its exception type here. `kubernetes` is imported on first use, so offline commands never load
it. The typed per-resource calls (`tau.kube.operator`, `tau.kube.workspaces`, `tau.kube.lists`)
are built on the same groups.
"""

from __future__ import annotations

from typing import Any


def core(api_client: Any) -> Any:
    """CoreV1Api: pods, services, events, PVCs, logs."""
    from kubernetes import client

    return client.CoreV1Api(api_client)


def batch(api_client: Any) -> Any:
    """BatchV1Api: Jobs."""
    from kubernetes import client

    return client.BatchV1Api(api_client)


def apps(api_client: Any) -> Any:
    """AppsV1Api: Deployments."""
    from kubernetes import client

    return client.AppsV1Api(api_client)


def custom(api_client: Any) -> Any:
    """CustomObjectsApi: RayJobs, RayServices, Kueue and Tau kinds."""
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


def watch() -> Any:
    """A new watch stream (`kubernetes.watch.Watch`)."""
    from kubernetes import watch as kwatch

    return kwatch.Watch()


def __getattr__(name: str) -> Any:
    """`ApiException`, imported on first use: `from tau.kube.apis import ApiException`."""
    if name == "ApiException":
        from kubernetes.client.exceptions import ApiException

        return ApiException
    raise AttributeError(name)
