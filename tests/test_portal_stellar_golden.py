"""Goldens of `stellar -o json`, `-o tui` and `plot` for a fixed store (golden/portal-stellar/)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tau.portal.stellar import snapshot
from tau.portal.stellar.output import as_json, as_tui, plot_svg
from tests.golden_plugin import assert_golden
from tests.portal_web_support import FakeSource, demo_runs

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "portal-stellar"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def golden_snapshot(steps: int = 60) -> dict:
    """Short series keep the JSON golden reviewable; the plot uses long ones (downsampled)."""
    runs = demo_runs(groups=2, per_group=3)
    source = FakeSource(store_path="/srv/expstore", runs=runs, steps=steps)
    source.observations.append(
        {
            "observation_id": "obs-1",
            "type": "observation",
            "author": "ana",
            "text": "lr-1 looks better",
            "scope_type": "run_group",
            "scope_id": "lr-1",
            "created_at": "2026-01-01T02:00:00Z",
        }
    )
    ev = source.evidence("exp", max_runs=200)
    return snapshot.build(ev, now=NOW, metric="eval/score")


@pytest.mark.parametrize(
    ("name", "render"),
    [("snapshot.json", as_json), ("stellar.tui.txt", as_tui), ("plot.svg", plot_svg)],
)
def test_golden(name: str, render, update_golden: bool) -> None:
    doc = golden_snapshot(2000 if name == "plot.svg" else 60)
    assert_golden(render(doc), GOLDEN / name, update_golden)


def test_plot_is_byte_identical_for_the_same_store() -> None:
    first = plot_svg(golden_snapshot(2000))
    assert first == plot_svg(golden_snapshot(2000))
    assert first.count('class="series"') == 6
    assert "downsampled: 7,200 of 12,000 points shown" in first
