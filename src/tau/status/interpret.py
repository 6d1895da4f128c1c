"""Interpret a Snapshot into a RunStatus: phases, state, rows, diagnostics and actions.

Pure. No clock, no I/O: `now` is an argument, and the same snapshot always gives the same
RunStatus. The rules live in `phases`, `state`, `diagnose` and the tables they use.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tau.k8s import meta
from tau.status.classify import classify_facts
from tau.status.diagnose import actions, diagnose
from tau.status.facts import ContainerFacts, Facts, PodFacts, metadata, read_facts
from tau.status.model import (
    ContainerRow,
    Evidence,
    PodRow,
    RunStatus,
    Severity,
    State,
    WorkloadRow,
)
from tau.status.offload import offload_of
from tau.status.phases import phase_tree
from tau.status.snapshot import Snapshot
from tau.status.state import run_state

#: Diagnostic codes after which waiting alone will not get the run started.
STARTUP_FAILURE_CODES: frozenset[str] = frozenset(
    {
        "AdmissionRejected",
        "TopologyUnsupported",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "ContainerConfigError",
        "InitContainerFailed",
        "OOMKilled",
        "ContainerFailed",
        "VolumeMountFailed",
    }
)


def _container_row(pod: str, kind: str, c: ContainerFacts) -> ContainerRow:
    return ContainerRow(
        pod=pod,
        kind=kind,
        name=c.name,
        state=c.state,
        ready=c.ready,
        restarts=c.restarts,
        exit_code=c.exit_code,
        reason=c.reason or c.last_reason,
    )


def _pod_row(p: PodFacts) -> PodRow:
    containers = tuple(
        [_container_row(p.name, "init", c) for c in p.init]
        + [_container_row(p.name, "app", c) for c in p.app]
    )
    return PodRow(
        name=p.name,
        phase=p.phase,
        ready=p.ready,
        restarts=sum(c.restarts for c in (*p.init, *p.app)),
        node=p.node,
        containers=containers,
    )


def _workload_rows(f: Facts) -> tuple[WorkloadRow, ...]:
    return tuple(
        WorkloadRow(
            name=w.name,
            queue=w.queue,
            cluster_queue=w.cluster_queue,
            phase=w.phase,
            admitted=w.admitted,
            reason=w.evicted_reason or w.pending_reason or w.finished_reason,
            message=w.evicted_message or w.pending_message,
        )
        for w in f.workloads
    )


def _evidence(f: Facts) -> Evidence | None:
    if not f.found:
        return None
    annotations = metadata(f.primary).get("annotations") or {}
    return Evidence(
        result_path=annotations.get(meta.ANNOTATION_RESULT_PATH),
        result_pvc=annotations.get(meta.ANNOTATION_RESULT_PVC),
        checkpoint_artifact=annotations.get(meta.ANNOTATION_CHECKPOINT_ARTIFACT),
        offload=offload_of(f.primary),
        store=f.snapshot.store_evidence,
    )


def _timestamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def interpret(snapshot: Snapshot, now: datetime) -> RunStatus:
    """Turn what the cluster holds into the status view.

    Args:
        snapshot: every object of the run, as fetched.
        now: the observation time (timezone-aware); only recorded, never read from a clock.

    Returns:
        The RunStatus.
    """
    f = read_facts(snapshot)
    phases = phase_tree(f)
    state = run_state(f)
    diagnostics = diagnose(f, state, phases)
    startup_failed = state is State.FAILED or any(
        d.code in STARTUP_FAILURE_CODES and d.severity is Severity.ERROR for d in diagnostics
    )
    failure = classify_facts(f, state) if state is State.FAILED else None
    return RunStatus(
        name=snapshot.name,
        namespace=snapshot.namespace,
        kind=f.kind,
        state=state,
        phases=phases,
        workloads=_workload_rows(f),
        pods=tuple(_pod_row(p) for p in f.pods),
        diagnostics=diagnostics,
        actions=actions(f, state, diagnostics),
        evidence=_evidence(f),
        failure_reason=str(failure) if failure is not None else None,
        startup_failed=startup_failed,
        observed_at=_timestamp(now),
    )
