"""Typed records of the store's tables, as the read API returns them. Pure.

Each dataclass has exactly the columns of its table (portal-contract.md §3.3), so
`dataclasses.asdict(record)` is the row and JSON output keeps the reference's field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Self, TypeVar

T = TypeVar("T")


def as_row(record: object) -> dict[str, Any]:
    """A record as a plain dict: a shallow copy (`dataclasses.asdict` deep-copies, which
    dominated search time).
    """
    return dict(vars(record))


#: Field names per record class, computed once (`fields()` per row showed in status profiles).
_NAMES: dict[type, tuple[str, ...]] = {}


class _FromRow:
    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """Build from a SQLite row; unknown columns are ignored, missing ones are None."""
        names = _NAMES.get(cls)
        if names is None:
            names = _NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
        get = row.get
        return cls(*[get(n) for n in names])


@dataclass(frozen=True)
class RunGroup(_FromRow):
    run_group_id: str
    project: str | None
    name: str | None
    created_at: str | None
    updated_at: str | None


@dataclass(frozen=True)
class Experiment(_FromRow):
    experiment_id: str
    project: str | None
    name: str | None
    description: str | None
    #: `explicit` | `run` | `run_group` | `question`.
    source: str | None
    created_at: str | None
    updated_at: str | None


@dataclass(frozen=True)
class Run(_FromRow):
    run_id: str
    project: str | None
    experiment_id: str | None
    run_group_id: str | None
    parent_run_id: str | None
    state: str | None
    owner: str | None
    created_at: str | None
    started_at: str | None
    completed_at: str | None
    config_hash: str | None
    code_sha: str | None
    image_digest: str | None
    tau_command: str | None
    result_uri: str | None
    index_version: str | None


@dataclass(frozen=True)
class RunContext(_FromRow):
    run_id: str
    cluster: str | None
    namespace: str | None
    team: str | None
    profile: str | None
    lane: str | None
    local_queue: str | None
    cluster_queue: str | None
    kueue_workload: str | None
    pod_uid: str | None
    ray_job: str | None
    resource_claims: str | None
    gpu_class: str | None
    gpu_count: int | None
    node_names: str | None
    mounts: str | None
    queue_wait_seconds: float | None
    gpu_hours: float | None
    estimated_cost: float | None
    runtime: str | None
    dependencies: str | None
    log_uri: str | None


@dataclass(frozen=True)
class Config(_FromRow):
    config_hash: str
    run_id: str
    #: `json` | `yaml` | `raw`.
    format: str | None
    uri: str | None
    #: The config as canonical JSON (sorted keys).
    normalized_json: str | None
    #: JSON object of the flattened `dotted.path` → scalar fields.
    indexed_fields: str | None


@dataclass(frozen=True)
class Artifact(_FromRow):
    artifact_id: str
    run_id: str | None
    type: str | None
    uri: str | None
    name: str | None
    durable_ref: str | None
    content_type: str | None
    digest: str | None
    size_bytes: int | None
    step: int | None
    tags: str | None
    rank: int | None
    created_at: str | None
    preview: str | None
    external_ref: str | None
    caption: str | None
    direction: str | None
    alias: str | None
    source_artifact_id: str | None
    source_run_id: str | None
    source_dataset_name: str | None
    source_dataset_version: str | None
    source_dataset_digest: str | None


@dataclass(frozen=True)
class Event(_FromRow):
    event_id: str
    run_id: str | None
    time: str | None
    type: str | None
    source: str | None
    #: `info` | `warning` | `error`.
    severity: str | None
    message: str | None
    #: JSON text.
    payload: str | None


@dataclass(frozen=True)
class Observation(_FromRow):
    observation_id: str
    idempotency_key: str | None
    author: str | None
    source: str | None
    type: str | None
    scope_type: str | None
    scope_id: str | None
    text: str | None
    evidence: str | None
    created_at: str | None


@dataclass(frozen=True)
class MetricFile(_FromRow):
    file_id: str
    #: Relative to the store root.
    path: str
    format: str | None
    schema_version: str | None
    schema_hash: str | None
    project: str | None
    run_group_id: str | None
    run_id: str | None
    row_count: int | None
    digest: str | None
    min_step: int | None
    max_step: int | None
    created_at: str | None


@dataclass(frozen=True)
class MetricSummary(_FromRow):
    run_id: str
    metric_name: str
    project: str | None
    run_group_id: str | None
    count: int | None
    finite_count: int | None
    non_finite_count: int | None
    min_step: int | None
    max_step: int | None
    latest_step: int | None
    latest_wall_time: str | None
    latest_value: float | None
    min_value: float | None
    max_value: float | None
    updated_at: str | None
    latest_file_id: str | None


@dataclass(frozen=True)
class MetricPoint:
    """One scalar metric row read from a Parquet metric file (`expstore.MetricRow`)."""

    project: str
    run_group_id: str
    run_id: str
    metric_name: str
    step: int | None
    #: Microseconds since the epoch.
    wall_time: int | None
    value: float
    unit: str | None
    source: str
    split: str | None
    #: JSON text.
    tags: str
