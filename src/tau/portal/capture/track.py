"""`experiment track RUN`: run metadata, configs, artifact pointers, tags and scalar metrics.

Performs I/O (reads config and artifact files; writes the store).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tau.portal.errors import UsageError
from tau.portal.store import schema
from tau.portal.store.core import Store
from tau.portal.store.ids import validate_id
from tau.portal.store.metrics import rfc3339_to_micros
from tau.portal.store.write import (
    ensure_experiment,
    ensure_group,
    idempotent_reuse,
    put_run,
    put_tags,
    record_idempotency,
    record_metric_file,
    request_hash,
)

WRITE_VERSION = "tau.exp.track.v0"
_ARTIFACT_FIELDS = (
    "type",
    "name",
    "uri",
    "preview",
    "external_ref",
    "caption",
    "direction",
    "alias",
    "lineage",
)


@dataclass(frozen=True)
class TrackRequest:
    run: str
    project: str
    experiment: str = ""
    group: str = "default"
    parent_run: str | None = None
    state: str = "succeeded"
    state_given: bool = False
    owner: str | None = None
    created_at: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    config_hash: str | None = None
    code_sha: str | None = None
    image_digest: str | None = None
    command: str | None = None
    result_uri: str | None = None
    configs: Sequence[Path] = ()
    config_format: str | None = None
    artifacts: Sequence[str] = ()
    runtime: str | None = None
    dependencies: str | None = None
    log_uri: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    metrics: Sequence[str] = ()
    step: int | None = None
    wall_time: str | None = None
    metric_source: str = "tau"
    split: str | None = None
    unit: str | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class TrackResult:
    run_id: str
    created_run: bool
    configs: int
    artifacts: int
    tags: int
    metric_files: int
    metric_rows: int
    reused: bool
    idempotency_key: str | None


def stamp(flag: str, value: str | None) -> str | None:
    """An RFC3339 flag value in the store's form (UTC, seconds); None stays None."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(
            f"{flag} must be RFC3339: {exc}", hint="e.g. 2026-01-02T03:04:05Z"
        ) from None
    if parsed.tzinfo is None:
        raise UsageError(f"{flag} must be RFC3339: {value!r} has no time zone")
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _config(path: Path, forced: str | None) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror or exc}") from None
    fmt = forced or {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(path.suffix, "raw")
    if fmt not in ("json", "yaml", "raw"):
        raise UsageError(f"--config-format must be one of: json, yaml, raw; got {fmt!r}")
    parsed: Any
    if fmt == "json":
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            raise UsageError(f"--config {path}: not valid JSON: {exc}") from None
    elif fmt == "yaml":
        import yaml

        try:
            parsed = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            raise UsageError(f"--config {path}: not valid YAML: {exc}") from None
    else:
        parsed = data.decode("utf-8", errors="replace")
    normalized = json.dumps(parsed, sort_keys=True, separators=(",", ":"), default=str)
    return {
        "config_hash": "sha256:" + hashlib.sha256(normalized.encode()).hexdigest(),
        "format": fmt,
        "uri": str(path),
        "normalized_json": normalized,
        "indexed_fields": json.dumps(flatten(parsed), sort_keys=True),
    }


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` → `{"a.b": 1}`; list items are indexed `a.0`. Scalars only."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out |= flatten(item, f"{prefix}.{i}" if prefix else str(i))
    elif prefix:
        out[prefix] = value
    else:
        out["value"] = value
    return out


def _artifact(run: str, text: str, stamp: str) -> dict[str, Any]:
    spec: dict[str, Any]
    if text.lstrip().startswith("{"):
        try:
            spec = json.loads(text)
        except ValueError as exc:
            raise UsageError(f'--artifact "{text}" is not valid JSON: {exc}') from None
        if not isinstance(spec, dict) or not spec.get("uri"):
            raise UsageError(f'--artifact "{text}" needs a "uri"')
        unknown = sorted(set(spec) - set(_ARTIFACT_FIELDS))
        if unknown:
            raise UsageError(
                f'--artifact "{text}" has unknown fields {", ".join(unknown)}',
                hint="fields: " + ", ".join(_ARTIFACT_FIELDS),
            )
    else:
        head, sep, uri = text.partition("=")
        if sep and ":" in head and "/" not in head:
            kind, _, name = head.partition(":")
            spec = {"type": kind, "name": name, "uri": uri}
        else:
            spec = {"uri": text}
    direction = spec.get("direction")
    if direction not in (None, "", "input", "output"):
        raise UsageError(f'--artifact "{text}" direction must be input or output')
    uri = str(spec["uri"])
    row: dict[str, Any] = {
        "run_id": run,
        "type": spec.get("type") or "file",
        "uri": uri,
        "name": spec.get("name") or os.path.basename(urlparse(uri).path.rstrip("/")) or uri,
        "preview": spec.get("preview"),
        "external_ref": spec.get("external_ref"),
        "caption": spec.get("caption"),
        "direction": direction or "output",
        "alias": spec.get("alias"),
        "created_at": stamp,
    }
    lineage = spec.get("lineage")
    if isinstance(lineage, dict):
        for key in ("artifact_id", "run_id", "dataset_name", "dataset_version", "dataset_digest"):
            if lineage.get(key) is not None:
                row[f"source_{key}"] = str(lineage[key])
    parsed = urlparse(uri)
    local = Path(parsed.path) if parsed.scheme in ("", "file") else None
    if local is not None and local.is_file():
        digest = hashlib.sha256()
        with open(local, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        info = local.stat()
        row["digest"] = "sha256:" + digest.hexdigest()
        row["size_bytes"] = info.st_size
        row["created_at"] = datetime.fromtimestamp(info.st_mtime, UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    identity = json.dumps([row["type"], row["name"], uri], separators=(",", ":"))
    row["artifact_id"] = f"artifact-{run}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"
    return row


def _metric(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f'--metric: expected name=value, got "{text}"')
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f'--metric: expected name=value, got "{text}"') from None
    return name.strip(), number


def track_run(store: Store, req: TrackRequest) -> TrackResult:
    validate_id("run", req.run)
    validate_id("project", req.project)
    validate_id("group", req.group)
    if req.parent_run:
        validate_id("parent run", req.parent_run)
    if req.experiment:
        validate_id("experiment", req.experiment)
    created = stamp("--created-at", req.created_at)
    started = stamp("--started-at", req.started_at)
    completed = stamp("--completed-at", req.completed_at)
    wall = stamp("--wall-time", req.wall_time)
    configs = [_config(p, req.config_format) for p in req.configs]
    metrics = [_metric(m) for m in req.metrics]
    runtime_stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    artifacts = [_artifact(req.run, a, runtime_stamp) for a in req.artifacts]
    request = {
        "command": "track",
        "request": {k: v for k, v in req.__dict__.items() if k != "idempotency_key"},
        "configs": [c["config_hash"] for c in configs],
        "artifacts": [[a["artifact_id"], a.get("digest")] for a in artifacts],
    }
    digest = request_hash(request)
    if idempotent_reuse(store, req.idempotency_key, digest) is not None:
        return _reused(store, req)
    config_hash = configs[0]["config_hash"] if configs else req.config_hash
    with store.writer() as w:
        if idempotent_reuse(w, req.idempotency_key, digest) is not None:
            return _reused(store, req)
        experiment = req.experiment or store.experiment_id or req.group
        ensure_experiment(
            w,
            experiment,
            project=req.project,
            source="explicit" if req.experiment or store.experiment_id else "run_group",
        )
        ensure_group(w, req.group, project=req.project)
        defaulted = [] if req.created_at else ["created_at"]
        if not req.state_given:
            defaulted.append("state")
        created_run = put_run(
            w,
            {
                "run_id": req.run,
                "project": req.project,
                "experiment_id": experiment,
                "run_group_id": req.group,
                "parent_run_id": req.parent_run,
                "state": req.state,
                "owner": req.owner,
                "created_at": created or w.stamp,
                "started_at": started,
                "completed_at": completed,
                "config_hash": config_hash,
                "code_sha": req.code_sha,
                "image_digest": req.image_digest,
                "tau_command": req.command,
                "result_uri": req.result_uri,
            },
            defaulted=defaulted,
        )
        if req.runtime or req.dependencies or req.log_uri:
            w.put(
                "run_context",
                {
                    "run_id": req.run,
                    "runtime": req.runtime,
                    "dependencies": req.dependencies,
                    "log_uri": req.log_uri,
                },
                conflict=f'run context "{req.run}" already exists with different values',
            )
        n_configs = sum(w.put("configs", c | {"run_id": req.run}) for c in configs)
        n_artifacts = 0
        for a in artifacts:
            # A pointer's record time is not part of its identity: re-tracking is a no-op.
            old = w.get("artifacts", {"artifact_id": a["artifact_id"]})
            if old is not None and "size_bytes" not in a:
                a["created_at"] = old["created_at"]
            n_artifacts += w.put("artifacts", a)
        n_tags = put_tags(w, "run", req.run, dict(req.tags))
        rows = 0
        files = 0
        if metrics:
            rows, files = _write_metrics(w, store, req, metrics, wall, digest)
        record_idempotency(w, req.idempotency_key, "track", "run", req.run, digest)
    return TrackResult(
        req.run,
        created_run,
        n_configs,
        n_artifacts,
        n_tags,
        files,
        rows,
        False,
        req.idempotency_key,
    )


def _write_metrics(
    w: Any,
    store: Store,
    req: TrackRequest,
    metrics: list[tuple[str, float]],
    wall: str | None,
    digest: str,
) -> tuple[int, int]:
    from tau.portal.store.metrics import rows_table, summarize, write_parquet

    tags = json.dumps(
        dict(req.tags) | {"tau.metric.source": "track", "tau.metric.write_version": WRITE_VERSION},
        sort_keys=True,
    )
    micros = rfc3339_to_micros(wall) if wall else None
    table = rows_table(
        [
            {
                "project": req.project,
                "run_group_id": req.group,
                "run_id": req.run,
                "metric_name": name,
                "step": req.step,
                "wall_time": micros,
                "value": value,
                "unit": req.unit,
                "source": req.metric_source,
                "split": req.split,
                "tags": tags,
            }
            for name, value in metrics
        ]
    )
    file_id = f"track-{req.run}-{digest[:12]}"
    if w.get("metric_files", {"file_id": file_id}) is not None:
        return 0, 0  # the same request recorded these rows already
    rel = (
        f"{schema.METRICS}/project={req.project}/group={req.group}/run={req.run}"
        f"/track-{digest[:12]}.parquet"
    )
    tmp = w.tmp_path(f"{file_id}.parquet", target=store.root / rel)
    file_digest = write_parquet(table, tmp)
    w.publish(tmp, store.root / rel)
    steps = [req.step] if req.step is not None else []
    created = record_metric_file(
        w,
        {
            "file_id": file_id,
            "path": rel,
            "format": "parquet",
            "schema_version": schema.METRIC_SCHEMA_VERSION,
            "schema_hash": schema.metric_schema_hash(),
            "project": req.project,
            "run_group_id": req.group,
            "run_id": req.run,
            "row_count": table.num_rows,
            "digest": "sha256:" + file_digest,
            "min_step": min(steps) if steps else None,
            "max_step": max(steps) if steps else None,
            "created_at": w.stamp,
        },
        summarize(table),
    )
    return table.num_rows, int(created)


def _reused(store: Store, req: TrackRequest) -> TrackResult:
    return TrackResult(req.run, False, 0, 0, 0, 0, 0, True, req.idempotency_key)
