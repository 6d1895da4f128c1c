"""No dead ends, in a real Chromium over a real store (written by the CLI): landing → experiment
→ group → run and back by the breadcrumbs; the 404 page; a finished experiment stops polling;
the portal's nav stays on HTML pages and reaches Stellar."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau.portal.cli import main
from tau.portal.stellar.source import StoreSource
from tau.portal.web.app import create_app
from tau.portal.web.cluster import ClusterReader
from tau.portal.web.stellar_routes import Stellar
from tests.browser.conftest import Watched
from tests.browser.test_stellar_browser import same_origin, shot
from tests.portal_web_support import Served, serve_app

GROUPS = ("lr-small", "lr-large")


def _track(root: Path, run: str, group: str, *extra: str) -> None:
    args = ["experiment", "track", run, "--store", str(root), "--experiment", "sweep"]
    assert main([*args, "--group", group, *extra]) == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two groups of three finished runs with configs, tags, a command and an artifact."""
    root = tmp_path_factory.mktemp("nav") / "store"
    assert main(["experiment", "init", "sweep", "--store", str(root)]) == 0
    (root / "artifacts").mkdir(exist_ok=True)
    (root / "artifacts" / "model.txt").write_text("weights\n")
    for g, group in enumerate(GROUPS):
        for seed in range(3):
            run = f"{group}-s{seed}"
            config = root.parent / f"{run}.json"
            config.write_text(json.dumps({"optim": {"lr": [0.001, 0.01][g]}, "seed": seed}))
            _track(
                root,
                run,
                group,
                "--config",
                str(config),
                "--command",
                f"python train.py --seed {seed}",
                "--tag",
                f"owner=ana-{seed}",
                "--artifact",
                "model:weights=artifacts/model.txt",
                "--created-at",
                f"2026-01-0{g + 1}T00:0{seed}:00Z",
                "--completed-at",
                f"2026-01-0{g + 1}T01:0{seed}:00Z",
                "--metric",
                f"eval/score={0.5 + 0.1 * g + 0.01 * seed}",
                "--step",
                "10",
            )
    return root


@pytest.fixture
def served(store: Path) -> Iterator[Served]:
    app = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=app)) as s:
        yield s


def test_click_through_landing_experiment_group_run_and_back(
    watched: Watched, served: Served, tmp_path: Path
) -> None:
    page = watched.page
    page.goto(served.url + "/")
    row = page.locator('#experiments tr[data-experiment="sweep"]')
    assert row.locator('[data-count="runs"]').inner_text() == "6"
    assert row.locator('[data-count="groups"]').inner_text() == "2"
    assert row.locator("a[data-latest-run]").inner_text() == "lr-large-s2"
    shot(watched, tmp_path, "stellar-landing.png")

    row.get_by_role("link", name="sweep").click()
    page.wait_for_url("**/stellar?target=sweep&kind=experiment")
    assert page.locator('[data-crumb="experiment"] [aria-current]').inner_text() == "sweep"
    assert page.locator("#group-index a.ref-group").count() == 2
    assert page.locator("#run-index a.ref-run").count() == 6

    page.locator("#group-index").get_by_role("link", name="lr-small").click()
    page.wait_for_url("**/stellar?target=lr-small&kind=group")
    assert page.locator('[data-crumb="group"] [aria-current]').inner_text() == "lr-small"

    page.locator("#run-index").get_by_role("link", name="lr-small-s1").click()
    page.wait_for_url("**/stellar?target=lr-small-s1&kind=run")
    run = page.locator('[data-panel="run"]')
    assert run.locator("code.command").inner_text() == "python train.py --seed 1"
    config = run.locator('[data-part="config"]').inner_text()
    assert "optim.lr" in config and "0.001" in config
    assert "ana-1" in run.locator('[data-part="tags"]').inner_text()
    with page.expect_download() as download:
        run.locator("a.download").first.click()
    assert Path(download.value.path()).read_text() == "weights\n"
    page.locator('[data-panel="run"]').scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -120)")  # the nav bar and breadcrumbs in the picture
    shot(watched, tmp_path, "stellar-run.png")

    # Back up by the breadcrumbs: group, then experiment, then all experiments.
    page.locator('.crumbs [data-crumb="group"] a').click()
    page.wait_for_url("**/stellar?target=lr-small&kind=group")
    page.locator('.crumbs [data-crumb="experiment"] a').click()
    page.wait_for_url("**/stellar?target=sweep&kind=experiment")
    page.locator('a[data-nav="experiments"]').click()
    page.wait_for_url("**/stellar")
    assert page.locator("#experiments").is_visible()
    same_origin(watched.requests, served.url)
    watched.assert_clean()


def test_404_is_an_html_page_with_a_link_home(
    watched: Watched, served: Served, tmp_path: Path
) -> None:
    page = watched.page
    response = page.goto(served.url + "/stellar?target=no-such-run")
    assert response is not None and response.status == 404
    assert "experiment store record not found: no-such-run" in page.inner_text("main")
    shot(watched, tmp_path, "stellar-404.png")
    page.locator('a[data-nav="home"]').click()
    page.wait_for_url("**/stellar")
    assert page.locator('#experiments tr[data-experiment="sweep"]').count() == 1
    # A browser's own 404 (the document) is expected in the console; nothing else is.
    assert [e for e in watched.console_errors if "404" not in e] == []
    assert watched.page_errors == []


def test_a_finished_experiment_stops_polling(watched: Watched, served: Served) -> None:
    page = watched.page
    page.goto(served.url + "/stellar?target=sweep")
    page.get_by_text("live refresh off: all runs finished").wait_for()
    assert page.locator("#summary-status").inner_text().startswith("finished")
    # The server rendered it without a live URL, so app.js never starts polling.
    assert page.locator("#main").get_attribute("data-live-url") is None
    assert [u for u in watched.requests if "fragment=1" in u] == []
    watched.assert_clean()


def test_a_running_target_stops_polling_once_it_finishes(watched: Watched, tmp_path: Path) -> None:
    root = tmp_path / "store"
    assert main(["experiment", "init", "live", "--store", str(root)]) == 0
    _track(root, "r1", "g", "--state", "running", "--metric", "loss=1", "--step", "1")
    with serve_app(
        lambda guard: create_app(guard=guard, stellar=Stellar(StoreSource(root)))
    ) as served:
        page = watched.page
        page.goto(served.url + "/stellar?target=g")
        assert page.locator("#main").get_attribute("data-live-url") is not None
        assert "refresh off" not in page.locator("#live-state").inner_text()
        # The run ends the way the sidecar ends one: the terminal tau/run_status marker.
        _track(root, "r1", "g", "--state", "running", "--metric", "tau/run_status=1", "--step", "2")
        page.get_by_text("live refresh off: all runs finished").wait_for(timeout=20_000)
        polls = len([u for u in watched.requests if "fragment=1" in u])
        assert polls >= 1
        # app.js drops the live URL with the finished fragment and schedules no next tick.
        assert page.locator("#main").get_attribute("data-live-url") is None
        assert page.locator("#summary-status").inner_text().startswith("finished")
        page.wait_for_timeout(6_000)  # longer than the 5 s interval: no further request
        assert len([u for u in watched.requests if "fragment=1" in u]) == polls
        watched.assert_clean()


def test_portal_nav_is_html_and_reaches_stellar(
    watched: Watched, kube_api: Any, kube_client: Any, store: Path, tmp_path: Path
) -> None:
    from tests.test_portal_web_boards import cluster_objects, load

    objects = cluster_objects()
    for obj in objects:
        if obj["kind"] == "Job":
            obj["metadata"].setdefault("labels", {}).update(
                {
                    "tau.azure.com/stellar-project": "demo",
                    "tau.azure.com/stellar-experiment": "sweep",
                    "tau.azure.com/stellar-group": "lr-small",
                }
            )
    load(kube_api, objects)
    stellar = Stellar(StoreSource(store))
    reader = ClusterReader(kube_client)
    with serve_app(lambda guard: create_app(guard=guard, stellar=stellar, portal=reader)) as s:
        page = watched.page
        page.goto(s.url + "/portal")
        pills = page.locator('[data-panel="boards"] a.pill[data-board-link]')
        assert pills.count() >= 5
        for i in range(pills.count()):
            href = pills.nth(i).get_attribute("href") or ""
            assert href.startswith("#") and page.locator(href).count() == 1, href
        pills.filter(has_text="Nodes").click()
        assert page.url.endswith("#board-nodes")
        shot(watched, tmp_path, "portal.png")
        # The run's experiment cell opens its Stellar page; the nav reaches the landing page.
        page.locator('[data-board="runs"] a.ref-stellar').click()
        page.wait_for_url("**/stellar?target=lr-small")
        assert page.locator('a[data-nav="portal"]').count() == 1
        page.locator('a[data-nav="experiments"]').click()
        page.wait_for_url("**/stellar")
        page.locator('a[data-nav="portal"]').click()
        page.wait_for_url("**/portal")
        same_origin(watched.requests, s.url)
        watched.assert_clean()
