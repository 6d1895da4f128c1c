"""The `-o json` RunStatus document (apiVersion `<meta.GROUP>/v1alpha1`, kind RunStatus).

Pure. Keys come out in a fixed order (insertion order, never sorted), so the JSON is stable
across runs and diffs well; absent values are null rather than missing.
"""

from __future__ import annotations

import json
from typing import Any

from tau.k8s import meta
from tau.status import offload
from tau.status.model import (
    Action,
    Diagnostic,
    Evidence,
    PhaseResult,
    PodRow,
    RunStatus,
    WorkloadRow,
)

API_VERSION = f"{meta.GROUP}/v1alpha1"
KIND = "RunStatus"


def _phase(p: PhaseResult) -> dict[str, Any]:
    return {
        "name": p.name.value,
        "status": p.status.value,
        "detail": p.detail,
        "hint": p.hint,
        "startedAt": p.started_at,
    }


def _workload(w: WorkloadRow) -> dict[str, Any]:
    return {
        "name": w.name,
        "queue": w.queue,
        "clusterQueue": w.cluster_queue,
        "phase": w.phase,
        "admitted": w.admitted,
        "reason": w.reason,
        "message": w.message,
    }


def _pod(p: PodRow) -> dict[str, Any]:
    return {
        "name": p.name,
        "phase": p.phase,
        "ready": p.ready,
        "restarts": p.restarts,
        "node": p.node or None,
        "containers": [
            {
                "kind": c.kind,
                "name": c.name,
                "state": c.state,
                "ready": c.ready,
                "restarts": c.restarts,
                "exitCode": c.exit_code,
                "reason": c.reason or None,
            }
            for c in p.containers
        ],
    }


def _diagnostic(d: Diagnostic) -> dict[str, Any]:
    return {
        "code": d.code,
        "severity": d.severity.value,
        "owner": d.owner.value,
        "message": d.message,
        "suggestion": d.suggestion,
    }


def _action(a: Action) -> dict[str, Any]:
    return {
        "name": a.name,
        "owner": a.owner.value,
        "description": a.description,
        "command": a.command,
    }


def _evidence(e: Evidence | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {
        "resultPath": e.result_path,
        "resultPvc": e.result_pvc,
        "checkpointArtifact": e.checkpoint_artifact,
        "verified": e.verified,
        # A run that offloads its metrics: its store and what status found there (layer 7).
        "offload": offload.as_dict(e.offload, e.store) if e.offload is not None else None,
    }


def to_dict(status: RunStatus, *, run_profile: bool = False) -> dict[str, Any]:
    """The RunStatus document as plain data.

    Args:
        status: the interpreted run.
        run_profile: add the `profile` key (`--run-profile`).

    Returns:
        A dict with keys apiVersion, kind, metadata, status, phases, workloads, pods,
        diagnostics, actions, evidence, in that order.
    """
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": status.name, "namespace": status.namespace},
        "status": {
            "found": status.kind is not None,
            "workloadKind": status.kind,
            "state": status.state.value,
            "startupComplete": status.startup_complete,
            "startupFailed": status.startup_failed,
            "failureReason": status.failure_reason,
            "observedAt": status.observed_at,
        },
        "phases": [_phase(p) for p in status.phases],
        "workloads": [_workload(w) for w in status.workloads],
        "pods": [_pod(p) for p in status.pods],
        "diagnostics": [_diagnostic(d) for d in status.diagnostics],
        "actions": [_action(a) for a in status.actions],
        "evidence": _evidence(status.evidence),
    }
    if run_profile:
        from tau.status.profile import as_dict

        doc["profile"] = as_dict(status)
    return doc


def to_json(status: RunStatus, *, run_profile: bool = False) -> str:
    """The document as indented JSON with a trailing newline (what `-o json` prints)."""
    return json.dumps(to_dict(status, run_profile=run_profile), indent=2, ensure_ascii=False) + "\n"
