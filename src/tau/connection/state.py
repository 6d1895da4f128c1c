"""The local record of a confirmed (trusted) workspace connection, and what needs review.

Performs I/O (reads and writes `<config dir>/connections/*.json`); `review_reasons` is pure.
Trust is pinned per repository to the descriptor digest and to the cluster identity (API server
URL and CA fingerprint): if either changes, the user is asked again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.connection.descriptor import Discovery
from tau.connection.files import safe_name, short_hash, write_private
from tau.connection.kubeconfig import ClusterIdentity

STATE_SCHEMA = "tau.workspace.connection-state.v3"


@dataclass(frozen=True)
class ConnectionState:
    """What was confirmed for one repository's connection, and where its kubeconfig lives."""

    workspace: str
    access_method: str
    access_identity: str
    context_name: str
    system_namespace: str
    authorization_mode: str
    kubeconfig_path: str
    descriptor_path: str
    descriptor_digest: str
    repository_root: str
    cluster_server: str
    cluster_ca: str
    trusted_at: str
    # The workspace contract seen at the last successful verification (empty until then).
    namespace: str = ""
    queue: str = ""
    service_account: str = ""
    workspace_uid: str = ""
    # The rest of the workspace target, and when it and the RBAC checks last passed (RFC 3339):
    # within READINESS_TTL a command trusts them instead of asking the cluster again.
    priority: str = ""
    output_root: str = ""
    #: The workspace's spec.experiments (metrics offload), recorded since schema v3.
    experiments_store: str = ""
    experiments_secret: str = ""
    offload_image: str = ""
    verified_at: str = ""
    schema: str = field(default=STATE_SCHEMA)

    @property
    def identity(self) -> ClusterIdentity:
        return ClusterIdentity(self.cluster_server, self.cluster_ca)


def state_path(config_dir: Path, discovery: Discovery) -> Path:
    """`connections/<workspace>-<hash of identity and repository>.json` under the config dir."""
    desc = discovery.descriptor
    key = f"{desc.access_identity.lower()}\n{discovery.repository_root}"
    return config_dir / "connections" / f"{safe_name(desc.workspace)}-{short_hash(key)}.json"


def load_state(path: Path) -> ConnectionState | None:
    """The recorded state, or None when absent or unreadable (an unreadable record is re-asked)."""
    try:
        raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    known = {f.name for f in fields(ConnectionState)}
    try:
        return ConnectionState(**{k: v for k, v in raw.items() if k in known})
    except TypeError:
        return None


def save_state(path: Path, state: ConnectionState) -> None:
    """Write the state file atomically, 0600."""
    body = json.dumps(asdict(state), indent=2, sort_keys=True) + "\n"
    write_private(path, body.encode())


def new_state(
    discovery: Discovery,
    identity: ClusterIdentity,
    kubeconfig_path: Path,
    now: datetime | None = None,
) -> ConnectionState:
    """A freshly confirmed state for `discovery` on the cluster `identity`."""
    desc = discovery.descriptor
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    return ConnectionState(
        workspace=desc.workspace,
        access_method=desc.access_method,
        access_identity=desc.access_identity,
        context_name=desc.context_name,
        system_namespace=desc.system_namespace,
        authorization_mode=desc.authorization_mode,
        kubeconfig_path=str(kubeconfig_path),
        descriptor_path=str(discovery.path),
        descriptor_digest=desc.digest,
        repository_root=str(discovery.repository_root),
        cluster_server=identity.server,
        cluster_ca=identity.ca_fingerprint,
        trusted_at=stamp,
    )


def carry_contract(new: ConnectionState, old: ConnectionState | None) -> ConnectionState:
    """Keep the last verified workspace contract across a re-confirmation."""
    if old is None:
        return new
    return replace(
        new,
        namespace=old.namespace,
        queue=old.queue,
        service_account=old.service_account,
        workspace_uid=old.workspace_uid,
    )


def review_reasons(
    state: ConnectionState | None, discovery: Discovery, identity: ClusterIdentity | None
) -> list[str]:
    """Why this connection needs the user's confirmation; empty when it is already trusted. Pure.

    Args:
        state: the recorded state, or None on first use.
        discovery: the descriptor now on disk.
        identity: the cluster identity now seen, or None when it is not known yet (AKS access
            before credentials are fetched: the descriptor's resource ID is the identity then).
    """
    desc = discovery.descriptor
    if state is None:
        return [f'first use of workspace "{desc.workspace}" from this repository on this machine']
    reasons: list[str] = []
    if state.descriptor_digest != desc.digest:
        reasons.append(f"{discovery.path} changed since it was confirmed")
    if identity is not None and identity.server != state.cluster_server:
        reasons.append(
            f'the API server behind context "{desc.context_name}" changed from '
            f"{state.cluster_server} to {identity.server}"
        )
    elif identity is not None and identity.ca_fingerprint != state.cluster_ca:
        reasons.append(
            f'the CA of the cluster behind context "{desc.context_name}" changed from '
            f"{state.cluster_ca} to {identity.ca_fingerprint}"
        )
    return reasons


def contract_changes(state: ConnectionState, current: dict[str, str]) -> list[str]:
    """Which pinned workspace facts (uid, namespace, queue, service account) changed. Pure."""
    changed = []
    for key in ("workspace_uid", "namespace", "queue", "service_account"):
        before, after = getattr(state, key), current.get(key, "")
        if before and before != after:
            changed.append(f'{key.replace("_", " ")} changed from "{before}" to "{after or "-"}"')
    return changed
