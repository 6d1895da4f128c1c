"""Bodies of the discovery endpoints (``/version``, ``/api``, ``/apis``, group versions).

They are computed from the kind registry on every request, so a kind registered by a test shows
up in discovery immediately, as it does once a CRD becomes established on a real cluster.
"""

from __future__ import annotations

from typing import Any

from .kinds import KindRegistry, ResourceKind

VERSION_INFO: dict[str, Any] = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-tau-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def core_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def _versions_by_group(registry: KindRegistry) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for kind in registry.all():
        if kind.group and kind.version not in groups.setdefault(kind.group, []):
            groups[kind.group].append(kind.version)
    return groups


def group_list(registry: KindRegistry) -> dict[str, Any]:
    groups = _versions_by_group(registry)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(name, versions) for name, versions in sorted(groups.items())],
    }


def group(registry: KindRegistry, name: str) -> dict[str, Any] | None:
    versions = _versions_by_group(registry).get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(name, versions)}


def _resource_entries(kind: ResourceKind) -> list[dict[str, Any]]:
    entries = [
        {
            "name": kind.plural,
            "singularName": kind.kind.lower(),
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": _VERBS,
        }
    ]
    for sub in sorted(kind.subresources):
        verbs = ["get"] if sub == "log" else ["get", "patch", "update"]
        entries.append(
            {
                "name": f"{kind.plural}/{sub}",
                "singularName": "",
                "namespaced": kind.namespaced,
                "kind": kind.kind,
                "verbs": verbs,
            }
        )
    return entries


def resource_list(registry: KindRegistry, group_name: str, version: str) -> dict[str, Any] | None:
    kinds = [k for k in registry.all() if (k.group, k.version) == (group_name, version)]
    if not kinds:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": [entry for kind in kinds for entry in _resource_entries(kind)],
    }
