"""`tau serve status`: fetch the service object, then interpret it into a row (pure part).

Performs I/O in `fetch` only (the Kubernetes API through the client passed in); `row`,
`table`, `as_json` and `age` are pure and take the clock as an argument.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from tau.k8s import timefmt
from tau.serving.apply import RESOURCES, SERVE_KINDS

#: Columns per --kind, as the reference's kubectl custom-columns.
COLUMNS = {
    "rayservice": ("NAME", "STATUS", "READY", "AGE"),
    "deployment": ("NAME", "READY", "DESIRED", "AVAILABLE", "AGE"),
}
NONE = "<none>"


def fetch(
    api_client: Any, kind: str, namespace: str, name: str, *, context: str | None = None
) -> dict[str, Any]:
    """Read the RayService or Deployment `name`.

    Raises:
        ClusterError: it does not exist, or the API refused.
    """
    from tau.kube import resources

    resource = RESOURCES[SERVE_KINDS[kind]]
    return resources.get(api_client, resource, name, namespace=namespace, context=context)


def age(created: str | None, now: dt.datetime) -> str:
    """kubectl-style age: 45s, 7m, 5h, 3d."""
    return timefmt.age(created, now, missing=NONE)


def _rayservice_status(status: dict[str, Any]) -> str:
    """.status.serviceStatus; newer KubeRay leaves it empty and reports a Ready condition."""
    if status.get("serviceStatus"):
        return str(status["serviceStatus"])
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            return "Running" if condition.get("status") == "True" else "NotReady"
    return NONE


def row(obj: dict[str, Any], kind: str, now: dt.datetime) -> dict[str, Any]:
    """The status row of a fetched object, keyed by lower-case column name."""
    metadata, status = obj.get("metadata") or {}, obj.get("status") or {}
    out: dict[str, Any] = {
        "name": metadata.get("name", ""),
        "namespace": metadata.get("namespace", ""),
        "kind": kind,
    }
    if kind == "rayservice":
        out["status"] = _rayservice_status(status)
        out["ready"] = int(status.get("numServeEndpoints") or 0)
    else:
        out["ready"] = int(status.get("readyReplicas") or 0)
        out["desired"] = int((obj.get("spec") or {}).get("replicas") or 0)
        out["available"] = int(status.get("availableReplicas") or 0)
    out["age"] = age(metadata.get("creationTimestamp"), now)
    return out


def table(rows: list[dict[str, Any]], kind: str) -> str:
    """Left-aligned columns separated by three spaces, as kubectl prints them."""
    header = COLUMNS[kind]
    cells = [list(header)] + [[str(r[c.lower()]) for c in header] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    return "".join(
        "   ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in cells
    )


def as_json(obj: dict[str, Any], kind: str, now: dt.datetime) -> str:
    """The row plus the object's raw status, as indented JSON."""
    document = {**row(obj, kind, now), "raw": obj.get("status") or {}}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
