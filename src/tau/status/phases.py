"""Derive each startup phase of `tau run status` from the facts (cli-contract 2.2).

Pure. One small function per phase, in tree order; `phase_tree` assembles them and applies the
contract's special cases (manager-only MultiKueue view, RayJob finished).
"""

from __future__ import annotations

from collections.abc import Callable

from tau.render import meta
from tau.status import tables
from tau.status.facts import ContainerFacts, Facts, metadata, status_of
from tau.status.model import POD_PHASES, Phase, PhaseResult, PhaseStatus

P = PhaseStatus
_SHOWN_IMAGES = 2


def _r(name: Phase, status: PhaseStatus, detail: str, hint: str | None = None,
       started_at: str | None = None) -> PhaseResult:
    return PhaseResult(name, status, detail, hint, started_at or None)


def _earliest(values: list[str]) -> str | None:
    # RFC 3339 UTC strings sort chronologically, so no parsing is needed.
    present = [v for v in values if v]
    return min(present) if present else None


def submitted(f: Facts) -> PhaseResult:
    """Submitted: the Job or RayJob exists."""
    if not f.found:
        return _r(Phase.SUBMITTED, P.PENDING, "no batch/v1 Job or RayJob found",
                  "check the run name and namespace (`tau run list`)")
    text = "RayJob created" if f.is_ray else "batch/v1 Job created"
    return _r(Phase.SUBMITTED, P.DONE, text, None,
              str(metadata(f.primary).get("creationTimestamp") or ""))


def _queues(f: Facts) -> str:
    return ",".join(sorted({w.queue for w in f.workloads if w.queue})) or "-"


def _queue_label(f: Facts) -> str:
    labels = metadata(f.primary).get("labels") or {}
    return str(labels.get(meta.KUEUE_QUEUE_NAME) or "")


def kueue_admission(f: Facts) -> PhaseResult:
    """Kueue admission: Workload conditions Admitted/Finished/QuotaReserved/Evicted, by type."""
    if not f.workloads:
        hint = (f"Kueue creates a Workload for objects labelled {meta.KUEUE_QUEUE_NAME}="
                f"{_queue_label(f) or '<queue>'}; if none appears, the LocalQueue is missing or "
                "Kueue does not manage this namespace (queue owner)")
        if f.found:
            return _r(Phase.KUEUE_ADMISSION, P.ACTIVE, "waiting for Kueue Workload", hint)
        return _r(Phase.KUEUE_ADMISSION, P.PENDING, "workload not observed")
    total = len(f.workloads)
    admitted = sum(1 for w in f.workloads if w.admitted and not w.finished)
    finished = sum(1 for w in f.workloads if w.finished)
    started = _earliest([w.created for w in f.workloads])
    queue = f" queue={_queues(f)}"
    if finished == total:
        return _r(Phase.KUEUE_ADMISSION, P.DONE, f"{finished}/{total} finished; quota released"
                  + queue, None, started)
    if admitted + finished == total:
        return _r(Phase.KUEUE_ADMISSION, P.DONE, f"{admitted}/{total} admitted" + queue, None,
                  started)
    return _admission_blocked(f, admitted, total, queue, started)


def _admission_blocked(f: Facts, admitted: int, total: int, queue: str,
                       started: str | None) -> PhaseResult:
    waiting = [w for w in f.workloads if not (w.admitted or w.finished)]
    preempted = next((w for w in waiting if w.preempted or w.evicted_reason), None)
    rejected = next((c for w in waiting for c in w.checks if c[1] == "Rejected"), None)
    detail = f"{admitted}/{total} admitted" + queue
    if rejected is not None:
        return _r(Phase.KUEUE_ADMISSION, P.WARNING,
                  f"{detail} reason=admission check {rejected[0]} rejected: {rejected[2]}".strip(),
                  "an admission check rejected the workload; the queue owner can say why",
                  started)
    if preempted is not None:
        why = preempted.evicted_message or preempted.evicted_reason or "Preempted"
        return _r(Phase.KUEUE_ADMISSION, P.WARNING, f"{detail} reason={why}",
                  "Kueue reclaimed this workload's quota (preemption/eviction); it is requeued "
                  "and starts again when quota frees up", started)
    reason = next((w.pending_message or w.pending_reason for w in waiting
                   if w.pending_message or w.pending_reason), "")
    hint = None
    if any(m in reason.lower() for m in tables.QUOTA_MARKERS):
        hint = ("no free quota in the ClusterQueue (borrowing included): wait, or ask the queue "
                "owner for capacity; editing tau.yaml does not add quota")
    text = f"{detail} reason={reason}" if reason else detail
    return _r(Phase.KUEUE_ADMISSION, P.ACTIVE, text, hint, started)


def multikueue_placement(f: Facts) -> PhaseResult:
    """MultiKueue placement: the worker cluster and the MultiKueue admission check state."""
    terminal = _terminal_text(f)
    if terminal is not None:
        status = P.DONE if terminal == "workload completed" else P.WARNING
        return _r(Phase.MULTIKUEUE_PLACEMENT, status, terminal)
    checks = [c for w in f.workloads for c in w.checks]
    cluster = next((w.cluster_name for w in f.workloads if w.cluster_name), "")
    if any(c[1] == "Rejected" for c in checks):
        message = next(c[2] for c in checks if c[1] == "Rejected")
        return _r(Phase.MULTIKUEUE_PLACEMENT, P.WARNING, f"placement rejected: {message}",
                  "the MultiKueue admission check rejected the workload (platform)")
    if checks and all(c[1] == "Ready" for c in checks):
        return _r(Phase.MULTIKUEUE_PLACEMENT, P.DONE,
                  f"worker-cluster placement ready on {cluster or '<unknown>'}")
    nominated = ",".join(n for w in f.workloads for n in w.nominated)
    detail = "waiting for a worker cluster" + (f" (nominated: {nominated})" if nominated else "")
    return _r(Phase.MULTIKUEUE_PLACEMENT, P.ACTIVE if f.workloads else P.PENDING, detail)


def _terminal_text(f: Facts) -> str | None:
    from tau.status.state import terminal_state

    state = terminal_state(f)
    if state is None:
        return None
    return "workload completed" if state.value == "succeeded" else "workload failed"


def raycluster(f: Facts) -> PhaseResult:
    """RayCluster: the cluster the RayJob names, and its state/conditions."""
    rayjob = status_of(f.primary)
    name = str(rayjob.get("rayClusterName") or "")
    failed = _terminal_text(f) == "workload failed"
    if not name:
        if failed:
            return _r(Phase.RAYCLUSTER, P.WARNING, "RayJob failed before a RayCluster existed")
        if not f.admitted:
            return _r(Phase.RAYCLUSTER, P.PENDING, "waiting for Kueue admission")
        return _r(Phase.RAYCLUSTER, P.ACTIVE, "waiting for KubeRay to create RayCluster")
    cluster = f.snapshot.raycluster
    if cluster is None:
        if _terminal_text(f) is not None:
            return _r(Phase.RAYCLUSTER, P.WARNING if failed else P.DONE,
                      f"{name} deleted after the run")
        return _r(Phase.RAYCLUSTER, P.ACTIVE, f"waiting for RayCluster {name} to appear")
    return _raycluster_state(f, name, cluster, failed)


def _raycluster_state(f: Facts, name: str, cluster: object, failed: bool) -> PhaseResult:
    from tau.status.facts import conditions, is_true

    status = status_of(cluster)  # type: ignore[arg-type]
    state = str(status.get("state") or "")
    conds = conditions(cluster)  # type: ignore[arg-type]
    started = str(metadata(cluster).get("creationTimestamp") or "")  # type: ignore[arg-type]
    detail = f"created {name} status={state or 'provisioning'}"
    if failed:
        return _r(Phase.RAYCLUSTER, P.WARNING, detail + "; RayJob failed", None, started)
    if state == "ready" or is_true(conds, "RayClusterProvisioned"):
        return _r(Phase.RAYCLUSTER, P.DONE, detail, None, started)
    if is_true(conds, "RayClusterReplicaFailure") or state == "failed":
        why = str(conds.get("RayClusterReplicaFailure", {}).get("message") or
                  status.get("reason") or "replica failure")
        return _r(Phase.RAYCLUSTER, P.WARNING, f"{detail} reason={why}",
                  "KubeRay could not create the head or worker pods", started)
    ready = int(status.get("readyWorkerReplicas") or 0)
    desired = int(status.get("desiredWorkerReplicas") or 0)
    return _r(Phase.RAYCLUSTER, P.ACTIVE, f"{detail} workers={ready}/{desired} ready",
              "the RayCluster is not ready yet; the pod phases below say why", started)


def pod_scheduling(f: Facts) -> PhaseResult:
    """Pod scheduling: spec.nodeName and PodScheduled=False reasons (FailedScheduling)."""
    pods = f.pods
    if not pods:
        hint = ("admitted is not scheduled: Kueue reserved quota, but no pod exists yet"
                if f.admitted else None)
        return _r(Phase.POD_SCHEDULING, P.PENDING, "no pods observed yet", hint)
    assigned = sum(1 for p in pods if p.node)
    started = _earliest([p.created for p in pods])
    detail = f"{assigned}/{len(pods)} assigned to nodes"
    if assigned == len(pods):
        return _r(Phase.POD_SCHEDULING, P.DONE, detail, None, started)
    blocked = next((p for p in pods if p.unschedulable_reason), None)
    if blocked is not None:
        return _r(Phase.POD_SCHEDULING, P.WARNING,
                  f"{detail} reason={blocked.unschedulable_reason}: "
                  f"{blocked.unschedulable_message}".rstrip(": "),
                  "no node fits: node selector, taint or capacity mismatch with the node pool",
                  started)
    return _r(Phase.POD_SCHEDULING, P.ACTIVE, detail, None, started)


def _allocated(claim: object) -> bool:
    return bool(status_of(claim).get("allocation"))  # type: ignore[arg-type]


def dra_allocation(f: Facts) -> PhaseResult:
    """DRA allocation: ResourceClaims the pods reference, allocated or not."""
    names = [c for p in f.pods for c in p.claims]
    if not names:
        return _r(Phase.DRA_ALLOCATION, P.SKIPPED,
                  "no ResourceClaims requested (device-plugin GPUs; this is normal)")
    allocated = sum(1 for n in names if n in f.claims and _allocated(f.claims[n]))
    detail = f"{allocated}/{len(names)} allocated"
    if allocated == len(names):
        return _r(Phase.DRA_ALLOCATION, P.DONE, detail)
    failure = next((e for e in f.events
                    if any(m in f"{e.reason} {e.message}".lower()
                           for m in tables.DRA_FAILURE_MARKERS)), None)
    if failure is not None:
        return _r(Phase.DRA_ALLOCATION, P.WARNING, f"{detail} reason={failure.message}",
                  "no device matches the claim: the platform team can check the ResourceSlices")
    return _r(Phase.DRA_ALLOCATION, P.ACTIVE, detail,
              "claims normally allocate within ~30s; longer means no matching device")


def image_pull(f: Facts) -> PhaseResult:
    """Image pull: waiting reasons ErrImagePull/ImagePullBackOff/…, Pulling events."""
    containers = [(p.name, c) for p in f.pods if p.node for c in (*p.init, *p.app)]
    if not containers:
        return _r(Phase.IMAGE_PULL, P.PENDING, "waiting for pods")
    failing = [(pod, c) for pod, c in containers if c.reason in tables.IMAGE_PULL_FAILURES]
    if failing:
        pod, c = failing[0]
        return _r(Phase.IMAGE_PULL, P.WARNING, f"{pod}/{c.name}={c.reason} image={c.image}",
                  "check the image tag or digest; if it exists, registry credentials or node "
                  "egress are a platform fix")
    if all(c.image_present for _, c in containers):
        images = sorted({c.image for _, c in containers})
        shown = ", ".join(images[:_SHOWN_IMAGES])
        more = f", +{len(images) - _SHOWN_IMAGES} more" if len(images) > _SHOWN_IMAGES else ""
        return _r(Phase.IMAGE_PULL, P.DONE, f"available: {shown}{more}")
    if all(c.image_present for _, c in containers if c.reason != "PodInitializing"):
        return _r(Phase.IMAGE_PULL, P.ACTIVE, "app images pull once init containers finish")
    pulling = [e for e in f.events if e.reason == "Pulling"]
    detail = pulling[-1].message if pulling else "pulling images"
    return _r(Phase.IMAGE_PULL, P.ACTIVE, detail)


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
        return _r(Phase.INIT_CONTAINERS, P.SKIPPED, "no init containers")
    complete = sum(1 for _, c in inits if (c.state == "terminated" and c.exit_code == 0)
                   or (c.sidecar and c.state == "running"))
    detail = f"{complete}/{len(inits)} complete"
    if complete == len(inits):
        return _r(Phase.INIT_CONTAINERS, P.DONE, detail)
    failed = next(((pod, c, why) for pod, c in inits if (why := _failure(c))), None)
    if failed is not None:
        pod, c, why = failed
        exit_text = f" exit={c.exit_code}" if c.exit_code is not None else ""
        return _r(Phase.INIT_CONTAINERS, P.WARNING, f"{detail} {pod}/{c.name}={why}{exit_text}",
                  _mount_hint(c.message) or "an init container fails: read its logs")
    waiting = next((c for _, c in inits if c.state == "waiting" and c.message), None)
    return _r(Phase.INIT_CONTAINERS, P.ACTIVE if f.pods and any(p.node for p in f.pods)
              else P.PENDING, detail, _mount_hint(waiting.message if waiting else ""))


def _mount_hint(message: str) -> str | None:
    if "mount" in message.lower():
        return "a volume does not mount: the PVC or CSI driver is a platform fix"
    return None


def container_start(f: Facts) -> PhaseResult:
    """Container start: app containers running or exited 0; crash and config failures."""
    apps = [(p.name, c) for p in f.pods for c in p.app if p.node]
    if not apps:
        return _r(Phase.CONTAINER_START, P.PENDING, "waiting for pods")
    started = sum(1 for _, c in apps if c.started)
    detail = f"{started}/{len(apps)} started"
    failed = next(((pod, c, why) for pod, c in apps if (why := _failure(c))), None)
    if failed is not None:
        pod, c, why = failed
        exit_text = f" exit={c.exit_code}" if c.exit_code is not None else ""
        restarts = f" restarts={c.restarts}" if c.restarts else ""
        hint = ("the container exceeded its memory limit: raise compute memory"
                if "OOMKilled" in (why, c.last_reason) else
                "the application fails on start: read `tau run logs`")
        return _r(Phase.CONTAINER_START, P.WARNING,
                  f"{detail} {pod}/{c.name}={why}{exit_text}{restarts}", hint)
    if started == len(apps):
        return _r(Phase.CONTAINER_START, P.DONE, detail)
    progress = next((c.reason for _, c in apps if c.reason in tables.CONTAINER_PROGRESS), "")
    return _r(Phase.CONTAINER_START, P.ACTIVE, detail, tables.CONTAINER_PROGRESS.get(progress))


def ready(f: Facts) -> PhaseResult:
    """Ready: pod Ready=True, or phase Succeeded."""
    if not f.pods:
        return _r(Phase.READY, P.PENDING, "waiting for pods")
    count = sum(1 for p in f.pods if p.ready)
    detail = f"{count}/{len(f.pods)} pods ready"
    failed = next((p for p in f.pods if p.phase == "Failed"), None)
    if failed is not None:
        why = failed.status_reason or "Failed"
        return _r(Phase.READY, P.WARNING, f"{detail}; {failed.name} {why}")
    if count == len(f.pods):
        return _r(Phase.READY, P.DONE, detail,
                  None if f.is_ray or _job_done(f) else
                  "running is not progressing: tau cannot see the training loop; read the logs")
    started = any(c.started for p in f.pods for c in p.app)
    return _r(Phase.READY, P.ACTIVE if started else P.PENDING, detail)


def _job_done(f: Facts) -> bool:
    from tau.status.state import terminal_state

    return terminal_state(f) is not None


def rayjob_status(f: Facts) -> PhaseResult:
    """RayJob status: jobDeploymentStatus, then jobStatus, through the KubeRay tables."""
    status = status_of(f.primary)
    deployment = str(status.get("jobDeploymentStatus") or "")
    job_status = str(status.get("jobStatus") or "")
    detail = f"jobDeploymentStatus={deployment or '-'} jobStatus={job_status or '-'}"
    verdict = tables.RAYJOB_DEPLOYMENT_PHASE.get(deployment, P.ACTIVE)
    if tables.RAY_JOB_STATUS_PHASE.get(job_status) == P.WARNING:
        verdict = P.WARNING
    elif verdict == P.DONE and job_status in tables.RAY_JOB_STATUS_PHASE:
        verdict = tables.RAY_JOB_STATUS_PHASE[job_status]
    reason = str(status.get("reason") or status.get("message") or "")
    if verdict == P.WARNING and reason:
        detail += f" reason={reason}"
    return _r(Phase.RAYJOB_STATUS, verdict, detail,
              "read the driver log: `tau run logs`" if verdict == P.WARNING else None,
              str(status.get("startTime") or ""))


def compute_release(f: Facts) -> PhaseResult:
    """Compute release: Ray pods still on nodes after the RayJob ended; Workload Finished."""
    if _terminal_text(f) is None:
        return _r(Phase.COMPUTE_RELEASE, P.PENDING, "the RayJob has not finished")
    if any(e.startswith("pods:") for e in f.snapshot.errors):
        return _r(Phase.COMPUTE_RELEASE, P.WARNING, "could not list the Ray pods")
    holding = [p for p in f.pods if p.ray and not p.terminal and p.node]
    if holding:
        nodes = len({p.node for p in holding})
        return _r(Phase.COMPUTE_RELEASE, P.ACTIVE,
                  f"resources NOT reusable; {len(holding)} Ray pod(s) still hold {nodes} node(s)",
                  "wait for the teardown before resubmitting onto the same nodes")
    released = all(w.finished for w in f.workloads)
    text = ("quota released; resources reusable; no active Ray pods remain" if released
            else "no active Ray pods remain; Kueue has not marked the Workload Finished yet")
    return _r(Phase.COMPUTE_RELEASE, P.DONE if released else P.ACTIVE, text)


_POD_PHASE_FUNCS: dict[Phase, Callable[[Facts], PhaseResult]] = {
    Phase.POD_SCHEDULING: pod_scheduling, Phase.DRA_ALLOCATION: dra_allocation,
    Phase.IMAGE_PULL: image_pull, Phase.INIT_CONTAINERS: init_containers,
    Phase.CONTAINER_START: container_start, Phase.READY: ready,
}


def _pod_phases(f: Facts) -> list[PhaseResult]:
    if f.multikueue:
        cluster = next((w.cluster_name for w in f.workloads if w.cluster_name), "")
        where = f" on worker cluster {cluster}" if cluster else " on a worker cluster"
        return [_r(name, P.SKIPPED, f"manager-only view: pods run{where}") for name in POD_PHASES]
    results = [_POD_PHASE_FUNCS[name](f) for name in POD_PHASES]
    terminal = _terminal_text(f)
    if terminal is None:
        return results
    if terminal == "workload failed" and not f.pods:
        return [_r(r.name, P.SKIPPED, "no pods remain after the failure") for r in results]
    if terminal == "workload completed":
        # Finished runs lose their pods (RayCluster teardown, Job TTL): not a startup problem.
        why = "post-run RayCluster teardown" if f.is_ray else "pods cleaned up after completion"
        return [r if r.status in (P.DONE, P.SKIPPED) else _r(r.name, P.DONE, why)
                for r in results]
    return results


def phase_tree(f: Facts) -> tuple[PhaseResult, ...]:
    """All phases in order; optional ones only when they apply.

    Args:
        f: facts read from the snapshot.

    Returns:
        The ordered phase results.
    """
    phases = [submitted(f), kueue_admission(f)]
    if f.multikueue:
        phases.append(multikueue_placement(f))
    if f.is_ray:
        phases.append(raycluster(f))
    phases.extend(_pod_phases(f))
    if f.is_ray:
        phases.extend((rayjob_status(f), compute_release(f)))
    return tuple(phases)
