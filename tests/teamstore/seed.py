"""A small folder store with every kind of record, for pushing to the team store in tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.portal_helpers import portal, write_history

RUNS = [
    # run, group, lr, score, state, created
    ("r0", "arm-a", 0.1, 0.5, "succeeded", "2026-01-01T00:00:00Z"),
    ("r1", "arm-a", 0.1, 0.6, "succeeded", "2026-01-02T00:00:00Z"),
    ("r2", "arm-b", 0.01, 0.7, "failed", "2026-01-03T00:00:00Z"),
    ("r3", "arm-b", 0.01, 0.8, "running", "2026-01-04T00:00:00Z"),
]


def seed_store(root: Path, work: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A folder store at `root`: tracked runs with configs, tags, metrics and artifacts,
    imported histories (Parquet series and a copied artifact), and an observation."""
    work.mkdir(parents=True, exist_ok=True)
    ok = portal(capsys, "experiment", "init", "demo", "--store", root)
    assert ok.code == 0, ok.err
    for i, (run, group, lr, score, state, created) in enumerate(RUNS):
        config = work / f"c{i}.json"
        config.write_text(json.dumps({"optim": {"lr": lr}, "batch_size": 32 * (i + 1)}))
        args = ["experiment", "track", run, "--store", root, "--group", group, "--state", state]
        args += ["--config", config, "--metric", f"eval/score={score}", "--step", "100"]
        args += ["--created-at", created, "--tag", f"lr={lr}", "--tag", "team=vision"]
        args += ["--artifact", f"checkpoint:best=s3://models/{run}/best.pt", "--owner", "ana"]
        result = portal(capsys, *args)
        assert result.code == 0, result.err
    for i, (run, group, *_) in enumerate(RUNS[:3]):
        history = write_history(work / f"h{i}.jsonl", 40 + 10 * i, scale=1.0 + i)
        result = portal(
            capsys, "experiment", "import", "jsonl", "--store", root, "--run", run,
            "--history", history, "--group", group, "--owner", "ana",
        )  # fmt: skip
        assert result.code == 0, result.err
    note = portal(
        capsys, "experiment", "observe", "--store", root, "--scope", "run_group:arm-a",
        "--text", "arm-a is steadier", "--author", "ana", "--id", "obs-1",
    )  # fmt: skip
    assert note.code == 0, note.err
    return root
