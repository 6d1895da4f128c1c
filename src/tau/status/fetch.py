"""Read one run's objects from the Kubernetes API into a Snapshot.

Performs I/O, through the official `kubernetes` client passed in as an `ApiClient` (imported
lazily, so the pure modules load without it). The number of requests does not depend on the
number of pods: each kind is one get or one list with a label selector.

Reading the run itself (Job, RayJob) must succeed or be a plain 404; any other failure raises a
ClusterError, because "not found" would then be a lie. Every later query soft-fails (its part of
the snapshot stays empty and the reason is recorded in `Snapshot.errors`), except when the API
is away (unreachable, or a 5xx/429 of a server or storage not ready): then the read fails whole.
"""

from __future__ import annotations

import re
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import (
    EVENT,
    JOB,
    POD,
    RAYCLUSTER,
    RAYJOB,
    RESOURCE_CLAIM,
    SERVICE,
    WORKLOAD,
    ResourceType,
)
from tau.kube import resources
from tau.status.facts import (
    JOB_NAME_LABEL,
    KUEUE_JOB_UID_LABEL,
    RAY_CLUSTER_LABEL,
    metadata,
    name_of,
    status_of,
)
from tau.status.snapshot import Snapshot

Obj = dict[str, Any]


class _Reader:
    """Reads one namespace and records soft failures."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        self.api = api_client
        self.namespace = namespace
        self.errors: list[str] = []

    def required(self, resource: ResourceType, name: str) -> Obj | None:
        """A get that may 404 (absent, or its type not served) but must not fail otherwise."""
        return resources.find(self.api, resource, name, namespace=self.namespace)

    def get(self, what: str, resource: ResourceType, name: str) -> Obj | None:
        """A get whose failure leaves its part empty; a 404 is just "none"."""
        try:
            return resources.find(self.api, resource, name, namespace=self.namespace)
        except ClusterError as exc:
            self._soft_failure(what, exc)
            return None

    def log_tail(self, pod: str, container: str, lines: int) -> str:
        """The last `lines` of a container's log; "" when it cannot be read (the pod gone, its
        node unreachable): the rest of the view does not depend on it.
        """
        try:
            return resources.pod_log(
                self.api,
                pod,
                self.namespace,
                resources.LogOptions(container=container, tail_lines=lines),
            )
        except ClusterError as exc:
            from tau.kube.errors import UNREACHABLE

            if exc.reason == UNREACHABLE:
                raise  # the API itself went away (not the kubelet behind it)
            return ""

    def _soft_failure(self, what: str, exc: ClusterError) -> None:
        from tau.kube.outage import is_away

        if is_away(exc):
            # The API went away in the middle of the read (a restart, its etcd): a view with
            # its pods or events missing would read as a run that has none. The whole read
            # fails, as the run's own read does, and a watch waits for the API's return.
            raise exc
        # The status code first: it is what scripts and the warnings line key on.
        code = f"{exc.status} - " if exc.status else ""
        self.errors.append(f"{what}: {code}{exc.message}")

    def items(
        self,
        what: str,
        resource: ResourceType,
        *,
        selector: str = "",
        field_selector: str = "",
        missing_ok: bool = True,
    ) -> list[Obj]:
        """A list whose failure leaves its part empty (an unserved type is "none" when
        `missing_ok`).
        """
        try:
            return resources.list_items(
                self.api,
                resource,
                namespace=self.namespace,
                selector=selector,
                field_selector=field_selector,
                missing_ok=missing_ok,
            )
        except ClusterError as exc:
            self._soft_failure(what, exc)
            return []


def _pods(reader: _Reader, name: str, cluster: str) -> list[Obj]:
    pods = reader.items("pods", POD, selector=f"{JOB_NAME_LABEL}={name}", missing_ok=False)
    if cluster:
        pods += reader.items(
            "pods", POD, selector=f"{RAY_CLUSTER_LABEL}={cluster}", missing_ok=False
        )
    return list({name_of(p): p for p in pods}.values())


#: Lines read from the end of a failed container's log, and how many containers are read.
LAST_LINES = 20
_FAILED_READ = 2


def _last_lines(reader: _Reader, pods: list[Obj]) -> list[tuple[str, str, str]]:
    """The last lines of the containers that exited non-zero (the first two): the reason the
    process gave (`No space left on device`) is there and nowhere else. A run without a
    failed container costs no request more.
    """
    out: list[tuple[str, str, str]] = []
    for pod in pods:
        for entry in status_of(pod).get("containerStatuses") or ():
            ended = (entry.get("state") or {}).get("terminated") or {}
            if ended.get("exitCode") in (0, None):
                continue
            text = reader.log_tail(name_of(pod), str(entry.get("name")), LAST_LINES)
            if text:
                out.append((name_of(pod), str(entry.get("name")), text))
            if len(out) >= _FAILED_READ:
                return out
    return out


#: How Kueue names the workload it preempted for: "Preempted to accommodate a workload
#: (UID: <workload>, JobUID: <job>) due to prioritization in the ClusterQueue".
_PREEMPTOR = re.compile(r"JobUID:? ([^\s,)]+)")


def _preemptors(reader: _Reader, workloads: list[Obj]) -> list[tuple[str, str]]:
    """The runs the run's Workloads were preempted for, by name: Kueue's message gives only
    the preemptor's JobUID, which its own Workload carries as a label and whose owner is the
    Job or RayJob. Read only for a preempted run, in the run's namespace.
    """
    uids: list[str] = []
    for workload in workloads:
        for cond in status_of(workload).get("conditions") or ():
            if cond.get("type") in ("Evicted", "Preempted") and cond.get("status") == "True":
                uids += _PREEMPTOR.findall(str(cond.get("message") or ""))
    found: list[tuple[str, str]] = []
    for uid in list(dict.fromkeys(uids))[:2]:
        for other in reader.items("workloads", WORKLOAD, selector=f"{KUEUE_JOB_UID_LABEL}={uid}"):
            owners = metadata(other).get("ownerReferences") or ()
            owner = next((o for o in owners if o.get("kind") in ("Job", "RayJob")), None)
            if owner is not None:
                found.append((uid, f"{owner.get('kind')} {reader.namespace}/{owner.get('name')}"))
    return found


def _claims(reader: _Reader, pods: list[Obj]) -> list[Obj]:
    if not any((p.get("spec") or {}).get("resourceClaims") for p in pods):
        return []
    # Claims from templates carry generated names; one list plus a name filter stays constant.
    wanted = {n for p in pods for n in _claim_refs(p)}
    claims = reader.items("resourceclaims", RESOURCE_CLAIM)
    return [c for c in claims if name_of(c) in wanted or _owned_by(c, pods)]


def _claim_refs(pod: Obj) -> list[str]:
    refs = [
        str(r.get("resourceClaimName"))
        for r in (pod.get("spec") or {}).get("resourceClaims") or ()
        if r.get("resourceClaimName")
    ]
    refs += [
        str(s.get("resourceClaimName"))
        for s in status_of(pod).get("resourceClaimStatuses") or ()
        if s.get("resourceClaimName")
    ]
    return refs


def _owned_by(claim: Obj, pods: list[Obj]) -> bool:
    names = {name_of(p) for p in pods}
    return any(
        ref.get("kind") == "Pod" and ref.get("name") in names
        for ref in metadata(claim).get("ownerReferences") or ()
    )


def _events(reader: _Reader, names: set[str]) -> list[Obj]:
    # A field selector cannot OR object names, and one query per pod would make the request
    # count grow with the run; so: one namespace list (events expire after ~1h), then a filter.
    events = reader.items(
        "events",
        EVENT,
        field_selector=f"involvedObject.namespace={reader.namespace}",
        missing_ok=False,
    )
    return [e for e in events if (e.get("involvedObject") or {}).get("name") in names]


def fetch(api_client: Any, namespace: str, name: str) -> Snapshot:
    """Read everything `interpret` needs for run `name` in `namespace`.

    Args:
        api_client: an official `kubernetes.client.ApiClient`.
        namespace: the run's namespace.
        name: the Job or RayJob name.

    Returns:
        The Snapshot; sub-queries that failed are listed in `errors`.

    Raises:
        ClusterError: reading the Job or RayJob failed with anything but 404, or the API went
            away during the read (`tau.kube.outage.is_away`).
    """
    reader = _Reader(api_client, namespace)
    job = reader.required(JOB, name)
    rayjob = reader.required(RAYJOB, name)
    if job is None and rayjob is None:
        return Snapshot(namespace=namespace, name=name)
    from tau.status.facts import primary_of

    primary = primary_of(Snapshot(namespace=namespace, name=name, job=job, rayjob=rayjob))[1]
    uid = str(metadata(primary).get("uid") or "")
    workloads = (
        reader.items(
            "workloads",
            WORKLOAD,
            selector=f"{KUEUE_JOB_UID_LABEL}={uid}",
            missing_ok=False,
        )
        if uid
        else []
    )
    cluster_name = str(status_of(rayjob).get("rayClusterName") or "") if rayjob else ""
    raycluster = reader.get("raycluster", RAYCLUSTER, cluster_name) if cluster_name else None
    pods = _pods(reader, name, cluster_name)
    claims = _claims(reader, pods)
    service = None
    if job is not None and (job.get("spec") or {}).get("completionMode") == "Indexed":
        service = reader.get("service", SERVICE, f"{name}-headless")
    names = {name, cluster_name, *(name_of(o) for o in (*workloads, *pods, *claims))}
    events = _events(reader, names)
    last_lines = _last_lines(reader, pods)
    preemptors = _preemptors(reader, workloads)
    return Snapshot(
        namespace=namespace,
        name=name,
        job=job,
        rayjob=rayjob,
        workloads=tuple(workloads),
        raycluster=raycluster,
        pods=tuple(pods),
        events=tuple(events),
        resource_claims=tuple(claims),
        service=service,
        errors=tuple(reader.errors),
        last_lines=tuple(last_lines),
        preemptors=tuple(preemptors),
    )
