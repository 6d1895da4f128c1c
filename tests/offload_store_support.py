"""A folder store seeded the way the metrics collector delivers, through the
store's own write API, so the status and Stellar tests do not depend on the collector's code.

Each delivery is one metric file of `stellar-online` rows whose tags carry `tau.attempt`, with a
file id made of (run, session, attempt, sequence); the terminal marker is one more delivery of
the `tau/run_status` row, and the same keys are set as the run's tags (the last attempt wins).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tau.portal.store import schema
from tau.portal.store.core import Store
from tau.portal.store.metrics import rows_table, summarize, write_parquet
from tau.portal.store.write import ensure_experiment, ensure_group, put_run, record_metric_file

PROJECT, EXPERIMENT, GROUP, SESSION = "demo", "offload", "g", "sess-1"
MARKERS = {"succeeded": 1.0, "failed": -1.0, "cancelled": -2.0}


def init(root: Path) -> Path:
    """An empty folder store at `root`."""
    from tau.portal.cli import main

    assert main(["experiment", "init", EXPERIMENT, "--store", str(root)]) == 0
    return root


def _run(w: Any, run: str, state: str) -> None:
    ensure_experiment(w, EXPERIMENT, project=PROJECT)
    ensure_group(w, GROUP, project=PROJECT)
    put_run(
        w,
        {
            "run_id": run,
            "project": PROJECT,
            "experiment_id": EXPERIMENT,
            "run_group_id": GROUP,
            "state": state,
            "created_at": "2026-12-01T00:00:00Z",
        },
        defaulted=["state", "created_at"],
    )


def deliver(
    root: Path,
    run: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    attempt: int = 0,
    seq: int = 0,
    wall: float = 1_760_000_000.0,
) -> None:
    """One delivery: JSONL-shaped rows (`_step` and metrics) as one metric file."""
    tags = json.dumps({"tau.attempt": str(attempt)}, sort_keys=True)
    table = rows_table(
        [
            {
                "project": PROJECT,
                "run_group_id": GROUP,
                "run_id": run,
                "metric_name": name,
                "step": row["_step"],
                "wall_time": round((wall + row["_step"]) * 1_000_000),
                "value": float(value),
                "unit": None,
                "source": "stellar-online",
                "split": None,
                "tags": tags,
            }
            for row in rows
            for name, value in row.items()
            if not name.startswith("_")
        ]
    )
    _file(root, run, f"offload-{run}-{SESSION}-a{attempt}-{seq:06d}", table)


def _file(root: Path, run: str, file_id: str, table: Any) -> None:
    store = Store.open(root)
    try:
        with store.writer() as w:
            _run(w, run, "running")
            rel = f"{schema.METRICS}/project={PROJECT}/group={GROUP}/run={run}/{file_id}.parquet"
            tmp = w.tmp_path(f"{file_id}.parquet", target=store.root / rel)
            digest = write_parquet(table, tmp)
            w.publish(tmp, store.root / rel)
            steps = [s for s in table.column("step").to_pylist() if s is not None]
            record_metric_file(
                w,
                {
                    "file_id": file_id,
                    "path": rel,
                    "format": "parquet",
                    "schema_version": schema.METRIC_SCHEMA_VERSION,
                    "schema_hash": schema.metric_schema_hash(),
                    "project": PROJECT,
                    "run_group_id": GROUP,
                    "run_id": run,
                    "row_count": table.num_rows,
                    "digest": "sha256:" + digest,
                    "min_step": min(steps) if steps else None,
                    "max_step": max(steps) if steps else None,
                    "created_at": w.stamp,
                },
                summarize(table),
            )
    finally:
        store.close()


def mark(
    root: Path,
    run: str,
    state: str = "succeeded",
    *,
    reason: str = "workload-entrypoint-exit",
    message: str = "",
    attempt: int = 0,
    at: float | None = None,
    checkpoint: str = "",
    artifact: str = "",
) -> None:
    """The terminal marker: the `tau/run_status` row (no step: it sits at the run's end by its
    time, `at`, default now) and the same keys as the run's tags.
    """
    tags = {
        "tau.status.state": state,
        "tau.status.reason": reason,
        "tau.status.message": message,
        "tau.status.artifact_uri": artifact,
        "tau.status.checkpoint_uri": checkpoint,
        "tau.attempt": str(attempt),
    }
    table = rows_table(
        [
            {
                "project": PROJECT,
                "run_group_id": GROUP,
                "run_id": run,
                "metric_name": "tau/run_status",
                "step": None,
                "wall_time": round((time.time() if at is None else at) * 1_000_000),
                "value": MARKERS[state],
                "unit": None,
                "source": "stellar-online",
                "split": None,
                "tags": json.dumps(tags, sort_keys=True),
            }
        ]
    )
    _file(root, run, f"offload-{run}-{SESSION}-a{attempt}-status", table)
    store = Store.open(root)
    try:
        with store.writer() as w:
            # The run's state follows its last attempt's marker, as the collector sets it.
            run_row = w.get("runs", {"run_id": run})
            if run_row is not None:
                w.replace("runs", {**run_row, "state": state})
            for key, value in tags.items():
                # Run tags may change (the last attempt wins): replaced, not written once.
                w.replace(
                    "tags", {"scope_type": "run", "scope_id": run, "key": key, "value": value}
                )
    finally:
        store.close()
