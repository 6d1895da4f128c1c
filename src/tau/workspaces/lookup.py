"""Resolve the namespace and queue for a command from its connection's TauWorkspace.

Performs I/O (Kubernetes API through `tau.kube`). There is no default namespace: with no
workspace and no --namespace the result is the §1.4 error.
"""

from __future__ import annotations

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

    Raises:
        WorkspaceNotReady, UsageError, ClusterError.
    """
    from tau.kube.client import client_for
    from tau.kube.workspaces import get_workspace, list_workspaces

    name = workspace or connection.workspace
    if name is None and namespace:
        return WorkspaceTarget(namespace, None, None)
    api = api if api is not None else client_for(connection)
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
    return reconcile(workspace_target(view(obj)), namespace=namespace, queue=queue)
