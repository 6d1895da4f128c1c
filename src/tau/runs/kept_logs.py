"""Keep an attempt's logs before tau deletes its workload (a retry, `resume`, `cancel`).

Performs I/O (pods and their logs through `tau.kube`, files through `tau.runs.kept_place`).
Deleting a failed attempt deletes the one record that says why it failed: before that, every
container of every pod of the workload that ran (init containers and sidecars too, and the
previous instance of a restarted one) is copied into the run's evidence, with a small
`pods.json` of the attempt's pod facts (exit codes, reasons, nodes, times) beside the logs.

Keeping never costs the user the deletion they asked for: whatever fails here is said in one
stderr line naming where and why, and the caller goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tau.errors import TauError
from tau.k8s import meta
from tau.k8s.kinds import POD
from tau.runs import kept_place
from tau.runs.kept_place import Place, PlaceError

#: Lines kept of each container: the kubelet rotates a container's log at 10 MiB anyway, and the
#: end is where a failure says what it is.
KEEP_LINES = 100_000
FACTS = "pods.json"
PREVIOUS_SUFFIX = ".previous.log"


def attempt_of(obj: Mapping[str, Any]) -> int:
    """The retry attempt a workload was submitted as (0 for a first submit)."""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    try:
        return max(0, int(notes.get(meta.ANNOTATION_RETRY_ATTEMPT, "0")))
    except ValueError:
        return 0


def attempt_dir(attempt: int) -> str:
    return f"{kept_place.LOGS}/attempt-{attempt}"


def log_rel(attempt: int, pod: str, container: str, *, previous: bool = False) -> str:
    suffix = PREVIOUS_SUFFIX if previous else ".log"
    return f"{attempt_dir(attempt)}/{pod}/{container}{suffix}"


def pods_of(api: Any, namespace: str, kind: str, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every pod of the workload: a Job's by `job-name`, a RayJob's head and workers by its
    RayCluster (and a submitter Job's, in KubeRay's K8sJobMode).
    """
    from tau.kube import resources

    name = str((obj.get("metadata") or {}).get("name") or "")
    selectors = [f"job-name={name}"]
    cluster = (obj.get("status") or {}).get("rayClusterName")
    if kind == "RayJob" and cluster:
        selectors.insert(0, f"{meta.RAY_CLUSTER_LABEL}={cluster}")
    found: dict[str, dict[str, Any]] = {}
    for selector in selectors:
        for pod in resources.list_items(api, POD, namespace=namespace, selector=selector):
            found.setdefault(str(pod["metadata"]["name"]), pod)
    return [found[k] for k in sorted(found)]


def _statuses(pod: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    status = pod.get("status") or {}
    return {
        str(c.get("name")): c
        for c in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
        if c.get("name")
    }


def _ran(state: Mapping[str, Any] | None) -> bool:
    """Whether a container status says the container ever started (None: no status known)."""
    if state is None:
        return True  # no status to go by: try its log, and record what the API says
    if int(state.get("restartCount") or 0) > 0 or (state.get("lastState") or {}).get("terminated"):
        return True
    now = state.get("state") or {}
    return "running" in now or "terminated" in now


def _restarted(state: Mapping[str, Any] | None) -> bool:
    if state is None:
        return False
    return int(state.get("restartCount") or 0) > 0 or bool(
        (state.get("lastState") or {}).get("terminated")
    )


def _state_facts(state: Mapping[str, Any]) -> dict[str, Any]:
    """One container state (running / terminated / waiting) as the facts keep it."""
    for which in ("terminated", "running", "waiting"):
        if which in state:
            detail = state.get(which) or {}
            facts: dict[str, Any] = {"state": which}
            for key, field in (
                ("exitCode", "exit_code"),
                ("signal", "signal"),
                ("reason", "reason"),
                ("message", "message"),
                ("startedAt", "started_at"),
                ("finishedAt", "finished_at"),
            ):
                if detail.get(key) not in (None, ""):
                    facts[field] = detail[key]
            return facts
    return {}


@dataclass
class Kept:
    """What one keeping wrote: the place, and how many container logs."""

    place: Place
    attempt: int
    logs: int


def _followed(namespace: str, md: Mapping[str, Any], pod: str, container: str) -> str | None:
    """Tau's own copy of the container's log, followed while it watched the run, if any."""
    from tau.runs import log_tee

    data = log_tee.spooled(
        namespace, str(md.get("name")), str(md.get("uid") or ""), pod, container, KEEP_LINES
    )
    return None if data is None else data.decode("utf-8", "replace")


def removed_log_error(node: Any, status: Mapping[str, Any], text: str) -> str:
    """Why a container's log could not be kept: its node had removed it (and why it did)."""
    said = f"node {node or '?'} had removed it ({text.strip()})"
    if status.get("reason") == "Evicted":
        return f"{said}: a kubelet removes an evicted pod's containers, their logs with them"
    return said


def collect(
    api: Any, namespace: str, kind: str, obj: Mapping[str, Any], attempt: int
) -> tuple[dict[str, bytes], int]:
    """(relative path → bytes, count of container logs) of the attempt's pods, facts included.

    Raises:
        TauError: the pods cannot be listed.
    """
    from tau.kube import resources
    from tau.runs.log_tee import log_removed

    md = obj.get("metadata") or {}
    files: dict[str, bytes] = {}
    pods_facts: list[dict[str, Any]] = []
    logs = 0
    for pod in pods_of(api, namespace, kind, obj):
        pmd, spec, status = (
            pod.get("metadata") or {},
            pod.get("spec") or {},
            pod.get("status") or {},
        )
        pod_name = str(pmd.get("name"))
        statuses = _statuses(pod)
        containers: list[dict[str, Any]] = []
        inits = [str(c.get("name")) for c in spec.get("initContainers") or [] if c.get("name")]
        mains = [str(c.get("name")) for c in spec.get("containers") or [] if c.get("name")]
        for container in inits + mains:
            state = statuses.get(container)
            facts: dict[str, Any] = {"name": container, "init": container in inits}
            if state is not None:
                facts["restarts"] = int(state.get("restartCount") or 0)
                facts.update(_state_facts(state.get("state") or {}))
                last = _state_facts(state.get("lastState") or {})
                if last:
                    facts["last"] = last
            if not _ran(state):
                facts["log"] = None  # it never started: there is no log to keep
                containers.append(facts)
                continue
            for previous in (False, True) if _restarted(state) else (False,):
                read = resources.LogOptions(
                    container=container, tail_lines=KEEP_LINES, timestamps=True, previous=previous
                )
                key = "previous_log" if previous else "log"
                try:
                    text = resources.pod_log(api, pod_name, namespace, read)
                except TauError as exc:
                    facts[key] = None
                    facts[f"{key}_error"] = exc.message
                    continue
                if log_removed(text):
                    # The node answered, but in place of the log: it has removed the
                    # container (an evicted pod's go at once). tau's own copy, followed while
                    # it watched, stands in; else the removal is kept as what it is.
                    removed = removed_log_error(spec.get("nodeName"), status, text)
                    copy = None if previous else _followed(namespace, md, pod_name, container)
                    if copy is None:
                        facts[key] = None
                        facts[f"{key}_error"] = removed
                        continue
                    text = copy
                    facts[f"{key}_from"] = f"tau's copy, followed while it watched: {removed}"
                rel = log_rel(attempt, pod_name, container, previous=previous)
                files[rel] = text.encode()
                facts[key] = rel.removeprefix(attempt_dir(attempt) + "/")
                logs += 1
            containers.append(facts)
        pod_facts: dict[str, Any] = {
            "name": pod_name,
            "node": spec.get("nodeName") or None,
            "phase": status.get("phase") or None,
            "started_at": status.get("startTime") or None,
            "containers": containers,
        }
        for key in ("reason", "message"):
            if status.get(key):
                pod_facts[key] = status[key]
        pods_facts.append(pod_facts)
    if pods_facts:
        doc = {
            "run": md.get("name"),
            "namespace": namespace,
            "kind": kind,
            "uid": md.get("uid"),
            "attempt": attempt,
            "kept_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "pods": pods_facts,
        }
        files[f"{attempt_dir(attempt)}/{FACTS}"] = (
            json.dumps(doc, indent=2, sort_keys=True) + "\n"
        ).encode()
    return files, logs


def place_for(
    api: Any,
    namespace: str,
    obj: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    system_namespace: str | None = None,
) -> tuple[Place | None, str, str | None]:
    """(the store's place or None, the store as named or "", why it cannot be used or None)."""
    store = kept_place.workspace_store(api, namespace, env, system_namespace)
    if not store:
        return None, "", None
    try:
        return kept_place.store_place(store, kept_place.run_id_of(obj)), store, None
    except PlaceError as exc:
        return None, store, str(exc)


def keep(
    api: Any,
    namespace: str,
    kind: str,
    obj: Mapping[str, Any],
    *,
    warn: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    system_namespace: str | None = None,
) -> Kept | None:
    """Copy the attempt's logs and pod facts into the run's evidence; never raises.
    `system_namespace` is where the TauWorkspace naming the store is (`kept_place`).

    Returns what was kept, or None when nothing was (no pod ran yet, or keeping failed: then
    `warn` heard one line naming where and why).
    """
    name = str((obj.get("metadata") or {}).get("name") or "")
    attempt = attempt_of(obj)
    what = f"the logs of attempt {attempt} of {namespace}/{name}"
    try:
        files, logs = collect(api, namespace, kind, obj, attempt)
    except TauError as exc:
        warn(f"warning: could not keep {what}: reading its pods failed ({exc.message})")
        return None
    if not files:
        return None
    local = kept_place.local_place(namespace, name, env)
    store, named, refused = place_for(api, namespace, obj, env, system_namespace)
    # A store named but unusable here is the first failure the warning names.
    failed = (kept_place.shown_store(named), refused or "") if store is None and named else None
    for place in [p for p in (store, local) if p is not None]:
        try:
            for rel, data in files.items():
                place.write(rel, data)
        except PlaceError as exc:
            failed = failed or (place.where, str(exc))
            continue
        if failed:
            warn(
                f"warning: could not keep {what} in {failed[0]} ({failed[1]}); "
                f"kept them in {place.where} instead"
            )
        return Kept(place, attempt, logs)
    assert failed is not None
    warn(f"warning: could not keep {what} in {failed[0]} ({failed[1]}); deleting without them")
    return None
