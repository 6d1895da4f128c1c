"""Served Stellar charts in Chromium: charts beyond the first load their series on demand, and a
zoom fetches the zoomed range's own points (the offline report zooms what it carries)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tau.portal.stellar import snapshot
from tau.portal.stellar.output import as_html
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.browser.conftest import Watched
from tests.browser.test_stellar_charts import at, attr, chart, num
from tests.portal_web_support import FakeSource, serve_app

STEPS = 200_000


@pytest.fixture
def source(tmp_path: Path) -> FakeSource:
    store = tmp_path / "store"
    store.mkdir()
    run = {
        "run_id": "long-run",
        "run_group_id": "long",
        "state": "succeeded",
        "created_at": "2026-01-01T00:00:00Z",
        "completed_at": "2026-01-03T00:00:00Z",
        "tags": {},
        "context": {},
    }
    return FakeSource(
        store_path=str(store),
        runs=[run],
        metrics=("train/loss", "eval/score", "gpu/util"),
        steps=STEPS,
    )


@pytest.fixture
def served_page(watched: Watched, source: FakeSource) -> Iterator[tuple[Any, list[str]]]:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as served:
        page = watched.page
        page.goto(served.url + "/stellar?target=long&kind=group&metric=train/loss")
        page.wait_for_selector(".charts-app[data-ready='1']")
        page.locator("#stellar-charts").scroll_into_view_if_needed()
        yield page, watched.requests
    watched.assert_clean()


def embedded(page: Any) -> dict[str, Any]:
    return json.loads(page.locator("#stellar-charts-data").text_content())


def test_a_served_page_embeds_the_first_chart_and_loads_the_others_when_seen(
    served_page: tuple[Any, list[str]],
) -> None:
    page, requests = served_page
    payload = embedded(page)
    assert [len(m["series"]) for m in payload["metrics"]] == [1, 0, 0]
    assert [bool(m.get("deferred")) for m in payload["metrics"]] == [False, True, True]
    for metric in ("eval/score", "gpu/util"):
        page.wait_for_selector(f'figure.chart[data-metric="{metric}"][data-loading="0"]')
        assert attr(page, metric, "visible-runs") == "1"
        assert num(page, metric, "points") > 500  # the page budget, not a placeholder
    fetched = [r for r in requests if "/api/v2/stellar/series" in r]
    assert len(fetched) == 2 and all("format=columns" in r for r in fetched)
    assert not [r for r in requests if "chart.svg" in r]  # the no-JS image is not fetched


def test_zoom_fetches_the_ranges_own_points(
    served_page: tuple[Any, list[str]], watched: Watched, tmp_path: Path
) -> None:
    page, requests = served_page
    first, last = num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")
    assert (first, last) == (0, STEPS - 1)
    # Zoom into about 1% of the steps: the page carries ~1,500 points for 200,000 steps, so
    # the range holds ~15 of them.
    page.mouse.move(*at(page, "train/loss", 0.52))
    page.mouse.down()
    page.mouse.move(*at(page, "train/loss", 0.53), steps=3)
    page.mouse.up()
    lo, hi = num(page, "train/loss", "x-min"), num(page, "train/loss", "x-max")
    assert 0 < hi - lo < STEPS * 0.02
    page.wait_for_selector('figure.chart[data-metric="train/loss"][data-detail="loaded"]')
    detail = num(page, "train/loss", "points")
    assert detail >= 1000, detail  # a chart's worth of the range's own points
    zooms = [r for r in requests if "start_step=" in r and "train%2Floss" in r]
    assert zooms and re.search(r"max_points=1500\b", zooms[-1])
    # Every chart follows the zoom with detail of its own.
    page.wait_for_selector('figure.chart[data-metric="eval/score"][data-detail="loaded"]')
    assert num(page, "eval/score", "points") >= 500  # flat there: one point per bucket
    # Hover reads the detailed points of the range.
    page.mouse.move(*at(page, "train/loss", 0.5))
    row = chart(page, "train/loss").locator(".readout-row[data-readout-run] .readout-step")
    step = int(row.first.inner_text())
    assert lo <= step <= hi
    page.locator('button[data-control="reset-zoom"]').click()
    assert attr(page, "train/loss", "detail") == "none"
    assert num(page, "train/loss", "points") <= 1600


def test_the_offline_report_zooms_what_it_carries(
    watched: Watched, source: FakeSource, tmp_path: Path
) -> None:
    doc = snapshot.build(
        source.evidence("long", max_runs=200),
        now=datetime(2026, 1, 4, tzinfo=UTC),
        metric="train/loss",
    )
    path = tmp_path / "long.html"
    path.write_text(as_html(doc))
    page = watched.page
    page.goto(path.as_uri())
    page.wait_for_selector(".charts-app[data-ready='1']")
    page.locator("#stellar-charts").scroll_into_view_if_needed()
    page.mouse.move(*at(page, "train/loss", 0.52))
    page.mouse.down()
    page.mouse.move(*at(page, "train/loss", 0.53), steps=3)
    page.mouse.up()
    assert attr(page, "train/loss", "zoomed") == "1"
    assert attr(page, "train/loss", "detail") == "none"
    assert num(page, "train/loss", "points") < 40
    assert watched.requests == [path.as_uri()]
    watched.assert_clean()
