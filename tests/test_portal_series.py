"""Chart reads of metric files (`store/series.py`): each file is decoded once per process, and
what was decoded is kept within a byte budget (`store/recent.py`)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tau.portal.store import series
from tau.portal.store.core import Store
from tau.portal.store.recent import Recent
from tests.portal_helpers import portal


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Two runs whose metric files hold two metrics in one row group (what `track` writes)."""
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for run, step in (("r0", 10), ("r1", 20)):
        result = portal(
            capsys, "experiment", "track", run, "--store", root, "--group", "g",
            "--metric", "loss=0.5", "--metric", "acc=0.9", "--step", str(step),
        )  # fmt: skip
        assert result.code == 0, result.err
    return root


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The metric each file decode was for (a fresh cache for the test)."""
    monkeypatch.setattr(series, "_DECODED", Recent(1 << 20, lambda t: max(64, int(t.nbytes))))
    seen: list[str] = []
    decode = series._decode

    def counted(key: Any, source: Any, metric_name: str) -> Any:
        seen.append(metric_name)
        return decode(key, source, metric_name)

    monkeypatch.setattr(series, "_decode", counted)
    return seen


def test_a_file_is_decoded_once_for_every_metric_it_holds(store: Path, decodes: list[str]) -> None:
    opened = Store.open(store)
    loss = series.metric_columns(opened, ["r0", "r1"], "loss")
    assert {r: (c[0], c[1]) for r, c in loss.items()} == {"r0": ([10], [0.5]), "r1": ([20], [0.5])}
    assert decodes == ["loss", "loss"]  # one decode per file
    acc = series.metric_columns(opened, ["r0", "r1"], "acc")
    assert {r: c[1] for r, c in acc.items()} == {"r0": [0.9], "r1": [0.9]}
    assert decodes == ["loss", "loss"]  # the other metric from memory
    for _ in range(2):
        assert series.metric_columns(opened, ["r0"], "nope") == {}
    assert decodes == ["loss", "loss", "nope"]  # that a file lacks a metric is kept too


def test_a_rewritten_local_file_is_read_again(store: Path, decodes: list[str]) -> None:
    opened = Store.open(store)
    series.metric_columns(opened, ["r0"], "loss")
    path = next((store / "metrics").rglob("*.parquet"))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    series.metric_columns(opened, ["r0", "r1"], "loss")
    assert len(decodes) == 3


def test_recent_keeps_the_latest_values_within_its_budget() -> None:
    kept: Recent[bytes] = Recent(10, len)
    assert kept.get("a", lambda: b"aaaa") == b"aaaa"
    kept.put("b", b"bbbb")
    assert kept.peek("a") == b"aaaa"  # now the most recent
    kept.put("c", b"cccc")  # 12 bytes: the least recent ("b") goes
    assert kept.peek("b") is None and kept.peek("a") == b"aaaa" and kept.size == 8
    kept.put("huge", b"x" * 11)  # larger than the whole budget: never kept
    assert kept.peek("huge") is None
    assert kept.get("a", lambda: b"other") == b"aaaa"


def test_recent_loads_a_key_once_however_many_threads_ask() -> None:
    """A page's prefetch and its chart may ask for the same file at once: one fetch."""
    kept: Recent[bytes] = Recent(100, len)
    loading, release = threading.Event(), threading.Event()
    loads: list[str] = []

    def slow() -> bytes:
        loads.append("slow")
        loading.set()
        release.wait(10)
        return b"value"

    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(kept.get, "k", slow)
        assert loading.wait(10)
        second = pool.submit(kept.get, "k", lambda: b"other")
        release.set()
        assert first.result(10) == second.result(10) == b"value"
    assert loads == ["slow"]
