"""How run commands reach a cluster: activate the connection, then resolve namespace and queue.

Performs I/O (terminal prompt, the dedicated kubeconfig, the TauWorkspace). There is
deliberately no default namespace: submitting and observing must agree on it, and a silent
default once made runs invisible to `status`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def confirm_on_tty() -> Callable[[str], bool] | None:
    """A yes/no prompt when stdin and stderr are a terminal; None otherwise (no prompt)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def confirm(question: str) -> bool:
        print(question, end="", file=sys.stderr, flush=True)
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    return confirm


def connect(
    *,
    context: str | None,
    namespace: str | None,
    workspace: str | None = None,
    queue: str | None = None,
) -> tuple[Any, Any]:
    """(ApiClient, WorkspaceTarget) for a run command.

    An explicit context (--context or $TAU_CONTEXT) is used directly; otherwise the
    repository's workspace connection is activated. The namespace and queue come from the
    Ready TauWorkspace, or from --namespace alone when no workspace is named.

    Raises:
        UsageError: outside a repository without --context/--namespace; no namespace.
        ClusterError, TrustRequired, WorkspaceNotReady: from the layers below.
    """
    from tau.connection.activate import activate, require_explicit_outside_repo
    from tau.kube.client import client_for
    from tau.workspaces.lookup import resolve_namespace_and_queue

    cwd = Path.cwd()
    require_explicit_outside_repo(cwd, context, namespace, os.environ)
    connection = activate(cwd, context=context, confirm=confirm_on_tty())
    api = client_for(connection)
    target = resolve_namespace_and_queue(
        connection, workspace=workspace, namespace=namespace, queue=queue, api=api
    )
    return api, target
