"""Derive the run-level startup phases and assemble the ordered phase tree (cli-contract 2.2).

Pure. Submitted, Kueue admission, MultiKueue placement, RayCluster, RayJob status and Compute
release live here, the six pod phases in `pod_phases`; `phase_tree` orders them and applies the
contract's special cases (manager-only MultiKueue view, finished RayJob).
"""

from __future__ import annotations

from collections.abc import Callable

from tau.k8s import meta
from tau.status import evidence_check, pod_phases, tables
from tau.status.facts import Facts, conditions, is_true, metadata, preemptor_named, status_of
from tau.status.model import POD_PHASES, Phase, PhaseResult, PhaseStatus
from tau.status.pod_phases import earliest, result
from tau.status.snapshot import Obj
from tau.status.state import terminal_state

P = PhaseStatus


def submitted(f: Facts) -> PhaseResult:
    """Submitted: the Job or RayJob exists."""
    if not f.found:
        return result(
            Phase.SUBMITTED,
            P.PENDING,
            "no batch/v1 Job or RayJob found",
            "check the run name and namespace (`tau run list`)",
        )
    text = "RayJob created" if f.is_ray else "batch/v1 Job created"
    return result(
        Phase.SUBMITTED, P.DONE, text, None, str(metadata(f.primary).get("creationTimestamp") or "")
    )


def _queues(f: Facts) -> str:
    return ",".join(sorted({w.queue for w in f.workloads if w.queue})) or "-"


def _queue_label(f: Facts) -> str:
    labels = metadata(f.primary).get("labels") or {}
    return str(labels.get(meta.KUEUE_QUEUE_NAME) or "")


def kueue_admission(f: Facts) -> PhaseResult:
    """Kueue admission: Workload conditions Admitted/Finished/QuotaReserved/Evicted, by type."""
    if not f.workloads:
        hint = (
            f"Kueue creates a Workload for objects labelled {meta.KUEUE_QUEUE_NAME}="
            f"{_queue_label(f) or '<queue>'}; if none appears, the LocalQueue is missing or "
            "Kueue does not manage this namespace (queue owner)"
        )
        if f.found:
            return result(Phase.KUEUE_ADMISSION, P.ACTIVE, "waiting for Kueue Workload", hint)
        return result(Phase.KUEUE_ADMISSION, P.PENDING, "workload not observed")
    total = len(f.workloads)
    admitted = sum(1 for w in f.workloads if w.admitted and not w.finished)
    finished = sum(1 for w in f.workloads if w.finished)
    started = earliest([w.created for w in f.workloads])
    queue = f" queue={_queues(f)}"
    if finished == total:
        return result(
            Phase.KUEUE_ADMISSION,
            P.DONE,
            f"{finished}/{total} finished; quota released" + queue,
            None,
            started,
        )
    if admitted + finished == total:
        return result(
            Phase.KUEUE_ADMISSION, P.DONE, f"{admitted}/{total} admitted" + queue, None, started
        )
    return _admission_blocked(f, admitted, total, queue, started)


def _admission_blocked(
    f: Facts, admitted: int, total: int, queue: str, started: str | None
) -> PhaseResult:
    waiting = [w for w in f.workloads if not (w.admitted or w.finished)]
    preempted = next((w for w in waiting if w.preempted or w.evicted_reason), None)
    rejected = next((c for w in waiting for c in w.checks if c[1] == "Rejected"), None)
    detail = f"{admitted}/{total} admitted" + queue
    if rejected is not None:
        why = f"admission check {rejected[0]} rejected: {rejected[2]}".strip()
        return result(
            Phase.KUEUE_ADMISSION,
            P.WARNING,
            f"{detail} reason={why}",
            "an admission check rejected the workload; the queue owner can say why",
            started,
        )
    names = {w.name for w in waiting}
    # Kueue also reports preemption as Workload events; conditions may already be reset.
    event = (
        next(
            (e for e in reversed(f.events_with("preempt", "evict")) if e.object_name in names), None
        )
        if admitted == 0
        else None
    )
    if preempted is None and event is not None:
        return result(
            Phase.KUEUE_ADMISSION,
            P.WARNING,
            f"{detail} reason={event.reason}: {event.message}",
            "Kueue reclaimed this workload's quota; it is requeued",
            started,
        )
    if preempted is not None:
        why = preemptor_named(
            f, preempted.evicted_message or preempted.evicted_reason or "Preempted"
        )
        return result(
            Phase.KUEUE_ADMISSION,
            P.WARNING,
            f"{detail} reason={why}",
            "Kueue reclaimed this workload's quota (preemption/eviction); it is requeued "
            "and starts again when quota frees up",
            started,
        )
    reason = next(
        (
            w.pending_message or w.pending_reason
            for w in waiting
            if w.pending_message or w.pending_reason
        ),
        "",
    )
    hint = None
    lowered = reason.lower()
    # Kueue words topology problems as flavor assignment failures too: test them first.
    if any(m in lowered for m in tables.TOPOLOGY_UNSUPPORTED_MARKERS):
        hint = (
            "the queue's ResourceFlavor has no Topology, and tau asks Kueue for topology-aware "
            "placement: the platform operator sets topologyName (with nodeLabels) on the flavor"
        )
    elif any(m in lowered for m in tables.TOPOLOGY_NO_ROOM_MARKERS):
        hint = (
            "no node has room for the pods now: busy nodes free up, but a pod larger than any "
            "node never fits; ask for fewer GPUs per pod (more workers or nodes) if so"
        )
    elif any(m in lowered for m in tables.QUOTA_NEVER_FITS_MARKERS):
        hint = (
            "the request is larger than the ClusterQueue can ever hold (its maximum capacity, "
            "borrowing included): waiting will not help; ask for less in tau.yaml (compute), "
            "or ask the queue owner for a larger quota"
        )
    elif any(m in lowered for m in tables.QUOTA_MARKERS):
        hint = (
            "no free quota in the ClusterQueue (borrowing included): wait, or ask the queue "
            "owner for capacity; editing tau.yaml does not add quota"
        )
    text = f"{detail} reason={reason}" if reason else detail
    return result(Phase.KUEUE_ADMISSION, P.ACTIVE, text, hint, started)


def multikueue_placement(f: Facts) -> PhaseResult:
    """MultiKueue placement: the worker cluster and the MultiKueue admission check state."""
    terminal = _terminal_text(f)
    if terminal is not None:
        status = P.DONE if terminal == "workload completed" else P.WARNING
        return result(Phase.MULTIKUEUE_PLACEMENT, status, terminal)
    checks = [c for w in f.workloads for c in w.checks]
    cluster = next((w.cluster_name for w in f.workloads if w.cluster_name), "")
    if any(c[1] == "Rejected" for c in checks):
        message = next(c[2] for c in checks if c[1] == "Rejected")
        return result(
            Phase.MULTIKUEUE_PLACEMENT,
            P.WARNING,
            f"placement rejected: {message}",
            "the MultiKueue admission check rejected the workload (platform)",
        )
    if checks and all(c[1] == "Ready" for c in checks):
        return result(
            Phase.MULTIKUEUE_PLACEMENT,
            P.DONE,
            f"worker-cluster placement ready on {cluster or '<unknown>'}",
        )
    nominated = ",".join(n for w in f.workloads for n in w.nominated)
    detail = "waiting for a worker cluster" + (f" (nominated: {nominated})" if nominated else "")
    return result(Phase.MULTIKUEUE_PLACEMENT, P.ACTIVE if f.workloads else P.PENDING, detail)


def _terminal_text(f: Facts) -> str | None:
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
            return result(Phase.RAYCLUSTER, P.WARNING, "RayJob failed before a RayCluster existed")
        if not f.admitted:
            return result(Phase.RAYCLUSTER, P.PENDING, "waiting for Kueue admission")
        return result(Phase.RAYCLUSTER, P.ACTIVE, "waiting for KubeRay to create RayCluster")
    cluster = f.snapshot.raycluster
    if cluster is None:
        if _terminal_text(f) is not None:
            return result(
                Phase.RAYCLUSTER, P.WARNING if failed else P.DONE, f"{name} deleted after the run"
            )
        return result(Phase.RAYCLUSTER, P.ACTIVE, f"waiting for RayCluster {name} to appear")
    return _raycluster_state(name, cluster, failed)


def _raycluster_state(name: str, cluster: Obj, failed: bool) -> PhaseResult:
    status = status_of(cluster)
    state = str(status.get("state") or "")
    conds = conditions(cluster)
    started = str(metadata(cluster).get("creationTimestamp") or "")
    detail = f"created {name} status={state or 'provisioning'}"
    if failed:
        return result(Phase.RAYCLUSTER, P.WARNING, detail + "; RayJob failed", None, started)
    if state == "ready" or is_true(conds, "RayClusterProvisioned"):
        return result(Phase.RAYCLUSTER, P.DONE, detail, None, started)
    if is_true(conds, "RayClusterReplicaFailure") or state == "failed":
        why = str(
            conds.get("RayClusterReplicaFailure", {}).get("message")
            or status.get("reason")
            or "replica failure"
        )
        return result(
            Phase.RAYCLUSTER,
            P.WARNING,
            f"{detail} reason={why}",
            "KubeRay could not create the head or worker pods",
            started,
        )
    ready = int(status.get("readyWorkerReplicas") or 0)
    desired = int(status.get("desiredWorkerReplicas") or 0)
    return result(
        Phase.RAYCLUSTER,
        P.ACTIVE,
        f"{detail} workers={ready}/{desired} ready",
        "the RayCluster is not ready yet; the pod phases below say why",
        started,
    )


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
    reason = ": ".join(str(v) for v in (status.get("reason"), status.get("message")) if v)
    if verdict == P.WARNING and reason:
        detail += f" reason={reason}"
    return result(
        Phase.RAYJOB_STATUS,
        verdict,
        detail,
        "read the driver log: `tau run logs`" if verdict == P.WARNING else None,
        str(status.get("startTime") or ""),
    )


def compute_release(f: Facts) -> PhaseResult:
    """Compute release: Ray pods still on nodes after the RayJob ended; Workload Finished."""
    if _terminal_text(f) is None:
        return result(Phase.COMPUTE_RELEASE, P.PENDING, "the RayJob has not finished")
    if any(e.startswith("pods:") for e in f.snapshot.errors):
        return result(Phase.COMPUTE_RELEASE, P.WARNING, "could not list the Ray pods")
    holding = [p for p in f.pods if p.ray and not p.terminal and p.node]
    if holding:
        nodes = len({p.node for p in holding})
        detail = f"resources NOT reusable; {len(holding)} Ray pod(s) still hold {nodes} node(s)"
        return result(
            Phase.COMPUTE_RELEASE,
            P.ACTIVE,
            detail,
            "wait for the teardown before resubmitting onto the same nodes",
        )
    released = all(w.finished for w in f.workloads)
    text = (
        "quota released; resources reusable; no active Ray pods remain"
        if released
        else "no active Ray pods remain; Kueue has not marked the Workload Finished yet"
    )
    return result(Phase.COMPUTE_RELEASE, P.DONE if released else P.ACTIVE, text)


#: The pod phase functions, by phase (tree order comes from POD_PHASES).
_POD_PHASE_FUNCS: dict[Phase, Callable[[Facts], PhaseResult]] = {
    Phase.POD_SCHEDULING: pod_phases.pod_scheduling,
    Phase.DRA_ALLOCATION: pod_phases.dra_allocation,
    Phase.IMAGE_PULL: pod_phases.image_pull,
    Phase.INIT_CONTAINERS: pod_phases.init_containers,
    Phase.CONTAINER_START: pod_phases.container_start,
    Phase.READY: pod_phases.ready,
}


def _pod_phases(f: Facts) -> list[PhaseResult]:
    if f.multikueue:
        cluster = next((w.cluster_name for w in f.workloads if w.cluster_name), "")
        where = f" on worker cluster {cluster}" if cluster else " on a worker cluster"
        detail = f"manager-only view: pods run{where}"
        return [result(name, P.SKIPPED, detail) for name in POD_PHASES]
    results = [_POD_PHASE_FUNCS[name](f) for name in POD_PHASES]
    terminal = _terminal_text(f)
    if terminal is None:
        return results
    if terminal == "workload failed" and not f.pods:
        return [result(r.name, P.SKIPPED, "no pods remain after the failure") for r in results]
    if terminal == "workload completed":
        # Finished runs lose their pods (RayCluster teardown, Job TTL): not a startup problem.
        why = "post-run RayCluster teardown" if f.is_ray else "pods cleaned up after completion"
        return [
            r if r.status in (P.DONE, P.SKIPPED) else result(r.name, P.DONE, why) for r in results
        ]
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
    evidence = evidence_check.phase(f)
    if evidence is not None:
        phases.append(evidence)
    return tuple(phases)
