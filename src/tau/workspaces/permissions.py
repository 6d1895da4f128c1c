"""The RBAC checks of a workspace connection (contract §4.3), and one message for what is missing.

Performs I/O through `tau.kube.access` (one SelfSubjectAccessReview per permission). Every
missing permission is named at once, with who grants it: a researcher cannot fix RBAC, and a
list of one-at-a-time failures would cost the operator a round trip per permission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tau.errors import TauError
from tau.kube.access import Permission, allowed

if TYPE_CHECKING:
    from tau.workspaces.readiness import WorkspaceView

CLUSTER_WIDE = "cluster-wide"
WORKSPACE_RBAC = "workspace-rbac"

_WRITE = ("create", "get", "list", "patch", "delete")
#: workspace-rbac: what tau's run lifecycle does in the workspace namespace.
WORKSPACE_PERMISSIONS: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (_WRITE, "jobs", "batch", ""),
    (_WRITE, "rayjobs", "ray.io", ""),
    (("get", "list"), "pods", "", ""),
    (("get",), "pods", "", "log"),
    (("get",), "localqueues", "kueue.x-k8s.io", ""),
    (("get", "list"), "workloads", "kueue.x-k8s.io", ""),
    # `tau run history` lists the retry Events the retry loop creates.
    (("create", "list"), "events", "", ""),
)


class PermissionsMissing(TauError):
    """The caller lacks permissions the connection's authorization mode requires."""


def required(mode: str, namespace: str) -> list[Permission]:
    """The permissions `mode` requires; workspace-rbac ones in the workspace's namespace."""
    if mode == CLUSTER_WIDE:
        return [Permission("*", "*", "*")]
    return [
        Permission(verb, resource, group, sub, namespace)
        for verbs, resource, group, sub in WORKSPACE_PERMISSIONS
        for verb in verbs
    ]


def check(
    api: Any,
    mode: str,
    namespace: str,
    *,
    workspace: str,
    role: str | None = None,
    context: str | None = None,
) -> None:
    """Ask the API server about every required permission; raise naming all that are missing.

    Raises:
        PermissionsMissing: one or more are missing.
        ClusterError: a review failed.
    """
    missing = [p for p in required(mode, namespace) if not allowed(api, p, context=context)]
    if not missing:
        return
    names = ", ".join(p.describe() for p in missing)
    if mode == CLUSTER_WIDE:
        raise PermissionsMissing(
            f'workspace "{workspace}" uses cluster-wide authorization, which needs every verb on '
            f"every resource in all namespaces (kubectl auth can-i '*' '*' --all-namespaces); "
            f"your identity lacks: {names}",
            hint="a cluster administrator grants it (e.g. cluster-admin); otherwise the platform "
            "operator moves this workspace to authorization.mode: workspace-rbac",
        )
    grant = f"role {role}" if role else "the workspace role"
    raise PermissionsMissing(
        f'workspace "{workspace}" is missing {len(missing)} permission(s) in namespace '
        f'"{namespace}": {names}',
        hint=f"the TauWorkspace owner (your platform operator) grants them by binding {grant} "
        f'to your identity in namespace "{namespace}"; tau cannot work around RBAC',
    )


def check_workspace(api: Any, ws: WorkspaceView, *, context: str | None = None) -> None:
    """`check` for a workspace as read from the cluster: its authorization mode, namespace and
    role (what `tau workspace check` and `tau python doctor` ask).

    Raises:
        PermissionsMissing: one or more are missing.
        ClusterError: a review failed.
    """
    check(
        api,
        ws.authorization_mode,
        ws.namespace,
        workspace=ws.name,
        role=ws.role or None,
        context=context,
    )
