"""Diagnostics with stable codes and the next actions, each naming who owns the fix.

Pure. `CODES` is the one table of diagnostic codes: severity, owner, suggestion and the actions
it implies. Detectors read the facts and phases and yield ``(code, message)``; the table turns
them into Diagnostics so wording and ownership live in one place (cli-contract 5).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from tau.k8s import meta
from tau.status import evidence_check, scheduling, tables
from tau.status.facts import (
    ContainerFacts,
    Facts,
    PodFacts,
    conditions,
    metadata,
    node_lost,
    preemptor_named,
)
from tau.status.model import (
    Action,
    Diagnostic,
    Owner,
    Phase,
    PhaseResult,
    PhaseStatus,
    Severity,
    State,
)
from tau.status.state import terminal_state

E, W, N = Severity.ERROR, Severity.WARNING, Severity.INFO
R, Q, PL = Owner.RESEARCHER, Owner.QUEUE_OWNER, Owner.PLATFORM


@dataclass(frozen=True)
class ActionTemplate:
    """An action; `command` may use ``{name}`` and ``{ns}``."""

    name: str
    owner: Owner
    description: str
    command: str | None = None


_LOGS = ActionTemplate("logs", R, "read the logs", "tau run logs {name} -n {ns}")
_WATCH = ActionTemplate("watch", R, "follow startup live", "tau run status {name} -n {ns} --watch")
_RESULTS = ActionTemplate(
    "results", R, "check that the artifacts landed", "tau run get {name} -n {ns}"
)
_LIST = ActionTemplate("list", R, "list the runs of this namespace", "tau run list -n {ns}")
_EVIDENCE = ActionTemplate(
    "evidence", R, "read the run's record in its experiment store", "{evidence_command}"
)
_OFFLOAD_LOGS = ActionTemplate(
    "offload-logs",
    R,
    "read the metrics collector's log",
    "tau run logs {name} -n {ns} -c metrics-offload",
)
_OFFLOAD_LOGS_RAY = ActionTemplate(
    "offload-logs",
    R,
    "read the metrics collector's log: the metrics-offload container of the Ray head pod "
    "(kubectl logs HEAD-POD -c metrics-offload, while the head exists)",
)
_QUOTA = ActionTemplate(
    "quota", Q, "confirm ClusterQueue/LocalQueue capacity and borrowing; raise quota or wait"
)
_NODES = ActionTemplate(
    "nodes",
    PL,
    "check node pools, taints and device plugins against the run's preset",
    "tau cluster validate topology",
)
_STORAGE = ActionTemplate("storage", PL, "check the PVC and CSI driver the pod mounts")
_CLAIMS = ActionTemplate(
    "claims",
    PL,
    "provision the PersistentVolumeClaim the run mounts in the workspace namespace "
    "(TauGrid does not create claims)",
)
_WRONG_CLAIM = ActionTemplate(
    "cancel",
    R,
    "if the run names the wrong claim (storage.data_pvc), cancel it, fix the config and resubmit",
    "tau run cancel {name} -n {ns}",
)
_IMAGE = ActionTemplate(
    "image",
    R,
    "fix runtime.image (pin an existing tag or digest), check with a client dry-run, then resubmit",
    "tau run <target> --dry-run=client",
)
_RESUME = ActionTemplate(
    "resume",
    R,
    "after fixing the cause, resume from the checkpoint deliberately",
    "tau run resume {name} --config <tau.yaml>",
)


@dataclass(frozen=True)
class Code:
    """What a diagnostic code means for the reader."""

    severity: Severity
    owner: Owner
    suggestion: str
    actions: tuple[ActionTemplate, ...] = ()


CODES: Mapping[str, Code] = MappingProxyType(
    {
        # No Job or RayJob of that name in the namespace.
        "RunNotFound": Code(E, R, "check the run name and namespace", (_LIST,)),
        # Some sub-query failed (RBAC, API error): parts of the view are empty, not absent.
        "PartialObservation": Code(
            W,
            PL,
            "the status is incomplete; ask the platform team for read access to the kinds listed",
        ),
        # The Job exists but Kueue made no Workload for it: LocalQueue or namespace not managed.
        "WorkloadNotObserved": Code(
            W,
            Q,
            "ask the queue owner whether the LocalQueue exists and "
            "Kueue manages this namespace; there is no client-side bypass",
        ),
        # Kueue could not reserve quota (no capacity, borrowing included).
        "QuotaPending": Code(
            W,
            Q,
            "wait, or ask the queue owner for quota; editing tau.yaml does not add quota",
            (_QUOTA,),
        ),
        # The request exceeds the ClusterQueue's maximum capacity: it is never admitted as is.
        "QuotaNeverFits": Code(
            E,
            R,
            "ask for less (compute sizing, fewer workers or GPUs) so the run fits the queue, or "
            "ask the queue owner for a larger quota; waiting will not help",
            (_QUOTA,),
        ),
        # The queue's flavor names no Topology while the run asks for topology-aware placement.
        "TopologyUnsupported": Code(
            E,
            PL,
            "the platform operator gives the queue's ResourceFlavor a Topology (topologyName "
            "and nodeLabels); editing tau.yaml does not change the flavor",
            (_QUOTA,),
        ),
        # Kueue's topology-aware placement finds no node with room for the pods.
        "TopologyNoRoom": Code(
            W,
            R,
            "busy nodes free up; but if a pod asks for more than any node has, waiting will not "
            "help: ask for fewer GPUs per pod (more workers or nodes)",
            (_NODES,),
        ),
        # An admission check (e.g. MultiKueue, provisioning) rejected the workload.
        "AdmissionRejected": Code(
            E, Q, "ask the queue owner why the admission check rejected it", (_QUOTA,)
        ),
        # Kueue preempted the workload to reclaim quota; it is requeued.
        "Preempted": Code(
            W,
            Q,
            "the run restarts when quota frees up; retry on Preempted is "
            "resilience.retry_on config, and resume needs a durable checkpoint",
            (_QUOTA,),
        ),
        # Kueue or the kubelet evicted the workload/pods (node pressure, PodsReady timeout).
        "Evicted": Code(
            W, PL, "the platform team can say why the node evicted the pods", (_NODES,)
        ),
        # The RayCluster exists but is not ready.
        "RayClusterNotReady": Code(
            W,
            PL,
            "read the pod phases: the first non-done one names the "
            "cause; head/worker replica failures are a platform fix",
            (_NODES,),
        ),
        # Kueue admitted the workload but no pod exists yet (admitted is not scheduled).
        "AdmittedNotScheduled": Code(
            N,
            PL,
            "pods should appear shortly; if not, the job controller "
            "or KubeRay is not acting on the admission",
        ),
        # The scheduler finds no node for a pod, for a reason tau does not read.
        "Unschedulable": Code(
            W,
            PL,
            "the scheduler's reason is quoted as it wrote it; the platform team owns scheduling "
            "and node pools",
            (_NODES,),
        ),
        # The pod mounts a PersistentVolumeClaim that does not exist (volumebinding PreFilter).
        "ClaimNotFound": Code(
            E,
            PL,
            "a Ready workspace can still lack a PVC: the platform team provisions claims, tau "
            "does not create them; the pod waits until the claim exists",
            (_CLAIMS, _WRONG_CLAIM),
        ),
        # The pod mounts an Immediate claim no volume is bound to yet.
        "ClaimUnbound": Code(
            W,
            PL,
            "the claim exists but no volume is bound to it: the platform team provisions volumes "
            "(StorageClass, CSI driver); the pod starts once it binds",
            (_CLAIMS,),
        ),
        # A claim's volume cannot be bound or reached from the nodes (or it is lost/deleted).
        "VolumeUnavailable": Code(
            W,
            PL,
            "the pod's volumes cannot be bound or reached from the nodes (volume binding, zone, "
            "node affinity or free storage): the platform team owns StorageClasses and volumes",
            (_STORAGE,),
        ),
        # The nodes carry taints the pod does not tolerate.
        "UntoleratedTaint": Code(
            W,
            PL,
            "the preset's tolerations do not match the node pool's taints; the platform team owns "
            "node pools and presets",
            (_NODES,),
        ),
        # No node has the labels the pod selects.
        "NodeSelectorMismatch": Code(
            W,
            PL,
            "if you set policy.node_selector, check that it names existing node labels; "
            "otherwise the preset selects a node pool that has no nodes (the platform team's)",
            (_NODES,),
        ),
        # The nodes that match have too little free cpu, memory, GPUs or pod slots.
        "InsufficientCapacity": Code(
            W,
            PL,
            "busy nodes free up; but a pod asking for more than any node has never fits: ask for "
            "fewer per pod (more workers), or the platform team adds capacity",
            (_NODES,),
        ),
        # Topology spread or pod (anti-)affinity rules leave no node.
        "TopologyConstraint": Code(
            W,
            PL,
            "the placement rules leave no node; the platform team owns the preset's topology",
            (_NODES,),
        ),
        # Nodes are cordoned or their conditions are unknown.
        "NodesUnavailable": Code(
            W, PL, "the platform team owns node health and cordons", (_NODES,)
        ),
        # A DRA ResourceClaim is not allocated.
        "DRAClaimPending": Code(
            W,
            PL,
            "no device matches the claim; the platform team can check the ResourceSlices",
            (_NODES,),
        ),
        # The image cannot be pulled.
        "ImagePullBackOff": Code(
            E,
            R,
            "fix runtime.image (tag or digest); if the image exists, "
            "registry credentials or node egress are a platform fix",
            (_IMAGE,),
        ),
        # A volume does not mount.
        "VolumeMountFailed": Code(E, PL, "the PVC or CSI driver is not usable", (_STORAGE,)),
        # An init container fails.
        "InitContainerFailed": Code(E, R, "read the init container's logs", (_LOGS,)),
        # A referenced Secret/ConfigMap key is missing, or the runtime cannot create the container.
        "ContainerConfigError": Code(
            E, R, "check runtime.env_secret names and keys exist in the namespace", (_LOGS,)
        ),
        # The app starts and exits repeatedly.
        "CrashLoopBackOff": Code(E, R, "the application crashes on start; read the logs", (_LOGS,)),
        # A container exited non-zero.
        "ContainerFailed": Code(E, R, "a container exited with an error; read the logs", (_LOGS,)),
        # The process failed writing to a full volume (ENOSPC or a quota), in its own words.
        "StorageFull": Code(
            E,
            PL,
            "storage: the volume the run writes to is full; the platform team owns its size "
            "(enlarge the claim or free space), then resume from the last checkpoint written "
            "whole",
            (_STORAGE, _RESUME),
        ),
        # The kernel killed a container for exceeding its memory limit.
        "OOMKilled": Code(
            E,
            R,
            "raise compute memory before retrying: the same config reproduces "
            "the same OOM, so OOMKilled is not retried by default and resume needs "
            "--force",
            (_LOGS, _RESUME),
        ),
        # The RayJob failed.
        "RayJobFailed": Code(E, R, "read the driver log", (_LOGS, _RESUME)),
        # The Job failed (backoff limit, deadline, pod failure policy).
        "RunFailed": Code(
            E, R, "locate the first failed layer before retrying or resuming", (_LOGS, _RESUME)
        ),
        # An Indexed (torchrun) Job without its headless Service: rank 0 cannot be resolved.
        "HeadlessServiceMissing": Code(
            W,
            R,
            "cancel and resubmit the run: tau creates the Service "
            "with the Job, and rendezvous needs it",
            (_LIST,),
        ),
        # Ray pods still hold nodes after the RayJob ended.
        "ComputeNotReleased": Code(
            N, PL, "wait for the teardown before resubmitting onto the same nodes"
        ),
        # The node of a running pod stopped reporting (kubelet stopped, link down): the node
        # controller marked its pods not ready. The node is the platform's.
        "NodeNotReady": Code(
            W,
            PL,
            "the platform team owns the node (its kubelet, runtime and network); the run carries "
            "on if the node returns before the pods' toleration of a lost node ends (300 s by "
            "default), else its pods are evicted and retry_on decides",
            (_NODES,),
        ),
        # Containers run; tau cannot see whether training progresses (running is not progressing).
        "ProgressUnverified": Code(N, R, "check the logs and metrics for progress", (_LOGS,)),
        # Completed without a recorded result path: evidence unknown.
        "EvidenceUnknown": Code(
            W,
            R,
            "declare storage.output so results land on a durable PVC; "
            "without it nothing says where the artifacts are",
        ),
        # Completed with a recorded result path that tau has not checked.
        "EvidenceUnverified": Code(
            N, R, "completed is not evidence preserved: check the artifacts landed", (_RESULTS,)
        ),
        # Layer 7 of a run that offloads its metrics (tau.status.evidence_check): what the
        # experiment store holds, or the first missing piece and who owns it.
        "EvidenceLanded": Code(
            N,
            R,
            "the run's metrics and its terminal marker are in the experiment store",
            (_EVIDENCE,),
        ),
        "OffloadNotWired": Code(
            W,
            PL,
            "the platform team names the experiment store in the TauWorkspace "
            "(spec.experiments.store), then the run is resubmitted; until then the metrics stay "
            "in the metrics.history file on the data claim",
        ),
        "EvidenceUnreachable": Code(
            W,
            PL,
            "status reads the store from here: a team store with your own credentials "
            "(PGPASSWORD or ~/.pgpass, the AWS variables), a folder store at the path the pod "
            "wrote it (mounted here too); if those are right, the platform team owns the store",
        ),
        "EvidenceNoRows": Code(
            W,
            R,
            "either the training code logged nothing (tau.log writes metrics.history) or the "
            "collector could not deliver (its log says; the store's credentials Secret is the "
            "platform's)",
            (_OFFLOAD_LOGS, _EVIDENCE),
        ),
        "EvidenceNoMarker": Code(
            W,
            PL,
            "the collector stopped before it drained and wrote the marker (killed before the "
            "completion sentinel, or the store was down at the end): its log says which; the "
            "grace period and the collector are the platform's",
            (_OFFLOAD_LOGS, _EVIDENCE),
        ),
        "EvidenceMarkerFailed": Code(
            W,
            R,
            "the marker records how the workload ended: workload-entrypoint-exit and "
            "workload-termination are the training code's exit or a cancel (read the logs); "
            "metrics-offloader-not-ready and sidecar-shutdown are the collector's (platform)",
            (_LOGS, _EVIDENCE),
        ),
    }
)

#: Codes under which a pending run does not start by waiting: someone (usually the platform)
#: must act first. A watcher (the retry loop) says so instead of waiting silently. Causes that
#: are normal for a moment (no Workload yet, busy nodes) are not among them.
BLOCKING: frozenset[str] = frozenset(
    {
        "ClaimNotFound",
        "ClaimUnbound",
        "VolumeUnavailable",
        "UntoleratedTaint",
        "NodeSelectorMismatch",
        "TopologyUnsupported",
        "ImagePullBackOff",
    }
)

#: The diagnostic code a failing container reason maps to (anything else: ContainerFailed).
_CONTAINER_CODES: Mapping[str, str] = MappingProxyType(
    {**tables.CONTAINER_FAILURES, "OOMKilled": "OOMKilled"}
)


def _phase(phases: tuple[PhaseResult, ...], name: Phase) -> PhaseResult | None:
    return next((p for p in phases if p.name == name), None)


def _admission(f: Facts, phases: tuple[PhaseResult, ...]) -> Iterator[tuple[str, str]]:
    if f.found and not f.workloads and not f.multikueue:
        yield "WorkloadNotObserved", f"no Kueue Workload for {f.kind} {f.snapshot.name}"
    waiting = [w for w in f.workloads if not (w.admitted or w.finished)]
    for w in waiting:
        rejected = [c for c in w.checks if c[1] == "Rejected"]
        if rejected:
            yield "AdmissionRejected", f"{w.name}: check {rejected[0][0]}: {rejected[0][2]}"
        elif w.preempted:
            why = preemptor_named(f, w.evicted_message or "preempted by Kueue")
            yield "Preempted", f"{w.name}: {why}"
        elif w.evicted_reason:
            yield "Evicted", f"{w.name}: {w.evicted_reason}: {w.evicted_message}".rstrip(": ")
        elif any(m in w.pending_message.lower() for m in tables.TOPOLOGY_UNSUPPORTED_MARKERS):
            yield "TopologyUnsupported", f"{w.name} (queue {w.queue}): {w.pending_message}"
        elif any(m in w.pending_message.lower() for m in tables.TOPOLOGY_NO_ROOM_MARKERS):
            yield "TopologyNoRoom", f"{w.name} (queue {w.queue}): {w.pending_message}"
        elif any(m in w.pending_message.lower() for m in tables.QUOTA_NEVER_FITS_MARKERS):
            yield "QuotaNeverFits", f"{w.name} (queue {w.queue}): {w.pending_message}"
        elif any(m in w.pending_message.lower() for m in tables.QUOTA_MARKERS):
            yield "QuotaPending", f"{w.name} (queue {w.queue}): {w.pending_message}"
    if (
        f.admitted
        and not f.pods
        and not f.multikueue
        and _phase(phases, Phase.READY)
        and not _ended(f)
    ):
        yield "AdmittedNotScheduled", "Kueue admitted the workload; no pod exists yet"


def _ended(f: Facts) -> bool:
    return terminal_state(f) is not None


def _pods(f: Facts, phases: tuple[PhaseResult, ...]) -> Iterator[tuple[str, str]]:
    placement = _phase(phases, Phase.POD_SCHEDULING)
    if placement and placement.status == PhaseStatus.WARNING:
        yield from _unschedulable(f, placement)
    dra = _phase(phases, Phase.DRA_ALLOCATION)
    if dra and dra.status in (PhaseStatus.WARNING, PhaseStatus.ACTIVE):
        yield "DRAClaimPending", f"ResourceClaims {dra.detail}"
    yield from _containers(f)
    yield from _service(f)
    for pod in f.pods:
        if node_lost(f, pod):
            yield (
                "NodeNotReady",
                f"node {pod.node} is NotReady: it stopped reporting (its kubelet or its link); "
                f"pod {pod.name} is marked not ready, its containers may still run",
            )
    evicted = next(
        (p for p in f.pods if p.phase == "Failed" and p.status_reason == "Evicted"), None
    )
    if evicted is not None:
        # The kubelet's own words: the resource it ran low on, the threshold, and the
        # container that used the most above its request.
        where = f"node {evicted.node}" if evicted.node else "its node"
        said = f": {evicted.status_message.strip()}" if evicted.status_message.strip() else ""
        yield "Evicted", f"pod {evicted.name} was evicted by {where}{said}"


#: The diagnostic code of each cause the scheduler gives (the DRA phase diagnoses devices).
_SCHEDULING_CODES: Mapping[scheduling.Cause, str] = MappingProxyType(
    {
        scheduling.Cause.CLAIM_MISSING: "ClaimNotFound",
        scheduling.Cause.CLAIM_UNBOUND: "ClaimUnbound",
        scheduling.Cause.VOLUME: "VolumeUnavailable",
        scheduling.Cause.TAINT: "UntoleratedTaint",
        scheduling.Cause.SELECTOR: "NodeSelectorMismatch",
        scheduling.Cause.RESOURCES: "InsufficientCapacity",
        scheduling.Cause.TOPOLOGY: "TopologyConstraint",
        scheduling.Cause.NODES_UNAVAILABLE: "NodesUnavailable",
        scheduling.Cause.OTHER: "Unschedulable",
    }
)


def _scheduler_messages(f: Facts) -> list[tuple[PodFacts, str]]:
    """(pod, the scheduler's message) for each pod waiting for a node: its PodScheduled=False
    condition, else its latest FailedScheduling event.
    """
    events = f.events_with("FailedScheduling", "SchedulingFailed")
    out = []
    for pod in f.pods:
        if pod.node:
            continue
        message = pod.unschedulable_message or next(
            (e.message for e in reversed(events) if e.object_name == pod.name), ""
        )
        if message:
            out.append((pod, message))
    return out


def _unschedulable(f: Facts, placement: PhaseResult) -> Iterator[tuple[str, str]]:
    """One diagnostic per cause the scheduler gives, each naming what it holds (a claim, how
    many nodes) and how many pods wait on it.
    """
    ns = f.snapshot.namespace
    waiting = _scheduler_messages(f)
    if not waiting:
        yield "Unschedulable", f"pods not scheduled: {placement.detail}"
        return
    found: dict[tuple[str, str], list[str]] = {}
    for pod, message in waiting:
        reading = scheduling.read(message)
        for cause in scheduling.ordered(reading):
            code = _SCHEDULING_CODES.get(cause)
            if code is None:
                continue
            found.setdefault((code, _cause_text(reading, cause, ns, pod)), []).append(pod.name)
    for (code, text), pods in found.items():
        more = f" and {len(pods) - 1} more" if len(pods) > 1 else ""
        yield code, f"{text}; waiting: pod {pods[0]}{more}"


def _cause_text(
    reading: scheduling.Reading, cause: scheduling.Cause, ns: str, pod: PodFacts
) -> str:
    """What one cause of a scheduler message holds, in its own words."""
    claims = scheduling.claims_of(reading, cause, pod.volume_claims)
    if cause is scheduling.Cause.CLAIM_MISSING:
        return f"persistentvolumeclaim {scheduling.quoted(claims)} not found in namespace {ns}"
    if cause is scheduling.Cause.CLAIM_UNBOUND:
        return f"no volume bound to persistentvolumeclaim {scheduling.quoted(claims)} in {ns} yet"
    reasons = [r for r in reading.reasons if r.cause is cause]
    total = f" of {reading.total}" if reading.total is not None else ""
    return ", ".join(
        f"{r.text} ({r.nodes}{total} nodes)" if r.nodes is not None else r.text for r in reasons
    )


def _service(f: Facts) -> Iterator[tuple[str, str]]:
    spec = (f.primary or {}).get("spec") or {}
    indexed = spec.get("completionMode") == "Indexed" and int(spec.get("completions") or 1) > 1
    if f.kind == "Job" and indexed and f.snapshot.service is None and not _ended(f):
        yield (
            "HeadlessServiceMissing",
            (
                f"Service {f.snapshot.name}-headless not found; pods "
                f"cannot resolve {f.snapshot.name}-0 for rendezvous"
            ),
        )


#: What a process prints when the volume it writes to is full (strerror of ENOSPC, EDQUOT).
_FULL_MARKERS = ("No space left on device", "Disk quota exceeded")


def _full(f: Facts, pod: str, container: str) -> str:
    """The last line of the container's log that says its volume was full, or ""."""
    for where, name, text in f.snapshot.last_lines:
        if (where, name) != (pod, container):
            continue
        said = [line for line in text.splitlines() if any(m in line for m in _FULL_MARKERS)]
        if said:
            return " ".join(said[-1].split())[:200]
    return ""


def _containers(f: Facts) -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    for pod in f.pods:
        for kind, group in (("init", pod.init), ("app", pod.app)):
            for c in group:
                code = _container_code(kind, c.reason, c.last_reason, c.exit_code, c.message)
                said = _full(f, pod.name, c.name) if code == "ContainerFailed" else ""
                if said:
                    code = "StorageFull"
                if code and code not in seen:
                    seen.add(code)
                    if said:
                        yield (
                            code,
                            (
                                f"storage: {pod.name}/{c.name} exit={c.exit_code}: the process "
                                f'said "{said}"'
                            ),
                        )
                    else:
                        yield code, _container_message(pod.name, c)


def _container_code(
    kind: str, reason: str, last: str, exit_code: int | None, message: str
) -> str | None:
    if reason == "OOMKilled" or last == "OOMKilled":
        return "OOMKilled"
    if reason in tables.IMAGE_PULL_FAILURES:
        return "ImagePullBackOff"
    if "mount" in message.lower():
        return "VolumeMountFailed"
    failing = reason in _CONTAINER_CODES or exit_code not in (0, None)
    if not failing:
        return None
    if kind == "init":
        return "InitContainerFailed"
    return _CONTAINER_CODES.get(reason, "ContainerFailed")


def _container_message(pod: str, c: ContainerFacts) -> str:
    parts = [f"{pod}/{c.name}", c.reason or c.last_reason or c.state]
    if c.exit_code is not None:
        parts.append(f"exit={c.exit_code}")
    if c.restarts:
        parts.append(f"restarts={c.restarts}")
    if c.message:
        parts.append(c.message.splitlines()[0][:160])
    return " ".join(parts)


def _ray(f: Facts, phases: tuple[PhaseResult, ...]) -> Iterator[tuple[str, str]]:
    cluster = _phase(phases, Phase.RAYCLUSTER)
    if (
        cluster
        and cluster.status in (PhaseStatus.WARNING, PhaseStatus.ACTIVE)
        and f.snapshot.raycluster is not None
        and not _ended(f)
    ):
        yield "RayClusterNotReady", f"RayCluster {cluster.detail}"
    release = _phase(phases, Phase.COMPUTE_RELEASE)
    if release and release.status == PhaseStatus.ACTIVE:
        yield "ComputeNotReleased", release.detail


def _outcome(
    f: Facts, state: State, phases: tuple[PhaseResult, ...], codes: set[str]
) -> Iterator[tuple[str, str]]:
    if state is State.FAILED and not codes & {
        "OOMKilled",
        "CrashLoopBackOff",
        "ContainerFailed",
        "StorageFull",
        "ImagePullBackOff",
        "InitContainerFailed",
    }:
        if f.is_ray:
            status = _phase(phases, Phase.RAYJOB_STATUS)
            yield "RayJobFailed", f"RayJob {f.snapshot.name}: {status.detail if status else ''}"
        else:
            yield "RunFailed", f"Job {f.snapshot.name} failed: {_job_failure(f)}"
    elif state is State.RUNNING:
        yield "ProgressUnverified", "containers are running; tau cannot see the training loop"
    elif state is State.SUCCEEDED and f.snapshot.store_evidence is None:
        # A run whose store status read gets what it found there instead (evidence_check).
        yield from _evidence(f)


def _job_failure(f: Facts) -> str:
    failed = conditions(f.primary).get("Failed") or conditions(f.primary).get("FailureTarget")
    if not failed:
        return "unknown reason"
    return f"{failed.get('reason', '')}: {failed.get('message', '')}".strip(": ")


def _evidence(f: Facts) -> Iterator[tuple[str, str]]:
    annotations = metadata(f.primary).get("annotations") or {}
    path = annotations.get(meta.ANNOTATION_RESULT_PATH)
    if not path:
        yield "EvidenceUnknown", "completed, but no result path is recorded: artifacts unknown"
        return
    pvc = annotations.get(meta.ANNOTATION_RESULT_PVC) or "?"
    yield "EvidenceUnverified", f"results recorded at {pvc}:{path}; not checked by tau"


def diagnose(f: Facts, state: State, phases: tuple[PhaseResult, ...]) -> tuple[Diagnostic, ...]:
    """Every diagnostic for the run, errors first, then warnings, then notes.

    Args:
        f: facts read from the snapshot.
        state: the canonical run state.
        phases: the phase tree.

    Returns:
        Diagnostics, deduplicated by code and message.
    """
    found: list[tuple[str, str]] = []
    if not f.found:
        found.append(("RunNotFound", f"no Job or RayJob {f.snapshot.namespace}/{f.snapshot.name}"))
    found.extend(("PartialObservation", e) for e in f.snapshot.errors)
    if f.found:
        found.extend(_admission(f, phases))
        found.extend(_ray(f, phases))
        found.extend(_pods(f, phases))
        found.extend(_outcome(f, state, phases, {c for c, _ in found}))
        found.extend(evidence_check.findings(f))
    unique = list(dict.fromkeys(found))
    order = {E: 0, W: 1, N: 2}
    diagnostics = [
        Diagnostic(code, CODES[code].severity, CODES[code].owner, message, CODES[code].suggestion)
        for code, message in unique
    ]
    return tuple(sorted(diagnostics, key=lambda d: order[d.severity]))


def actions(f: Facts, state: State, diagnostics: tuple[Diagnostic, ...]) -> tuple[Action, ...]:
    """Next steps implied by the diagnostics, plus the default one for the state.

    Args:
        f: facts read from the snapshot.
        state: the canonical run state.
        diagnostics: as returned by `diagnose`.

    Returns:
        Actions, deduplicated by name and owner, in diagnostic order.
    """
    templates = [t for d in diagnostics for t in CODES[d.code].actions]
    if state in (State.QUEUED, State.STARTING):
        templates.append(_WATCH)
    elif state is State.RUNNING:
        templates.append(_LOGS)
    elif state is State.SUCCEEDED and meta.ANNOTATION_RESULT_PATH in (
        metadata(f.primary).get("annotations") or {}
    ):
        templates.append(_RESULTS)
    command = evidence_check.evidence_command(f.snapshot.store_evidence)
    unique = [t for t in dict.fromkeys(templates) if t is not _EVIDENCE or command is not None]
    ns, name = f.snapshot.namespace, f.snapshot.name
    if f.is_ray:
        # `tau run logs` of a RayJob reads its driver log alone; the sidecar is on the head.
        unique = [_OFFLOAD_LOGS_RAY if t is _OFFLOAD_LOGS else t for t in unique]
    return tuple(
        Action(
            t.name,
            t.owner,
            t.description,
            t.command.format(name=name, ns=ns, evidence_command=command) if t.command else None,
        )
        for t in unique
    )
