"""Parsing of resource URLs into the parts the API server dispatches on.

``/api/v1/...`` is the core group ("" group), ``/apis/{group}/{version}/...`` every other group.
Within a group version, ``namespaces/{ns}/{plural}[/{name}[/{subresource}]]`` addresses namespaced
objects and ``{plural}[/{name}[/{subresource}]]`` cluster-scoped ones or a cross-namespace list.
"""

from __future__ import annotations

from dataclasses import dataclass

# Subresources of the Namespace object itself, which would otherwise parse as a plural name.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class Route:
    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_route(path: str) -> Route | None:
    """The resource a path addresses, or ``None`` when the path is not a resource URL."""
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) >= 3 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 4 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    is_namespace_subresource = len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES
    if rest[0] == "namespaces" and len(rest) >= 3 and not is_namespace_subresource:
        namespace, rest = rest[1], rest[2:]
    else:
        namespace = None
    if len(rest) > 3:
        return None
    return Route(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        subresource=rest[2] if len(rest) > 2 else None,
    )
