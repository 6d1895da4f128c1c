"""The self-contained `stellar -o html` page, the snapshot builder and the downsampler."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tau.portal.stellar import snapshot
from tau.portal.stellar.downsample import downsample
from tau.portal.stellar.output import as_html
from tests.portal_web_support import XSS, demo_source

NOW = datetime(2026, 1, 2, tzinfo=UTC)
PANELS = (
    "actions",
    "summary",
    "overview",
    "experiment",
    "compare",
    "sweep",
    "cards",
    "runs",
    "timeline",
    "observations",
    "offline",
)


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        #: The text of inert `application/json` data blocks (never executed).
        self.data_blocks: list[str] = []
        self._in_script = False
        self._data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        self._data = self._in_script and dict(attrs).get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            (self.data_blocks if self._data else self.scripts).append(data)


@pytest.fixture
def page(tmp_path: Path) -> str:
    source = demo_source(tmp_path)
    return as_html(snapshot.build(source.evidence("lr-0", max_runs=200), now=NOW))


def parse(text: str) -> Tags:
    tags = Tags()
    tags.feed(text)
    return tags


def test_every_panel_is_present(page: str) -> None:
    panels = {a.get("data-panel") for _, a in parse(page).tags if a.get("data-panel")}
    assert set(PANELS) <= panels


def test_a_hostile_run_name_renders_inert(page: str) -> None:
    tags = parse(page)
    assert XSS not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Only the page's own inline JS executes; the rest are inert JSON data blocks.
    scripts = [a for t, a in tags.tags if t == "script"]
    assert len([a for a in scripts if a.get("type") != "application/json"]) == 1
    assert all("alert(1)" not in s for s in tags.scripts)
    # Data blocks keep the hostile id as data, escaped so it cannot end its block.
    assert all("<" not in block for block in tags.data_blocks)


def test_the_page_is_self_contained(page: str) -> None:
    for tag, attrs in parse(page).tags:
        for name in ("src", "href", "action", "srcset", "poster"):
            value = attrs.get(name) or ""
            assert not re.match(r"^(https?:)?//", value), (tag, name, value)
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
    assert "@import" not in page and "url(" not in page


def test_one_line_per_run_and_the_sampling_is_said(page: str) -> None:
    lines = [a for t, a in parse(page).tags if t == "polyline"]
    assert len(lines) == 4  # lr-0 has three runs plus the hostile one
    assert {a["data-group"] for a in lines} == {"lr-0"}
    assert "all 800 points shown" in page


def test_missing_evidence_says_not_collected(page: str) -> None:
    assert "not collected" in page
    assert "tau/run_status: not collected" in page
    assert "pvc://ckpt/run-0-1" in page  # the checkpoint artifact is evidence
    assert "Pod &lt;script&gt;alert(1)&lt;/script&gt; failed: OOMKilled" in page  # timeline


def test_copy_buttons_carry_the_commands(page: str) -> None:
    buttons = [a["data-copy"] for t, a in parse(page).tags if t == "button" and "data-copy" in a]
    assert any(b and " stellar 'lr-0' -o html" in b for b in buttons)
    assert any(b and " sql " in b for b in buttons)


def test_downsampling_keeps_spikes_and_says_so() -> None:
    steps = list(range(10_000))
    values = [math.sin(s / 500) for s in steps]
    values[4321] = 50.0
    values[7777] = -50.0
    values[10] = math.nan
    d = downsample(steps, values, 600)
    assert d.rendered_points <= 600 and d.decimated
    assert d.source_points == 9_999 and d.non_finite == 1
    assert 50.0 in d.values and -50.0 in d.values
    assert d.steps[0] == 0 and d.steps[-1] == 9_999
    assert list(d.steps) == sorted(d.steps)
    assert downsample(steps, values, 600) == d


def test_a_hundred_runs_share_the_point_budget(tmp_path: Path) -> None:
    from tests.portal_web_support import FakeSource, demo_runs

    source = FakeSource(store_path=str(tmp_path), runs=demo_runs(10, 10), steps=3000)
    doc = snapshot.build(source.evidence("exp", max_runs=200), now=NOW, metric="train/loss")
    series = doc["chart"]["series"]
    assert len(series) == 100
    assert sum(s["rendered_points"] for s in series) <= snapshot.TOTAL_POINT_BUDGET
    assert all(s["decimated"] and s["point_count"] == 3000 for s in series)
    assert doc["chart"]["smoothing"] == {"method": "ema", "alpha": 0.12}


def test_runs_over_the_bound_are_reported(tmp_path: Path) -> None:
    source = demo_source(tmp_path)
    doc = snapshot.build(source.evidence("exp", max_runs=3), now=NOW)
    assert len(doc["runs"]) == 3
    assert "runs truncated to 3 of 7 matching runs" in doc["warnings"]


def test_lifecycle_classification_gates() -> None:
    run = {"run_id": "r", "state": "succeeded", "tags": {"tau.success.min_step": "500"}}
    summaries = {
        "loss": {"max_step": 100, "non_finite_count": 2},
        "oom_count": {"max_step": 100, "max_value": 1},
    }
    state, ok, reasons = snapshot.classify(run, summaries)
    assert (state, ok) == ("incomplete", False)
    assert reasons == [
        "max step 100 is below required step 500",
        "loss has 2 non-finite values",
        "oom_count indicates failure with max value 1",
    ]
    assert snapshot.classify({"state": "running"}, {})[0] == "running"
    assert snapshot.classify({"state": "weird", "completed_at": "x"}, {})[0] == "incomplete"


def test_terminal_marker_wins_liveness() -> None:
    run = {"run_id": "r", "state": "running", "created_at": "2020-01-01T00:00:00Z"}
    marker = {"tau/run_status": {"latest_value": -1.0, "latest_wall_time": "2020-01-01T00:00:00Z"}}
    live = snapshot.liveness(run, marker, NOW)
    assert live["outcome_state"] == "failed" and live["lifecycle_source"] == "metrics"
    stale = snapshot.liveness(run, {}, NOW)
    assert stale["liveness_state"] == "not_responding"


def test_inlined_assets_cannot_close_their_own_tags() -> None:
    from tau.portal.stellar.html import assets

    assert "</script" not in assets().js.lower() and "</style" not in assets().css.lower()
