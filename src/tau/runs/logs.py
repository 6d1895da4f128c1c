"""`tau run logs`: Job pod logs, or the RayJob driver log kept by the head's log sidecar.

Performs I/O. The driver log is read from the `ray-driver-log-offload` container, which
tails it on the head pod: no exec into the cluster, and it outlives the driver.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.kinds import POD
from tau.runs.workload import find

DRIVER_LOG_CONTAINER = "ray-driver-log-offload"
#: The head's Ray container, whose log says why Ray did not start when there is no driver log.
RAY_HEAD_CONTAINER = "ray-head"


@dataclass(frozen=True)
class LogOptions:
    """What to read of each pod. `container`, `all_containers`, `previous` and `prefix` apply
    to Job pods only: a RayJob's driver log has one fixed source.
    """

    follow: bool = False
    tail: int = 200
    container: str | None = None
    all_containers: bool = False
    previous: bool = False
    timestamps: bool = False
    prefix: bool = False

    def check(self) -> None:
        """Refuse combinations that cannot mean anything.

        Raises:
            UsageError: --container with --all-containers, --follow with --all-containers, or
                a --tail below -1.
        """
        if self.tail < -1:
            raise UsageError(
                f"--tail {self.tail} must be -1 (every line) or a count of lines",
                hint="e.g. --tail 200, or --tail -1 for the whole log",
            )
        if self.all_containers and self.container:
            raise UsageError(
                "--container and --all-containers exclude each other",
                hint="name one container with -c, or read them all with --all-containers",
            )
        if self.all_containers and self.follow:
            raise UsageError(
                "--follow streams one container; it cannot follow --all-containers",
                hint="follow one container with -f -c NAME, or drop -f to read them all",
            )

    def job_only_flags(self) -> list[str]:
        """The Job-only flags that are set."""
        return [
            flag
            for flag, on in (
                ("--container", bool(self.container)),
                ("--all-containers", self.all_containers),
                ("--previous", self.previous),
                ("--prefix", self.prefix),
            )
            if on
        ]


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
        flags = opts.job_only_flags()
        if flags:
            raise UsageError(
                f"{', '.join(flags)} apply to Job pods; {name} is a RayJob whose driver log "
                "has one source",
                hint=f"read it with `tau run logs {name} -n {namespace}` (--timestamps works)",
            )
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


def stream(
    api_client: Any,
    namespace: str,
    name: str,
    opts: LogOptions | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """Yield log text chunks of the run.

    Lines carry a `[pod/POD/CONTAINER]` prefix with --prefix; without it, several Job pods
    still get a `[pod]` prefix per line so their output can be told apart. A followed log
    carries on across an API server restart (`tau.runs.log_follow`); `say` gets the one line
    saying how long the API was away (stderr by default).

    Raises:
        RunNotFound: the run does not exist.
        ClusterError: the run has no pods yet, or the API refused.
        UsageError: Job-only flags on a RayJob, or conflicting flags.
    """
    from tau.kube import resources

    opts = opts or LogOptions()
    opts.check()
    kind, obj = find(api_client, namespace, name)
    sources = _sources(kind, obj, api_client, namespace, name, opts)
    if not sources:
        ended = _ended(kind, obj)
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
        text = resources.pod_log(api_client, pod_name, namespace, read)
        if kind == "RayJob" and not text.strip():
            # No driver output (yet): the driver has not started, often because Ray itself
            # did not (the head's `ray start` failed). What the head said is the next place
            # to look, labelled as what it is.
            head = dataclasses.replace(read, container=RAY_HEAD_CONTAINER)
            text = resources.pod_log(api_client, pod_name, namespace, head)
            label = f"[pod/{pod_name}/{RAY_HEAD_CONTAINER}] "
        yield "".join(f"{label}{line}\n" for line in text.splitlines()) if label else text


def _stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


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
