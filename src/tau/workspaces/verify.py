"""Freshness of a verified workspace connection: trust it for 5 minutes, then revalidate, bounded.

Performs I/O (the connection state file; the cluster through `lookup` and `permissions`).
A verification reads the TauWorkspace (Ready, namespace, LocalQueue) and runs the RBAC checks of
the descriptor's authorization mode; its result is recorded with `verified_at`. Within
READINESS_TTL later commands use the recorded target without asking the cluster. After it, the
revalidation is bounded by $TAU_CONNECTION_REVALIDATION_TIMEOUT when no terminal is attached:
a kubeconfig exec plugin (kubelogin) that wants a sign-in prompt would otherwise hang forever.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from tau.errors import ClusterError, UsageError
from tau.workspaces.target import WorkspaceTarget, reconcile

if TYPE_CHECKING:
    from tau.connection.activate import Connection

READINESS_TTL = timedelta(minutes=5)
TIMEOUT_ENV = "TAU_CONNECTION_REVALIDATION_TIMEOUT"
DEFAULT_TIMEOUT = 30.0

T = TypeVar("T")


def revalidation_timeout(env: Mapping[str, str]) -> float:
    """Seconds from $TAU_CONNECTION_REVALIDATION_TIMEOUT (a duration like `45s`, or seconds).

    Raises:
        UsageError: the value is not a positive duration.
    """
    from tau.intent.duration import DurationError, parse_duration

    raw = env.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw) if raw.replace(".", "", 1).isdigit() else parse_duration(raw)
    except DurationError:
        seconds = 0.0
    if seconds <= 0:
        raise UsageError(
            f'${TIMEOUT_ENV} "{raw}" must be a positive duration',
            hint=f"e.g. {TIMEOUT_ENV}=45s (default {DEFAULT_TIMEOUT:g}s)",
        )
    return seconds


def fresh(verified_at: str, now: datetime) -> bool:
    """Whether a verification recorded at `verified_at` is still trusted at `now`."""
    when = _verified(verified_at)
    return when is not None and timedelta(0) <= now - when < READINESS_TTL


def trusted_during(verified_at: str) -> tuple[float, float] | None:
    """The epoch seconds [start, end) in which `fresh(verified_at, ...)` holds; None: never."""
    when = _verified(verified_at)
    if when is None or when.tzinfo is None:
        return None
    return when.timestamp(), (when + READINESS_TTL).timestamp()


def _verified(verified_at: str) -> datetime | None:
    try:
        return datetime.fromisoformat(verified_at.replace("Z", "+00:00"))
    except ValueError:
        return None


def bounded(work: Callable[[], T], seconds: float | None) -> T:
    """`work()`, or the sign-in timeout error when it takes longer than `seconds` (None: no bound).

    Raises:
        ClusterError: the timeout; whatever `work` raises otherwise.
    """
    if seconds is None:
        return work()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    # A daemon thread: a credential plugin blocked on a prompt must not keep tau alive.
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise ClusterError(
            f"revalidating the cached workspace connection timed out after {seconds:g}s, most "
            "likely because the Kubernetes credential provider needed a sign-in prompt and no "
            "terminal is attached; run a tau command in a terminal once to complete sign-in",
            hint=f"raise ${TIMEOUT_ENV} if the cluster is only slow",
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


def cached_target(connection: Connection, now: datetime) -> WorkspaceTarget | None:
    """The recorded target of the connection's own workspace while it is fresh, else None."""
    from tau.connection.state import STATE_SCHEMA

    state = connection.state
    if state is None or not state.namespace or not fresh(state.verified_at, now):
        return None
    if state.schema != STATE_SCHEMA:
        # Recorded before the workspace's spec.experiments was: verify again, or a cached
        # target would say the workspace names no store when it does.
        return None
    return WorkspaceTarget(
        state.namespace,
        state.queue or None,
        connection.workspace,
        state.service_account or None,
        state.priority or None,
        state.output_root or None,
        state.experiments_store or None,
        state.experiments_secret or None,
        state.offload_image or None,
    )


def resolve_verified(
    connection: Connection,
    api: Any,
    *,
    namespace: str | None,
    workspace: str | None,
    queue: str | None,
    trust: bool,
    env: Mapping[str, str],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> WorkspaceTarget:
    """The workspace target, verified (Ready, RBAC) at most READINESS_TTL ago.

    Only the descriptor's own workspace is cached; --workspace naming another one, or a direct
    context, is looked up every time as before.

    Raises:
        WorkspaceNotReady, PermissionsMissing, TrustRequired, UsageError, ClusterError.
    """
    from tau.workspaces.lookup import resolve_namespace_and_queue

    def lookup() -> WorkspaceTarget:
        return resolve_namespace_and_queue(
            connection, workspace=workspace, namespace=namespace, queue=queue, api=api, trust=trust
        )

    own = connection.discovery is not None and workspace in (None, connection.workspace)
    if not own:
        return lookup()
    cached = cached_target(connection, now())
    if cached is not None:
        return reconcile(cached, namespace=namespace, queue=queue)

    def verify() -> WorkspaceTarget:
        from tau.workspaces import permissions

        target = lookup()
        desc = connection.discovery.descriptor  # type: ignore[union-attr]
        permissions.check(
            api,
            desc.authorization_mode,
            target.namespace,
            workspace=desc.workspace,
            role=desc.required_role,
            context=connection.context,
        )
        return target

    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    target = bounded(verify, None if interactive else revalidation_timeout(env))
    _record(connection, target, now())
    return target


def _record(connection: Connection, target: WorkspaceTarget, now: datetime) -> None:
    """Write the verified target and time into the state file (re-read: the lookup may have
    pinned a new contract).
    """
    from tau.connection.state import STATE_SCHEMA, load_state, save_state

    path = connection.state_file
    state = load_state(path) if path is not None else None
    if path is None or state is None:
        return
    save_state(
        path,
        replace(
            state,
            priority=target.priority or "",
            output_root=target.output_root or "",
            experiments_store=target.experiments_store or "",
            experiments_secret=target.experiments_secret or "",
            offload_image=target.offload_image or "",
            schema=STATE_SCHEMA,
            verified_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ),
    )
