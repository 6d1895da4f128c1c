"""Runs for the run-table and compare tests: varied configs (lr, batch size, a nested optimizer),
tags, a failed run and hostile names, on top of `portal_web_support.FakeSource`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.portal.stellar import snapshot
from tests.portal_web_support import XSS, FakeSource

NOW = datetime(2026, 1, 2, tzinfo=UTC)
#: run id -> (group, state, config, tags); the order is the page order (and the colour order).
RUNS: dict[str, tuple[str, str, dict[str, Any], dict[str, str]]] = {
    "run-a": (
        "lr-small",
        "succeeded",
        {"lr": 0.001, "batch_size": 32, "model": "tiny", "optimizer": {"name": "adam"}},
        {"team": "vision", "note": "baseline"},
    ),
    "run-b": (
        "lr-small",
        "succeeded",
        {"lr": 0.001, "batch_size": 64, "model": "tiny", "optimizer": {"name": "adam"}},
        {"team": "vision"},
    ),
    "run-c": (
        "lr-big",
        "succeeded",
        {"lr": 0.01, "batch_size": 32, "model": "tiny", "optimizer": {"name": "sgd"}},
        {"team": "nlp"},
    ),
    "run-d": (
        "lr-big",
        "failed",
        {"lr": 0.01, "batch_size": 64, "model": "tiny", "optimizer": {"name": "sgd"}},
        {"team": "nlp"},
    ),
    XSS: (
        "lr-big",
        "succeeded",
        {"lr": 0.1, "batch_size": 128, "model": "tiny", "optimizer": {"name": XSS}},
        {"team": "nlp", XSS: XSS},
    ),
}


def compare_source(store: Path) -> FakeSource:
    runs = []
    for i, (rid, (group, state, _, tags)) in enumerate(RUNS.items()):
        runs.append(
            {
                "run_id": rid,
                "project": "demo",
                "experiment_id": "exp",
                "run_group_id": group,
                "state": state,
                "created_at": f"2026-01-01T00:0{i}:00Z",
                "completed_at": "2026-01-01T01:00:00Z",
                "result_uri": "",
                "tags": dict(tags),
                "context": {},
            }
        )
    configs = {
        rid: [
            {
                "config_hash": f"h-{i}",
                "format": "json",
                "uri": "cfg.json",
                "normalized_json": json.dumps(cfg),
            }
        ]
        for i, (rid, (_, _, cfg, _)) in enumerate(RUNS.items())
    }
    return FakeSource(store_path=str(store), runs=runs, configs=configs)


def compare_doc(store: Path, **kw: Any) -> dict[str, Any]:
    return snapshot.build(compare_source(store).evidence("exp", max_runs=200), now=NOW, **kw)
