"""Record writers shared by every command that mutates the store. Performs I/O via `Writer`.

Records are write-once (identical = no-op, different = conflict); idempotency keys are
checked against the SHA-256 of the request they were first used for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from tau.portal.errors import WriteConflict
from tau.portal.store import schema
from tau.portal.store.core import Row, Store, Writer
from tau.portal.store.metrics import Summary, micros_to_rfc3339


def request_hash(request: Mapping[str, Any]) -> str:
    """SHA-256 of the request as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def idempotent_reuse(store: Store | Writer, key: str | None, digest: str) -> Row | None:
    """The earlier record of `key` when it was used for this same request; None when unused.

    A key used for a different request is a write conflict.
    """
    if not key:
        return None
    conn = store.conn
    found = conn.execute("SELECT * FROM idempotency_keys WHERE key = ?", (key,)).fetchone()
    if found is None:
        return None
    row = dict(found)
    if row["request_hash"] != digest:
        raise WriteConflict(
            f'idempotency key "{key}" was used for a different request',
            hint="pass a new --idempotency-key, or repeat the original request exactly",
        )
    return row


def record_idempotency(
    w: Writer, key: str | None, command: str, target_type: str, target_id: str, digest: str
) -> None:
    if key:
        w.put(
            "idempotency_keys",
            {
                "key": key,
                "command": command,
                "target_type": target_type,
                "target_id": target_id,
                "request_hash": digest,
                "created_at": w.stamp,
            },
            conflict=f'idempotency key "{key}" was used for a different request',
        )


def ensure_experiment(
    w: Writer,
    experiment_id: str,
    *,
    project: str,
    name: str | None = None,
    description: str | None = None,
    source: str = "explicit",
) -> bool:
    """Create the experiment when missing (an existing one is kept as it is); True if created."""
    if w.get("experiments", {"experiment_id": experiment_id}) is not None:
        return False
    return w.put(
        "experiments",
        {
            "experiment_id": experiment_id,
            "project": project,
            "name": name or experiment_id,
            "description": description or "",
            "source": source,
            "created_at": w.stamp,
            "updated_at": w.stamp,
        },
    )


def ensure_group(w: Writer, group: str, *, project: str, name: str | None = None) -> bool:
    if w.get("run_groups", {"run_group_id": group}) is not None:
        return False
    return w.put(
        "run_groups",
        {
            "run_group_id": group,
            "project": project,
            "name": name or group,
            "created_at": w.stamp,
            "updated_at": w.stamp,
        },
    )


def put_run(w: Writer, run: Mapping[str, Any], *, defaulted: Iterable[str] = ()) -> bool:
    """Write a run record once; fields in `defaulted` take an existing run's value.

    A re-import that did not say `--state` or `--created-at` must not conflict with the
    values the first writer recorded.
    """
    row = dict(run)
    row.setdefault("index_version", schema.SCHEMA_VERSION)
    existing = w.get("runs", {"run_id": row["run_id"]})
    if existing is not None:
        for field in defaulted:
            row[field] = existing.get(field)
        # Columns this writer does not set (a captured run's config hash and times, say) are
        # not its to contradict: importing the history of a captured run is no conflict.
        for column in schema.TABLES["runs"][1]:
            row.setdefault(column, existing.get(column))
    return w.put(
        "runs", row, conflict=f'run "{row["run_id"]}" already exists with different metadata'
    )


def put_tags(w: Writer, scope_type: str, scope_id: str, tags: Mapping[str, str]) -> int:
    """Write tags once each; returns how many were new."""
    created = 0
    for key in sorted(tags):
        created += w.put(
            "tags",
            {"scope_type": scope_type, "scope_id": scope_id, "key": key, "value": tags[key]},
            conflict=f'tag {scope_type}/{scope_id} "{key}" already exists with different value',
        )
    return created


def record_metric_file(
    w: Writer, file_row: Mapping[str, Any], summaries: Mapping[str, Summary]
) -> bool:
    """Record a metric file and merge its summaries in, counting each file once."""
    created = w.put("metric_files", file_row)
    file_id = str(file_row["file_id"])
    if w.get("metric_summary_files", {"file_id": file_id}) is not None:
        return created
    run_id = str(file_row["run_id"])
    for name, summary in summaries.items():
        old = w.get("metric_summaries", {"run_id": run_id, "metric_name": name})
        merged = summary if old is None else _summary_of(old).merge(summary)
        latest_file = file_id if old is None or _newer(summary, old) else old["latest_file_id"]
        w.replace(
            "metric_summaries",
            {
                "run_id": run_id,
                "metric_name": name,
                "project": file_row["project"],
                "run_group_id": file_row["run_group_id"],
                "count": merged.count,
                "finite_count": merged.finite_count,
                "non_finite_count": merged.non_finite_count,
                "min_step": merged.min_step,
                "max_step": merged.max_step,
                "latest_step": merged.latest_step,
                "latest_wall_time": micros_to_rfc3339(merged.latest_wall_time),
                "latest_value": merged.latest_value,
                "min_value": merged.min_value,
                "max_value": merged.max_value,
                "updated_at": w.stamp,
                "latest_file_id": latest_file,
            },
        )
    w.put("metric_summary_files", {"file_id": file_id, "run_id": run_id, "summarized_at": w.stamp})
    return created


def _summary_of(row: Mapping[str, Any]) -> Summary:
    from tau.portal.store.metrics import rfc3339_to_micros

    return Summary(
        count=int(row["count"] or 0),
        finite_count=int(row["finite_count"] or 0),
        non_finite_count=int(row["non_finite_count"] or 0),
        min_step=row["min_step"],
        max_step=row["max_step"],
        latest_step=row["latest_step"],
        latest_wall_time=rfc3339_to_micros(row["latest_wall_time"]),
        latest_value=row["latest_value"],
        min_value=row["min_value"],
        max_value=row["max_value"],
    )


def _newer(summary: Summary, old: Mapping[str, Any]) -> bool:
    old_step = old["latest_step"] if old["latest_step"] is not None else -1
    new_step = summary.latest_step if summary.latest_step is not None else -1
    return new_step >= old_step
