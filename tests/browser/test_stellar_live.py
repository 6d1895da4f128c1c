"""Stellar live (issue 37 item 6), in a real Chromium over a real folder store: the page of a
running run grows its chart as deliveries land (within the 2 s poll), says live, then terminal
when an attempt's `tau/run_status` marker arrives (a failed one keeps the page looking for a
retry), live again with the retry's rows and their start marked, and terminal for good on the
last attempt's `succeeded` marker, when it stops polling.

The store is written through its own write API the way the metrics collector delivers
(tests/offload_store_support.py), while the page is open.
"""

from __future__ import annotations

import time
from pathlib import Path

from tau.portal.stellar.source import StoreSource
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import LIVE_INTERVAL, Stellar
from tests import offload_store_support as seed
from tests.browser.conftest import Watched
from tests.browser.test_stellar_browser import same_origin, shot
from tests.portal_web_support import serve_app

RUN = "train-live"
CHART = 'figure.chart[data-metric="loss"]'


def _rows(first: int, last: int, scale: float = 1.0) -> list[dict[str, float]]:
    return [{"_step": s, "loss": scale / (1 + s)} for s in range(first, last + 1)]


def _x_max(watched: Watched) -> float:
    return float(watched.page.locator(CHART).get_attribute("data-x-max") or "nan")


def _until(check: object, timeout: float = 10.0) -> float:
    """Seconds until `check()` holds (polled); fails after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if check():  # type: ignore[operator]
                return time.monotonic() - start
        except Exception:  # the <main> swap may detach the element between two reads
            pass
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout}s")


def test_a_running_runs_page_grows_marks_retries_and_ends_on_the_marker(
    watched: Watched, tmp_path: Path
) -> None:
    store = seed.init(tmp_path / "store")
    wall = time.time() - 300  # recent rows: the run is live, not gone quiet
    seed.deliver(store, RUN, _rows(0, 19), seq=0, wall=wall)
    app = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=app)) as served:
        page = watched.page
        page.goto(served.url + f"/stellar?target={RUN}&kind=run")
        page.wait_for_selector(f"{CHART}[data-x-max='19']")
        liveness = page.locator("#run-liveness")
        assert liveness.get_attribute("data-liveness") == "live"
        assert liveness.inner_text().startswith("live: rows arriving")
        assert page.locator("#main").get_attribute("data-live-interval") == str(LIVE_INTERVAL)

        # A delivery lands: the chart shows it within the poll interval, plus the page's
        # rebuild and a margin for a busy machine (the contract: one offload interval + 2 s
        # after the row is logged, the delivery itself taking up to the interval).
        seed.deliver(store, RUN, _rows(20, 39), seq=1, wall=wall)
        took = _until(lambda: _x_max(watched) == 39)
        assert took < LIVE_INTERVAL + 3, took
        assert page.locator(CHART).get_attribute("data-attempt-marks") == "0"

        # The first attempt ends (OOMKilled, say): its collector's marker says failed. The run
        # may be retried, so the page says terminal but keeps looking.
        seed.mark(store, RUN, "failed", attempt=0, message="entrypoint exited with code 137")
        page.wait_for_selector("#run-liveness[data-liveness='terminal']")
        assert liveness.inner_text().startswith("terminal: failed")
        assert page.locator("#live-state").get_attribute("data-retry-watch") == "1"
        assert page.locator("#main").get_attribute("data-live-url") is not None

        # The retry: attempt 1 starts again from step 30; the run is live again, its start marked.
        seed.deliver(store, RUN, _rows(30, 59, 0.5), attempt=1, seq=0, wall=time.time() - 100)
        _until(lambda: _x_max(watched) == 59)
        assert liveness.get_attribute("data-liveness") == "live"
        assert "attempt 1 running after an earlier attempt's marker" in liveness.inner_text()
        page.wait_for_selector(f"{CHART}[data-attempt-marks='1']")
        assert "1 retry marked" in page.locator(CHART).inner_text()
        assert page.locator("#run-attempts").inner_text() == "2 attempts (attempt 1 from step 30)"
        page.locator(CHART).scroll_into_view_if_needed()
        shot(watched, tmp_path, "stellar-live-retry.png")

        # The collector's terminal marker: the page says terminal and stops polling.
        seed.mark(store, RUN, attempt=1)
        page.get_by_text("live refresh off: all runs finished").wait_for(timeout=10_000)
        assert liveness.get_attribute("data-liveness") == "terminal"
        text = liveness.inner_text()
        assert text.startswith("terminal: succeeded"), text
        assert "terminal tau/run_status marker: workload-entrypoint-exit" in text
        polls = len([u for u in watched.requests if "fragment=1" in u])
        page.wait_for_timeout(int(LIVE_INTERVAL * 1000 * 2.5))
        assert len([u for u in watched.requests if "fragment=1" in u]) == polls
        same_origin(watched.requests, served.url)
        watched.assert_clean()
