"""The store's on-disk names and the SQLite schema, as the reference writes them.

Pure. A packet written by the reference implementation can be read here and the other way
round, so every name below is part of the contract (portal-contract.md §3).
"""

from __future__ import annotations

SCHEMA_VERSION = "expstore.v5"
KNOWN_VERSIONS = tuple(f"expstore.v{n}" for n in range(6))
KIND = "tau.exp.store"
MANIFEST = "manifest.json"
INDEX = "index.sqlite"
LOCK = ".tau-exp.lock"
APPEND_LOG = "append-log"
METRICS = "metrics"
ARTIFACTS = "artifacts"
#: Scratch space for files not yet committed; emptied by crash recovery under the lock.
TMP = ".tmp"
#: The commit journal: present only between the start and the end of a commit.
JOURNAL = ".tau-exp.journal.json"

METRIC_SCHEMA_VERSION = "tau.metrics.scalar.v2"
METRIC_COLUMNS = (
    "project",
    "run_group_id",
    "run_id",
    "metric_name",
    "step",
    "wall_time",
    "value",
    "unit",
    "source",
    "split",
    "tags",
)

#: Table → (primary-key columns, all columns in order).
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "schema_meta": (("key",), ("key", "value")),
    "idempotency_keys": (
        ("key",),
        ("key", "command", "target_type", "target_id", "request_hash", "created_at"),
    ),
    "run_groups": (
        ("run_group_id",),
        ("run_group_id", "project", "name", "created_at", "updated_at"),
    ),
    "experiments": (
        ("experiment_id",),
        ("experiment_id", "project", "name", "description", "source", "created_at", "updated_at"),
    ),
    "runs": (
        ("run_id",),
        (
            "run_id",
            "project",
            "experiment_id",
            "run_group_id",
            "parent_run_id",
            "state",
            "owner",
            "created_at",
            "started_at",
            "completed_at",
            "config_hash",
            "code_sha",
            "image_digest",
            "tau_command",
            "result_uri",
            "index_version",
        ),
    ),
    "run_context": (
        ("run_id",),
        (
            "run_id",
            "cluster",
            "namespace",
            "team",
            "profile",
            "lane",
            "local_queue",
            "cluster_queue",
            "kueue_workload",
            "pod_uid",
            "ray_job",
            "resource_claims",
            "gpu_class",
            "gpu_count",
            "node_names",
            "mounts",
            "queue_wait_seconds",
            "gpu_hours",
            "estimated_cost",
            "runtime",
            "dependencies",
            "log_uri",
        ),
    ),
    "configs": (
        ("config_hash", "run_id"),
        ("config_hash", "run_id", "format", "uri", "normalized_json", "indexed_fields"),
    ),
    "artifacts": (
        ("artifact_id",),
        (
            "artifact_id",
            "run_id",
            "type",
            "uri",
            "name",
            "durable_ref",
            "content_type",
            "digest",
            "size_bytes",
            "step",
            "tags",
            "rank",
            "created_at",
            "preview",
            "external_ref",
            "caption",
            "direction",
            "alias",
            "source_artifact_id",
            "source_run_id",
            "source_dataset_name",
            "source_dataset_version",
            "source_dataset_digest",
        ),
    ),
    "events": (
        ("event_id",),
        ("event_id", "run_id", "time", "type", "source", "severity", "message", "payload"),
    ),
    "observations": (
        ("observation_id",),
        (
            "observation_id",
            "idempotency_key",
            "author",
            "source",
            "type",
            "scope_type",
            "scope_id",
            "text",
            "evidence",
            "created_at",
        ),
    ),
    "tags": (("scope_type", "scope_id", "key"), ("scope_type", "scope_id", "key", "value")),
    "metric_files": (
        ("file_id",),
        (
            "file_id",
            "path",
            "format",
            "schema_version",
            "schema_hash",
            "project",
            "run_group_id",
            "run_id",
            "row_count",
            "digest",
            "min_step",
            "max_step",
            "created_at",
        ),
    ),
    "metric_summaries": (
        ("run_id", "metric_name"),
        (
            "run_id",
            "metric_name",
            "project",
            "run_group_id",
            "count",
            "finite_count",
            "non_finite_count",
            "min_step",
            "max_step",
            "latest_step",
            "latest_wall_time",
            "latest_value",
            "min_value",
            "max_value",
            "updated_at",
            "latest_file_id",
        ),
    ),
    "metric_summary_files": (("file_id",), ("file_id", "run_id", "summarized_at")),
}

#: Columns stored as INTEGER / REAL; everything else is TEXT.
_INTEGER = {
    "gpu_count",
    "size_bytes",
    "step",
    "rank",
    "row_count",
    "min_step",
    "max_step",
    "count",
    "finite_count",
    "non_finite_count",
    "latest_step",
}
_REAL = {
    "queue_wait_seconds",
    "gpu_hours",
    "estimated_cost",
    "latest_value",
    "min_value",
    "max_value",
}
#: Columns with a non-null default (the reference keeps `experiment_id` as '').
_DEFAULTS = {("runs", "experiment_id"): "''"}

#: Tables mirrored to append-log/<table>.jsonl (derived tables are not mirrored).
MIRRORED = (
    "experiments",
    "run_groups",
    "runs",
    "run_context",
    "configs",
    "tags",
    "artifacts",
    "metric_files",
    "events",
    "observations",
    "idempotency_keys",
)

_INDEXES = (
    ("runs", "run_group_id"),
    ("runs", "state"),
    ("runs", "experiment_id"),
    ("experiments", "project"),
    ("metric_files", "run_id"),
    ("metric_summaries", "metric_name"),
    ("metric_summaries", "run_group_id"),
    ("artifacts", "run_id"),
    ("events", "run_id, time"),
    ("observations", "scope_type, scope_id"),
)


def column_type(table: str, column: str) -> str:
    if column in _INTEGER:
        return "INTEGER"
    if column in _REAL:
        return "REAL"
    return "TEXT"


def ddl() -> list[str]:
    """CREATE statements for every table and index (idempotent)."""
    statements = []
    for table, (key, columns) in TABLES.items():
        parts = []
        for column in columns:
            spec = f'"{column}" {column_type(table, column)}'
            default = _DEFAULTS.get((table, column))
            if default is not None:
                spec += f" NOT NULL DEFAULT {default}"
            parts.append(spec)
        parts.append("PRIMARY KEY (" + ", ".join(f'"{c}"' for c in key) + ")")
        statements.append(f'CREATE TABLE IF NOT EXISTS "{table}" ({", ".join(parts)})')
    for table, indexed in _INDEXES:
        name = "idx_" + table + "_" + indexed.replace(", ", "_")
        statements.append(f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ({indexed})')
    return statements


def metric_schema_hash() -> str:
    """The metric file's `schema_hash`: SHA-256 of the comma-joined column list."""
    import hashlib

    return hashlib.sha256(",".join(METRIC_COLUMNS).encode()).hexdigest()


#: The index list, for the team store's PostgreSQL schema (the same indexes as the folder's).
INDEXES = _INDEXES
