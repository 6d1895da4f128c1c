"""`import jsonl --run-per-file`: a sweep in one call, and run times from the history."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.portal_helpers import portal

IMPORT = ("experiment", "import", "jsonl")
T0 = 1_760_000_000


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


def history(path: Path, steps: int, start: float, **fields: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"_step": i, "_timestamp": start + 30 * i, "loss": 1 / (i + 1), **fields}
        for i in range(steps)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def runs(store: Path) -> dict[str, tuple[str, str, str, str]]:
    with sqlite3.connect(store / "index.sqlite") as conn:
        return {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                "SELECT run_id, run_group_id, created_at, started_at, completed_at FROM runs"
            )
        }


def test_a_sweep_imports_in_one_call_one_run_per_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for k in range(5):
        history(tmp_path / "sweep" / f"lr-0.{k}.jsonl", 4, T0 + 3600 * k)
    args = (*IMPORT, "--store", store, "--group", "sweep", "--history", tmp_path / "sweep/*.jsonl")
    result = portal(capsys, *args, "--run-per-file")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split()[:3] == ["ACTION", "RUN", "ROWS"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["imported", f"lr-0.{k}", "4"] for k in range(5)
    ]
    found = runs(store)
    assert sorted(found) == [f"lr-0.{k}" for k in range(5)]
    # Times are the history's first and last _timestamp, not the import's clock.
    assert found["lr-0.2"] == (
        "sweep",
        "2025-10-09T10:53:20Z",
        "2025-10-09T10:53:20Z",
        "2025-10-09T10:54:50Z",
    )
    again = portal(capsys, *args, "--run-per-file", "-o", "json").json()
    assert [r["action"] for r in again] == ["reused"] * 5


def test_run_ids_from_a_field_when_every_file_has_the_same_name(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for k in range(3):
        history(tmp_path / f"d{k}" / "metrics.history.jsonl", 3, T0, _run=f"seed-{k}")
    args = (*IMPORT, "--store", store, "--history", tmp_path / "d*/metrics.history.jsonl")
    by_name = portal(capsys, *args, "--run-per-file")
    assert by_name.code == 1
    assert "both name run 'metrics.history'" in by_name.err
    assert runs(store) == {}
    result = portal(capsys, *args, "--run-field", "_run", "-o", "json")
    assert result.code == 0, result.err
    assert sorted(r["run_id"] for r in result.json()) == ["seed-0", "seed-1", "seed-2"]


def test_a_bad_file_name_imports_nothing_and_names_the_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history(tmp_path / "sweep" / "good.jsonl", 2, T0)
    bad = history(tmp_path / "sweep" / "Bad Name.jsonl", 2, T0)
    args = (*IMPORT, "--store", store, "--history", tmp_path / "sweep/*.jsonl", "--run-per-file")
    result = portal(capsys, *args)
    assert result.code == 1
    assert str(bad) in result.err and "file name" in result.err and "Traceback" not in result.err
    assert runs(store) == {}
    both = portal(capsys, *args, "--run", "x")
    assert both.code == 1 and "--run cannot be combined with --run-per-file" in both.err


def test_given_times_win_over_the_history(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = history(tmp_path / "h.jsonl", 3, T0)
    args = (*IMPORT, "--store", store, "--run", "r1", "--history", h)
    assert portal(capsys, *args, "--created-at", "2026-01-02T03:04:05+01:00").code == 0
    assert runs(store)["r1"][1:] == (
        "2026-01-02T02:04:05Z",
        "2025-10-09T08:53:20Z",
        "2025-10-09T08:54:20Z",
    )
    bad = portal(capsys, *IMPORT, "--store", store, "--run", "r2", "--history", h,
                 "--completed-at", "yesterday")  # fmt: skip
    assert bad.code == 1 and "--completed-at must be RFC3339" in bad.err
    # A running run has no completion time yet.
    assert portal(capsys, *IMPORT, "--store", store, "--run", "r3", "--history", h,
                  "--state", "running").code == 0  # fmt: skip
    assert runs(store)["r3"][3] is None
