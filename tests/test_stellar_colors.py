"""A run's colour is keyed by its id: a new run never recolours the others."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from tau.portal.stellar import html, snapshot, svg
from tests.portal_web_support import demo_source

NOW = datetime(2026, 1, 2, tzinfo=UTC)


def colours(doc: dict) -> dict[str, str]:
    return {r["run_id"]: r["color"] for r in doc["runs"]}


def test_a_new_run_keeps_every_other_runs_colour(tmp_path: Path) -> None:
    source = demo_source(tmp_path)
    before = colours(snapshot.build(source.evidence("exp", max_runs=200), now=NOW))
    # The newest run is listed first: with colours by position, every run would shift.
    source.runs.insert(0, {**source.runs[0], "run_id": "run-new"})
    doc = snapshot.build(source.evidence("exp", max_runs=200), now=NOW)
    after = colours(doc)
    assert {k: after[k] for k in before} == before
    assert after["run-new"] == svg.run_color("run-new")
    # The charts, the run table and the page's swatches use the same colour.
    assert {r["run_id"]: r["color"] for r in doc["charts"]["runs"]} == after
    assert {r["run_id"]: r["color"] for r in doc["table"]["rows"]} == after
    page = html.stellar_page(doc)
    for rid, colour in after.items():
        if "<" in rid:
            continue
        row = rf'<tr data-run="{rid}"[^>]*>\s*<td class="rt-select">'
        cls = re.search(row + r'<span class="swatch swatch-(\d+)"', page)
        assert cls is not None, rid
        assert svg.PALETTE[int(cls.group(1))] == colour


def test_the_colour_is_a_stable_hash_of_the_id() -> None:
    assert svg.color_index("run-0-0") == svg.color_index("run-0-0")
    slots = {svg.color_index(f"run-{i}") for i in range(200)}
    assert slots == set(range(len(svg.PALETTE)))  # spread over the whole palette
