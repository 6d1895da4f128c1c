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
from tau.status.facts import conditions, is_true

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


def fetch_pods(
    api_client: Any, obj: dict[str, Any], namespace: str, *, context: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Deployment's pods (its own selector) and the namespace's probe-failure events."""
    from tau.k8s.kinds import EVENT, POD
    from tau.kube import resources

    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return [], []
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    pods = resources.list_items(
        api_client, POD, namespace=namespace, selector=selector, context=context
    )
    if all(_is_ready(p) for p in pods):
        return pods, []
    events = resources.list_items(
        api_client,
        EVENT,
        namespace=namespace,
        field_selector="involvedObject.kind=Pod,reason=Unhealthy",
        context=context,
    )
    return pods, events


def _is_ready(pod: dict[str, Any]) -> bool:
    return is_true(conditions(pod), "Ready")


def _live(pods: list[dict[str, Any]], *, ready: bool) -> list[dict[str, Any]]:
    """The pods, by name, that are (or are not) Ready, leaving out those being deleted."""
    return [
        pod
        for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name") or "")
        if _is_ready(pod) == ready and not (pod.get("metadata") or {}).get("deletionTimestamp")
    ]


def not_ready(pods: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per pod that is not Ready, saying why as the kubelet and scheduler do: a
    container waiting (CrashLoopBackOff with its restarts and last exit code, an image pull
    error), a pod Running whose readiness probe fails (the kubelet's latest Unhealthy event),
    or a pod the scheduler has not placed.
    """
    out = []
    for pod in _live(pods, ready=False):
        name = str((pod.get("metadata") or {}).get("name") or "")
        status = pod.get("status") or {}
        entry: dict[str, Any] = {
            "pod": name,
            "phase": status.get("phase") or "Pending",
            "reason": "",
            "message": "",
            "restarts": 0,
            "last_exit_code": None,
        }
        for container in status.get("containerStatuses") or []:
            entry["restarts"] += int(container.get("restartCount") or 0)
            last = (container.get("lastState") or {}).get("terminated") or {}
            if last.get("exitCode") is not None:
                entry["last_exit_code"] = int(last["exitCode"])
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") and not entry["reason"]:
                entry["reason"] = str(waiting["reason"])
                entry["message"] = " ".join(str(waiting.get("message") or "").split())
        if not entry["reason"]:
            entry["reason"], entry["message"] = _pod_reason(pod, name, events)
        out.append(entry)
    return out


#: How recent a ready pod's last restart must be to be worth a line: a server that crashes
#: without a readiness probe is Ready for the moments it runs between two back-offs, and
#: replica counts alone would call it healthy.
RECENT_RESTART = dt.timedelta(minutes=10)


def restarting(pods: list[dict[str, Any]], now: dt.datetime) -> list[dict[str, Any]]:
    """One entry per Ready pod with a container that ended within `RECENT_RESTART` of `now`
    and was restarted: its restarts, the last exit code and reason, and when it ended.
    """
    out = []
    for pod in _live(pods, ready=True):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        ended = [
            (finished, last)
            for container in statuses
            if int(container.get("restartCount") or 0) > 0
            for last in [(container.get("lastState") or {}).get("terminated") or {}]
            if (finished := timefmt.parse_timestamp(last.get("finishedAt")))
            and now - finished <= RECENT_RESTART
        ]
        if not ended:
            continue
        _, last = max(ended, key=lambda pair: pair[0])
        out.append(
            {
                "pod": str(pod["metadata"].get("name") or ""),
                "restarts": sum(int(c.get("restartCount") or 0) for c in statuses),
                "last_exit_code": last.get("exitCode"),
                "last_reason": str(last.get("reason") or ""),
                "finished_at": last["finishedAt"],
                "ago": age(last["finishedAt"], now),
            }
        )
    return out


def _pod_reason(pod: dict[str, Any], name: str, events: list[dict[str, Any]]) -> tuple[str, str]:
    """Why a pod with no waiting container is not Ready."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("reason") or "Unschedulable"), str(
                condition.get("message") or ""
            )
    if status.get("phase") != "Running":
        return str(status.get("phase") or "Pending"), ""
    failures = [e for e in events if (e.get("involvedObject") or {}).get("name") == name]
    if failures:
        latest = max(failures, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime")))
        return "NotReady", " ".join(str(latest.get("message") or "").split())
    return "NotReady", "running; its readiness probe has not passed yet"


def _restarts(e: dict[str, Any]) -> str:
    """The restarts and last exit code an entry knows of, as ", restarted N times, last exit C"."""
    said = ""
    if e["restarts"]:
        said += f", restarted {e['restarts']} time{'s' if e['restarts'] != 1 else ''}"
    if e["last_exit_code"] is not None:
        said += f", last exit {e['last_exit_code']}"
    return said


def problem_lines(entries: list[dict[str, Any]]) -> str:
    """The not-Ready pods under the table, one line each."""
    lines = []
    for e in entries:
        said = e["reason"] if e["reason"] != "NotReady" else "running, not ready"
        said += _restarts(e)
        if e["message"]:
            said += f": {e['message']}"
        lines.append(f"pod {e['pod']}: {said}\n")
    return "".join(lines)


def restart_lines(entries: list[dict[str, Any]]) -> str:
    """The Ready pods that restarted lately, one line each under the not-Ready ones."""
    lines = []
    for e in entries:
        said = "ready, but" + _restarts(e).removeprefix(",")
        if e["last_reason"]:
            said += f" ({e['last_reason']})"
        lines.append(f"pod {e['pod']}: {said} {e['ago']} ago\n")
    return "".join(lines)


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


def as_json(
    obj: dict[str, Any],
    kind: str,
    now: dt.datetime,
    problems: list[dict[str, Any]] | None = None,
    restarts: list[dict[str, Any]] | None = None,
) -> str:
    """The row plus the object's raw status (and, for a Deployment, its pods that are not
    Ready and the Ready ones that restarted lately), as indented JSON.
    """
    document = {**row(obj, kind, now), "raw": obj.get("status") or {}}
    if problems is not None:
        document["not_ready"] = problems
    if restarts is not None:
        document["restarting"] = restarts
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
