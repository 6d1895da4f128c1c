"""`tau run list`: Tau-managed Jobs and RayJobs of a namespace, newest first.

Pure, except `fetch_runs` (two list calls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau.k8s import meta
from tau.k8s.timefmt import age

# Run history beyond what is live on the cluster (Kusto) is not in scope, so it is always live-only.
HISTORY_STATE = "live-only"

_PREFIX = meta.GROUP + "/"
SOURCE_TAU = "tau"
SOURCE_EXTERNAL = "external"
#: Default of --history-limit: how many rows a listing shows at most.
HISTORY_LIMIT = 200


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
    #: "tau" for runs tau created; "external" for Kueue-managed workloads it did not.
    source: str = SOURCE_TAU


def is_managed(obj: dict[str, Any]) -> bool:
    """Tau-managed means: carries any label with the tau prefix."""
    return any(k.startswith(_PREFIX) for k in (obj.get("metadata", {}).get("labels") or {}))


def is_kueue_managed(obj: dict[str, Any]) -> bool:
    """Queued through Kueue: carries the LocalQueue label, or Kueue manages it (MultiKueue)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    managed_by = str((obj.get("spec") or {}).get("managedBy") or "")
    return meta.KUEUE_QUEUE_NAME in labels or managed_by.startswith(meta.KUEUE_MANAGED_BY_PREFIX)


def source_of(obj: dict[str, Any], *, include_external: bool) -> str | None:
    """The SOURCE of a listed object, or None when it is not listed."""
    if is_managed(obj):
        return SOURCE_TAU
    if include_external and is_kueue_managed(obj):
        return SOURCE_EXTERNAL
    return None


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


def rows(
    jobs: list[dict[str, Any]],
    rayjobs: list[dict[str, Any]],
    now: datetime,
    *,
    include_external: bool = False,
) -> list[RunRow]:
    """Rows of the managed runs (plus Kueue-managed external ones when asked), newest first;
    Jobs a RayJob owns (its submitter) are dropped.
    """
    out = []
    for kind, items, status in (("Job", jobs, job_status), ("RayJob", rayjobs, rayjob_status)):
        for obj in items:
            md = obj.get("metadata") or {}
            owners = [o.get("kind") for o in md.get("ownerReferences") or []]
            source = source_of(obj, include_external=include_external)
            if source is None or (kind == "Job" and "RayJob" in owners):
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
                    source,
                )
            )
    return sorted(out, key=lambda r: (r.created, r.name), reverse=True)


def table(found: list[RunRow], namespace: str, *, include_external: bool = False) -> str:
    """The History line, then the NAME KIND STATUS AGE table (SOURCE with --include-external)."""
    history = f"History: {HISTORY_STATE}\n"
    if not found:
        return history + f'No jobs found in namespace "{namespace}"\n'
    header: tuple[str, ...] = ("NAME", "KIND", "STATUS", "AGE")
    body: list[tuple[str, ...]] = [(r.name, r.kind, r.status, r.age) for r in found]
    if include_external:
        header += ("SOURCE",)
        body = [(*row, r.source) for row, r in zip(body, found, strict=True)]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *body)
    ]
    return history + "\n".join(lines) + "\n"


def limit(found: list[RunRow], history_limit: int) -> tuple[list[RunRow], str | None]:
    """The newest `history_limit` rows, and a note naming what was left out (or None)."""
    if len(found) <= history_limit:
        return found, None
    return found[:history_limit], (
        f"showing the newest {history_limit} of {len(found)} runs; "
        "raise --history-limit to see more"
    )


def as_json(found: list[RunRow], namespace: str, *, diagnostic: str | None = None) -> str:
    """The JSON listing; `diagnostic` says what the history limit left out."""
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
            "source": r.source,
        }
        for r in found
    ]
    doc: dict[str, Any] = {
        "namespace": namespace,
        "total": len(runs),
        "runs": runs,
        "historyState": HISTORY_STATE,
    }
    if diagnostic:
        doc["historyDiagnostic"] = diagnostic
    return json.dumps(doc, indent=2) + "\n"


def fetch_runs(
    api_client: Any, namespace: str, now: datetime, *, include_external: bool = False
) -> list[RunRow]:
    """List Jobs and RayJobs (a cluster without KubeRay simply has no RayJobs)."""
    from tau.k8s.kinds import JOB, RAYJOB
    from tau.kube import resources

    job_items = resources.list_items(api_client, JOB, namespace=namespace)
    # A cluster without KubeRay simply has no RayJobs.
    ray_items = resources.list_items(api_client, RAYJOB, namespace=namespace, missing_ok=True)
    return rows(job_items, ray_items, now, include_external=include_external)
