"""`tau run cancel`: delete the workload and wait until it, its pods, RayCluster and Kueue
Workload are gone.

Performs I/O. Waiting matters: a resubmit admitted while the old pods still hold their GPUs
lands on an occupied node, so "cancelled" is only said once teardown is complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tau.errors import ClusterError
from tau.k8s import meta
from tau.k8s.kinds import JOB, POD, RAYCLUSTER, RAYJOB, SERVICE, WORKLOAD
from tau.runs.workload import find

RAY_CLUSTER_LABEL = meta.RAY_CLUSTER_LABEL
JOB_NAME_LABEL = "job-name"


@dataclass(frozen=True)
class CancelResult:
    kind: str
    namespace: str
    name: str
    complete: bool

    def message(self) -> str:
        what = f"{self.kind} {self.namespace}/{self.name}"
        if self.complete:
            return (
                f"cancelled {what}: workload, pods and cluster are gone; Kueue reclaimed the quota"
            )
        return (
            f"deletion of {what} requested; teardown is NOT complete: pods may still hold "
            f"their nodes (check: tau run status {self.name} -n {self.namespace})"
        )


def _remaining(
    api_client: Any, namespace: str, kind: str, name: str, cluster: str | None, uid: str
) -> int:
    from tau.kube import resources

    selector = f"{RAY_CLUSTER_LABEL}={cluster}" if kind == "RayJob" else f"{JOB_NAME_LABEL}={name}"
    # The workload itself first: a RayJob deleted in the foreground outlives its RayCluster
    # and pods until the garbage collector (and KubeRay's finalizer) let it go, and a resubmit
    # of the same name meanwhile is refused as AlreadyExists.
    workload = resources.find(
        api_client, RAYJOB if kind == "RayJob" else JOB, name, namespace=namespace
    )
    count = int(workload is not None and (workload.get("metadata") or {}).get("uid") == uid)
    if kind == "Job" or cluster:
        count += len(resources.list_items(api_client, POD, namespace=namespace, selector=selector))
    if kind == "RayJob" and cluster:
        count += resources.find(api_client, RAYCLUSTER, cluster, namespace=namespace) is not None
    if uid:
        # Its Kueue Workload holds the quota until the garbage collector removes it after the
        # workload: "Kueue reclaimed the quota" is only true once it is gone too.
        count += len(
            resources.list_items(
                api_client,
                WORKLOAD,
                namespace=namespace,
                selector=f"{meta.KUEUE_JOB_UID}={uid}",
                missing_ok=True,
            )
        )
    return count


def cancel(
    api_client: Any,
    namespace: str,
    name: str,
    *,
    wait: bool = True,
    timeout: float = 300.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> CancelResult:
    """Delete the run's RayJob or Job and its headless Service; optionally wait for teardown.

    Raises:
        RunNotFound: the run does not exist.
        ClusterError: the API refused, or teardown timed out.
    """
    from tau.kube import resources

    kind, obj = find(api_client, namespace, name)
    cluster = (obj.get("status") or {}).get("rayClusterName")
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if kind == "RayJob":
        resources.delete(api_client, RAYJOB, name, namespace=namespace, propagation="Foreground")
    else:
        # Background propagation deletes the pods too; the Job's default would orphan them.
        resources.delete(api_client, JOB, name, namespace=namespace, propagation="Background")
        resources.delete(api_client, SERVICE, f"{name}-headless", namespace=namespace)
    if not wait:
        return CancelResult(kind, namespace, name, complete=False)
    deadline = clock() + timeout
    while _remaining(api_client, namespace, kind, name, cluster, uid):
        if clock() >= deadline:
            raise ClusterError(
                f"{kind} {namespace}/{name} was deleted but its pods are still "
                f"terminating after {timeout:.0f}s",
                hint=f"check `tau run status {name} -n {namespace}`; the platform "
                "team can see stuck finalizers",
            )
        sleep(1.0)
    return CancelResult(kind, namespace, name, complete=True)
