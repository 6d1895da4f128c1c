"""The namespace and queue a Ready workspace gives a run, and primary-workspace choice. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from tau.errors import TauError, UsageError
from tau.k8s.meta import GROUP
from tau.workspaces.readiness import WorkspaceView, not_ready_reason, readiness_hint

# Label and annotation keys are owned by render/meta.py; this one should move there as
# ANNOTATION_PRIMARY_WORKSPACE (it is read here, never rendered).
PRIMARY_ANNOTATION = f"{GROUP}/v0-primary-workspace"
NO_NAMESPACE = (
    "no namespace resolved for this workload: connect a workspace "
    "(see `tau workspace list`) or pass --namespace"
)


class WorkspaceNotReady(TauError):
    """The workspace exists but is not Ready; the submission gate is closed."""


@dataclass(frozen=True)
class WorkspaceTarget:
    """Where a run goes. `workspace` and `queue` are None when only --namespace was given."""

    namespace: str
    queue: str | None
    workspace: str | None
    service_account: str | None = None
    priority: str | None = None
    output_root: str | None = None
    #: spec.experiments (metrics offload): the store, its credentials Secret, the sidecar image.
    experiments_store: str | None = None
    experiments_secret: str | None = None
    offload_image: str | None = None


def workspace_target(ws: WorkspaceView) -> WorkspaceTarget:
    """The target of a Ready workspace (§4.4).

    Raises:
        WorkspaceNotReady: the workspace is not Ready or has no LocalQueue.
    """
    reason = not_ready_reason(ws)
    if reason:
        raise WorkspaceNotReady(reason, hint=readiness_hint(ws))
    if not ws.queue:
        raise WorkspaceNotReady(
            f'workspace "{ws.name}" has no LocalQueue',
            hint="ask your platform operator to set the workspace queue",
        )
    priority = "default" if ws.priority == "normal" else (ws.priority or None)
    return WorkspaceTarget(
        ws.namespace,
        ws.queue,
        ws.name,
        ws.service_account or None,
        priority,
        ws.output_root or None,
        ws.experiments_store or None,
        ws.experiments_secret or None,
        ws.offload_image or None,
    )


def reconcile(
    target: WorkspaceTarget, *, namespace: str | None = None, queue: str | None = None
) -> WorkspaceTarget:
    """Check requested namespace/queue against the workspace's; a conflict is an error.

    Raises:
        UsageError: `namespace` or `queue` (other than `auto`) differs from the workspace's.
    """
    if namespace and namespace != target.namespace:
        raise UsageError(
            f'namespace "{namespace}" conflicts with workspace "{target.workspace}", whose '
            f'namespace is "{target.namespace}"',
            hint="drop --namespace (the workspace decides it) or choose the workspace with "
            "--workspace",
        )
    if queue and queue != "auto" and queue != target.queue:
        raise UsageError(
            f'queue "{queue}" conflicts with workspace "{target.workspace}", whose LocalQueue is '
            f'"{target.queue}"',
            hint="remove `policy.queue` (or set it to auto); the workspace decides the queue",
        )
    return target


def select_primary(workspaces: list[WorkspaceView]) -> WorkspaceView | None:
    """This cluster's primary workspace (§4.4), or None when there is none.

    Raises:
        UsageError: two workspaces are annotated primary, or the primary is being deleted.
    """
    marked = [w for w in workspaces if w.annotations.get(PRIMARY_ANNOTATION) == "true"]
    if len(marked) > 1:
        names = ", ".join(f'"{w.name}"' for w in marked)
        raise UsageError(
            f"more than one primary workspace ({names}); pass --workspace",
            hint=f"ask your platform operator to keep {PRIMARY_ANNOTATION} on one",
        )
    chosen: WorkspaceView | None
    if marked:
        chosen = marked[0]
    else:
        live = [
            w
            for w in workspaces
            if not w.deleting
            and not any(c.reason == "AdditionalWorkspaceBlocked" for c in w.conditions)
        ]
        live.sort(key=lambda w: (w.created or "~", w.name))
        chosen = live[0] if live else None
    if chosen is not None and chosen.deleting:
        raise UsageError(f'the primary workspace "{chosen.name}" is being deleted')
    return chosen
