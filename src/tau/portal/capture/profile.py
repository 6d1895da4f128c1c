"""Run evidence from the cluster: a run's profile (§4.3) and its lifecycle events (§4.4).

Pure. Input is the status layer's Snapshot (what `tau run status` fetches) and its
interpreted state; output is store records. Label and annotation keys come from the project's
vocabulary (`tau.k8s.meta`), the state from the status interpreter, never re-derived here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tau.k8s import meta
from tau.status.facts import conditions, metadata, name_of, status_of
from tau.status.model import State
from tau.status.snapshot import Snapshot

Row = dict[str, Any]

#: Interpreted state → store run state.
STORE_STATE = {
    State.QUEUED: "pending",
    State.STARTING: "pending",
    State.RUNNING: "running",
    State.SUCCEEDED: "succeeded",
    State.FAILED: "failed",
}
#: Context values the status layer prints for missing data; never stored.
_PLACEHOLDERS = ("-", "not collected", "not declared", "not assigned", "not priced")


@dataclass(frozen=True)
class Profile:
    """One run as the store records it: run fields, run-context fields and events."""

    run: Row
    context: Row
    events: list[Row] = field(default_factory=list)


def _keep(value: Any) -> Any:
    if value is None:
        return None
    text = str(value).strip()
    if not text or any(text == p or text.startswith(p + " ") or text.startswith(p + "…")
                       for p in _PLACEHOLDERS):  # fmt: skip
        return None
    return value


def _csv(values: list[str]) -> str | None:
    unique = sorted({v for v in values if v})
    return ",".join(unique) or None


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    a = datetime.fromisoformat(start.replace("Z", "+00:00"))
    b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    return max((b - a).total_seconds(), 0.0)


def _true_since(obj: Mapping[str, Any] | None, kind: str) -> str | None:
    cond = conditions(obj).get(kind)
    if cond is not None and str(cond.get("status")) == "True":
        return str(cond.get("lastTransitionTime") or "") or None
    return None


def primary(snapshot: Snapshot) -> tuple[str, Mapping[str, Any]] | None:
    """The run object: the RayJob when there is one, else the Job."""
    if snapshot.rayjob is not None:
        return "RayJob", snapshot.rayjob
    if snapshot.job is not None:
        return "Job", snapshot.job
    return None


def run_id_of(obj: Mapping[str, Any]) -> str:
    labels = metadata(obj).get("labels") or {}
    return str(labels.get(meta.LABEL_RUN_ID) or name_of(dict(obj)))


def profile_of(snapshot: Snapshot, state: State, *, cluster: str | None = None) -> Profile | None:
    """The run and run-context records of a fetched run; None when nothing was found."""
    found = primary(snapshot)
    if found is None or state not in STORE_STATE:
        return None
    kind, obj = found
    md = metadata(obj)
    labels = md.get("labels") or {}
    notes = md.get("annotations") or {}
    status = status_of(obj)
    run_id = run_id_of(obj)
    created = md.get("creationTimestamp")
    started = status.get("startTime")
    completed = (
        status.get("completionTime")
        or status.get("endTime")
        or _true_since(obj, "Failed")
        or _true_since(obj, "Complete")
    )
    run = {
        "run_id": run_id,
        "state": STORE_STATE[state],
        "created_at": created,
        "started_at": started,
        "completed_at": completed if STORE_STATE[state] in ("succeeded", "failed") else None,
        "config_hash": _keep(notes.get(meta.ANNOTATION_CONFIG_HASH)),
        "image_digest": _keep(notes.get(meta.ANNOTATION_IMAGE_DIGEST)),
        "result_uri": _keep(notes.get(meta.ANNOTATION_RESULT_PATH)),
    }
    workloads = list(snapshot.workloads)
    admitted = [w for w in workloads if _true_since(w, "Admitted") or status_of(w).get("admission")]
    admitted_at = min((_true_since(w, "Admitted") or "" for w in admitted), default="") or None
    gpu_count = notes.get(meta.ANNOTATION_GPU_COUNT)
    context = {
        "run_id": run_id,
        "cluster": cluster,
        "namespace": notes.get(meta.ANNOTATION_NAMESPACE) or md.get("namespace"),
        "profile": _keep(labels.get(meta.LABEL_PROFILE)),
        "gpu_class": _keep(labels.get(meta.LABEL_GPU_CLASS)),
        "local_queue": _keep(
            labels.get(meta.KUEUE_QUEUE_NAME)
            or next((w.get("spec", {}).get("queueName") for w in workloads), None)
        ),
        "cluster_queue": _keep(
            next((status_of(w).get("admission", {}).get("clusterQueue") for w in admitted), None)
            or notes.get(meta.ANNOTATION_CLUSTER_QUEUE)
        ),
        "kueue_workload": _csv([name_of(dict(w)) for w in workloads]),
        "pod_uid": _csv([str(metadata(p).get("uid") or "") for p in snapshot.pods]),
        "node_names": _csv(
            [str((p.get("spec") or {}).get("nodeName") or "") for p in snapshot.pods]
        ),
        "resource_claims": _csv([name_of(dict(c)) for c in snapshot.resource_claims]),
        "mounts": _keep(notes.get(meta.ANNOTATION_STORAGE_MOUNTS)),
        "gpu_count": int(str(gpu_count)) if str(gpu_count or "").isdigit() else None,
        "queue_wait_seconds": _seconds_between(created, admitted_at),
    }
    if kind == "RayJob":
        context["ray_job"] = name_of(dict(obj))
    return Profile(run, context, list(_events(snapshot, kind, obj, run_id)))


def _event(run_id: str, time: str | None, type_: str, source: str, severity: str,
           message: str, payload: Mapping[str, Any],
           about: tuple[str, ...] = ()) -> Row:  # fmt: skip
    """One event row; its id hashes what makes it this event.

    `about` names the object a Kubernetes Event is about: its message alone does not (every pod
    of a run gets "Started container trainer" or "Pulling image ..." in the same second), and
    two such events must stay two rows, not one id with two payloads (a write conflict).
    """
    identity = json.dumps([run_id, type_, source, time, message, *about], separators=(",", ":"))
    return {
        "event_id": "event-" + hashlib.sha256(identity.encode()).hexdigest()[:16],
        "run_id": run_id,
        "time": time,
        "type": type_,
        "source": source,
        "severity": severity,
        "message": message,
        "payload": json.dumps(dict(payload), sort_keys=True),
    }


def _events(snapshot: Snapshot, kind: str, obj: Mapping[str, Any], run_id: str) -> Iterator[Row]:
    ns = snapshot.namespace
    name = name_of(dict(obj))
    md = metadata(obj)
    status = status_of(obj)
    ref = {"kind": kind, "namespace": ns, "name": name}
    yield _event(run_id, md.get("creationTimestamp"), "submitted", "kubernetes/job", "info",
                 f"Job {ns}/{name} was submitted", ref)  # fmt: skip
    if status.get("startTime"):
        yield _event(run_id, status.get("startTime"), "running", "kubernetes/job", "info",
                     f"Job {ns}/{name} started running", ref)  # fmt: skip
    failed = _true_since(obj, "Failed") or (
        status.get("endTime") if status.get("jobStatus") == "FAILED" else None
    )
    done = _true_since(obj, "Complete") or (
        status.get("endTime") if status.get("jobStatus") == "SUCCEEDED" else None
    )
    if failed:
        yield _event(run_id, failed, "failed", "kubernetes/job", "error",
                     f"Job {ns}/{name} failed", ref)  # fmt: skip
    elif done:
        yield _event(run_id, done, "succeeded", "kubernetes/job", "info",
                     f"Job {ns}/{name} succeeded", ref)  # fmt: skip
    for w in snapshot.workloads:
        wname = name_of(dict(w))
        wref = {"kind": "Workload", "namespace": ns, "name": wname}
        admitted = _true_since(w, "Admitted")
        if admitted:
            queue = (w.get("spec") or {}).get("queueName") or "-"
            yield _event(run_id, admitted, "kueue-admitted", "kueue/workload", "info",
                         f"Workload {wname} was admitted to queue {queue}", wref)  # fmt: skip
        finished = _true_since(w, "Finished")
        if finished:
            yield _event(run_id, finished, "kueue-finished", "kueue/workload", "info",
                         f"Workload {wname} finished", wref)  # fmt: skip
    for p in snapshot.pods:
        pname = name_of(dict(p))
        pref = {"kind": "Pod", "namespace": ns, "name": pname}
        node = (p.get("spec") or {}).get("nodeName")
        scheduled = _true_since(p, "PodScheduled")
        if node and scheduled:
            yield _event(run_id, scheduled, "pod-scheduled", "kubernetes/pod", "info",
                         f"Pod {pname} scheduled on {node}", pref)  # fmt: skip
        pstatus = status_of(p)
        if pstatus.get("phase") == "Failed":
            why = pstatus.get("reason") or pstatus.get("phase")
            when = _true_since(p, "Ready") or pstatus.get("startTime")
            yield _event(run_id, when, "pod-failed", "kubernetes/pod", "warning",
                         f"Pod {pname} failed: {why}", pref)  # fmt: skip
    for c in snapshot.resource_claims:
        cname = name_of(dict(c))
        yield _event(run_id, metadata(c).get("creationTimestamp"), "resource-claim-observed",
                     "kubernetes/resourceclaim", "info", f"ResourceClaim {cname} observed",
                     {"kind": "ResourceClaim", "namespace": ns, "name": cname})  # fmt: skip
    for e in snapshot.events:
        source = (
            (e.get("source") or {}).get("component")
            or e.get("reportingComponent")
            or "kubernetes/event"
        )
        when = e.get("lastTimestamp") or e.get("eventTime") or metadata(e).get("creationTimestamp")
        involved = e.get("involvedObject") or {}
        yield _event(
            run_id, when, "kubernetes-event", str(source),
            "warning" if e.get("type") == "Warning" else "info", str(e.get("message") or ""),
            {"reason": e.get("reason"), "object": involved.get("name"),
             "kind": involved.get("kind")},
            about=(str(involved.get("kind") or ""), str(involved.get("name") or "")),
        )  # fmt: skip
