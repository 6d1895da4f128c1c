"""Whether a run offloads its metrics, where to, and what its store held: the facts of layer 7.

Pure. A run that offloads carries the pod annotations the render writes
(`tau.azure.com/metrics-session-id`, `tau.azure.com/experiment-source: stellar`) and a
`metrics-offload` sidecar whose env names the store (`TAU_EXP_STORE`, the TauWorkspace's
`spec.experiments.store` at submission) and whose `--run` names the run in that store. The
store is read from the workload itself, not from the TauWorkspace: the run delivered to the
store it was rendered with, and status reads no object it did not read before (its hot path
does not even read the workspace). `tau.cli.evidence_read` does the reading; this module says
which runs need it and words what it found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tau.k8s import meta
from tau.status.evidence_model import SYSTEM_PREFIX, Offload, StoreEvidence
from tau.status.facts import metadata, primary_of
from tau.status.snapshot import Obj, Snapshot

#: The render's pod annotations of an offloading run (see the README's metrics offload section).
SESSION_ANNOTATION = meta.ANNOTATION_METRICS_SESSION_ID
SOURCE_ANNOTATION = meta.ANNOTATION_EXPERIMENT_SOURCE
#: The sidecar's container name, and the env var naming its store.
SIDECAR = "metrics-offload"
STORE_ENV = "TAU_EXP_STORE"
#: The terminal marker metric (portal-contract §4.5) and its tags, also set as run tags.
MARKER_METRIC = "tau/run_status"
MARKER_STATES: Mapping[float, str] = {1.0: "succeeded", -1.0: "failed", -2.0: "cancelled"}
STATE_TAG = "tau.status.state"
REASON_TAG = "tau.status.reason"
MESSAGE_TAG = "tau.status.message"
ARTIFACT_TAG = "tau.status.artifact_uri"
CHECKPOINT_TAG = "tau.status.checkpoint_uri"
ATTEMPT_TAG = "tau.attempt"
#: Metric names listed in the one-line summary before "+N more".
SHOWN_NAMES = 6

_EMPTY: Mapping[str, Any] = {}


def _template(primary: Obj) -> Mapping[str, Any]:
    """The pod template that carries the sidecar: the Job's, or the RayJob head's."""
    spec = primary.get("spec") or _EMPTY
    if "template" in spec:
        return spec.get("template") or _EMPTY
    head = (spec.get("rayClusterSpec") or _EMPTY).get("headGroupSpec") or _EMPTY
    return head.get("template") or _EMPTY


def _flag(argv: Sequence[Any], name: str) -> str:
    """The value of `--name V` or `--name=V` in an argv, "" when absent."""
    words = [str(w) for w in argv]
    for index, word in enumerate(words):
        if word == name and index + 1 < len(words):
            return words[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return ""


def offload_of(primary: Obj | None) -> Offload | None:
    """The run's offload sidecar, or None when the run does not offload (the common case,
    decided from two annotation lookups).
    """
    if primary is None:
        return None
    template = _template(primary)
    annotations = (template.get("metadata") or _EMPTY).get("annotations") or _EMPTY
    session = str(annotations.get(SESSION_ANNOTATION) or "")
    if not session and annotations.get(SOURCE_ANNOTATION) != "stellar":
        return None
    pod = template.get("spec") or _EMPTY
    containers = [*(pod.get("initContainers") or ()), *(pod.get("containers") or ())]
    sidecar = next((c for c in containers if c.get("name") == SIDECAR), None)
    labels = metadata(primary).get("labels") or _EMPTY
    fallback = str(labels.get(meta.LABEL_RUN_ID) or metadata(primary).get("name") or "")
    if sidecar is None:
        return Offload(session, fallback, "", sidecar=False)
    env = {str(e.get("name")): e for e in sidecar.get("env") or ()}
    argv = [*(sidecar.get("command") or ()), *(sidecar.get("args") or ())]
    store = str((env.get(STORE_ENV) or _EMPTY).get("value") or "") or _flag(argv, "--store")
    return Offload(session, _flag(argv, "--run") or fallback, store, sidecar=True)


def store_to_read(snapshot: Snapshot) -> Offload | None:
    """The offload whose store status reads: a run that offloads, names a store and ended.

    A run that does not offload costs two dict lookups here: its status reads nothing more.
    """
    offload = offload_of(primary_of(snapshot)[1])
    if offload is None or not offload.store:
        return None
    from tau.status.facts import read_facts
    from tau.status.state import terminal_state

    return offload if terminal_state(read_facts(snapshot)) is not None else None


def shown(store: str) -> str:
    """The store as status may print it: a URL's password (in its user part, or a libpq
    `password=` parameter) replaced by `***`. The render never puts one there (credentials come
    from the platform's Secret), but what status prints must not depend on that.
    """
    if "://" not in store:
        return store
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(store)
    netloc = parts.netloc
    if parts.password is not None:
        user = f"{parts.username or ''}:***@"
        netloc = user + netloc.rsplit("@", 1)[1]
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any("password" in k.lower() for k, _ in query):
        query = [(k, "***" if "password" in k.lower() else v) for k, v in query]
        return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe=":/*"), ""))
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _count(n: int) -> str:
    return f"{n:,}"


def metrics_phrase(metrics: Sequence[tuple[str, int]]) -> str:
    """``1,000 steps of loss, acc``: the training metrics grouped by their row count (most
    rows first), then how many system metrics the collector recorded.
    """
    training = [(n, c) for n, c in metrics if not n.startswith(SYSTEM_PREFIX) and c]
    system = [n for n, c in metrics if n.startswith(SYSTEM_PREFIX) and c]
    by_count: dict[int, list[str]] = {}
    for name, count in sorted(training):
        by_count.setdefault(count, []).append(name)
    parts = []
    for count, names in sorted(by_count.items(), key=lambda kv: (-kv[0], kv[1])):
        shown = ", ".join(names[:SHOWN_NAMES])
        more = f" +{len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        parts.append(f"{_count(count)} {'step' if count == 1 else 'steps'} of {shown}{more}")
    text = " and ".join(parts) if parts else "no training metric rows"
    if system:
        text += f" (+{len(system)} system {'metric' if len(system) == 1 else 'metrics'})"
    return text


def marker_phrase(ev: StoreEvidence) -> str:
    """``marker succeeded`` (with the attempts when more than one), or ``no marker``."""
    if not ev.marker:
        return "no marker"
    text = f"marker {ev.marker}"
    if ev.marker != "succeeded":
        why = ": ".join(p for p in (ev.reason, ev.message) if p)
        text += f" ({why})" if why else ""
    if ev.attempt is not None and ev.attempt > 0:
        text += f" after {ev.attempt + 1} attempts"
    return text


def summary(ev: StoreEvidence) -> str:
    """``1,000 steps of loss, acc; marker succeeded; checkpoint s3://...``."""
    parts = [metrics_phrase(ev.metrics), marker_phrase(ev)]
    if ev.checkpoint_uri:
        parts.append(f"checkpoint {ev.checkpoint_uri}")
    if ev.artifact_uri:
        parts.append(f"artifacts {ev.artifact_uri}")
    return "; ".join(parts)


def as_dict(offload: Offload, ev: StoreEvidence | None) -> dict[str, Any]:
    """The `evidence.offload` object of the RunStatus document."""
    doc: dict[str, Any] = {
        "store": shown(offload.store) or None,
        "runId": offload.run_id,
        "sessionId": offload.session_id or None,
        "checked": ev is not None and not ev.error,
        "error": (ev.error or None) if ev is not None else None,
    }
    if ev is None or ev.error:
        return {**doc, "metrics": None, "marker": None}
    return {
        **doc,
        "metrics": {name: count for name, count in ev.metrics},
        "marker": None
        if not ev.marker
        else {
            "state": ev.marker,
            "reason": ev.reason or None,
            "message": ev.message or None,
            "attempt": ev.attempt,
            "checkpointUri": ev.checkpoint_uri or None,
            "artifactUri": ev.artifact_uri or None,
        },
    }
