"""Stellar and the portal in a real headless Chromium: panels, SVG series, no errors, and
every request to the page's own origin (none at all from disk)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tau.portal.stellar import snapshot
from tau.portal.stellar.output import as_html
from tau.portal.web.app import create_app
from tau.portal.web.cluster import ClusterReader
from tau.portal.web.stellar_routes import Stellar
from tests.browser.conftest import Watched
from tests.portal_web_support import XSS, FakeSource, Served, demo_source, serve_app

#: Set to a directory to keep the screenshots (the README's picture comes from here).
SHOTS = os.environ.get("TAU_SCREENSHOT_DIR")
PANELS = ("summary", "compare", "sweep", "cards", "runs", "timeline", "observations")


def shot(w: Watched, tmp_path: Path, name: str) -> Path:
    target = Path(SHOTS) / name if SHOTS else tmp_path / name
    w.page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000  # a real picture, not a blank page
    return target


def assert_stellar_page(w: Watched, runs: int, *, served: bool = False) -> None:
    page = w.page
    for panel in PANELS:
        assert page.locator(f'[data-panel="{panel}"]').is_visible(), panel
    if served:  # the server-drawn chart is an image only browsers without JavaScript fetch
        page.wait_for_selector(".charts-app[data-ready='1']")
        assert page.locator("figure.chart").first.get_attribute("data-visible-runs") == str(runs)
        assert page.locator(".chart-fallback noscript").count() == 1
    else:
        assert page.locator("svg#seed-envelope polyline.series").count() == runs
    assert page.locator("#runs-table tbody tr").count() == runs
    # The hostile run name is text, and no script ran from it.
    row = page.locator("#runs-table tbody tr").filter(has_text=XSS)
    assert row.count() == 1 and row.is_visible()
    assert w.dialogs == []  # alert(1) never ran


@pytest.fixture
def source(tmp_path: Path) -> FakeSource:
    store = tmp_path / "store"
    store.mkdir()
    return demo_source(store)


def test_static_html_from_disk_makes_no_request(
    watched: Watched, source: FakeSource, tmp_path: Path
) -> None:
    doc = snapshot.build(
        source.evidence("lr-0", max_runs=200), now=datetime(2026, 1, 2, tzinfo=UTC)
    )
    path = tmp_path / "lr-0-stellar.html"
    path.write_text(as_html(doc))
    url = path.as_uri()
    watched.page.goto(url)
    assert_stellar_page(watched, runs=4)
    assert watched.requests == [url]  # the file itself and nothing else
    # Filtering hides table rows and chart lines.
    watched.page.fill("#run-filter", "run-0-1")
    assert watched.page.locator("#runs-table tbody tr:not(.hidden)").count() == 1
    assert watched.page.locator("polyline.series:not(.hidden)").count() == 1
    watched.page.fill("#run-filter", "")
    watched.page.locator("polyline.series").first.dispatch_event("click")
    assert watched.page.locator("polyline.series.focus").count() == 1
    watched.assert_clean()
    shot(watched, tmp_path, "stellar-file.png")


@pytest.fixture
def served(source: FakeSource) -> Iterator[Served]:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        yield s


def same_origin(requests: list[str], base: str) -> None:
    origin = urlparse(base)
    assert requests
    for url in requests:
        parsed = urlparse(url)
        assert (parsed.scheme, parsed.netloc) == (origin.scheme, origin.netloc), url


def test_served_stellar_is_same_origin_and_updates_live(
    watched: Watched, served: Served, source: FakeSource, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(served.url + "/stellar?target=lr-0")
    assert_stellar_page(watched, runs=4, served=True)
    interactive = page.evaluate("performance.getEntriesByType('navigation')[0].domInteractive")
    assert interactive < 1500  # milliseconds
    page.evaluate("window.__still_same_page = true")
    source.runs.append(
        {**source.runs[0], "run_id": "run-0-late", "created_at": "2026-01-01T09:00:00Z"}
    )
    source.stamp = "v-late"
    page.wait_for_selector('#runs-table tr[data-run="run-0-late"]', timeout=15_000)
    assert page.evaluate("window.__still_same_page") is True  # swapped in place, no reload
    page.wait_for_selector('figure.chart[data-visible-runs="5"]')  # charts rebuilt with it
    same_origin(watched.requests, served.url)
    watched.assert_clean()
    shot(watched, tmp_path, "stellar-served.png")


def test_portal_page_in_the_browser(
    watched: Watched, kube_api: Any, kube_client: Any, tmp_path: Path
) -> None:
    from tests.test_portal_web_boards import cluster_objects, load

    load(kube_api, cluster_objects())
    reader = ClusterReader(kube_client)
    with serve_app(lambda guard: create_app(guard=guard, portal=reader)) as s:
        page = watched.page
        page.goto(s.url + "/portal")
        for board in ("runs", "jobs", "nodes", "ray"):
            assert page.locator(f'[data-board="{board}"] .board-state.ready').count() == 1, board
        assert page.locator('[data-board="runs"] tbody tr[data-run="train"]').count() == 1
        assert "Image pull" in page.locator('[data-board="runs"]').inner_text()
        assert "not configured" in page.locator('[data-panel="cards"]').inner_text()
        same_origin(watched.requests, s.url)
        watched.assert_clean()
        shot(watched, tmp_path, "portal.png")
