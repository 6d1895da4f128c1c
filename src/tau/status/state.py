"""The canonical run state (not_found|queued|starting|running|succeeded|failed) from the facts.

Pure. Terminal states come from the workload object (Job conditions by type, RayJob statuses via
the KubeRay tables); the others from Kueue admission and the pods.
"""

from __future__ import annotations

from tau.status import tables
from tau.status.facts import Facts, conditions, is_true, node_lost, status_of
from tau.status.model import State


def _job_terminal(f: Facts) -> State | None:
    conds = conditions(f.primary)
    for kind, state in tables.JOB_TERMINAL_CONDITIONS:
        if is_true(conds, kind):
            return state
    return None


def _rayjob_terminal(f: Facts) -> State | None:
    status = status_of(f.primary)
    job_status = str(status.get("jobStatus") or "")
    deployment = str(status.get("jobDeploymentStatus") or "")
    by_deployment = tables.RAYJOB_TERMINAL_STATE.get(deployment)
    by_job = tables.RAY_JOB_TERMINAL_STATE.get(job_status)
    if by_deployment is State.FAILED or by_job is State.FAILED:
        return State.FAILED
    if by_deployment is State.SUCCEEDED:
        # Complete with an unknown driver status: KubeRay only says Complete once it finished.
        return by_job or State.SUCCEEDED
    # The driver succeeded; KubeRay moves the deployment to Complete on its next reconcile.
    return by_job


def terminal_state(f: Facts) -> State | None:
    """Succeeded or failed when the workload object says it ended, else None."""
    if not f.found:
        return None
    return _rayjob_terminal(f) if f.is_ray else _job_terminal(f)


def _suspended(f: Facts) -> bool:
    spec = (f.primary or {}).get("spec") or {}
    return bool(spec.get("suspend"))


def run_state(f: Facts) -> State:
    """The canonical state of the run.

    Args:
        f: facts read from the snapshot.

    Returns:
        The State; queued covers "not admitted yet" and "preempted and requeued".
    """
    if not f.found:
        return State.NOT_FOUND
    terminal = terminal_state(f)
    if terminal is not None:
        return terminal
    if not f.admitted and (_suspended(f) or not f.pods):
        return State.QUEUED
    live = [p for p in f.pods if not p.terminal] or list(f.pods)
    if f.is_ray:
        running = str(status_of(f.primary).get("jobStatus") or "") == "RUNNING"
        return State.RUNNING if running else State.STARTING
    # A pod whose node stopped reporting was running when last seen: its containers may
    # still run (the Ready phase and NodeNotReady say so); it is not starting again.
    if live and all(p.ready or node_lost(f, p) for p in live):
        return State.RUNNING
    return State.STARTING
