"""`experiment status NAME`: the durable lifecycle record of a run group, run or experiment.

Performs I/O (SQLite reads). Counts come from SQL; lifecycle counts classify each run from
its summaries, fetched in one query, so a 1,000-run group stays well under a second.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tau.portal.store import read
from tau.portal.store.interface import Store
from tau.portal.store.lifecycle import classify
from tau.portal.store.records import MetricSummary, Run, as_row

SCHEMA = "tau.exp.status.v0"


def status(store: Store, name: str, target: read.Target | None = None) -> dict[str, Any]:
    """The `expstore.Status` JSON object of `name` (see portal-contract.md §6); `target` is
    `name` already resolved (a caller that was told which kind of record it is).
    """
    target = target or read.resolve_target(store, name)
    where, params = read.target_where(target)
    runs = [Run.from_row(r) for r in store.query(f"SELECT r.* FROM runs r WHERE {where}", params)]
    run_ids = [r.run_id for r in runs]
    sub = f"SELECT r.run_id FROM runs r WHERE {where}"

    def count(sql: str) -> int:
        return int(store.scalar(sql.format(sub=sub), params))

    summaries: dict[str, list[MetricSummary]] = {}
    for s in read.metric_summaries(store, run_ids=run_ids):
        summaries.setdefault(s.run_id, []).append(s)
    tags = read.run_tags(store, run_ids)
    lifecycle = Counter(
        classify(r, tags[r.run_id], summaries.get(r.run_id, [])).state for r in runs
    )
    states = Counter((r.state or "") for r in runs)
    latest = store.scalar(f"SELECT max(time) FROM events WHERE run_id IN ({sub})", params)
    out: dict[str, Any] = {
        "store_path": store.location,
        "target": name,
        "target_type": target.type,
    }
    if target.type == "run_group":
        out["run_group"] = as_row(read.get_group(store, target.id))
    elif target.type == "run":
        out["run"] = as_row(read.get_run(store, target.id))
    else:
        out["experiment"] = as_row(read.get_experiment(store, target.id))
    observations = int(
        store.scalar(
            "SELECT count(*) FROM observations WHERE (scope_type = ? AND scope_id = ?) OR "
            f"(scope_type = 'run' AND scope_id IN ({sub}))",
            (target.type, target.id, *params),
        )
    )
    out |= {
        "runs": len(runs),
        "run_groups": len({r.run_group_id for r in runs if r.run_group_id}),
        "configs": count("SELECT count(*) FROM configs WHERE run_id IN ({sub})"),
        "metric_files": count("SELECT count(*) FROM metric_files WHERE run_id IN ({sub})"),
        "artifacts": count("SELECT count(*) FROM artifacts WHERE run_id IN ({sub})"),
        "observations": observations,
        "state_counts": dict(sorted(states.items())),
        "lifecycle_counts": dict(sorted(lifecycle.items())),
        "latest_event_at": latest or "",
    }
    return out
