"""Stellar's canvas charts in a real headless Chromium, one test per interaction.

The charts publish what they show as data- attributes on each `figure.chart` (x and y range,
scale, smoothing, visible runs, outlier count, hover position); the tests read those, not pixels.
Most tests open the offline report from disk and assert it made no request but itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tau.portal.stellar import snapshot
from tau.portal.stellar.evidence import Series
from tau.portal.stellar.output import as_html
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.browser.conftest import Watched
from tests.browser.test_stellar_browser import shot
from tests.portal_web_support import XSS, FakeSource, demo_source, serve_app

SPIKE_RUN = "run-1-2"
SPIKE = 1e9


class SpikySource(FakeSource):
    """The demo store, with one 1e9 spike in one run's train/loss (a diverged step)."""

    def _series(self, metric: str, run_ids: Sequence[str]) -> list[Series]:
        out = []
        for s in super()._series(metric, run_ids):
            if metric == "train/loss" and s.run_id == SPIKE_RUN:
                values = list(s.values)
                values[120] = SPIKE
                s = Series(s.run_id, s.metric_name, s.steps, tuple(values), s.wall_times)
            out.append(s)
        return out


def spiky_source(tmp_path: Path) -> SpikySource:
    store = tmp_path / "store"
    store.mkdir()
    demo = demo_source(store)
    return SpikySource(
        store_path=demo.store_path,
        runs=demo.runs,
        metrics=("eval/score", "train/loss", "gpu/util"),
        events=demo.events,
        configs=demo.configs,
    )


RUNS = 7  # demo_source: 2 groups × 3 runs, plus the XSS-named run in lr-0


@pytest.fixture
def source(tmp_path: Path) -> SpikySource:
    return spiky_source(tmp_path)


@pytest.fixture
def page(watched: Watched, source: SpikySource, tmp_path: Path) -> Iterator[Any]:
    """The offline report (file://) of the whole experiment, charts drawn."""
    doc = snapshot.build(
        source.evidence("exp", max_runs=200),
        now=datetime(2026, 1, 2, tzinfo=UTC),
        metric="train/loss",
    )
    path = tmp_path / "exp-stellar.html"
    path.write_text(as_html(doc))
    watched.page.goto(path.as_uri())
    watched.page.wait_for_selector(".charts-app[data-ready='1']")
    watched.page.locator("#stellar-charts").scroll_into_view_if_needed()
    yield watched.page
    assert watched.requests == [path.as_uri()]  # the report fetched nothing
    assert watched.dialogs == []  # the hostile run id never ran as script
    watched.assert_clean()


def chart(page: Any, metric: str) -> Any:
    return page.locator(f'figure.chart[data-metric="{metric}"]')


def attr(page: Any, metric: str, name: str) -> str:
    return str(chart(page, metric).get_attribute(f"data-{name}"))


def num(page: Any, metric: str, name: str) -> float:
    return float(attr(page, metric, name))


def plot_box(page: Any, metric: str) -> dict[str, float]:
    box = chart(page, metric).locator("canvas.chart-overlay").bounding_box()
    assert box is not None
    return dict(box)


def at(page: Any, metric: str, fx: float, fy: float = 0.5) -> tuple[float, float]:
    """A point inside the plot area, as fractions of the plotted region."""
    b = plot_box(page, metric)
    left, right, top, bottom = 58, 14, 10, 28  # charts.js PAD
    return (
        b["x"] + left + fx * (b["width"] - left - right),
        b["y"] + top + fy * (b["height"] - top - bottom),
    )


def test_small_multiples_one_chart_per_metric_decision_first_and_a_picker(page: Any) -> None:
    figures = page.locator("figure.chart")
    assert figures.count() == 3
    assert [figures.nth(i).get_attribute("data-metric") for i in range(3)] == [
        "train/loss",
        "eval/score",
        "gpu/util",
    ]
    assert page.locator(".chart-fallback").is_hidden()  # the SVG is the no-JS fallback only
    for i in range(3):
        assert figures.nth(i).get_attribute("data-visible-runs") == str(RUNS)
        label = figures.nth(i).locator("canvas.chart-base").get_attribute("aria-label")
        assert label and f"{RUNS} runs" in label
    page.locator(".chart-picker summary").click()
    page.locator('input[data-control="metric"][value="eval/score"]').uncheck()
    assert figures.count() == 2
    assert chart(page, "eval/score").count() == 0
    page.locator('input[data-control="metric"][value="eval/score"]').check()
    assert figures.count() == 3


def test_hover_shows_a_synced_crosshair_and_a_readout_per_run(
    page: Any, watched: Watched, tmp_path: Path
) -> None:
    x, y = at(page, "train/loss", 0.5)
    page.mouse.move(x, y)
    readout = chart(page, "train/loss").locator(".chart-readout")
    assert readout.is_visible()
    assert readout.get_attribute("data-runs") == str(RUNS)
    rows = readout.locator(".readout-row[data-readout-run]")
    assert rows.count() == RUNS
    hovered = num(page, "train/loss", "hover-x")
    assert 90 <= hovered <= 110  # the middle of steps 0..199
    for i in range(rows.count()):
        row = rows.nth(i)
        step = int(row.locator(".readout-step").inner_text())
        assert step == int(hovered)  # the point at or before the cursor
        float(row.locator(".readout-value").inner_text())
        assert row.locator(".readout-time").inner_text().startswith("2026-01-01T00:0")
    assert XSS in readout.inner_text()  # a hostile run id is text
    # The other charts draw the crosshair at the same x; only the hovered one has a readout.
    assert num(page, "eval/score", "hover-x") == hovered
    assert chart(page, "eval/score").locator(".chart-readout").is_hidden()
    shot(watched, tmp_path, "stellar-charts.png")
    page.mouse.move(5, 5)
    assert chart(page, "eval/score").get_attribute("data-hover-x") is None
    assert readout.is_hidden()


def test_drag_zoom_narrows_the_x_range_and_reset_restores_it(page: Any) -> None:
    assert (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")) == (0, 199)
    page.mouse.move(*at(page, "train/loss", 0.25))
    page.mouse.down()
    page.mouse.move(*at(page, "train/loss", 0.5), steps=4)
    page.mouse.up()
    lo, hi = num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")
    assert 40 < lo < 60 and 90 < hi < 110
    assert attr(page, "train/loss", "zoomed") == "1"
    # Every chart follows the zoom; y follows the data in range (the spike at 120 is outside).
    assert (num(page, "eval/score", "x-min"), num(page, "eval/score", "x-max")) == (lo, hi)
    assert attr(page, "train/loss", "outliers") == "0"
    page.locator('button[data-control="reset-zoom"]').click()
    assert (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")) == (0, 199)
    # Double-click resets too.
    page.mouse.move(*at(page, "eval/score", 0.1))
    page.mouse.down()
    page.mouse.move(*at(page, "eval/score", 0.3), steps=3)
    page.mouse.up()
    assert attr(page, "eval/score", "zoomed") == "1"
    page.mouse.dblclick(*at(page, "eval/score", 0.5))
    assert attr(page, "eval/score", "zoomed") == "0"
    assert num(page, "eval/score", "x-max") == 199


def test_log_scale_skips_non_positive_values_with_a_note(page: Any) -> None:
    # eval/score starts at or below 0 for every run but the first.
    linear_min = num(page, "eval/score", "y-min")
    assert linear_min < 0
    page.locator('input[data-control="log"]').check()
    assert attr(page, "eval/score", "log") == "1"
    assert num(page, "eval/score", "y-min") > 0
    assert num(page, "eval/score", "skipped-nonpositive") >= RUNS - 1
    note = chart(page, "eval/score").locator(".chart-note").inner_text()
    assert "non-positive values not drawn on the log scale" in note
    assert attr(page, "train/loss", "skipped-nonpositive") == "0"
    page.locator('input[data-control="log"]').uncheck()
    assert num(page, "eval/score", "y-min") == linear_min


def test_an_outlier_spike_does_not_flatten_the_other_runs(
    page: Any, watched: Watched, tmp_path: Path
) -> None:
    y_max = num(page, "train/loss", "y-max")
    assert y_max < 10  # the curves live in 0.3..2.4; the 1e9 spike is clipped
    assert num(page, "train/loss", "outliers") >= 1
    assert "beyond the y range" in chart(page, "train/loss").locator(".chart-note").inner_text()
    assert attr(page, "eval/score", "outliers") == "0"
    shot(watched, tmp_path, "stellar-charts-outlier.png")
    page.locator('input[data-control="full"]').check()
    assert num(page, "train/loss", "y-max") >= SPIKE
    assert attr(page, "train/loss", "outliers") == "0"
    # Hiding the spiking run brings the range back even in full mode.
    page.locator(f'button[data-legend-run="{SPIKE_RUN}"]').click()
    assert num(page, "train/loss", "y-max") < 10


def test_ema_smoothing_slider_changes_the_drawn_values(page: Any) -> None:
    raw_last = num(page, "train/loss", "smoothed-last")
    page.locator('input[data-control="smoothing"]').fill("0.9")
    assert num(page, "train/loss", "smoothing") == 0.9
    smooth_last = num(page, "train/loss", "smoothed-last")
    assert smooth_last != raw_last
    # The first run's loss still falls at the end, so its EMA lags above the raw value.
    assert smooth_last > raw_last
    assert page.locator('output[data-control="smoothing-value"]').inner_text() == "0.90"
    # The readout shows the smoothed value with the raw one beside it.
    page.mouse.move(*at(page, "train/loss", 0.9))
    head = chart(page, "train/loss").locator(".readout-head").inner_text()
    assert "smoothed" in head
    page.locator('input[data-control="smoothing"]').fill("0")
    assert num(page, "train/loss", "smoothed-last") == raw_last


def test_x_axis_switches_between_step_wall_time_and_relative_time(page: Any) -> None:
    select = page.locator('select[data-control="x-axis"]')
    select.select_option("wall")
    t0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms: the first run's first point
    assert num(page, "train/loss", "x-min") == t0
    assert num(page, "train/loss", "x-max") == t0 + (6 * 60 + 199) * 1000  # the last run
    select.select_option("relative")
    assert (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")) == (0, 199)
    assert attr(page, "train/loss", "x-axis") == "relative"
    label = chart(page, "train/loss").locator("canvas.chart-base").get_attribute("aria-label")
    assert "relative time 0s to 3m19s" in label
    select.select_option("step")
    assert (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")) == (0, 199)


def test_legend_hides_and_shows_runs_and_whole_groups(page: Any) -> None:
    run = page.locator('button[data-legend-run="run-0-1"]')
    run.click()
    assert run.get_attribute("aria-pressed") == "false"
    assert attr(page, "train/loss", "visible-runs") == str(RUNS - 1)
    assert attr(page, "eval/score", "visible-runs") == str(RUNS - 1)
    group = page.locator('button[data-legend-group="lr-1"]')
    group.click()
    assert attr(page, "train/loss", "visible-runs") == str(RUNS - 1 - 3)
    assert group.get_attribute("aria-pressed") == "false"
    group.click()
    run.click()
    assert attr(page, "train/loss", "visible-runs") == str(RUNS)
    # The hostile run id is a legend label, as text.
    assert page.locator(".charts-legend").get_by_text(XSS).count() == 1


def test_selection_and_visibility_events_from_the_run_table(page: Any) -> None:
    def fire(name: str, runs: list[str] | None) -> None:
        page.evaluate(
            "([n, r]) => document.dispatchEvent(new CustomEvent(n, {detail: {runs: r}}))",
            [name, runs],
        )

    fire("stellar:selection", ["run-0-0", "run-1-1"])
    assert attr(page, "train/loss", "visible-runs") == "2"
    fire("stellar:visible", ["run-0-0"])
    assert attr(page, "train/loss", "visible-runs") == "1"
    fire("stellar:selection", None)
    assert attr(page, "train/loss", "visible-runs") == "1"
    fire("stellar:visible", [r["run_id"] for r in spiky_runs()])
    assert attr(page, "train/loss", "visible-runs") == str(RUNS)


def spiky_runs() -> list[dict[str, Any]]:
    return [{"run_id": f"run-{g}-{k}"} for g in range(2) for k in range(3)] + [{"run_id": XSS}]


def test_live_refresh_keeps_zoom_scale_smoothing_axis_and_hidden_runs(
    watched: Watched, source: SpikySource
) -> None:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as served:
        page = watched.page
        page.goto(served.url + "/stellar?target=exp&metric=train/loss")
        page.wait_for_selector(".charts-app[data-ready='1']")
        page.locator("#stellar-charts").scroll_into_view_if_needed()
        page.locator('input[data-control="log"]').check()
        page.locator('input[data-control="smoothing"]').fill("0.5")
        page.locator('select[data-control="x-axis"]').select_option("relative")
        page.locator('button[data-legend-run="run-0-1"]').click()
        page.mouse.move(*at(page, "train/loss", 0.2))
        page.mouse.down()
        page.mouse.move(*at(page, "train/loss", 0.6), steps=3)
        page.mouse.up()
        zoom = (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max"))
        page.evaluate("window.__same_page = true")
        source.runs.append({**source.runs[0], "run_id": "run-0-late"})
        source.stamp = "v-late"
        page.wait_for_selector('button[data-legend-run="run-0-late"]', timeout=15_000)
        assert page.evaluate("window.__same_page") is True
        assert attr(page, "train/loss", "log") == "1"
        assert attr(page, "train/loss", "smoothing") == "0.5"
        assert attr(page, "train/loss", "x-axis") == "relative"
        assert (num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")) == zoom
        assert attr(page, "train/loss", "visible-runs") == str(RUNS)  # +1 new, -1 hidden
        assert page.locator('input[data-control="log"]').is_checked()
        assert page.locator('select[data-control="x-axis"]').input_value() == "relative"
        watched.assert_clean()
