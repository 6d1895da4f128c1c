"""Resolve the namespace and queue for a command from its connection's TauWorkspace.

Performs I/O (Kubernetes API through `tau.kube`). There is no default namespace: with no
workspace and no --namespace the result is the §1.4 error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tau.errors import UsageError
from tau.workspaces.readiness import view
from tau.workspaces.target import (
    NO_NAMESPACE,
    WorkspaceTarget,
    reconcile,
    select_primary,
    workspace_target,
)

if TYPE_CHECKING:
    from tau.connection.activate import Connection


def resolve_namespace_and_queue(
    connection: Connection,
    *,
    workspace: str | None = None,
    namespace: str | None = None,
    queue: str | None = None,
    api: Any = None,
    discover_primary: bool = True,
    trust: bool = False,
) -> WorkspaceTarget:
    """Where a run goes: the Ready workspace's namespace and LocalQueue.

    Order: `workspace` (--workspace), else the descriptor's workspace, else — when only a
    namespace was given — that namespace with no queue, else the cluster's primary workspace.

    Args:
        connection: from `tau.connection.activate`.
        workspace: --workspace; must be Ready.
        namespace: --namespace; must not conflict with the workspace's.
        queue: policy.queue; must not conflict (`auto` is fine).
        api: an ApiClient (default: built from the connection).
        discover_primary: look for the primary workspace when none is named.
        trust: accept a changed workspace contract (uid, namespace, queue, service account).

    Raises:
        WorkspaceNotReady, UsageError, ClusterError.
    """
    from tau.kube.client import api_client
    from tau.kube.workspaces import get_workspace, list_workspaces

    name = workspace or connection.workspace
    if name is None and namespace:
        return WorkspaceTarget(namespace, None, None)
    api = api if api is not None else api_client(connection.kubeconfig, connection.context)
    ctx = connection.context
    if name is None:
        if not discover_primary:
            raise UsageError(NO_NAMESPACE)
        objs = list_workspaces(api, connection.system_namespace, context=ctx)
        primary = select_primary([view(o) for o in objs])
        if primary is None:
            raise UsageError(NO_NAMESPACE)
        name = primary.name
    obj = get_workspace(api, name, connection.system_namespace, context=ctx)
    ws = view(obj)
    target = reconcile(workspace_target(ws), namespace=namespace, queue=queue)
    if name == connection.workspace:
        pin_contract(connection, ws.uid, target, trust=trust)
    return target


def pin_contract(
    connection: Connection, uid: str, target: WorkspaceTarget, *, trust: bool = False
) -> None:
    """Record the workspace contract on first use; a later change needs the user's review.

    A workspace that was deleted and recreated (new UID) or now points runs at another namespace,
    LocalQueue or service account is a different contract than the one confirmed (§4.3).

    Raises:
        TrustRequired: the contract changed and `trust` is False.
    """
    from tau.connection.activate import TRUST_COMMAND, TrustRequired
    from tau.connection.state import contract_changes, save_state

    state, path = connection.state, connection.state_file
    if state is None or path is None:
        return
    current = {
        "workspace_uid": uid,
        "namespace": target.namespace,
        "queue": target.queue or "",
        "service_account": target.service_account or "",
    }
    changes = contract_changes(state, current)
    if changes and not trust:
        raise TrustRequired(
            f'workspace connection requires interactive review: workspace "{target.workspace}" '
            + "; ".join(changes),
            hint=f"if this change is expected, run `{TRUST_COMMAND} --live` to confirm it",
        )
    if changes or not state.workspace_uid:
        save_state(path, replace(state, **current))
