"""The report of `tau workspace connection`: what the descriptor says, and what activation found.

Pure (the caller loads the descriptor and the local state, and connects). Text, JSON and YAML
carry the same fields; the text view prints only the fields that are set.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tau.connection.activate import Connection
    from tau.connection.descriptor import Discovery
    from tau.connection.state import ConnectionState
    from tau.workspaces.target import WorkspaceTarget

_TEXT_FIELDS = (
    ("Workspace", "workspace"),
    ("Context", "context"),
    ("Access", "access"),
    ("Resource", "resourceID"),
    ("Tenant", "tenantID"),
    ("Authorization", "authorization"),
    ("System namespace", "systemNamespace"),
    ("Descriptor", "descriptor"),
    ("Digest", "digest"),
    ("Kubeconfig", "kubeconfig"),
    ("Status", "status"),
    ("Namespace", "namespace"),
    ("Queue", "queue"),
)


def offline(found: Discovery, state: ConnectionState | None) -> dict[str, Any]:
    """The descriptor's identity and whether this repository trusts it (no cluster access)."""
    desc = found.descriptor
    info: dict[str, Any] = {
        "descriptor": str(found.path),
        "digest": desc.digest,
        "workspace": desc.workspace,
        "context": desc.context_name,
        "systemNamespace": desc.system_namespace,
        "access": desc.access_method,
        "authorization": desc.authorization_mode,
        "trusted": bool(state and state.descriptor_digest == desc.digest),
    }
    if desc.aks:
        info["resourceID"], info["tenantID"] = desc.aks.resource_id, desc.aks.tenant_id
    return info


def connected(
    info: dict[str, Any], connection: Connection, target: WorkspaceTarget | None
) -> dict[str, Any]:
    """`info` after activation (and, with a target, the Ready workspace's namespace and queue)."""
    out = {
        **info,
        "trusted": connection.state is not None or info["trusted"],
        "kubeconfig": str(connection.kubeconfig),
        "context": connection.context,
    }
    if target is not None:
        out.update(status="Ready", namespace=target.namespace, queue=target.queue)
    return out


def render(info: dict[str, Any], output: str, *, live: bool) -> str:
    """The report as `output` (table, json or yaml), ending in a newline."""
    if output == "json":
        return json.dumps(info, indent=2, sort_keys=True) + "\n"
    if output == "yaml":
        import yaml

        return yaml.safe_dump(info, sort_keys=True)
    lines = ["Connected." if live else "Workspace connection configuration is valid."]
    lines += [f"{label + ':':<18}{info[key]}" for label, key in _TEXT_FIELDS if info.get(key)]
    trusted = "yes" if info["trusted"] else "no (run: tau workspace connection --trust)"
    lines.append(f"{'Trusted:':<18}{trusted}")
    if not live:
        lines.append("Cluster access was not checked.")
    return "\n".join(lines) + "\n"
