"""The one way a command reaches a cluster: connection, API client and workspace, composed once.

Performs I/O (a terminal prompt, tau's dedicated kubeconfig, the TauWorkspace). Every root that
touches a cluster (`run`, `workspace`, `serve`, `data --registry pvc`, and new ones) calls
`connect` and nothing else: no other module builds a client, reads `$TAU_CONTEXT` or picks a
namespace. The client only ever reads tau's own kubeconfig copy (one context cut out of the
user's), so a refreshed token can never be written back into the user's kubeconfig. There is
deliberately no default namespace: submitting and observing must agree on it, and a silent
default once made runs invisible to `status`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tau.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from tau.connection.activate import Confirm, Connection
    from tau.kube.client import ApiClient
    from tau.workspaces.target import WorkspaceTarget

#: The one help text of every --context flag.
CONTEXT_HELP = "kubectl context (default: $TAU_CONTEXT or current)."


def context_name(flag: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """--context, else $TAU_CONTEXT, else None."""
    from tau.connection.context import env_context

    return flag or env_context(os.environ if env is None else env)


def confirm_on_tty() -> Callable[[str], bool] | None:
    """A yes/no prompt when stdin and stderr are a terminal; None otherwise (no prompt)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def confirm(question: str) -> bool:
        sys.stderr.write(question)
        sys.stderr.flush()
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    return confirm


@dataclass(frozen=True)
class Session:
    """A connected cluster: which context, through which client, for which workspace.

    Attributes:
        connection: the activated connection (tau's dedicated kubeconfig and context).
        api: the API client built from that kubeconfig only; pass it to `tau.kube`.
        target: the resolved workspace (namespace, queue, service account, ...), or None when
            the caller skipped the workspace lookup (`lookup=False`).
    """

    connection: Connection
    api: ApiClient
    target: WorkspaceTarget | None

    @property
    def context(self) -> str:
        """The kubeconfig context name."""
        return self.connection.context

    @property
    def system_namespace(self) -> str:
        """Where TauWorkspaces live on this cluster."""
        return self.connection.system_namespace

    @property
    def namespace(self) -> str:
        """The namespace workloads go to.

        Raises:
            UsageError: no namespace was resolved (the lookup was skipped and none was given).
        """
        if self.target is None:
            from tau.workspaces.target import NO_NAMESPACE

            raise UsageError(NO_NAMESPACE)
        return self.target.namespace

    def resolve(
        self,
        namespace: str | None = None,
        workspace: str | None = None,
        *,
        queue: str | None = None,
        trust: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> Session:
        """This session with its workspace target looked up (what `connect(lookup=True)` does).

        The descriptor's own workspace is verified (Ready, RBAC checks) at most every
        5 minutes; see `tau.workspaces.verify`.

        Raises:
            UsageError: no namespace resolved, or a conflict with the workspace's.
            WorkspaceNotReady, TrustRequired, PermissionsMissing, ClusterError: from the
                workspace lookup and verification.
        """
        from tau.workspaces.verify import resolve_verified

        target = resolve_verified(
            self.connection,
            self.api,
            workspace=workspace,
            namespace=namespace,
            queue=queue,
            trust=trust,
            env=os.environ if env is None else env,
        )
        return replace(self, target=target)


def connect(
    context: str | None = None,
    namespace: str | None = None,
    workspace: str | None = None,
    *,
    queue: str | None = None,
    lookup: bool = True,
    descriptor: bool = True,
    trust: bool = False,
    start: Path | None = None,
    env: Mapping[str, str] | None = None,
    confirm: Confirm | bool | None = True,
    descriptor_file: Path | None = None,
) -> Session:
    """Connect to the cluster a command talks to. The signature is stable; add keywords only.

    Args:
        context: the --context flag (None: $TAU_CONTEXT, else the repository connection, else
            the user's current context).
        namespace: the --namespace flag (or the config's policy.namespace); with no workspace
            named it is used as is, otherwise it must agree with the workspace's.
        workspace: the --workspace flag (or policy.workspace); default: the descriptor's,
            else the cluster's primary workspace.
        queue: policy.queue; must agree with the workspace's LocalQueue (`auto` always does).
        lookup: resolve the workspace target (namespace, queue, service account). False for
            commands that need only the client (`tau workspace list`, `tau serve`).
        descriptor: activate tau/workspace.connection.yaml when found. False for `tau serve`,
            which uses --context/$TAU_CONTEXT or the user's current context directly.
        trust: the user confirmed the connection up front (`tau workspace connection --trust`).
        start: the directory descriptor discovery starts from (default: cwd).
        env: the environment (default: os.environ).
        confirm: True asks on a terminal when one is attached; None/False never asks (a
            needed review is then `TrustRequired`); or a callable asking the question.
        descriptor_file: the descriptor to activate instead of discovering one from `start`:
            a monorepo project's `connection` (tau.projects.yaml).

    Returns:
        The session; `session.target` is None exactly when `lookup` is False.

    Raises:
        UsageError: outside a Git repository without --context/--namespace (lookup only); no
            namespace resolved; conflicts with the workspace; an unconfirmed connection.
        ClusterError: the kubeconfig, its context or the API failed.
        TrustRequired, WorkspaceNotReady: from the connection and workspace layers.
    """
    from tau.connection.activate import activate, direct, require_explicit_outside_repo
    from tau.kube.client import api_client

    env = os.environ if env is None else env
    check_namespace(namespace)
    start = start or Path.cwd()
    asker = confirm_on_tty() if confirm is True else (confirm or None)
    explicit = context_name(context, env)
    if lookup:
        require_explicit_outside_repo(start, explicit, namespace, env)
    if descriptor:
        connection = activate(
            start,
            context=context,
            env=env,
            confirm=asker,
            trust=trust,
            tau_version=_version(),
            descriptor_file=descriptor_file,
        )
    else:
        source = "flag" if context else "env" if explicit else "current"
        connection = direct(_known_context(context, env), source, env)
    session = Session(connection, api_client(connection.kubeconfig, connection.context), None)
    if lookup:
        return session.resolve(namespace, workspace, queue=queue, trust=trust, env=env)
    return session


def check_namespace(namespace: str | None) -> None:
    """A namespace that cannot exist is bad input, said before anything connects.

    Raises:
        UsageError: `namespace` is not a DNS-1123 label.
    """
    from tau.k8s.names import DNS_1123_LABEL

    if namespace is not None and (len(namespace) > 63 or not DNS_1123_LABEL.match(namespace)):
        raise UsageError(
            f'namespace "{namespace}" is not a valid namespace name',
            hint="a namespace is a DNS-1123 label: lower-case letters, digits and inner '-', "
            "at most 63 characters (check -n/--namespace)",
        )


def _version() -> str:
    """This tau's version, read at call time (a descriptor may require a newer one)."""
    import tau

    return tau.__version__


def _known_context(flag: str | None, env: Mapping[str, str]) -> str:
    """The direct context (--context, $TAU_CONTEXT, else current), checked to exist.

    Raises:
        ClusterError: the kubeconfig cannot be read or has no such context.
    """
    from tau.connection import kubeconfig as kc
    from tau.connection.context import CONTEXT_ENV, env_context

    paths = kc.user_kubeconfig_paths(env)
    where = os.pathsep.join(str(p) for p in paths)
    try:
        merged = kc.load_merged(paths)
    except UsageError as exc:
        raise ClusterError(exc.message, hint="check $KUBECONFIG, or pass --context NAME") from None
    name = context_name(flag, env) or merged["current-context"]
    origin = "--context" if flag else "the current context"
    if not flag and env_context(env):
        origin = f"${CONTEXT_ENV}"
    if name not in merged["contexts"]:
        raise ClusterError(
            f'kubeconfig context "{name}" ({origin}) is not in {where}',
            hint=f"available contexts: {', '.join(sorted(merged['contexts'])) or 'none'}",
        )
    return str(name)
