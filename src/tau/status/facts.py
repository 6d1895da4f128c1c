"""Typed facts read once from the raw objects of a Snapshot: workloads, pods, containers, events.

Pure. Phases and diagnostics work on these instead of walking dicts again, which keeps the rules
short and `interpret` linear in the number of pods. Conditions are always looked up by type:
Kueue and Kubernetes give no ordering guarantee for `status.conditions`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tau.k8s import meta
from tau.status.snapshot import Obj, Snapshot

#: Label the Job controller sets on its pods (the legacy spelling, set by every version).
JOB_NAME_LABEL = "job-name"
#: Label KubeRay sets on every pod of a RayCluster.
RAY_CLUSTER_LABEL = meta.RAY_CLUSTER_LABEL
#: spec.managedBy of a Job/RayJob that MultiKueue dispatches to a worker cluster.
MULTIKUEUE_MANAGED_BY = meta.KUEUE_MULTIKUEUE_MANAGED_BY
#: Label linking a Kueue Workload to the UID of the Job/RayJob it admits.
KUEUE_JOB_UID_LABEL = meta.KUEUE_JOB_UID

_EMPTY: Mapping[str, Any] = {}


def metadata(obj: Obj | None) -> Mapping[str, Any]:
    """The object's metadata, or an empty mapping."""
    return (obj or _EMPTY).get("metadata") or _EMPTY


def status_of(obj: Obj | None) -> Mapping[str, Any]:
    """The object's status, or an empty mapping."""
    return (obj or _EMPTY).get("status") or _EMPTY


def name_of(obj: Obj | None) -> str:
    """metadata.name, or ""."""
    return str(metadata(obj).get("name") or "")


def conditions(obj: Obj | None) -> dict[str, Mapping[str, Any]]:
    """status.conditions keyed by type (never read by position)."""
    return {str(c.get("type")): c for c in status_of(obj).get("conditions") or ()}


def is_true(conds: Mapping[str, Mapping[str, Any]], kind: str) -> bool:
    """Whether the condition of that type exists with status "True"."""
    return str(conds.get(kind, _EMPTY).get("status")) == "True"


@dataclass(frozen=True)
class WorkloadFacts:
    """A Kueue v1beta2 Workload, reduced to what status shows."""

    name: str
    queue: str
    cluster_queue: str
    created: str
    quota_reserved: bool
    admitted: bool
    admitted_at: str
    finished: bool
    finished_reason: str
    finished_message: str
    evicted_reason: str
    evicted_message: str
    preempted: bool
    pending_reason: str
    pending_message: str
    checks: tuple[tuple[str, str, str], ...]
    cluster_name: str
    nominated: tuple[str, ...]

    @property
    def phase(self) -> str:
        """Pending, QuotaReserved, Admitted or Finished, as the reference hydrates it."""
        if self.finished:
            return "Finished"
        if self.admitted:
            return "Admitted"
        return "QuotaReserved" if self.quota_reserved else "Pending"


def workload_facts(obj: Obj) -> WorkloadFacts:
    """Read one Workload (Kueue v1beta2)."""
    conds = conditions(obj)
    status = status_of(obj)
    quota = conds.get("QuotaReserved", _EMPTY)
    evicted = conds.get("Evicted", _EMPTY) if is_true(conds, "Evicted") else _EMPTY
    finished = conds.get("Finished", _EMPTY)
    preempted = is_true(conds, "Preempted") or "preempt" in str(evicted.get("reason", "")).lower()
    return WorkloadFacts(
        name=name_of(obj),
        queue=str((obj.get("spec") or _EMPTY).get("queueName") or ""),
        cluster_queue=str((status.get("admission") or _EMPTY).get("clusterQueue") or ""),
        created=str(metadata(obj).get("creationTimestamp") or ""),
        quota_reserved=is_true(conds, "QuotaReserved"),
        admitted=is_true(conds, "Admitted"),
        admitted_at=str(conds.get("Admitted", _EMPTY).get("lastTransitionTime") or ""),
        finished=is_true(conds, "Finished"),
        finished_reason=str(finished.get("reason") or ""),
        finished_message=str(finished.get("message") or ""),
        evicted_reason=str(evicted.get("reason") or ""),
        evicted_message=str(evicted.get("message") or ""),
        preempted=preempted,
        pending_reason="" if is_true(conds, "QuotaReserved") else str(quota.get("reason") or ""),
        pending_message="" if is_true(conds, "QuotaReserved") else str(quota.get("message") or ""),
        checks=tuple(
            (str(c.get("name", "")), str(c.get("state", "")), str(c.get("message", "")))
            for c in status.get("admissionChecks") or ()
        ),
        cluster_name=str(status.get("clusterName") or ""),
        nominated=tuple(str(n) for n in status.get("nominatedClusterNames") or ()),
    )


@dataclass(frozen=True)
class ContainerFacts:
    """One container's spec and status, merged."""

    name: str
    image: str
    state: str
    reason: str
    message: str
    exit_code: int | None
    restarts: int
    ready: bool
    image_present: bool
    last_reason: str
    sidecar: bool

    @property
    def started(self) -> bool:
        """Running, or ran and exited."""
        return self.state in ("running", "terminated")


def _container(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> ContainerFacts:
    status = status or _EMPTY
    state_map = status.get("state") or _EMPTY
    state, detail = next(iter(state_map.items()), ("unknown", _EMPTY))
    detail = detail or _EMPTY
    last = (status.get("lastState") or _EMPTY).get("terminated") or _EMPTY
    exit_code = detail.get("exitCode") if state == "terminated" else None
    return ContainerFacts(
        name=str(spec.get("name", "")),
        image=str(spec.get("image", "")),
        state=str(state),
        reason=str(detail.get("reason") or ""),
        message=str(detail.get("message") or ""),
        exit_code=int(exit_code) if exit_code is not None else None,
        restarts=int(status.get("restartCount") or 0),
        ready=bool(status.get("ready")),
        image_present=bool(status.get("imageID")) or state in ("running", "terminated"),
        last_reason=str(last.get("reason") or ""),
        sidecar=spec.get("restartPolicy") == "Always",
    )


def _containers(
    specs: Iterable[Mapping[str, Any]], statuses: Iterable[Mapping[str, Any]]
) -> tuple[ContainerFacts, ...]:
    by_name = {str(s.get("name")): s for s in statuses}
    return tuple(_container(spec, by_name.get(str(spec.get("name")))) for spec in specs)


@dataclass(frozen=True)
class PodFacts:
    """One pod, reduced to what the pod phases read."""

    name: str
    phase: str
    node: str
    created: str
    unschedulable_reason: str
    unschedulable_message: str
    ready: bool
    disruption_target: bool
    status_reason: str
    init: tuple[ContainerFacts, ...]
    app: tuple[ContainerFacts, ...]
    claims: tuple[str, ...]
    ray: bool
    #: PersistentVolumeClaims the pod mounts (its persistentVolumeClaim volumes).
    volume_claims: tuple[str, ...] = ()
    #: metadata.deletionTimestamp is set: the pod is going away.
    deleting: bool = False
    #: When its Ready condition turned False ("" while Ready or never said): a NodeNotReady
    #: event at or after it is why (the node controller marks a lost node's pods so).
    not_ready_since: str = ""
    #: The pod's status message: the kubelet's own words when it evicted the pod.
    status_message: str = ""
    #: Why the pod is a disruption target (DisruptionTarget's reason), e.g.
    #: ``TerminationByKubelet`` for node-pressure eviction, ``PreemptionByScheduler``.
    disruption_reason: str = ""

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: holds no node any more."""
        return self.phase in ("Succeeded", "Failed")


def _claim_names(pod: Obj) -> tuple[str, ...]:
    """Names of the ResourceClaims the pod uses: direct references, then generated ones."""
    spec = pod.get("spec") or _EMPTY
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in status_of(pod).get("resourceClaimStatuses") or ()
    }
    names = []
    for ref in spec.get("resourceClaims") or ():
        direct = ref.get("resourceClaimName")
        # A template claim's name exists only once the controller generated it.
        names.append(
            str(direct or generated.get(str(ref.get("name"))) or f"<pending:{ref.get('name')}>")
        )
    return tuple(names)


def pod_facts(pod: Obj) -> PodFacts:
    """Read one core/v1 Pod."""
    spec = pod.get("spec") or _EMPTY
    status = status_of(pod)
    conds = conditions(pod)
    scheduled = conds.get("PodScheduled", _EMPTY)
    blocked = str(scheduled.get("status")) == "False"
    labels = metadata(pod).get("labels") or _EMPTY
    return PodFacts(
        name=name_of(pod),
        phase=str(status.get("phase") or "Pending"),
        node=str(spec.get("nodeName") or ""),
        created=str(metadata(pod).get("creationTimestamp") or ""),
        unschedulable_reason=str(scheduled.get("reason") or "") if blocked else "",
        unschedulable_message=str(scheduled.get("message") or "") if blocked else "",
        ready=is_true(conds, "Ready") or status.get("phase") == "Succeeded",
        disruption_target=is_true(conds, "DisruptionTarget"),
        disruption_reason=str(conds.get("DisruptionTarget", _EMPTY).get("reason") or "")
        if is_true(conds, "DisruptionTarget")
        else "",
        status_reason=str(status.get("reason") or ""),
        status_message=str(status.get("message") or ""),
        init=_containers(
            spec.get("initContainers") or (), status.get("initContainerStatuses") or ()
        ),
        app=_containers(spec.get("containers") or (), status.get("containerStatuses") or ()),
        claims=_claim_names(pod),
        ray=RAY_CLUSTER_LABEL in labels,
        volume_claims=tuple(
            str(v["persistentVolumeClaim"].get("claimName") or "")
            for v in spec.get("volumes") or ()
            if isinstance(v.get("persistentVolumeClaim"), dict)
        ),
        deleting=bool(metadata(pod).get("deletionTimestamp")),
        not_ready_since=_not_ready_since(conds),
    )


def _not_ready_since(conds: Mapping[str, Mapping[str, Any]]) -> str:
    ready = conds.get("Ready", _EMPTY)
    if str(ready.get("status")) != "False":
        return ""
    return str(ready.get("lastTransitionTime") or "")


@dataclass(frozen=True)
class EventFacts:
    """One core/v1 Event."""

    kind: str
    object_name: str
    reason: str
    message: str
    type: str
    time: str


def event_facts(event: Obj) -> EventFacts:
    """Read one Event; the time is the latest of its timestamps that is set."""
    involved = event.get("involvedObject") or event.get("regarding") or _EMPTY
    time = (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or metadata(event).get("creationTimestamp")
        or ""
    )
    return EventFacts(
        kind=str(involved.get("kind") or ""),
        object_name=str(involved.get("name")),
        reason=str(event.get("reason") or ""),
        message=str(event.get("message") or event.get("note") or ""),
        type=str(event.get("type") or ""),
        time=str(time),
    )


@dataclass(frozen=True)
class Facts:
    """Everything interpret needs, read once from a Snapshot."""

    snapshot: Snapshot
    kind: str | None
    primary: Obj | None
    workloads: tuple[WorkloadFacts, ...]
    pods: tuple[PodFacts, ...]
    events: tuple[EventFacts, ...]
    claims: Mapping[str, Obj]

    @property
    def found(self) -> bool:
        """A Job or RayJob of that name exists."""
        return self.primary is not None

    @property
    def is_ray(self) -> bool:
        """The RayJob is the primary workload."""
        return self.kind == "RayJob"

    @property
    def multikueue(self) -> bool:
        """A manager-side view: MultiKueue runs the pods on a worker cluster."""
        spec = (self.primary or _EMPTY).get("spec") or _EMPTY
        return spec.get("managedBy") == MULTIKUEUE_MANAGED_BY

    @property
    def admitted(self) -> bool:
        """Some Workload is (or was, when finished) admitted by Kueue."""
        return any(w.admitted or w.finished for w in self.workloads)

    def events_with(self, *reasons: str) -> list[EventFacts]:
        """Events whose reason contains any of `reasons` (case-insensitive), oldest first."""
        wanted = tuple(r.lower() for r in reasons)
        return [e for e in self.events if any(w in e.reason.lower() for w in wanted)]


def _owned_by_rayjob(job: Obj | None) -> bool:
    return any(ref.get("kind") == "RayJob" for ref in metadata(job).get("ownerReferences") or ())


def primary_of(snapshot: Snapshot) -> tuple[str | None, Obj | None]:
    """Which object is the run: the Job, unless it is a KubeRay submitter Job of the RayJob.

    The reference prefers the batch Job when both exist; KubeRay's K8sJobMode submitter Job has
    the RayJob's name and an owner reference to it, and must not hide the RayJob.
    """
    job, rayjob = snapshot.job, snapshot.rayjob
    if job is not None and not (rayjob is not None and _owned_by_rayjob(job)):
        return "Job", job
    if rayjob is not None:
        return "RayJob", rayjob
    return None, None


def read_facts(snapshot: Snapshot) -> Facts:
    """Read every object of the snapshot once."""
    kind, primary = primary_of(snapshot)
    pods = sorted((pod_facts(p) for p in snapshot.pods), key=lambda p: p.name)
    events = sorted((event_facts(e) for e in snapshot.events), key=lambda e: e.time)
    return Facts(
        snapshot=snapshot,
        kind=kind,
        primary=primary,
        workloads=tuple(
            sorted((workload_facts(w) for w in snapshot.workloads), key=lambda w: w.name)
        ),
        pods=tuple(pods),
        events=tuple(events),
        claims={name_of(c): c for c in snapshot.resource_claims},
    )


def node_lost(f: Facts, pod: PodFacts) -> bool:
    """The pod is not ready because its node is NotReady: the node controller's NodeNotReady
    event on it, at or after its Ready condition turned False. Once the node is back the pod
    is Ready (or done) again and an old event says nothing.
    """
    if pod.terminal or pod.ready or not pod.node or not pod.not_ready_since:
        return False
    return any(
        e.reason == "NodeNotReady"
        and e.object_name == pod.name
        and e.time[:19] >= pod.not_ready_since[:19]
        for e in f.events
    )


def preemptor_named(f: Facts, message: str) -> str:
    """`message` (Kueue's eviction message, kept in its words) with the preemptor's name
    added when tau found it: `…; preempted for Job team/high`.
    """
    named = [who for uid, who in f.snapshot.preemptors if uid in message]
    return f"{message}; preempted for {', '.join(named)}" if named else message
