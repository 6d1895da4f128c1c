"""`experiment compare TARGET`: per-group distribution and winner on one metric, and the
`--configs` view that keeps only the config fields that differ between the compared runs.

Performs I/O (SQLite reads only: latest values come from the metric summaries).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from tau.portal.store import direction as direction_mod
from tau.portal.store import read
from tau.portal.store.cards import RUN_STATUS_METRIC
from tau.portal.store.interface import Store
from tau.portal.store.records import MetricSummary, Run

COLUMNS = [
    "metric_name",
    "direction",
    "run_group_id",
    "run_count",
    "latest_step",
    "min",
    "p25",
    "median",
    "p75",
    "max",
    "best_value",
    "best_run_id",
    "winner",
]
CONFIG_COLUMNS = ["field", "run_id", "run_group_id", "value"]
#: At most this many runs enter a comparison (the rest is reported as truncated).
MAX_RUNS = read.MAX_LIMIT


def _runs(store: Store, target: str) -> tuple[list[Run], bool]:
    resolved = read.resolve_target(store, target)
    where, params = read.target_where(resolved)
    rows = store.query(
        f"SELECT r.* FROM runs r WHERE {where} ORDER BY r.run_group_id, r.run_id LIMIT ?",
        (*params, MAX_RUNS + 1),
    )
    return [Run.from_row(r) for r in rows[:MAX_RUNS]], len(rows) > MAX_RUNS


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def failed_runs(runs: list[Run], summaries: list[MetricSummary]) -> list[str]:
    """Ids of runs that failed: state `failed`, or a terminal `tau/run_status` marker of -1."""
    marked = {
        s.run_id
        for s in summaries
        if s.metric_name == RUN_STATUS_METRIC
        and s.latest_value is not None
        and float(s.latest_value) == -1.0
    }
    return [r.run_id for r in runs if (r.state or "").lower() == "failed" or r.run_id in marked]


def compare(
    store: Store,
    target: str,
    *,
    metric: str | None,
    direction: str | None = None,
    include_failed: bool = False,
) -> dict[str, Any]:
    """Per-group distribution of the runs' latest values of one metric, best and winner.

    `direction` (max/min, or higher/lower) overrides the metric's own: the `tau.metric.direction`
    tag its rows recorded, else the name rule (`train/loss` is won by the lowest). Failed runs
    are left out unless `include_failed`, and said in the warnings.
    """
    override = direction_mod.parse(direction) if direction is not None else None
    runs, truncated = _runs(store, target)
    ids = [r.run_id for r in runs]
    summaries = read.metric_summaries(store, run_ids=ids)
    names = sorted({s.metric_name for s in summaries})
    warnings: list[str] = []
    chosen = metric
    if not chosen:
        from tau.portal.store.cards import default_metric

        chosen = default_metric(names)
    if not chosen:
        warnings.append("no scalar metrics were found for this target")
    record = None
    if chosen and not override:
        from tau.portal.store.series import metric_tags

        record = metric_tags(store, ids, [chosen])[1].get(chosen)
    way = direction_mod.direction_of(chosen or "", override=override, record=record)
    failed = failed_runs(runs, summaries)
    excluded = set() if include_failed else set(failed)
    if excluded:
        warnings.append(
            f"{len(excluded)} failed runs left out: {', '.join(sorted(excluded))} "
            "(--include-failed counts them)"
        )
    group_of = {r.run_id: r.run_group_id or "" for r in runs}
    values: dict[str, list[tuple[float, str, int | None]]] = defaultdict(list)
    for s in summaries:
        if s.run_id in excluded:
            continue
        if s.metric_name == chosen and s.latest_value is not None:
            values[group_of[s.run_id]].append((float(s.latest_value), s.run_id, s.latest_step))
    if chosen and not values:
        warnings.append(f"no run of {target} has metric {chosen}")
    rows: list[dict[str, Any]] = []
    for group in sorted(values):
        entries = values[group]
        ordered = sorted(v for v, _, _ in entries)
        sign = direction_mod.sort_key(way.value)
        best = min(entries, key=lambda e: (sign * e[0], e[1]))  # ties: the first run id
        steps = [s for _, _, s in entries if s is not None]
        rows.append(
            {
                "metric_name": chosen,
                "direction": way.value,
                "run_group_id": group,
                "run_count": len(entries),
                "latest_step": max(steps) if steps else None,
                "min": ordered[0],
                "p25": quantile(ordered, 0.25),
                "median": quantile(ordered, 0.5),
                "p75": quantile(ordered, 0.75),
                "max": ordered[-1],
                "best_value": best[0],
                "best_run_id": best[1],
                "winner": False,
            }
        )
    if rows:
        sign = direction_mod.sort_key(way.value)
        min(rows, key=lambda r: (sign * r["best_value"], r["run_group_id"]))["winner"] = True
    return {
        "schema_version": "tau.exp.compare.v0",
        "store_path": store.location,
        "target": target,
        "metric_name": chosen,
        "direction": way.value,
        "direction_source": way.source,
        "include_failed": include_failed,
        "failed_runs": failed,
        "groups": rows,
        "truncated": truncated,
        "warnings": warnings,
    }


def config_diff(store: Store, target: str) -> dict[str, Any]:
    """Only the flattened config fields whose values differ between the target's runs.

    A field missing from some runs counts as different (shown as null there).
    """
    runs, truncated = _runs(store, target)
    ids = [r.run_id for r in runs]
    fields: dict[str, dict[str, Any]] = defaultdict(dict)
    with_config: set[str] = set()
    for config in read.configs(store, ids):
        try:
            indexed = json.loads(config.indexed_fields or "{}")
        except ValueError:
            continue
        with_config.add(config.run_id)
        for key, value in indexed.items():
            fields[key][config.run_id] = value
    for run in runs:  # run-level provenance diffs too, as the reference's runtime_diffs
        for key in ("config_hash", "code_sha", "image_digest"):
            value = getattr(run, key)
            if value is not None:
                fields[f"run.{key}"][run.run_id] = value
    compared = [
        r for r in runs if r.run_id in with_config or any(r.run_id in v for v in fields.values())
    ]
    rows: list[dict[str, Any]] = []
    differing = []
    for key in sorted(fields):
        per_run = fields[key]
        seen = {json.dumps(per_run.get(r.run_id), sort_keys=True) for r in compared}
        if len(seen) <= 1:
            continue
        differing.append(key)
        for run in compared:
            rows.append(
                {
                    "field": key,
                    "run_id": run.run_id,
                    "run_group_id": run.run_group_id,
                    "value": per_run.get(run.run_id),
                }
            )
    warnings = []
    if len(compared) < 2:
        warnings.append("fewer than two runs with configs: nothing to compare")
    return {
        "schema_version": "tau.exp.config_diff.v0",
        "store_path": store.location,
        "target": target,
        "runs": [r.run_id for r in compared],
        "fields": differing,
        "identical_fields": len(fields) - len(differing),
        "rows": rows,
        "truncated": truncated,
        "warnings": warnings,
    }
