"""`tau run list`: Tau-managed Jobs and RayJobs of a namespace, newest first.

Pure, except `fetch_runs` (two list calls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau.k8s.timefmt import age
from tau.render import meta

_PREFIX = meta.GROUP + "/"


@dataclass(frozen=True)
class RunRow:
    name: str
    kind: str
    status: str
    created: str
    age: str
    queue: str
    namespace: str
    run_id: str


def is_managed(obj: dict[str, Any]) -> bool:
    """Tau-managed means: carries any label with the tau prefix."""
    return any(k.startswith(_PREFIX) for k in (obj.get("metadata", {}).get("labels") or {}))


def job_status(job: dict[str, Any]) -> str:
    """First true condition of Complete/Failed/Suspended, else Running or Pending."""
    status = job.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    for kind in ("Complete", "Failed", "Suspended"):
        if conditions.get(kind) == "True":
            return kind
    if job.get("spec", {}).get("suspend") and not status.get("active"):
        return "Suspended"
    return "Running" if (status.get("active") or 0) > 0 else "Pending"


def rayjob_status(rayjob: dict[str, Any]) -> str:
    status = rayjob.get("status") or {}
    return status.get("jobDeploymentStatus") or status.get("jobStatus") or "Pending"


def rows(jobs: list[dict[str, Any]], rayjobs: list[dict[str, Any]], now: datetime) -> list[RunRow]:
    """Rows of the managed runs; Jobs a RayJob owns (its submitter) are dropped."""
    out = []
    for kind, items, status in (("Job", jobs, job_status), ("RayJob", rayjobs, rayjob_status)):
        for obj in items:
            md = obj.get("metadata") or {}
            owners = [o.get("kind") for o in md.get("ownerReferences") or []]
            if not is_managed(obj) or (kind == "Job" and "RayJob" in owners):
                continue
            labels = md.get("labels") or {}
            created = str(md.get("creationTimestamp") or "")
            out.append(
                RunRow(
                    md.get("name", ""),
                    kind,
                    status(obj),
                    created,
                    age(created, now),
                    labels.get(meta.KUEUE_QUEUE_NAME, ""),
                    md.get("namespace", ""),
                    labels.get(meta.LABEL_RUN_ID, ""),
                )
            )
    return sorted(out, key=lambda r: (r.created, r.name), reverse=True)


def table(found: list[RunRow], namespace: str) -> str:
    if not found:
        return f'No jobs found in namespace "{namespace}"\n'
    header = ("NAME", "KIND", "STATUS", "AGE")
    body = [(r.name, r.kind, r.status, r.age) for r in found]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *body)
    ]
    return "\n".join(lines) + "\n"


def as_json(found: list[RunRow], namespace: str) -> str:
    runs = [
        {
            "name": r.name,
            "kind": r.kind,
            "status": r.status,
            "created": r.created,
            "age": r.age,
            "runId": r.run_id,
            "queue": r.queue,
            "namespace": r.namespace,
        }
        for r in found
    ]
    return (
        json.dumps(
            {"namespace": namespace, "total": len(runs), "runs": runs, "historyState": "live-only"},
            indent=2,
        )
        + "\n"
    )


def fetch_runs(api_client: Any, namespace: str, now: datetime) -> list[RunRow]:
    """List Jobs and RayJobs (a cluster without KubeRay simply has no RayJobs)."""
    from kubernetes import client

    from tau.errors import ClusterError
    from tau.kube.errors import api_call
    from tau.kube.raw import decode
    from tau.kube.resources import JOB, RAYJOB

    with api_call("list", JOB, namespace=namespace):
        jobs = client.BatchV1Api(api_client).list_namespaced_job(namespace, _preload_content=False)
    job_items = decode(jobs).get("items", [])
    ray_items: list[dict[str, Any]] = []
    try:
        with api_call("list", RAYJOB, namespace=namespace):
            rayjobs = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
                RAYJOB.group, RAYJOB.version, namespace, RAYJOB.plural, _preload_content=False
            )
        ray_items = decode(rayjobs).get("items", [])
    except ClusterError as exc:
        if exc.status != 404:  # a cluster without KubeRay simply has no RayJobs
            raise
    return rows(job_items, ray_items, now)
