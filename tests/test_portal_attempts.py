"""Where each attempt of a retried run starts (`tau.portal.store.attempts`), and the charts' marks
(`chartdata.attempt_marks`), over a folder store seeded as the collector delivers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau.portal.stellar import chartdata
from tau.portal.stellar.evidence import Evidence
from tau.portal.stellar.source import StoreSource
from tau.portal.store.attempts import attempt_starts
from tau.portal.store.core import Store
from tau.portal.store.metrics import rows_table
from tests import offload_store_support as seed

WALL = 1_760_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = seed.init(tmp_path / "store")
    seed.deliver(root, "r1", [{"_step": s, "loss": 1.0} for s in range(0, 50)], wall=WALL)
    seed.deliver(root, "r1", [{"_step": s, "loss": 1.0} for s in range(50, 80)], seq=1, wall=WALL)
    seed.mark(root, "r1", "failed", attempt=0)
    seed.deliver(root, "r1", [{"_step": s, "loss": 0.5} for s in range(60, 120)], attempt=1)
    seed.deliver(root, "r1", [{"_step": s, "loss": 0.2} for s in range(100, 130)], attempt=2)
    seed.mark(root, "r1", attempt=2)
    seed.deliver(root, "r2", [{"_step": s, "loss": 1.0} for s in range(10)], wall=WALL)
    return root


def _starts(root: Path, runs: list[str]) -> dict:
    s = Store.open(root)
    try:
        return attempt_starts(s, runs)
    finally:
        s.close()


def test_each_attempt_starts_at_its_first_step(store: Path) -> None:
    found = _starts(store, ["r1", "r2"])
    assert [(a, step) for a, step, _ in found["r1"]] == [(0, 0), (1, 60), (2, 100)]
    assert found["r1"][0][2] == round(WALL * 1_000_000)  # the first row's wall time
    assert [(a, step) for a, step, _ in found["r2"]] == [(0, 0)]


def test_runs_not_asked_for_or_without_the_tag_are_absent(store: Path) -> None:
    assert set(_starts(store, ["r2"])) == {"r2"}
    s = Store.open(store)
    try:
        with s.writer() as w:
            seed._run(w, "plain", "succeeded")
    finally:
        s.close()
    seed._file(  # a hand-built file: no tau.attempt tag at all
        store,
        "plain",
        "hand-plain",
        rows_table([_row("plain", 0, {}), _row("plain", 1, {})]),
    )
    assert _starts(store, ["plain"]) == {}


def _row(run: str, step: int, tags: dict) -> dict:
    return {
        "project": seed.PROJECT,
        "run_group_id": seed.GROUP,
        "run_id": run,
        "metric_name": "loss",
        "step": step,
        "wall_time": None,
        "value": 1.0,
        "unit": None,
        "source": "stellar-online",
        "split": None,
        "tags": json.dumps(tags),
    }


def test_a_file_of_mixed_attempts_is_read_row_by_row(tmp_path: Path) -> None:
    root = seed.init(tmp_path / "store")
    rows = [_row("m", s, {"tau.attempt": "0"}) for s in range(5)]
    rows += [_row("m", s, {"tau.attempt": "1"}) for s in range(3, 8)]
    seed._file(root, "m", "mixed-m", rows_table(rows))
    assert [(a, step, wall) for a, step, wall in _starts(root, ["m"])["m"]] == [
        (0, 0, 0),
        (1, 3, 0),
    ]


def test_the_charts_mark_each_retry_with_its_step_and_time(store: Path) -> None:
    ev = StoreSource(store).evidence("r1", max_runs=10, kind="run")
    marks = chartdata.attempt_marks(ev, ["r1"])
    assert [(m["attempt"], m["step"]) for m in marks] == [(1, 60), (2, 100)]
    assert all(m["run_id"] == "r1" and isinstance(m["t"], int) for m in marks)


def test_no_loader_no_marks() -> None:
    ev = Evidence("/s", "t", "run", {}, {}, None, (), (), 0)
    assert chartdata.attempt_marks(ev, ["a"]) == []


def test_a_marker_followed_by_a_later_attempt_s_rows_ends_an_attempt_not_the_run(
    tmp_path: Path,
) -> None:
    import time
    from datetime import UTC, datetime

    from tau.portal.stellar import snapshot

    root = seed.init(tmp_path / "store")
    now = time.time()
    seed.deliver(root, "r", [{"_step": s, "loss": 1.0} for s in range(10)], wall=now - 200)
    seed.mark(root, "r", "failed", attempt=0, at=now - 150)
    doc = snapshot.build(StoreSource(root).evidence("r", max_runs=5), now=datetime.now(UTC))
    run = doc["runs"][0]
    assert (run["terminal"], run["outcome_state"]) == (True, "failed")
    # Failed moments ago: a retry may come, the live page keeps looking.
    assert doc["live"]["finished"] is True and doc["live"]["settled"] is False
    assert doc["live"]["retry_watch"] == ["r"]

    seed.deliver(root, "r", [{"_step": s, "loss": 0.5} for s in range(5, 20)], attempt=1)
    doc = snapshot.build(StoreSource(root).evidence("r", max_runs=5), now=datetime.now(UTC))
    run = doc["runs"][0]
    assert (run["terminal"], run["liveness_state"]) == (False, "running")
    assert run["lifecycle_reason"] == "attempt 1 running after an earlier attempt's marker"
    assert doc["live"]["finished"] is False

    seed.mark(root, "r", attempt=1)
    doc = snapshot.build(StoreSource(root).evidence("r", max_runs=5), now=datetime.now(UTC))
    run = doc["runs"][0]
    assert (run["terminal"], run["outcome_state"]) == (True, "succeeded")
    assert doc["live"]["settled"] is True


def test_a_failure_long_ago_settles() -> None:
    from tau.portal.stellar import snapshot

    runs = [{"run_id": "a", "terminal": True, "outcome_state": "failed", "freshness_seconds": 3600}]
    assert snapshot.settled(runs) == {"settled": True, "retry_watch": []}
