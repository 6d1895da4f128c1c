"""Write cluster-captured run profiles into the store: an enrichment merge. Performs I/O.

A run's state only moves forward (pending < running < succeeded/failed); two different
terminal states conflict; project, group and parent never change once set; list-like context
fields (pods, workloads, nodes, claims) are unioned; events are write-once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tau.portal.capture.profile import Profile
from tau.portal.errors import WriteConflict
from tau.portal.store import schema
from tau.portal.store.core import Writer
from tau.portal.store.write import ensure_experiment, ensure_group, put_tags

RANK = {"pending": 1, "running": 2, "succeeded": 3, "failed": 3, "cancelled": 3}
_UNION = ("kueue_workload", "pod_uid", "node_names", "resource_claims")
CAPTURE_TAG = "tau.capture.source"


@dataclass
class Counts:
    runs: int = 0
    created_runs: int = 0
    updated_runs: int = 0
    created_contexts: int = 0
    updated_contexts: int = 0
    events: int = 0
    tags: int = 0
    reused: int = 0


def merge_state(old: str | None, new: str) -> str:
    """The later of two states; different terminal states are a conflict."""
    if not old:
        return new
    a, b = RANK.get(old, 0), RANK.get(new, 0)
    if a == 3 and b == 3 and old != new:
        raise WriteConflict(f'terminal run state is "{old}", controller observed "{new}"')
    return new if b > a else old


def record_profile(
    w: Writer,
    profile: Profile,
    *,
    project: str,
    experiment: str,
    group: str,
    owner: str,
    capture_source: str,
    counts: Counts,
) -> None:
    run_id = profile.run["run_id"]
    counts.runs += 1
    ensure_experiment(w, experiment, project=project)
    ensure_group(w, group, project=project)
    old = w.get("runs", {"run_id": run_id})
    if old is None:
        row = {k: v for k, v in profile.run.items() if v is not None} | {
            "project": project,
            "experiment_id": experiment,
            "run_group_id": group,
            "owner": owner,
            "index_version": schema.SCHEMA_VERSION,
        }
        w.put("runs", row)
        counts.created_runs += 1
    else:
        for key, value in (("project", project), ("run_group_id", group)):
            if old.get(key) and old[key] != value:
                raise WriteConflict(
                    f'run "{run_id}" {key} is "{old[key]}"; it cannot change to "{value}"',
                    hint=f"capture with --{'group' if key == 'run_group_id' else key} {old[key]}",
                )
        merged = dict(old)
        merged["state"] = merge_state(old.get("state"), profile.run["state"])
        for key, value in profile.run.items():
            if key != "state" and value is not None and not merged.get(key):
                merged[key] = value
        if w.replace("runs", merged):
            counts.updated_runs += 1
        else:
            counts.reused += 1
    _merge_context(w, profile.context, counts)
    # The first capture names the source; a run captured both by `capture run-profile` and by
    # autocapture is enriched by the second, not in conflict with it.
    if w.get("tags", {"scope_type": "run", "scope_id": run_id, "key": CAPTURE_TAG}) is None:
        counts.tags += put_tags(w, "run", run_id, {CAPTURE_TAG: capture_source})
    for event in profile.events:
        counts.events += w.put("events", event)


def _merge_context(w: Writer, context: Mapping[str, Any], counts: Counts) -> None:
    fields = {k: v for k, v in context.items() if v is not None}
    old = w.get("run_context", {"run_id": context["run_id"]})
    if old is None:
        w.put("run_context", fields)
        counts.created_contexts += 1
        return
    merged = dict(old)
    for key, value in fields.items():
        if key in _UNION and merged.get(key):
            items = set(str(merged[key]).split(",")) | set(str(value).split(","))
            merged[key] = ",".join(sorted(i for i in items if i))
        elif merged.get(key) in (None, ""):
            merged[key] = value
    if w.replace("run_context", merged):
        counts.updated_contexts += 1
