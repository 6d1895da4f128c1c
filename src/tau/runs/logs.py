"""`tau run logs`: Job pod logs, or the RayJob driver log kept by the head's log sidecar.

Performs I/O. The driver log is read from the `ray-driver-log-offload` container, which
tails it on the head pod: no exec into the cluster, and it outlives the driver. Once the pods
are gone, the kept copies speak instead (`tau.runs.kept_read`): the logs tau kept before it
deleted an attempt, and the driver's copy on the data claim; one stderr line says which.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.containers import DRIVER_LOG_CONTAINER, RAY_HEAD_CONTAINER
from tau.k8s.kinds import POD
from tau.runs.log_options import LogOptions
from tau.runs.node_sync import NodeSync, api_pod
from tau.runs.workload import find


def _pod_log(
    api_client: Any,
    pod_name: str,
    namespace: str,
    read: Any,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """A container's log, read again while its node does not know the pod yet (`node_sync`)."""
    from tau.kube import resources

    sync = NodeSync(namespace, pod_name, api_pod(api_client, namespace, pod_name), clock=clock)
    while True:
        try:
            return resources.pod_log(api_client, pod_name, namespace, read)
        except ClusterError as exc:
            sleep(sync.failed(exc))


def _pods(api_client: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
    from tau.kube import resources

    items = resources.list_items(api_client, POD, namespace=namespace, selector=selector)
    return sorted(items, key=lambda p: str(p["metadata"]["name"]))


def containers_of(pod: dict[str, Any]) -> list[str]:
    """Every container of a pod in start order: init containers first, as kubectl does."""
    spec = pod.get("spec") or {}
    return [
        str(c.get("name"))
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])
        if c.get("name")
    ]


def _sources(
    kind: str, obj: dict[str, Any], api_client: Any, namespace: str, name: str, opts: LogOptions
) -> list[tuple[str, str]]:
    """(pod, container) pairs to read, in order."""
    if kind == "RayJob":
        _refuse_job_flags(kind, namespace, name, opts)
        cluster = (obj.get("status") or {}).get("rayClusterName")
        pods = (
            _pods(
                api_client,
                namespace,
                f"{meta.RAY_CLUSTER_LABEL}={cluster},{meta.RAY_NODE_TYPE_LABEL}=head",
            )
            if cluster
            else []
        )
        return [(p["metadata"]["name"], DRIVER_LOG_CONTAINER) for p in pods]
    pods = _pods(api_client, namespace, f"job-name={name}")
    if opts.follow:
        # Following several pods at once would interleave unreadably: follow rank 0 only.
        pods = pods[:1]
    if opts.all_containers:
        return [(p["metadata"]["name"], c) for p in pods for c in containers_of(p)]
    return [(p["metadata"]["name"], opts.container or "main") for p in pods]


def _ended(kind: str, obj: dict[str, Any]) -> str | None:
    """How the run ended (a KubeRay status or a Job condition type), or None if it has not."""
    from tau.status import tables

    status = obj.get("status") or {}
    if kind == "RayJob":
        deployment = str(status.get("jobDeploymentStatus") or "")
        if deployment in tables.RAYJOB_TERMINAL_STATE:
            return deployment
        job_status = str(status.get("jobStatus") or "")
        return job_status if job_status in tables.RAY_JOB_TERMINAL_STATE else None
    ending = {condition for condition, _ in tables.JOB_TERMINAL_CONDITIONS}
    for cond in status.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ending:
            return str(cond["type"])
    return None


def _kept_of_missing_run(
    api_client: Any,
    namespace: str,
    name: str,
    opts: LogOptions,
    note: Callable[[str], None],
    system: str | None,
) -> Iterator[str] | None:
    """The kept logs of a run whose workload is gone (cancelled, say), or None when none are."""
    from tau.runs import kept_read

    kept = kept_read.attempts(kept_read.places(api_client, namespace, name, None, system))
    if not kept:
        return None
    if opts.attempt is not None and opts.attempt not in kept:
        raise kept_read.not_found(namespace, name, opts.attempt, kept, None)
    chosen = kept[opts.attempt if opts.attempt is not None else max(kept)]
    kind = str(chosen.facts().get("kind") or "Job")
    _refuse_job_flags(kind, namespace, name, opts)
    shown = kept_read.show(chosen, kind, opts)
    note(
        f"showing the logs of attempt {chosen.attempt} of {namespace}/{name} kept in "
        f"{chosen.place.where} (its workload is gone)"
    )
    return shown


def _kept_of_attempt(
    api_client: Any,
    namespace: str,
    name: str,
    kind: str,
    obj: dict[str, Any],
    opts: LogOptions,
    note: Callable[[str], None],
    system: str | None,
) -> Iterator[str]:
    """An earlier attempt's kept logs (--attempt N of a run now at a later attempt).

    Raises:
        TauError: the run has no such attempt (the error lists those it has).
    """
    from tau.runs import kept_read
    from tau.runs.kept_logs import attempt_of

    assert opts.attempt is not None
    kept = kept_read.attempts(kept_read.places(api_client, namespace, name, obj, system))
    current = attempt_of(obj)
    if opts.attempt not in kept and kind == "RayJob" and opts.attempt < current:
        # An earlier attempt's head kept its driver's output on the claim too.
        copy = kept_read.claim_copy(api_client, namespace, obj, opts.attempt)
        if copy is not None:
            note(
                f"showing the Ray driver's output of attempt {opts.attempt} of "
                f"{namespace}/{name} kept on {copy[0]}"
            )
            return iter([kept_read.shaped_claim_text(copy[1], opts)])
    if opts.attempt not in kept or opts.attempt > current:
        raise kept_read.not_found(namespace, name, opts.attempt, kept, current)
    chosen = kept[opts.attempt]
    shown = kept_read.show(chosen, kind, opts)
    note(
        f"showing the logs of attempt {opts.attempt} of {namespace}/{name} kept in "
        f"{chosen.place.where}"
    )
    return shown


def _kept_of_current(
    api_client: Any,
    namespace: str,
    name: str,
    kind: str,
    obj: dict[str, Any],
    opts: LogOptions,
    note: Callable[[str], None],
    system: str | None,
) -> Iterator[str] | None:
    """The current attempt's kept copy once its pods are gone: tau's kept logs of this very
    workload, else (a RayJob) the driver's copy on the data claim; None when neither exists.
    """
    from tau.runs import kept_read
    from tau.runs.kept_logs import attempt_of

    attempt = attempt_of(obj)
    kept = kept_read.attempts(kept_read.places(api_client, namespace, name, obj, system)).get(
        attempt
    )
    if kept is not None and kept_read.uid_matches(kept, obj):
        shown = kept_read.show(kept, kind, opts)
        note(
            f"showing the logs of attempt {attempt} of {namespace}/{name} kept in "
            f"{kept.place.where} (its pods are gone)"
        )
        return shown
    if kind != "RayJob":
        return None
    try:
        copy = kept_read.claim_copy(api_client, namespace, obj)
    except ClusterError as exc:
        raise ClusterError(
            f"{kind} {namespace}/{name} has ended and none of its pods remain; the copy of its "
            f"driver's output on the data claim could not be read: {exc.message}",
            hint=exc.hint,
        ) from None
    if copy is None:
        return None
    where, text = copy
    stamps = "; it carries no timestamps" if opts.timestamps else ""
    note(
        f"showing the Ray driver's output of attempt {attempt} of {namespace}/{name} kept on "
        f"{where} (the head pod is gone{stamps})"
    )
    return iter([kept_read.shaped_claim_text(text, opts)])


def _refuse_job_flags(kind: str, namespace: str, name: str, opts: LogOptions) -> None:
    flags = opts.job_only_flags()
    if kind == "RayJob" and flags:
        raise UsageError(
            f"{', '.join(flags)} apply to Job pods; {name} is a RayJob whose driver log "
            "has one source",
            hint=f"read it with `tau run logs {name} -n {namespace}` (--timestamps works)",
        )


def _stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def stream(
    api_client: Any,
    namespace: str,
    name: str,
    opts: LogOptions | None = None,
    note: Callable[[str], None] | None = None,
    say: Callable[[str], None] | None = None,
    *,
    system_namespace: str | None = None,
) -> Iterator[str]:
    """Yield log text chunks of the run.

    Lines carry a `[pod/POD/CONTAINER]` prefix with --prefix; without it, several Job pods
    still get a `[pod]` prefix per line so their output can be told apart. Once the pods are
    gone, or for an earlier --attempt, the kept copy is shown and `note` (default: stderr)
    hears one line saying where it came from. A followed log carries on across an API
    server restart (`tau.runs.log_follow`); `say` gets the one line saying how long the
    API was away (stderr by default). `system_namespace` is where the TauWorkspace naming
    the store of kept logs is (`tau.runs.kept_place`).

    Raises:
        RunNotFound: the run does not exist and kept no logs.
        ClusterError: the run has no pods yet, or the API refused.
        UsageError: Job-only flags on a RayJob, or conflicting flags.
        TauError: --attempt names an attempt the run does not have.
    """
    from tau.kube import resources
    from tau.runs.kept_logs import attempt_of
    from tau.runs.workload import RunNotFound

    opts = opts or LogOptions()
    opts.check()
    tell = note or _stderr
    try:
        kind, obj = find(api_client, namespace, name)
    except RunNotFound:
        kept = _kept_of_missing_run(api_client, namespace, name, opts, tell, system_namespace)
        if kept is None:
            raise
        yield from kept
        return
    if opts.attempt is not None and opts.attempt != attempt_of(obj):
        _refuse_job_flags(kind, namespace, name, opts)
        yield from _kept_of_attempt(
            api_client, namespace, name, kind, obj, opts, tell, system_namespace
        )
        return
    sources = _sources(kind, obj, api_client, namespace, name, opts)
    if not sources:
        ended = _ended(kind, obj)
        # Only an ended run's pods are gone for good; one that has none yet is still coming.
        copy = (
            _kept_of_current(api_client, namespace, name, kind, obj, opts, tell, system_namespace)
            if ended
            else None
        )
        if copy is not None:
            yield from copy
            return
        if ended:
            # A finished run's pods are not coming: KubeRay deletes the RayCluster (and the
            # driver log on its head pod) soon after the driver ends.
            raise ClusterError(
                f"{kind} {namespace}/{name} has ended ({ended}) and none of its pods remain, "
                "so its logs are gone",
                hint=f"`tau run status {name} -n {namespace}` shows how it ended",
            )
        raise ClusterError(
            f"{kind} {namespace}/{name} has no pods yet, so no logs",
            hint=f"`tau run status {name} -n {namespace}` shows where it waits",
        )
    several_pods = len({pod for pod, _ in sources}) > 1
    for pod_name, container in sources:
        read = resources.LogOptions(
            container=container,
            previous=opts.previous,
            timestamps=opts.timestamps,
            tail_lines=opts.tail if opts.tail >= 0 else None,
        )
        label = (
            f"[pod/{pod_name}/{container}] "
            if opts.prefix
            else f"[{pod_name}] "
            if several_pods
            else ""
        )
        if opts.follow and not opts.previous:
            from tau.runs import log_follow

            chunks = log_follow.follow(
                api_client,
                namespace,
                pod_name,
                read,
                ended=functools.partial(
                    log_follow.container_ended, api_client, namespace, pod_name, container
                ),
                say=say or _stderr,
            )
            yield from _prefixed(chunks, label)
            continue
        if opts.follow:
            yield from _prefixed(resources.follow_log(api_client, pod_name, namespace, read), label)
            continue
        text = _pod_log(api_client, pod_name, namespace, read)
        if kind == "RayJob" and not text.strip():
            # No driver output (yet): the driver has not started, often because Ray itself
            # did not (the head's `ray start` failed). What the head said is the next place
            # to look, labelled as what it is.
            head = dataclasses.replace(read, container=RAY_HEAD_CONTAINER)
            text = _pod_log(api_client, pod_name, namespace, head)
            label = f"[pod/{pod_name}/{RAY_HEAD_CONTAINER}] "
        yield "".join(f"{label}{line}\n" for line in text.splitlines()) if label else text


def _prefixed(chunks: Iterator[str], label: str) -> Iterator[str]:
    """Whole lines with `label` in front, as they arrive (a chunk may end mid-line)."""
    if not label:
        yield from chunks
        return
    pending = ""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split("\n")
        if lines:
            yield "".join(f"{label}{line}\n" for line in lines)
    if pending:
        yield f"{label}{pending}\n"
