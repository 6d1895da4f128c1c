"""The run table and compare views in a real headless Chromium: sorting, the query box, selection,
side by side, parallel coordinates, scatter, CSV/JSON export, hostile names, live refresh."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau.portal.stellar.output import as_html
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.browser.conftest import Watched
from tests.browser.test_stellar_browser import same_origin, shot
from tests.portal_web_support import XSS, FakeSource, Served, serve_app
from tests.stellar_compare_support import RUNS, compare_doc, compare_source

ROWS = "#runs-table tbody tr"
SHOWN = "#runs-table tbody tr:not(.filtered):not(.hidden)"


def shown_runs(page: Any) -> list[str]:
    return [str(x) for x in page.eval_on_selector_all(SHOWN, "rs => rs.map(r => r.dataset.run)")]


def header(page: Any, label: str) -> Any:
    return page.locator("#runs-table thead button.rt-sort", has_text=label).first


def search(page: Any, query: str) -> None:
    page.fill("#runs-query", query)
    page.press("#runs-query", "Enter")


@pytest.fixture
def doc(tmp_path: Path) -> dict[str, Any]:
    return compare_doc(tmp_path)


@pytest.fixture
def page_from_disk(watched: Watched, doc: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / "compare-stellar.html"
    path.write_text(as_html(doc))
    watched.page.goto(path.as_uri())
    watched.page.wait_for_selector("#runs-toolbar:not([hidden])")
    return watched.page


def loss_min(doc: dict[str, Any]) -> dict[str, float]:
    i = doc["table"]["stat_fields"].index("min")
    return {r["run_id"]: r["metrics"]["train/loss"][i] for r in doc["table"]["rows"]}


def test_sort_by_a_metric_column_both_ways(
    watched: Watched, page_from_disk: Any, doc: dict[str, Any]
) -> None:
    page = page_from_disk
    assert page.locator(ROWS).count() == len(RUNS)
    last = doc["table"]["stat_fields"].index("latest")
    scores = {r["run_id"]: r["metrics"]["eval/score"][last] for r in doc["table"]["rows"]}
    header(page, "eval/score last").click()
    assert shown_runs(page) == sorted(scores, key=lambda r: scores[r])
    th = page.locator('#runs-table thead th[aria-sort="ascending"]')
    assert th.count() == 1 and "eval/score last" in th.inner_text()
    header(page, "eval/score last").click()
    assert shown_runs(page) == sorted(scores, key=lambda r: -scores[r])
    # Text columns sort too, numeric-aware; missing values go last either way.
    header(page, "batch_size").click()
    batches = [RUNS[r][2]["batch_size"] for r in shown_runs(page)]
    assert batches == sorted(batches)
    watched.assert_clean()


def test_query_language_filters_and_explains(
    watched: Watched, page_from_disk: Any, doc: dict[str, Any]
) -> None:
    page = page_from_disk
    events: list[Any] = []
    page.expose_function("recordVisible", lambda runs: events.append(runs))
    page.evaluate(
        "document.addEventListener('stellar:visible', e => window.recordVisible(e.detail.runs))"
    )
    expected = sorted(r for r, v in loss_min(doc).items() if v < 0.5)
    assert expected == ["run-a", "run-b", "run-c"]
    search(page, "train/loss@min<0.5")
    assert sorted(shown_runs(page)) == expected
    page.wait_for_function("() => true")
    assert sorted(events[-1]) == expected  # charts hear about it
    search(page, "tag team=nlp")
    assert sorted(shown_runs(page)) == sorted(["run-c", "run-d", XSS])
    # Terms AND together; free text matches run ids, groups and tag values.
    search(page, "tag team=nlp train/loss@min<0.5")
    assert shown_runs(page) == ["run-c"]
    search(page, "baseline")
    assert shown_runs(page) == ["run-a"]
    search(page, "LR-SMALL")
    assert sorted(shown_runs(page)) == ["run-a", "run-b"]
    assert page.locator("#runs-query-msg").is_hidden()
    # A bad term: the CLI's own words, naming the term; nothing is filtered.
    search(page, "train/loss@median<1")
    msg = page.locator("#runs-query-msg")
    assert msg.is_visible()
    assert 'metric filter "train/loss@median<1" field must be latest, min, max' in msg.inner_text()
    assert page.locator("#runs-query").get_attribute("aria-invalid") == "true"
    assert len(shown_runs(page)) == len(RUNS)
    search(page, "tag team")
    assert '--tag: expected key=value, got "team"' in msg.inner_text()
    # A metric the table does not have is said, not silently empty.
    search(page, "val/acc>0.5")
    assert shown_runs(page) == []
    assert 'no run in this table has metric "val/acc"' in msg.inner_text()
    search(page, "")
    assert len(shown_runs(page)) == len(RUNS) and msg.is_hidden()
    watched.assert_clean()


def test_select_two_runs_and_compare_side_by_side(
    watched: Watched, page_from_disk: Any, tmp_path: Path
) -> None:
    page = page_from_disk
    selections: list[Any] = []
    page.expose_function("recordSelection", lambda runs: selections.append(runs))
    page.evaluate(
        "document.addEventListener('stellar:selection', e => window.recordSelection(e.detail.runs))"
    )
    assert page.locator("#runs-compare-btn").is_disabled()
    for rid in ("run-a", "run-c"):
        page.locator(f'{ROWS}[data-run="{rid}"] input.rt-check').check()
    page.wait_for_function("() => true")
    assert selections[-1] == ["run-a", "run-c"]
    page.click("#runs-compare-btn")
    side = page.locator("#side-by-side")
    assert side.is_visible()
    heads = page.locator("#side-table thead th.side-run")
    assert [h.inner_text().replace("×", "").strip() for h in heads.all()] == ["run-a", "run-c"]
    visible_fields = page.eval_on_selector_all(
        "#side-table tbody tr[data-field]",
        "rs => rs.filter(r => r.offsetParent).map(r => r.dataset.field)",
    )
    # Only the differences by default: lr and optimizer differ, batch size and model do not.
    assert "lr" in visible_fields and "optimizer.name" in visible_fields
    assert "batch_size" not in visible_fields and "model" not in visible_fields
    lr_cells = page.locator('#side-table tr[data-field="lr"] td')
    assert [c.inner_text() for c in lr_cells.all()] == ["0.001", "0.01"]
    assert all("diff" in (c.get_attribute("class") or "") for c in lr_cells.all())
    assert page.locator('#side-table tr[data-field="train/loss last"] td.best').inner_text()
    page.uncheck("#side-only-diff")
    assert page.locator('#side-table tr[data-field="model"]').is_visible()
    assert page.locator('#side-table tr[data-field="batch_size"]').is_visible()
    page.check("#side-only-diff")
    assert page.locator('#side-table tr[data-field="model"]').is_hidden()
    shot(watched, tmp_path, "stellar-side-by-side.png")
    # Select all visible, then clear: the charts are told "show all" (null).
    search(page, "tag team=vision")
    page.check("#runs-select-all")
    page.wait_for_function("() => true")
    assert selections[-1] == ["run-a", "run-b", "run-c"]
    page.click("#runs-clear-btn")
    page.wait_for_function("() => true")
    assert selections[-1] is None
    assert side.is_hidden()
    watched.assert_clean()


def test_parallel_coordinates_and_scatter(watched: Watched, page_from_disk: Any) -> None:
    page = page_from_disk
    lines = "#parcoords-svg path.pc-line:not(.pc-out)"
    assert page.locator(lines).count() == len(RUNS)
    labels = page.locator("#parcoords-svg text.pc-label").all_text_contents()
    assert labels == ["lr", "batch_size", "optimizer.name", "eval/score last"]
    search(page, "tag team=vision")
    assert page.locator(lines).count() == 2
    search(page, "")
    # The metric axis and the colouring are selectable.
    page.select_option("#pc-metric", "train/loss")
    assert page.locator("#parcoords-svg text.pc-label").last.text_content() == "train/loss last"
    page.select_option("#pc-color", "metric")
    strokes = {p.get_attribute("stroke") for p in page.locator(lines).all()}
    assert all(s.startswith("rgb(") for s in strokes) and len(strokes) == len(RUNS)
    # Brush the lr axis at its top (the largest lr): only the XSS run (lr 0.1) stays.
    hit = page.locator('#parcoords-svg rect.pc-hit[data-axis*="lr"]').first
    hit.scroll_into_view_if_needed()
    box = hit.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 1)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.2, steps=4)
    page.mouse.up()
    assert shown_runs(page) == [XSS]
    assert page.locator(lines).count() == 1
    page.click("#pc-clear")
    assert len(shown_runs(page)) == len(RUNS)
    # Scatter: a point per run, axes selectable, hover names the run, click selects it.
    points = page.locator("#scatter-svg circle.sc-point")
    assert points.count() == len(RUNS)
    page.select_option("#sc-x", label="train/loss best")
    page.select_option("#sc-y", label="eval/score last")
    assert page.locator("#scatter-svg text.sc-label").first.text_content() == "train/loss best"
    assert points.count() == len(RUNS)
    point = page.locator('#scatter-svg circle[data-point-run="run-b"]')
    point.hover()
    assert "run-b" in page.locator("#cmp-tip").inner_text()
    point.click()
    assert page.locator(f'{ROWS}[data-run="run-b"] input.rt-check').is_checked()
    watched.assert_clean()


def test_column_chooser_and_export(watched: Watched, page_from_disk: Any, tmp_path: Path) -> None:
    page = page_from_disk
    page.click("#runs-columns summary")
    page.locator('#runs-columns-body input[data-col=\'["c","model"]\']').check()
    page.locator('#runs-columns-body input[data-col=\'["m","train/loss","best"]\']').uncheck()
    heads = page.locator("#runs-table thead th[data-col]").all_inner_texts()
    assert "model" in heads and "train/loss best" not in heads
    page.click("#runs-columns summary")
    search(page, "tag team=nlp")
    header(page, "eval/score last").click()
    expected = shown_runs(page)
    with page.expect_download() as got:
        page.click("#runs-export-csv")
    rows = list(csv.reader(io.StringIO(Path(got.value.path()).read_text())))
    assert rows[0] == [h.replace(" ▲", "") for h in heads]
    assert [r[0] for r in rows[1:]] == expected
    xss = next(r for r in rows[1:] if r[0] == XSS)
    assert xss[heads.index("optimizer.name")] == XSS and xss[heads.index("model")] == "tiny"
    with page.expect_download() as got:
        page.click("#runs-export-json")
    data = json.loads(Path(got.value.path()).read_text())
    assert data["columns"] == rows[0]
    assert [r["Run"] for r in data["rows"]] == expected
    assert data["rows"][0]["Tags"]["team"] == "nlp"
    assert isinstance(data["rows"][0]["eval/score last"], float)
    watched.assert_clean()


def test_hostile_names_stay_text_and_page_shot(
    watched: Watched, page_from_disk: Any, tmp_path: Path
) -> None:
    page = page_from_disk
    row = page.locator(ROWS).filter(has_text=XSS)
    assert row.count() == 1 and row.is_visible()
    assert page.locator("#runs-table script").count() == 0
    row.locator("input.rt-check").check()
    page.locator(f'{ROWS}[data-run="run-a"] input.rt-check').check()
    page.click("#runs-compare-btn")
    assert XSS in page.locator("#side-table").inner_text()
    assert page.locator("#side-table script, #parcoords script, #scatter script").count() == 0
    # Markup characters read as a metric filter's operator; -q (as in the CLI) makes it text.
    search(page, f"-q '{XSS}'".replace("'", '"'))
    assert shown_runs(page) == [XSS]
    search(page, "")
    assert watched.dialogs == []
    watched.assert_clean()
    page.locator("#runs-compare").scroll_into_view_if_needed()
    shot(watched, tmp_path, "stellar-compare.png")


@pytest.fixture
def source(tmp_path: Path) -> FakeSource:
    store = tmp_path / "store"
    store.mkdir()
    return compare_source(store)


@pytest.fixture
def served(source: FakeSource) -> Iterator[Served]:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        yield s


def test_served_page_keeps_state_across_live_refresh(
    watched: Watched, served: Served, source: FakeSource
) -> None:
    page = watched.page
    # Live refresh stops once every run has finished; keep one running.
    source.runs[1].update(state="running", completed_at="")
    page.goto(served.url + "/stellar?target=exp")
    page.wait_for_selector("#runs-toolbar:not([hidden])")
    search(page, "tag team=nlp")
    header(page, "eval/score last").click()
    header(page, "eval/score last").click()
    page.locator(f'{ROWS}[data-run="run-c"] input.rt-check').check()
    page.locator(f'{ROWS}[data-run="run-d"] input.rt-check').check()
    page.click("#runs-compare-btn")
    before = shown_runs(page)
    source.runs.append({**source.runs[2], "run_id": "run-late", "created_at": "2026-01-01T09:00Z"})
    source.stamp = "v-late"
    page.wait_for_selector(f'{ROWS}[data-run="run-late"]', state="attached", timeout=15_000)
    # The new run matches the search (team=nlp) and joins; sort, selection and view survive.
    after = shown_runs(page)
    assert set(after) == {*before, "run-late"}
    assert page.locator("#runs-query").input_value() == "tag team=nlp"
    assert page.locator('#runs-table thead th[aria-sort="descending"]').count() == 1
    assert page.locator("#side-by-side").is_visible()
    assert page.locator("#runs-table input.rt-check:checked").count() == 2
    same_origin(watched.requests, served.url)
    watched.assert_clean()
