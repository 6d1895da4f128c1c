"""Kubernetes Events that record a run's retry attempts, and reading them back.

Performs I/O (core/v1 Events). Attempts live in the CLI process while it retries; the
Events are what outlives it, so `tau run history` reads them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import EVENT
from tau.runs.retry import EVENT_REPORTER

RETRY_REASONS = ("RayJobAttempt", "RayJobRetriesExhausted", "RayJobRetrySucceeded")


def event_body(
    namespace: str, name: str, reason: str, message: str, involved: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """A core/v1 Event about the run's workload."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = involved.get("metadata", {})
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": meta.get("name"),
            "namespace": namespace,
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "action": "Retry",
        "source": {"component": EVENT_REPORTER},
        "reportingComponent": EVENT_REPORTER,
        "reportingInstance": EVENT_REPORTER,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def emit(api_client: Any, body: dict[str, Any]) -> None:
    """Create the Event; an existing one of the same name (a re-run) is left as it is."""
    from tau.kube import resources

    try:
        resources.create(api_client, EVENT, body, namespace=body["metadata"]["namespace"])
    except ClusterError as exc:
        if exc.status != 409:
            raise


@dataclass(frozen=True)
class Attempt:
    attempt: str
    outcome: str
    reason: str
    time: str
    signature: str


def _fields(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    head, _, sig = message.partition(" signature=")
    for part in head.split():
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    out["signature"] = sig
    return out


def attempts(events: list[dict[str, Any]], name: str) -> list[Attempt]:
    """Attempts of the run from its retry Events, oldest first."""
    rows = []
    for ev in events:
        if ev.get("reason") not in RETRY_REASONS:
            continue
        if (ev.get("involvedObject") or {}).get("name") != name:
            continue
        f = _fields(str(ev.get("message") or ""))
        when = str(ev.get("lastTimestamp") or ev.get("eventTime") or "")
        if ev["reason"] == "RayJobAttempt":
            rows.append(
                Attempt(
                    f.get("attempt", "?"), "retried", f.get("failure", ""), when, f["signature"]
                )
            )
        elif ev["reason"] == "RayJobRetriesExhausted":
            rows.append(Attempt("-", "exhausted", f.get("final_failure", ""), when, f["signature"]))
        else:
            rows.append(
                Attempt(
                    "-",
                    f"succeeded after attempt {f.get('recovered_after_attempt')}",
                    f.get("last_failure", ""),
                    when,
                    f["signature"],
                )
            )
    return sorted(rows, key=lambda a: a.time)


def table(rows: list[Attempt], namespace: str, name: str) -> str:
    if not rows:
        return (
            f"run {namespace}/{name} has no retry attempts on record (first attempt, or "
            "resilience.max_retries is 0)\n"
        )
    header = ("ATTEMPT", "OUTCOME", "REASON", "TIME", "SIGNATURE")
    body = [(a.attempt, a.outcome, a.reason, a.time, a.signature) for a in rows]
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(5)]
    return (
        "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in (header, *body)
        )
        + "\n"
    )


def as_json(rows: list[Attempt], namespace: str, name: str) -> str:
    return (
        json.dumps(
            {
                "name": name,
                "namespace": namespace,
                "attempts": [
                    {
                        "attempt": a.attempt,
                        "outcome": a.outcome,
                        "reason": a.reason,
                        "time": a.time,
                        "signature": a.signature,
                    }
                    for a in rows
                ],
            },
            indent=2,
        )
        + "\n"
    )


def fetch(api_client: Any, namespace: str, name: str) -> list[Attempt]:
    """One list call: the Events whose involved object is the run."""
    from tau.kube import resources

    items = resources.list_items(
        api_client, EVENT, namespace=namespace, field_selector=f"involvedObject.name={name}"
    )
    return attempts(items, name)
