"""`tau run logs`: Job pod logs, or the RayJob driver log kept by the head's log sidecar.

Performs I/O. The driver log is read from the `ray-driver-log-offload` container, which
tails it on the head pod: no exec into the cluster, and it outlives the driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tau.errors import ClusterError
from tau.kube.errors import api_call
from tau.kube.resources import POD
from tau.runs.workload import find

DRIVER_LOG_CONTAINER = "ray-driver-log-offload"


def _pods(api_client: Any, namespace: str, selector: str) -> list[str]:
    from kubernetes import client

    from tau.kube.raw import decode

    with api_call("list", POD, namespace=namespace):
        pods = client.CoreV1Api(api_client).list_namespaced_pod(
            namespace, label_selector=selector, _preload_content=False
        )
    return sorted(p["metadata"]["name"] for p in decode(pods).get("items", []))


def stream(
    api_client: Any,
    namespace: str,
    name: str,
    *,
    follow: bool = False,
    tail: int = 200,
    container: str | None = None,
    previous: bool = False,
) -> Iterator[str]:
    """Yield log text chunks of the run (several Job pods get a `[pod]` prefix per line).

    Raises:
        ClusterError: the run does not exist, has no pods yet, or the API refused.
    """
    from kubernetes import client

    kind, obj = find(api_client, namespace, name)
    if kind == "RayJob":
        cluster = (obj.get("status") or {}).get("rayClusterName")
        pods = (
            _pods(api_client, namespace, f"ray.io/cluster={cluster},ray.io/node-type=head")
            if cluster
            else []
        )
        container = DRIVER_LOG_CONTAINER
    else:
        pods = _pods(api_client, namespace, f"job-name={name}")
        container = container or "main"
    if not pods:
        raise ClusterError(
            f"{kind} {namespace}/{name} has no pods yet, so no logs",
            hint=f"`tau run status {name} -n {namespace}` shows where it waits",
        )
    core = client.CoreV1Api(api_client)
    # Following several pods at once would interleave unreadably: follow rank 0 only.
    chosen = pods[:1] if follow else pods
    for pod_name in chosen:
        args: dict[str, Any] = {"container": container}
        if previous:
            args["previous"] = True
        if tail >= 0:
            args["tail_lines"] = tail
        with api_call("read logs of", POD, namespace=namespace, name=pod_name):
            if follow:
                response = core.read_namespaced_pod_log(
                    pod_name, namespace, follow=True, _preload_content=False, **args
                )
                for chunk in response.stream(4096):
                    yield chunk.decode(errors="replace")
                continue
            text = core.read_namespaced_pod_log(pod_name, namespace, **args)
        if len(chosen) > 1:
            text = "".join(f"[{pod_name}] {line}\n" for line in text.splitlines())
        yield text
