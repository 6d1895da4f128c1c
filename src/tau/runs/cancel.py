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
from tau.runs import ownership
from tau.runs.workload import RunNotFound

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


@dataclass(frozen=True)
class Remaining:
    """What of a cancelled run still exists: the count of objects, and its pods."""

    count: int
    pods: tuple[dict[str, Any], ...] = ()


def _remaining(
    api_client: Any, namespace: str, kind: str, name: str, cluster: str | None, uid: str
) -> Remaining:
    from tau.kube import resources

    selector = f"{RAY_CLUSTER_LABEL}={cluster}" if kind == "RayJob" else f"{JOB_NAME_LABEL}={name}"
    # The workload itself first: a RayJob deleted in the foreground outlives its RayCluster
    # and pods until the garbage collector (and KubeRay's finalizer) let it go, and a resubmit
    # of the same name meanwhile is refused as AlreadyExists.
    workload = resources.find(
        api_client, RAYJOB if kind == "RayJob" else JOB, name, namespace=namespace
    )
    count = int(workload is not None and (workload.get("metadata") or {}).get("uid") == uid)
    pods: list[dict[str, Any]] = []
    if kind == "Job" or cluster:
        pods = resources.list_items(api_client, POD, namespace=namespace, selector=selector)
        count += len(pods)
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
    return Remaining(count, tuple(pods))


#: How long a pod may run after its SIGTERM before cancel says why it is still there.
SLOW_TO_STOP = 30.0


def holding(name: str, pods: tuple[dict[str, Any], ...]) -> str:
    """The progress line while pods still hold their nodes."""
    nodes = sorted({str((p.get("spec") or {}).get("nodeName") or "") for p in pods} - {""})
    where = f" on {', '.join(nodes)}" if nodes else ""
    return (
        f"waiting for {name} to release compute ({len(pods)} pod(s) still holding capacity{where})"
    )


def ignoring_sigterm(pods: tuple[dict[str, Any], ...], waited: float) -> str | None:
    """Why a pod told to stop `waited` seconds ago still runs, when one does: its main process
    did not exit on SIGTERM, and the kubelet waits out the grace period before killing it.
    """
    for pod in pods:
        md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        running = [
            str(c.get("name"))
            for c in status.get("containerStatuses") or []
            if "running" in (c.get("state") or {})
        ]
        if not md.get("deletionTimestamp") or not running:
            continue
        grace = spec.get("terminationGracePeriodSeconds")
        grace_text = f"{grace}s" if grace is not None else "its grace period"
        return (
            f"pod {md.get('name')} ({', '.join(running)}) still runs {waited:.0f}s after it was "
            "told to stop: its main process does not exit on SIGTERM (a process that runs as "
            "PID 1, as `exec python` makes it, ignores SIGTERM unless it installs a handler); "
            f"the kubelet kills it after terminationGracePeriodSeconds={grace_text}"
        )
    return None


def owned_workload(
    api_client: Any, namespace: str, name: str, verb: str = "cancel"
) -> tuple[str, dict[str, Any]]:
    """("RayJob" | "Job", object) of the run called `name` that tau created.

    Raises:
        RunNotFound: neither a RayJob nor a Job has that name.
        ForeignWorkload: only objects tau did not create have it; `verb` says what was refused.
        ClusterError: the API refused.
    """
    from tau.kube import resources

    found = [
        (kind, resources.find(api_client, resource, name, namespace=namespace))
        for kind, resource in (("RayJob", RAYJOB), ("Job", JOB))
    ]
    chosen = ownership.choose(verb, found)
    if chosen is None:
        raise RunNotFound(namespace, name)
    kind, obj = chosen
    return kind, dict(obj)


def _delete(api_client: Any, kind: str, obj: dict[str, Any]) -> None:
    """Delete the workload tau created, and its headless Service when that is tau's too."""
    from tau.kube import resources

    md = obj.get("metadata") or {}
    name, namespace, uid = md.get("name", ""), md.get("namespace", ""), md.get("uid") or None
    try:
        if kind == "RayJob":
            resources.delete(
                api_client, RAYJOB, name, namespace=namespace, propagation="Foreground", uid=uid
            )
            return
        # Background propagation deletes the pods too; the Job's default would orphan them.
        resources.delete(
            api_client, JOB, name, namespace=namespace, propagation="Background", uid=uid
        )
    except ClusterError as exc:
        if exc.status != 409:
            raise
        raise ClusterError(
            f"{kind} {namespace}/{name} was replaced while tau was deleting it (its UID "
            "changed); nothing was deleted",
            status=409,
            hint=f"look at it again with `tau run status {name} -n {namespace}`",
        ) from None
    headless = resources.find(api_client, SERVICE, f"{name}-headless", namespace=namespace)
    if headless is not None and ownership.is_tau_owned(headless):
        uid = (headless.get("metadata") or {}).get("uid") or None
        resources.delete(api_client, SERVICE, f"{name}-headless", namespace=namespace, uid=uid)


def keep_logs(
    api_client: Any,
    namespace: str,
    kind: str,
    obj: dict[str, Any],
    note: Callable[[str], None] | None = None,
    *,
    system_namespace: str | None = None,
) -> bool:
    """Keep the attempt's logs before its deletion; True when some were kept. Never raises:
    a failure is one line to `note` (default stderr), and the deletion goes on.
    `system_namespace` is where the workspace naming the store is (`kept_place`).
    """
    from tau.runs import kept_logs

    tell = note or _stderr
    try:
        kept = kept_logs.keep(
            api_client, namespace, kind, obj, warn=tell, system_namespace=system_namespace
        )
    except Exception as exc:  # an API away or refusing mid-read: the deletion still goes on
        text = str(exc).strip().splitlines()
        tell(
            f"warning: could not keep the logs of {namespace}/{obj['metadata'].get('name', '')}: "
            f"{text[0] if text else type(exc).__name__}"
        )
        return False
    if kept is not None:
        tell(
            f"kept the logs of attempt {kept.attempt} of {namespace}/"
            f"{obj['metadata']['name']} ({kept.logs} container log(s)) in {kept.place.where}"
        )
    return kept is not None


def _stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def cancel(
    api_client: Any,
    namespace: str,
    name: str,
    *,
    wait: bool = True,
    timeout: float = 300.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    verb: str = "cancel",
    say: Callable[[str], None] | None = None,
    keep: bool = True,
    note: Callable[[str], None] | None = None,
    system_namespace: str | None = None,
) -> CancelResult:
    """Delete the run's RayJob or Job and its headless Service; optionally wait for teardown.
    Only what tau created is deleted; `verb` (cancel, resume, retry) names the refusal.
    `say` hears the wait's progress: pods still holding nodes, and why one does not stop.
    With `keep`, the attempt's logs are kept in the run's evidence first (`tau.runs.kept_logs`);
    `note` (default: stderr) hears where, or the one line saying why they could not be;
    `system_namespace` is where the TauWorkspace naming the store is.

    Raises:
        RunNotFound: the run does not exist.
        ForeignWorkload: the objects of that name are not tau's; nothing was deleted.
        ClusterError: the API refused, or teardown timed out.
    """
    from tau.kube.outage import Outage

    # The API may go away under a cancel (a restart, its etcd): each step waits for its
    # return, within the cancel's own timeout, and says once how long it was gone; past the
    # timeout the error says exactly what was done and what is left.
    outage = Outage("the cancel", say=say or _quiet, monotonic=clock, give_up_after=timeout)
    through = _Through(outage, sleep)
    kind, obj = through(
        lambda: owned_workload(api_client, namespace, name, verb),
        "nothing was deleted: the run is as it was",
    )
    cluster = (obj.get("status") or {}).get("rayClusterName")
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if keep:
        keep_logs(api_client, namespace, kind, obj, note, system_namespace=system_namespace)
    what = f"{kind} {namespace}/{name}"
    through(
        lambda: _delete(api_client, kind, obj),
        f"whether the deletion of {what} reached the API server is not known; "
        f"`tau run status {name} -n {namespace}` shows whether it is still there",
    )
    if not wait:
        return CancelResult(kind, namespace, name, complete=False)
    started = clock()
    deadline = started + timeout
    told: set[str] = set()

    def tell(line: str | None, key: str) -> None:
        if say is not None and line and key not in told:
            told.add(key)
            say(line)

    def remaining() -> Remaining:
        return through(
            lambda: _remaining(api_client, namespace, kind, name, cluster, uid),
            f"{what} was deleted; whether its pods and Kueue Workload are gone was not seen "
            f"(check: tau run status {name} -n {namespace})",
        )

    while (left := remaining()).count:
        if left.pods:
            tell(holding(name, left.pods), "holding")
        if clock() - started >= SLOW_TO_STOP:
            tell(ignoring_sigterm(left.pods, clock() - started), "sigterm")
        if clock() >= deadline:
            raise ClusterError(
                f"{kind} {namespace}/{name} was deleted but its pods are still "
                f"terminating after {timeout:.0f}s",
                hint=f"check `tau run status {name} -n {namespace}`; the platform "
                "team can see stuck finalizers",
            )
        sleep(1.0)
    if "holding" in told and say is not None:
        say(f"compute released: no RayCluster or pods remain for {name}")
    return CancelResult(kind, namespace, name, complete=True)


def _quiet(_line: str) -> None:
    """No one to tell (a caller that passed no `say`)."""


class _Through:
    """One cancel step, tried again while the API is away (`tau.kube.outage`)."""

    def __init__(self, outage: Any, sleep: Callable[[float], None]) -> None:
        self.outage = outage
        self.sleep = sleep

    def __call__(self, step: Callable[[], Any], left: str) -> Any:
        from tau.kube.outage import is_away

        while True:
            try:
                done = step()
            except ClusterError as exc:
                try:
                    wait = self.outage.failed(exc)
                except ClusterError:
                    if not is_away(exc):
                        raise
                    # Away past the cancel's timeout: what was done, and what is left.
                    raise ClusterError(
                        f"{exc.message}; {left}", status=exc.status, hint=exc.hint
                    ) from exc
                self.sleep(wait)
                continue
            self.outage.back()
            return done
