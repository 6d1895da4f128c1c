"""Derive the six pod phases of `tau run status` (scheduling to Ready) from the facts.

Pure. One small function per phase (cli-contract 2.2); `phases.phase_tree` orders them and
applies the whole-run special cases (manager-only MultiKueue view, finished RayJob).
"""

from __future__ import annotations

from tau.status import scheduling, tables
from tau.status.facts import ContainerFacts, Facts, PodFacts, node_lost, status_of
from tau.status.model import Phase, PhaseResult, PhaseStatus
from tau.status.snapshot import Obj
from tau.status.state import terminal_state

P = PhaseStatus
_SHOWN_IMAGES = 2


def result(
    name: Phase,
    status: PhaseStatus,
    detail: str,
    hint: str | None = None,
    started_at: str | None = None,
) -> PhaseResult:
    """A PhaseResult; an empty `started_at` becomes None."""
    return PhaseResult(name, status, detail, hint, started_at or None)


def earliest(values: list[str]) -> str | None:
    """The earliest non-empty timestamp, or None."""
    # RFC 3339 UTC strings sort chronologically, so no parsing is needed.
    present = [v for v in values if v]
    return min(present) if present else None


def pod_scheduling(f: Facts) -> PhaseResult:
    """Pod scheduling: spec.nodeName and PodScheduled=False reasons (FailedScheduling)."""
    pods = f.pods
    if not pods:
        hint = (
            "admitted is not scheduled: Kueue reserved quota, but no pod exists yet"
            if f.admitted
            else None
        )
        return result(Phase.POD_SCHEDULING, P.PENDING, "no pods observed yet", hint)
    assigned = sum(1 for p in pods if p.node)
    started = earliest([p.created for p in pods])
    detail = f"{assigned}/{len(pods)} assigned to nodes"
    if assigned == len(pods):
        return result(Phase.POD_SCHEDULING, P.DONE, detail, None, started)
    blocked = next((p for p in pods if p.unschedulable_reason), None)
    if blocked is not None:
        return result(
            Phase.POD_SCHEDULING,
            P.WARNING,
            f"{detail} reason={blocked.unschedulable_reason}: "
            f"{blocked.unschedulable_message}".rstrip(": "),
            _hint(f, blocked.unschedulable_message, blocked.volume_claims),
            started,
        )
    waiting = {p.name for p in pods if not p.node}
    event = next(
        (
            e
            for e in reversed(f.events_with("FailedScheduling", "SchedulingFailed"))
            if e.object_name in waiting
        ),
        None,
    )
    if event is not None:
        pod = next(p for p in pods if p.name == event.object_name)
        return result(
            Phase.POD_SCHEDULING,
            P.WARNING,
            f"{detail} reason={event.reason}: {event.message}",
            _hint(f, event.message, pod.volume_claims),
            started,
        )
    return result(Phase.POD_SCHEDULING, P.ACTIVE, detail, None, started)


def _hint(f: Facts, message: str, mounted: tuple[str, ...]) -> str:
    """What the scheduler's reasons say is in the way, cause by cause."""
    return scheduling.hint(scheduling.read(message), f.snapshot.namespace, mounted)


def _allocated(claim: Obj) -> bool:
    return bool(status_of(claim).get("allocation"))


def dra_allocation(f: Facts) -> PhaseResult:
    """DRA allocation: ResourceClaims the pods reference, allocated or not."""
    names = [c for p in f.pods for c in p.claims]
    if not names:
        return result(
            Phase.DRA_ALLOCATION,
            P.SKIPPED,
            "no ResourceClaims requested (device-plugin GPUs; this is normal)",
        )
    allocated = sum(1 for n in names if n in f.claims and _allocated(f.claims[n]))
    detail = f"{allocated}/{len(names)} allocated"
    if allocated == len(names):
        return result(Phase.DRA_ALLOCATION, P.DONE, detail)
    failure = next(
        (
            e
            for e in f.events
            if any(m in f"{e.reason} {e.message}".lower() for m in tables.DRA_FAILURE_MARKERS)
        ),
        None,
    )
    if failure is not None:
        text = f"{failure.reason} {failure.message}".lower()
        # The scheduler found no node whose published devices satisfy the claim (1.34+ says
        # "cannot allocate all claims"); a kubelet's prepare failure keeps its own reason.
        why = (
            "no suitable devices"
            if any(m in text for m in tables.DRA_NO_DEVICE_MARKERS)
            else failure.reason
        )
        return result(
            Phase.DRA_ALLOCATION,
            P.WARNING,
            f"{detail}: {why} ({failure.reason}: {failure.message})",
            "no device matches the claim: the platform team can check the ResourceSlices",
        )
    return result(
        Phase.DRA_ALLOCATION,
        P.ACTIVE,
        detail,
        "claims normally allocate within ~30s; longer means no matching device",
    )


def image_pull(f: Facts) -> PhaseResult:
    """Image pull: waiting reasons ErrImagePull/ImagePullBackOff/…, Pulling events."""
    containers = [(p.name, c) for p in f.pods if p.node for c in (*p.init, *p.app)]
    if not containers:
        return result(Phase.IMAGE_PULL, P.PENDING, "waiting for pods")
    failing = [(pod, c) for pod, c in containers if c.reason in tables.IMAGE_PULL_FAILURES]
    if failing:
        pod, c = failing[0]
        return result(
            Phase.IMAGE_PULL,
            P.WARNING,
            f"{pod}/{c.name}={c.reason} image={c.image}",
            "check the image tag or digest; if it exists, registry credentials or node "
            "egress are a platform fix",
        )
    if all(c.image_present for _, c in containers):
        images = sorted({c.image for _, c in containers})
        shown = ", ".join(images[:_SHOWN_IMAGES])
        more = f", +{len(images) - _SHOWN_IMAGES} more" if len(images) > _SHOWN_IMAGES else ""
        return result(Phase.IMAGE_PULL, P.DONE, f"available: {shown}{more}")
    if all(c.image_present for _, c in containers if c.reason != "PodInitializing"):
        return result(Phase.IMAGE_PULL, P.ACTIVE, "app images pull once init containers finish")
    pulling = [e for e in f.events if e.reason == "Pulling"]
    detail = pulling[-1].message if pulling else "pulling images"
    return result(Phase.IMAGE_PULL, P.ACTIVE, detail)


def _failure(c: ContainerFacts) -> str | None:
    """Why a container will not run by itself, or None."""
    if c.state == "terminated" and c.exit_code not in (0, None):
        return c.reason or "Error"
    if c.reason in tables.CONTAINER_FAILURES or (c.last_reason == "OOMKilled" and c.restarts):
        return c.reason or c.last_reason
    return None


def init_containers(f: Facts) -> PhaseResult:
    """Init containers: terminated with exit 0 (sidecars count once started)."""
    inits = [(p.name, c) for p in f.pods for c in p.init]
    if not inits:
        return result(Phase.INIT_CONTAINERS, P.SKIPPED, "no init containers")
    complete = sum(
        1
        for _, c in inits
        if (c.state == "terminated" and c.exit_code == 0) or (c.sidecar and c.state == "running")
    )
    detail = f"{complete}/{len(inits)} complete"
    if complete == len(inits):
        return result(Phase.INIT_CONTAINERS, P.DONE, detail)
    failed = next(((pod, c, why) for pod, c in inits if (why := _failure(c))), None)
    if failed is not None:
        pod, c, why = failed
        exit_text = f" exit={c.exit_code}" if c.exit_code is not None else ""
        return result(
            Phase.INIT_CONTAINERS,
            P.WARNING,
            f"{detail} {pod}/{c.name}={why}{exit_text}",
            _mount_hint(c.message) or "an init container fails: read its logs",
        )
    waiting = next((c for _, c in inits if c.state == "waiting" and c.message), None)
    return result(
        Phase.INIT_CONTAINERS,
        P.ACTIVE if f.pods and any(p.node for p in f.pods) else P.PENDING,
        detail,
        _mount_hint(waiting.message if waiting else ""),
    )


def _mount_hint(message: str) -> str | None:
    if "mount" in message.lower():
        return "a volume does not mount: the PVC or CSI driver is a platform fix"
    return None


def container_start(f: Facts) -> PhaseResult:
    """Container start: app containers running or exited 0; crash and config failures."""
    apps = [(p.name, c) for p in f.pods for c in p.app if p.node]
    if not apps:
        return result(Phase.CONTAINER_START, P.PENDING, "waiting for pods")
    started = sum(1 for _, c in apps if c.started)
    detail = f"{started}/{len(apps)} started"
    failed = next(((pod, c, why) for pod, c in apps if (why := _failure(c))), None)
    if failed is not None:
        pod, c, why = failed
        exit_text = f" exit={c.exit_code}" if c.exit_code is not None else ""
        restarts = f" restarts={c.restarts}" if c.restarts else ""
        hint = (
            "the container exceeded its memory limit: raise compute memory"
            if "OOMKilled" in (why, c.last_reason)
            else "the application fails on start: read `tau run logs`"
        )
        return result(
            Phase.CONTAINER_START,
            P.WARNING,
            f"{detail} {pod}/{c.name}={why}{exit_text}{restarts}",
            hint,
        )
    if started == len(apps):
        return result(Phase.CONTAINER_START, P.DONE, detail)
    progress = next((c.reason for _, c in apps if c.reason in tables.CONTAINER_PROGRESS), "")
    return result(Phase.CONTAINER_START, P.ACTIVE, detail, tables.CONTAINER_PROGRESS.get(progress))


def ready(f: Facts) -> PhaseResult:
    """Ready: pod Ready=True, or phase Succeeded."""
    if not f.pods:
        return result(Phase.READY, P.PENDING, "waiting for pods")
    count = sum(1 for p in f.pods if p.ready)
    detail = f"{count}/{len(f.pods)} pods ready"
    failed = next((p for p in f.pods if p.phase == "Failed"), None)
    if failed is not None:
        why = failed.status_reason or "Failed"
        return result(Phase.READY, P.WARNING, f"{detail}; {failed.name} {why}")
    if count == len(f.pods):
        return result(
            Phase.READY,
            P.DONE,
            detail,
            None
            if f.is_ray or _job_done(f)
            else "running is not progressing: tau cannot see the training loop; read the logs",
        )
    started = any(c.started for p in f.pods for c in p.app)
    running = next(
        (
            p
            for p in f.pods
            if p.phase == "Running"
            and any(c.state == "running" for c in p.app)
            and not (p.ready or p.deleting or p.disruption_target)
        ),
        None,
    )
    lost = next((p for p in f.pods if node_lost(f, p)), None)
    if lost is not None:
        # Not a probe: the node stopped reporting (its kubelet, or its link). The containers
        # may still run; nothing the researcher does brings the node back.
        return result(
            Phase.READY,
            P.WARNING,
            f"{detail}; node {lost.node} is NotReady (it stopped reporting); "
            f"{lost.name} is marked not ready",
            "the platform team owns the node; the run carries on if the node returns",
        )
    if running is not None:
        # Running is not Ready: its containers started, and a probe has not passed (yet). A pod
        # on its way out (deleted, preempted, evicted) is not waiting for a probe.
        detail += f"; {running.name} running, not ready: {_not_ready_because(f, running)}"
    return result(Phase.READY, P.ACTIVE if started else P.PENDING, detail)


def _not_ready_because(f: Facts, pod: PodFacts) -> str:
    """The kubelet's latest probe failure for the pod (its Unhealthy event), else what the pod
    says: a container still starting, or one that started and waits for its readiness probe.
    """
    failed = [e for e in f.events if e.reason == "Unhealthy" and e.object_name == pod.name]
    if failed:
        latest = max(failed, key=lambda e: e.time)
        return " ".join(latest.message.split())[:200]
    unready = [c.name for c in pod.app if not c.ready]
    waiting = [f"{c.name} {c.reason or c.state}" for c in pod.app if c.state != "running"]
    if waiting:
        # A container not running (a crash loop beside a running sidecar): Container start
        # above has its reason.
        return ", ".join(waiting)
    return f"readiness probe of {', '.join(unready)} not passed yet"


def _job_done(f: Facts) -> bool:
    return terminal_state(f) is not None
