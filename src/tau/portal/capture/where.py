"""Which cluster and namespace the capture commands read. Performs I/O (the session).

The portal contract gives `-n/--namespace` the default `default` and reads `'*'` as all
namespaces, so the namespace is always the flag's (or its documented default), never picked up
silently from elsewhere; `--workspace NAME` asks for that workspace's namespace instead, through
the project's one session (`tau.session.connect`), which also provides the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau.errors import UsageError

#: The contract's default of `-n/--namespace` for `capture run-profile` and `autocapture`.
DEFAULT_NAMESPACE = "default"
#: `-n '*'`: every namespace.
ALL_NAMESPACES = "*"


@dataclass(frozen=True)
class Where:
    """The session and the namespace to read (None: all namespaces)."""

    session: Any
    namespace: str | None

    @property
    def label(self) -> str:
        return self.namespace or ALL_NAMESPACES


def check_namespace(namespace: str | None) -> None:
    """-n must name a namespace or be '*'; checked before any connection.

    Raises:
        UsageError: anything else.
    """
    from tau.session import check_namespace as check

    if namespace != ALL_NAMESPACES:
        check(namespace)


def connect(context: str | None, namespace: str | None, workspace: str | None) -> Where:
    """The session for --context, and the namespace of -n (or --workspace, or the default).

    Raises:
        UsageError: -n and --workspace disagree, or '*' is combined with --workspace.
        ClusterError: the kubeconfig, its context or the API failed.
    """
    from tau.session import connect as session_connect

    if workspace:
        if namespace == ALL_NAMESPACES:
            raise UsageError(f"--namespace '*' reads every namespace; drop --workspace {workspace}")
        session = session_connect(context, namespace, workspace)
        return Where(session, session.namespace)
    session = session_connect(context, lookup=False)
    chosen = namespace or DEFAULT_NAMESPACE
    return Where(session, None if chosen == ALL_NAMESPACES else chosen)
