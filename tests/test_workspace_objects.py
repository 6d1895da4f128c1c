"""Builders for TauWorkspace objects used by the workspace tests (no tests here)."""

from __future__ import annotations

from typing import Any

READY_CONDITIONS = (("RBACReady", "True"), ("QueueReady", "True"), ("DriftDetected", "False"))


def tau_workspace(
    name: str = "team-a",
    *,
    phase: str = "Ready",
    generation: int = 2,
    observed: int | None = None,
    conditions: tuple[tuple[str, str], ...] | list[tuple[str, ...]] = READY_CONDITIONS,
    namespace: str | None = "team-a-ns",
    queue: str | None = "team-a-queue",
    system_namespace: str = "tau-system",
    annotations: dict[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": phase,
        "observedGeneration": generation if observed is None else observed,
        "conditions": [
            {
                "type": c[0],
                "status": c[1],
                "reason": c[2] if len(c) > 2 else "",
                "message": c[3] if len(c) > 3 else "",
            }
            for c in conditions
        ],
    }
    if namespace:
        status["target"] = {"resolvedNamespace": namespace}
    if queue:
        status["queue"] = {"localQueue": queue, "clusterQueue": "taugrid-cq"}
    return {
        "apiVersion": "tau.azure.com/v1alpha1",
        "kind": "TauWorkspace",
        "metadata": {
            "name": name,
            "namespace": system_namespace,
            "generation": generation,
            "uid": f"uid-{name}",
            "annotations": annotations or {},
            "creationTimestamp": created,
        },
        "spec": {
            "authorization": {"mode": "cluster-wide"},
            "target": {"namespace": namespace},
            "defaults": {"outputRoot": f"/data/projects/{name}/runs", "priority": "normal"},
            "workloadIdentity": {"serviceAccountName": "tau-runner"},
        },
        "status": status,
    }
