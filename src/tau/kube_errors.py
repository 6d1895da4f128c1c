"""Translate Kubernetes API failures into ClusterErrors with plain words, once, at the edge.

Pure (works on the exception object it is given). No traceback and no raw response body
reaches a user; messages say what was refused, where, and who can fix it.
"""

from __future__ import annotations

import json
from typing import Any

from tau.errors import ClusterError

#: The operator a missing resource type points at.
_OWNERS = {
    "RayJob": "KubeRay", "RayCluster": "KubeRay", "RayService": "KubeRay",
    "Workload": "Kueue", "LocalQueue": "Kueue", "ClusterQueue": "Kueue",
    "ResourceFlavor": "Kueue", "WorkloadPriorityClass": "Kueue",
    "TauWorkspace": "TauGrid", "TauCluster": "TauGrid",
}
_MISSING_TYPE = "the server could not find the requested resource"


def _status_body(exc: Any) -> dict[str, Any]:
    try:
        body = json.loads(getattr(exc, "body", "") or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def translate(exc: Any, *, kind: str, name: str | None = None, namespace: str | None = None,
              verb: str = "get") -> ClusterError:
    """A ClusterError for an `ApiException` raised while `verb`-ing `kind` `name`."""
    status = int(getattr(exc, "status", 0) or 0)
    body = _status_body(exc)
    message = str(body.get("message") or getattr(exc, "reason", "") or "").strip()
    where = f" in namespace {namespace}" if namespace else ""
    target = f"{kind} {name}" if name else kind
    if status == 401:
        return ClusterError(f"the cluster rejected tau's credentials (401 Unauthorized) while "
                            f"trying to {verb} {target}{where}", status=status,
                            hint="sign in again or refresh the workspace connection "
                                 "(`tau workspace connection`)")
    if status == 403:
        return ClusterError(f"not allowed to {verb} {target}{where} (403 Forbidden)",
                            status=status, hint="ask the platform team for access to this "
                            "workspace's namespace; tau cannot grant it")
    if status == 404:
        if message == _MISSING_TYPE or (body.get("details") is None and not name):
            owner = _OWNERS.get(kind)
            text = f"{kind} CRD not installed: is {owner} installed?" if owner else \
                f"the cluster does not serve {kind}"
            return ClusterError(text, status=status, hint="this is a platform setup issue: ask "
                                "the platform team to install it")
        return ClusterError(f"{target} not found{where}", status=status)
    if status == 409:
        return ClusterError(f"conflict on {target}{where}: {message or 'it changed or exists'}",
                            status=status)
    if status == 422:
        return ClusterError(f"the API server rejected {target}{where}: {message}", status=status)
    if status >= 500 or status == 0:
        return ClusterError(f"the Kubernetes API failed to {verb} {target}{where} "
                            f"({status or 'no response'}): {message or 'server error'}",
                            status=status or None, hint="retry later; if it persists, tell the "
                            "platform team")
    return ClusterError(f"{verb} {target}{where} failed ({status}): {message}", status=status)


def translate_transport(exc: BaseException, server: str) -> ClusterError:
    """A ClusterError for a connection failure or timeout talking to `server`."""
    text = str(exc)
    if "timed out" in text.lower() or "timeout" in type(exc).__name__.lower():
        return ClusterError(f"timed out talking to the Kubernetes API at {server}",
                            hint="check the network path to the cluster (VPN, firewall) and retry")
    return ClusterError(f"cannot reach the Kubernetes API at {server}",
                        hint="check that the cluster is up and the kubeconfig context points at it")
