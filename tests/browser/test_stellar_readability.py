"""What a researcher reads on a Stellar page, in Chromium: the hover readout gives whole run
names, highest value first, under the chart (not over it); parallel coordinates keep the last
axis' label inside the picture; run-table rows stay one line tall, tags and all."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.portal.stellar import snapshot
from tau.portal.stellar.output import as_html
from tests.browser.conftest import Watched
from tests.browser.test_stellar_browser import shot
from tests.browser.test_stellar_charts import at, chart
from tests.portal_web_support import FakeSource
from tests.stellar_compare_support import compare_source

#: Names that agree on their first 30 characters: a readout that cuts them reads them the same.
PREFIX = "sweep-2026-01-lr-warmup-cosine-"
NAMES = [f"{PREFIX}seed-{k}" for k in range(10)]


def open_report(watched: Watched, tmp_path: Path, doc: dict[str, Any]) -> Any:
    path = tmp_path / "page.html"
    path.write_text(as_html(doc))
    watched.page.goto(path.as_uri())
    watched.page.wait_for_selector(".charts-app[data-ready='1']")
    return watched.page


def long_named(tmp_path: Path) -> dict[str, Any]:
    runs = [
        {
            "run_id": name,
            "run_group_id": "sweep",
            "state": "succeeded",
            "created_at": f"2026-01-01T00:{k:02d}:00Z",
            "completed_at": "2026-01-01T01:00:00Z",
            "tags": {"team": "vision", "owner": "ana", "note": "a long note " * 4, "lr": "3e-4"},
            "context": {},
        }
        for k, name in enumerate(NAMES)
    ]
    source = FakeSource(store_path=str(tmp_path), runs=runs, metrics=("train/loss",))
    return snapshot.build(
        source.evidence("sweep", max_runs=200), now=datetime(2026, 1, 2, tzinfo=UTC)
    )


def test_the_readout_names_every_run_whole_highest_first_under_the_chart(
    watched: Watched, tmp_path: Path
) -> None:
    page = open_report(watched, tmp_path, long_named(tmp_path))
    page.locator("#stellar-charts").scroll_into_view_if_needed()
    page.mouse.move(*at(page, "train/loss", 0.4, 0.3))
    readout = chart(page, "train/loss").locator(".chart-readout")
    assert readout.is_visible()
    rows = readout.locator(".readout-row[data-readout-run]:not([hidden])")
    assert rows.count() == 8  # the 8 nearest of 10, "+2 more runs" below them
    assert readout.locator(".readout-more").inner_text().strip() == "+2 more runs"
    names = [rows.nth(i).locator(".readout-run").inner_text() for i in range(rows.count())]
    assert all(n in NAMES for n in names) and len(set(names)) == 8  # whole, all different
    for i in range(rows.count()):  # nothing cut: the text fits its cell
        fits = rows.nth(i).locator(".readout-run").evaluate("e => e.scrollWidth <= e.clientWidth")
        assert fits
    values = [float(rows.nth(i).locator(".readout-value").inner_text()) for i in range(8)]
    assert values == sorted(values, reverse=True)
    assert readout.locator(".readout-row.nearest").count() == 1
    # The readout is under the plot, not over it.
    plot = chart(page, "train/loss").locator("canvas.chart-base").bounding_box()
    box = readout.bounding_box()
    assert plot is not None and box is not None and box["y"] >= plot["y"] + plot["height"]
    shot(watched, tmp_path, "stellar-readout.png")
    watched.assert_clean()


def test_run_table_rows_stay_one_line_tall(watched: Watched, tmp_path: Path) -> None:
    page = open_report(watched, tmp_path, long_named(tmp_path))
    rows = page.locator("#runs-table tbody tr")
    assert rows.count() == 10
    heights = [rows.nth(i).bounding_box()["height"] for i in range(rows.count())]
    assert max(heights) < 36, heights  # one line; ~100 px when the tag chips wrapped
    tags = rows.first.locator("td.rt-tags")
    assert "note=a long note" in (tags.get_attribute("title") or "")  # every tag on hover
    watched.assert_clean()


def test_parallel_coordinates_keep_every_axis_label_inside(
    watched: Watched, tmp_path: Path
) -> None:
    source = compare_source(tmp_path)
    source.metrics = ("eval/mean_episode_return", "train/loss")  # a long right-most label
    doc = snapshot.build(
        source.evidence("exp", max_runs=200),
        now=datetime(2026, 1, 2, tzinfo=UTC),
        metric="eval/mean_episode_return",
    )
    page = open_report(watched, tmp_path, doc)
    page.locator("#parcoords").scroll_into_view_if_needed()
    last = page.locator("#parcoords-svg text.pc-label").last.text_content() or ""
    assert last.startswith("eval/mean_episode_re")
    frame = page.locator("#parcoords-svg").bounding_box()
    labels = page.locator("#parcoords-svg text.pc-label")
    assert frame is not None and labels.count() >= 3
    for i in range(labels.count()):
        box = labels.nth(i).bounding_box()
        assert box is not None
        assert box["x"] >= frame["x"] - 0.5, labels.nth(i).text_content()
        assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 0.5, labels.nth(
            i
        ).text_content()
    watched.assert_clean()
