"""Ask the API server what the caller may do: SelfSubjectAccessReview (`kubectl auth can-i`).

Performs I/O (one create call per question; nothing is stored by the server).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau.k8s.kinds import ResourceType
from tau.kube.client import DEFAULT_TIMEOUT
from tau.kube.errors import api_call

SELF_SUBJECT_ACCESS_REVIEW = ResourceType(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview"
)


@dataclass(frozen=True)
class Permission:
    """One `verb` on `resource[/subresource]` of API `group`, in `namespace` (None: all)."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str | None = None

    def describe(self) -> str:
        """As kubectl spells it: `get pods/log`, `create jobs.batch`, `* *`."""
        what = self.resource + (f".{self.group}" if self.group and self.group != "*" else "")
        return f"{self.verb} {what}{'/' + self.subresource if self.subresource else ''}"


def allowed(api: Any, permission: Permission, *, context: str | None = None) -> bool:
    """Whether the caller holds `permission`.

    Raises:
        ClusterError: the review itself failed (transport, 401, ...).
    """
    from tau.kube import rest
    from tau.kube.raw import decode

    attributes: dict[str, str] = {"verb": permission.verb, "resource": permission.resource}
    if permission.group:
        attributes["group"] = permission.group
    if permission.subresource:
        attributes["subresource"] = permission.subresource
    if permission.namespace:
        attributes["namespace"] = permission.namespace
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    with api_call("create", SELF_SUBJECT_ACCESS_REVIEW, context=context):
        url = rest.path(SELF_SUBJECT_ACCESS_REVIEW)
        response = rest.request(api, "POST", url, body=body, timeout=DEFAULT_TIMEOUT)
    return bool((decode(response).get("status") or {}).get("allowed"))
