"""Read a TauWorkspace object into a typed view and decide whether it is Ready. Pure.

Ready means: `status.phase == Ready`, `metadata.generation > 0` and `status.observedGeneration
== generation` (the controller has seen the latest spec), and the conditions agree — RBACReady
and QueueReady True with no DriftDetected (contract §4.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GATING = ("RBACReady", "QueueReady")


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class WorkspaceView:
    """The fields of a TauWorkspace that tau uses; missing values are ""."""

    name: str
    uid: str
    phase: str
    generation: int
    observed_generation: int
    namespace: str
    queue: str
    cluster_queue: str
    service_account: str
    output_root: str
    priority: str
    #: spec.experiments: the evidence store, its credentials Secret, the offload sidecar image.
    experiments_store: str
    experiments_secret: str
    offload_image: str
    authorization_mode: str
    role: str
    conditions: tuple[Condition, ...]
    annotations: dict[str, str]
    created: str
    deleting: bool


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def view(obj: dict[str, Any]) -> WorkspaceView:
    """The typed view of a TauWorkspace dict; namespace and queue follow contract §4.4."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    conditions = tuple(
        Condition(
            str(c.get("type", "")),
            str(c.get("status", "Unknown")),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
        )
        for c in _get(obj, "status", "conditions") or []
        if isinstance(c, dict)
    )
    return WorkspaceView(
        name=name,
        uid=str(meta.get("uid") or ""),
        phase=str(_get(obj, "status", "phase") or ""),
        generation=_int(meta.get("generation")),
        observed_generation=_int(_get(obj, "status", "observedGeneration")),
        namespace=str(
            _get(obj, "status", "target", "resolvedNamespace")
            or _get(obj, "spec", "target", "namespace")
            or name
        ),
        queue=str(_get(obj, "status", "queue", "localQueue") or _get(obj, "spec", "queue") or ""),
        cluster_queue=str(_get(obj, "status", "queue", "clusterQueue") or ""),
        service_account=str(_get(obj, "spec", "workloadIdentity", "serviceAccountName") or ""),
        output_root=str(_get(obj, "spec", "defaults", "outputRoot") or ""),
        priority=str(_get(obj, "spec", "defaults", "priority") or ""),
        experiments_store=str(_get(obj, "spec", "experiments", "store") or ""),
        experiments_secret=str(_get(obj, "spec", "experiments", "credentialsSecret") or ""),
        offload_image=str(_get(obj, "spec", "experiments", "offloadImage") or ""),
        authorization_mode=str(_get(obj, "spec", "authorization", "mode") or "workspace-rbac"),
        role=str(_get(obj, "spec", "role") or ""),
        conditions=conditions,
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        created=str(meta.get("creationTimestamp") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def phase_from_conditions(conditions: tuple[Condition, ...]) -> str:
    """The controller's phase rule (`workspacePhase`), recomputed from the conditions."""
    by_type = {c.type: c.status for c in conditions}
    if by_type.get("DriftDetected") == "True":
        return "Degraded"
    if any(by_type.get(t) == "False" for t in GATING):
        return "Degraded"
    if any(by_type.get(t) != "True" for t in GATING):
        return "Pending"
    return "Ready"


def not_ready_reason(ws: WorkspaceView) -> str | None:
    """Why `ws` is not Ready, as a plain fragment; None when it is Ready."""
    if ws.phase != "Ready":
        return f'workspace "{ws.name}" is not Ready (phase={ws.phase or "-"})'
    if ws.generation <= 0 or ws.observed_generation != ws.generation:
        return (
            f'workspace "{ws.name}" is not Ready (phase=Ready but observedGeneration '
            f"{ws.observed_generation} != generation {ws.generation}: the controller has not "
            "reconciled the latest change)"
        )
    derived = phase_from_conditions(ws.conditions)
    if derived != "Ready":
        return f'workspace "{ws.name}" is not Ready (phase=Ready but conditions say {derived})'
    return None


def is_ready(ws: WorkspaceView) -> bool:
    return not_ready_reason(ws) is None


def blocking_conditions(ws: WorkspaceView) -> list[Condition]:
    """The conditions that keep `ws` from Ready, most telling first (drift, then gates)."""
    out = [c for c in ws.conditions if c.type == "DriftDetected" and c.status == "True"]
    out += [c for c in ws.conditions if c.type in GATING and c.status != "True"]
    present = {c.type for c in ws.conditions}
    out += [Condition(t, "Unknown", "NotReported", "") for t in GATING if t not in present]
    return out


def readiness_hint(ws: WorkspaceView) -> str:
    """What a researcher should do about a workspace that is not Ready."""
    blocking = blocking_conditions(ws)
    detail = "; ".join(
        f"{c.type}={c.status}" + (f" ({c.reason}: {c.message})" if c.reason or c.message else "")
        for c in blocking
    )
    lead = f"{detail}. " if detail else ""
    return (
        f"{lead}Workspace readiness is a platform concern: ask your platform operator; "
        "do not add namespace or queue to your run config to work around it"
    )
