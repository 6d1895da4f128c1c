"""The chart payload of the Stellar page (`chartdata.build`): which metrics, in which order, how
many points, and that what the browser decodes is what the store holds."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from tau.portal.stellar import chartdata, snapshot
from tau.portal.stellar.cards import RUN_STATUS_METRIC
from tau.portal.stellar.evidence import Evidence, Series
from tests.portal_web_support import FakeSource, demo_runs

NOW = datetime(2026, 1, 2, tzinfo=UTC)
T0_US = 1_767_225_600 * 1_000_000


def decode(deltas: Sequence[int]) -> list[int]:
    """What charts.js does with `x` and `t`: a running sum."""
    out, acc = [], 0
    for d in deltas:
        acc += d
        out.append(acc)
    return out


def run_docs(n: int, metrics: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": f"r{i:03d}",
            "run_group_id": f"g{i % 4}",
            "color": f"#{i:06x}",
            "metric_names": list(metrics),
            "failed": i == 1,
        }
        for i in range(n)
    ]


def evidence(loader: Any) -> Evidence:
    return Evidence(
        store_path="/s",
        target="exp",
        target_type="experiment",
        manifest={},
        status={},
        experiment=None,
        run_groups=[],
        runs=[],
        total_runs=0,
        load_series=loader,
    )


def long_series(steps: int) -> Any:
    def load(metric: str, run_ids: Sequence[str]) -> list[Series]:
        xs = tuple(range(steps))
        return [
            Series(
                rid,
                metric,
                xs,
                tuple(1.0 / (1 + s) + k for s in xs),
                tuple(T0_US + s * 1_000_000 for s in xs),
            )
            for k, rid in enumerate(run_ids)
        ]

    return load


def test_every_scalar_metric_is_charted_decision_first_without_run_status() -> None:
    source = FakeSource(
        store_path="/s",
        runs=demo_runs(),
        metrics=("eval/score", "train/loss", "gpu/util", RUN_STATUS_METRIC),
    )
    doc = snapshot.build(source.evidence("exp", max_runs=200), now=NOW, metric="train/loss")
    charts = doc["charts"]
    names = [m["name"] for m in charts["metrics"]]
    assert names == ["train/loss", "eval/score", "gpu/util"]
    assert charts["decision_metric"] == "train/loss"
    assert charts["default_visible"][0] == "train/loss"
    assert charts["omitted_metrics"] == []
    # Every run of every metric, in the page's run order.
    run_ids = [r["run_id"] for r in doc["runs"]]
    for m in charts["metrics"]:
        assert [s["run_id"] for s in m["series"]] == run_ids
    # The JSON API (no points) carries no chart payload.
    lean = snapshot.build(source.evidence("exp", max_runs=200), now=NOW, include_points=False)
    assert lean["charts"] is None


def test_colours_and_groups_are_keyed_by_run_and_match_the_run_table() -> None:
    source = FakeSource(store_path="/s", runs=demo_runs())
    doc = snapshot.build(source.evidence("exp", max_runs=200), now=NOW)
    table = {r["run_id"]: (r["color"], r["run_group_id"]) for r in doc["runs"]}
    assert {r["run_id"]: (r["color"], r["group"]) for r in doc["charts"]["runs"]} == table
    assert doc["charts"]["groups"] == ["lr-0", "lr-1"]
    # Built again (a live refresh), each run keeps its colour.
    again = snapshot.build(source.evidence("exp", max_runs=200), now=NOW)
    assert again["charts"]["runs"] == doc["charts"]["runs"]


def test_points_and_wall_times_round_trip_through_the_delta_encoding() -> None:
    source = FakeSource(store_path="/s", runs=demo_runs(), steps=300)
    ev = source.evidence("exp", max_runs=200)
    doc = snapshot.build(ev, now=NOW)
    metric = doc["charts"]["metrics"][0]
    stored = {s.run_id: s for s in ev.load_series(metric["name"], [metric["series"][0]["run_id"]])}
    first = metric["series"][0]
    original = stored[first["run_id"]]
    assert decode(first["x"]) == list(original.steps)
    assert decode(first["t"]) == [t // 1000 for t in original.wall_times]  # milliseconds
    assert first["y"] == pytest.approx(original.values, rel=1e-6)
    assert first["source_points"] == 300 and first["sampling"] == "all"


def test_budgets_hold_for_200_runs_of_10k_points() -> None:
    runs = run_docs(200, ["train/loss", "eval/score"])
    payload = chartdata.build(evidence(long_series(10_000)), runs, "train/loss")
    per_metric, per_series = chartdata.series_budget(2, 200)
    assert payload["budget"]["series_points"] == per_series
    for m in payload["metrics"]:
        assert m["source_points"] == 200 * 10_000
        assert m["rendered_points"] <= min(per_metric, chartdata.METRIC_POINTS)
        for s in m["series"]:
            assert len(s["x"]) == len(s["y"]) == len(s["t"]) <= per_series
            assert s["sampling"] == "bucket-extremes"
            xs = decode(s["x"])
            assert xs[0] == 0 and xs[-1] == 9_999 and xs == sorted(xs)
    # Five metrics share the page budget; many metrics are capped, not thinned to nothing.
    assert chartdata.series_budget(5, 200)[0] * 5 <= chartdata.PAGE_POINTS
    assert chartdata.series_budget(5, 50)[1] == chartdata.PAGE_POINTS // 5 // 50
    assert chartdata.series_budget(1, 1)[1] == chartdata.MAX_SERIES_POINTS
    assert chartdata.series_budget(12, 5000)[1] == chartdata.MIN_SERIES_POINTS


def test_a_spike_survives_downsampling_and_its_time_stays_attached() -> None:
    def load(metric: str, run_ids: Sequence[str]) -> list[Series]:
        xs = tuple(range(10_000))
        ys = tuple(1e9 if s == 4321 else 0.5 for s in xs)
        return [Series(rid, metric, xs, ys, tuple(T0_US + s * 1000 for s in xs)) for rid in run_ids]

    payload = chartdata.build(evidence(load), run_docs(3, ["loss"]), "loss")
    s = payload["metrics"][0]["series"][0]
    at = decode(s["x"]).index(4321)
    assert s["y"][at] == 1e9
    assert decode(s["t"])[at] == (T0_US + 4321 * 1000) // 1000


def test_non_finite_values_are_dropped_and_counted_and_missing_times_give_no_time_axis() -> None:
    def load(metric: str, run_ids: Sequence[str]) -> list[Series]:
        values = (1.0, math.nan, 2.0, math.inf, -math.inf, 3.0)
        times = (T0_US, T0_US + 1, 0, T0_US + 3, T0_US + 4, T0_US + 5)  # step 2 has no time
        return [
            Series("a", metric, (0, 1, 2, 3, 4, 5), values, times),
            Series("b", metric, (5, 4, 3), (3.0, 2.0, 1.0)),  # unsorted, no times at all
        ]

    payload = chartdata.build(evidence(load), _two_runs(), "m")
    a, b = payload["metrics"][0]["series"]
    assert decode(a["x"]) == [0, 2, 5] and a["y"] == [1.0, 2.0, 3.0]
    assert a["non_finite_points"] == 3
    assert a["t"] is None  # a kept point has no time: not placeable on a time axis
    assert decode(b["x"]) == [3, 4, 5] and b["y"] == [1.0, 2.0, 3.0] and b["t"] is None
    # The payload is strict JSON (no NaN or Infinity for the browser to choke on).
    json.dumps(payload, allow_nan=False)


def _two_runs() -> list[dict[str, Any]]:
    return [
        {"run_id": rid, "run_group_id": "g", "color": "#000", "metric_names": ["m"]}
        for rid in ("a", "b")
    ]


def test_unreadable_runs_are_named_and_many_metrics_are_listed_as_omitted() -> None:
    names = [f"m{i:02d}" for i in range(chartdata.MAX_METRICS + 3)]

    def load(metric: str, run_ids: Sequence[str]) -> list[Series]:
        return [Series(rid, metric, (0, 1), (1.0, 2.0)) for rid in run_ids if rid != "r001"]

    payload = chartdata.build(evidence(load), run_docs(3, names), "m05")
    assert payload["metrics"][0]["name"] == "m05"
    assert len(payload["metrics"]) == chartdata.MAX_METRICS
    assert len(payload["omitted_metrics"]) == 3
    assert payload["metrics"][0]["unreadable_runs"] == ["r001"]
    assert [r["failed"] for r in payload["runs"]] == [False, True, False]


def test_a_snapshot_reads_each_metric_of_its_runs_once() -> None:
    """The SVG chart and the interactive charts share the decision metric's series."""
    reads: list[tuple[str, tuple[str, ...]]] = []

    def loader(metric: str, run_ids: Any) -> list[Series]:
        reads.append((metric, tuple(run_ids)))
        return [Series(r, metric, (0, 1), (1.0, 0.5)) for r in run_ids]

    ev = evidence(loader)
    ev = replace(
        ev,
        runs=[{"run_id": "r1", "run_group_id": "g", "tags": {}}],
        total_runs=1,
        summaries=[{"run_id": "r1", "metric_name": "train/loss", "latest_value": 0.5}],
    )
    doc = snapshot.build(ev, now=datetime(2026, 1, 1, tzinfo=UTC))
    assert doc["chart"]["metric_name"] == "train/loss" and doc["charts"]["metrics"]
    assert reads == [("train/loss", ("r1",))]
